/*
 * cluster_view.c - this node's view of the others and of the keys: a
 * range of nodes/ and keys/, then a watch of the whole prefix from the
 * revision after it, for VIEW_WATCH_MS; then again.  Reading everything
 * again every few seconds bounds what a stalled watch (a member cut off
 * from its quorum keeps the stream open and silent) can hide.
 *
 * The node table holds every node whose record is in etcd: a node whose
 * lease expired has no record, so it leaves the table (its forwards in
 * flight are ended) and its sandboxes read as lost.  Keys are mirrored
 * into the local SQLite store, which authenticates requests, etcd or not.
 * Only records a node sealed are taken (cluster_sign.c): one written into
 * etcd by anyone else is ignored and logged.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "daemon/cluster/cluster_int.h"
#include "daemon/daemon.h"
#include "daemon/http/auth.h"

/* How long one watch runs before the view is read whole again, ms. */
#define VIEW_WATCH_MS 3000
#define VIEW_RETRY_MS 500

/* What follows c->prefix + part in key, or NULL. */
static const char *under(const struct cluster *c, const char *key, const char *part)
{
	size_t pl = strlen(c->prefix), al = strlen(part);
	if (strncmp(key, c->prefix, pl) != 0 || strncmp(key + pl, part, al) != 0)
		return NULL;
	return key + pl + al;
}

/* See cluster_int.h. */
void cluster_placed_carry(struct cluster_node *rec, const struct cluster_node *old, int64_t now)
{
	rec->placed_recently = old->placed_recently;
	rec->placed_base = old->placed_base;
	rec->placed_last_ms = old->placed_last_ms;
	if (!rec->placed_recently || rec->updated_at_ms == old->updated_at_ms)
		return;
	unsigned shown = rec->sandboxes_running > rec->placed_base
				 ? rec->sandboxes_running - rec->placed_base
				 : 0;
	rec->placed_recently -= shown < rec->placed_recently ? shown : rec->placed_recently;
	if (rec->sandboxes_running > rec->placed_base)
		rec->placed_base = rec->sandboxes_running;
	if (now - rec->placed_last_ms > CLUSTER_PLACED_HOLD_MS)
		rec->placed_recently = 0;
}

/* Replace the node table with nodes (n), keeping this daemon's own notes
 * on nodes that stay; end forwards to nodes that left. */
static void set_nodes(struct cluster *c, struct cluster_node *nodes, size_t n)
{
	char gone[CLUSTER_NODES_MAX][CLUSTER_NAME_MAX];
	size_t ngone = 0;
	int64_t now = util_now_ms();
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < c->nnodes; j++)
			if (!strcmp(nodes[i].name, c->nodes[j].name)) {
				nodes[i].suspect_until_ms = c->nodes[j].suspect_until_ms;
				cluster_placed_carry(&nodes[i], &c->nodes[j], now);
			}
	for (size_t j = 0; j < c->nnodes; j++) {
		int kept = 0;
		for (size_t i = 0; i < n; i++)
			kept |= !strcmp(nodes[i].name, c->nodes[j].name);
		if (!kept && ngone < CLUSTER_NODES_MAX)
			memcpy(gone[ngone++], c->nodes[j].name, CLUSTER_NAME_MAX);
	}
	for (size_t i = 0; i < n; i++) {
		int known = 0;
		for (size_t j = 0; j < c->nnodes; j++)
			known |= !strcmp(nodes[i].name, c->nodes[j].name);
		if (!known)
			log_kv(LOG_INFO, "cluster.node_joined", "node=%s url=%s", nodes[i].name,
			       nodes[i].url);
	}
	free(c->nodes);
	c->nodes = nodes;
	c->nnodes = n;
	c->view_ready = 1;
	pthread_mutex_unlock(&c->lock);
	for (size_t i = 0; i < ngone; i++) {
		log_kv(LOG_WARN, "cluster.node_left", "node=%s", gone[i]);
		cluster__forwards_abort(c, gone[i]);
	}
}

/*
 * The node record kv, if it is one this node may trust, into *rec: sealed
 * by a node (else logged by cluster__unseal), named after its key, on a
 * lease (a node's record always is), and written lately: a node puts its
 * record every few seconds, so one older than its lease and the clocks'
 * skew is a copy put back (its URL, perhaps, no longer the node's).
 * Returns 0, or -EBADMSG (ignored, logged).
 */
static int node_record(struct cluster *c, const struct etcd_kv *kv, const char *name,
		       struct cluster_node *rec)
{
	int e = cluster__unseal(c, kv);
	if (e)
		return -EBADMSG;
	int64_t now = (int64_t)(util_wall_ns() / 1000000u);
	const char *why = NULL;
	if (cluster_node_decode(kv->value, kv->value_len, rec) < 0 || strcmp(rec->name, name))
		why = "does not decode, or names another node";
	else if (kv->lease == 0)
		why = "is on no lease";
	else if (rec->updated_at_ms < now - c->ttl_s * 1000 - CLUSTER_SIGN_SKEW_MS)
		why = "is older than the lease and the clocks' skew: a copy put back";
	if (!why)
		return 0;
	char q[ETCD_KEY_MAX + 8];
	log_kv(LOG_WARN, "cluster.record_rejected", "key=%s why=\"%s\"",
	       log_quote(kv->key, q, sizeof(q)), why);
	return -EBADMSG;
}

/*
 * A record that was refused is ignored, as if it had not been written:
 * the node keeps the entry it had from the node's last good record, while
 * that record is recent (the node writes its record again within seconds;
 * one that stays bad ages the entry out, as a node gone).  0 with the old
 * entry in *out, or -ENOENT.
 */
static int keep_entry(struct cluster *c, const char *name, struct cluster_node *out)
{
	int64_t now = (int64_t)(util_wall_ns() / 1000000u);
	if (cluster__node_find(c, name, out) < 0)
		return -ENOENT;
	return out->updated_at_ms >= now - c->ttl_s * 1000 - CLUSTER_SIGN_SKEW_MS ? 0 : -ENOENT;
}

/* A copy of the table with kv applied (a put or delete under nodes/). */
static void apply_node_event(struct cluster *c, const struct etcd_kv *kv)
{
	const char *name = under(c, kv->key, "nodes/");
	struct cluster_node rec;
	if (!name)
		return;
	int ok = !kv->deleted && node_record(c, kv, name, &rec) == 0;
	if (!kv->deleted && !ok)
		return;
	pthread_mutex_lock(&c->lock);
	size_t n = c->nnodes;
	struct cluster_node *copy = malloc((n + 1) * sizeof(*copy));
	size_t m = 0;
	for (size_t i = 0; copy && i < n; i++)
		if (strcmp(c->nodes[i].name, name) != 0)
			copy[m++] = c->nodes[i];
	pthread_mutex_unlock(&c->lock);
	if (!copy)
		return;
	if (ok && m < CLUSTER_NODES_MAX)
		copy[m++] = rec;
	set_nodes(c, copy, m);
}

static void apply_key_event(struct cluster *c, const struct etcd_kv *kv)
{
	const char *hash = under(c, kv->key, "keys/");
	if (!hash || strlen(hash) != AUTH_HASH_HEX_LEN)
		return;
	if (!kv->deleted) {
		int e = cluster__key_mirror(c, kv);
		if (e < 0 && e != -EBADMSG) /* -EBADMSG: logged as rejected */
			log_kv(LOG_WARN, "cluster.bad_key_record", "hash=%.16s", hash);
		return;
	}
	struct key_row k;
	if (store_key_by_hash(c->d->store, hash, &k) == 0) {
		store_key_delete(c->d->store, k.id);
		log_kv(LOG_INFO, "cluster.key_deleted", "id=%s", k.id);
	}
}

static int on_watch(void *arg, struct etcd_watch_msg *m)
{
	struct cluster *c = arg;
	for (size_t i = 0; i < m->events.n; i++) {
		apply_node_event(c, &m->events.v[i]);
		apply_key_event(c, &m->events.v[i]);
	}
	return 0;
}

/* Read nodes/ into the table; *rev gets the revision it was read at. */
static int read_nodes(struct cluster *c, int64_t *rev)
{
	struct etcd_kvs kvs;
	int r = cluster__range_under(c, "nodes/", NULL, NULL, &kvs);
	if (r)
		return r;
	*rev = kvs.revision;
	struct cluster_node *nodes = calloc(kvs.n ? kvs.n : 1, sizeof(*nodes));
	size_t n = 0;
	for (size_t i = 0; nodes && i < kvs.n && n < CLUSTER_NODES_MAX; i++) {
		const char *name = under(c, kvs.v[i].key, "nodes/");
		if (!name)
			continue;
		if (node_record(c, &kvs.v[i], name, &nodes[n]) == 0 ||
		    (cluster_name_valid(name) && keep_entry(c, name, &nodes[n]) == 0))
			n++;
	}
	etcd_kvs_clear(&kvs);
	if (!nodes)
		return -ENOMEM;
	set_nodes(c, nodes, n);
	return 0;
}

/* Make the local key mirror equal to keys/ in etcd. */
static int read_keys(struct cluster *c)
{
	struct etcd_kvs kvs;
	int r = cluster__range_under(c, "keys/", NULL, NULL, &kvs);
	if (r)
		return r;
	struct key_row *local = NULL;
	size_t nlocal = 0;
	r = store_key_list(c->d->store, NULL, &local, &nlocal);
	/* only records a node sealed count: a forged one neither adds a key
	 * nor keeps a deleted one alive */
	char *sealed = calloc(kvs.n ? kvs.n : 1, 1);
	if (!r && !sealed)
		r = -ENOMEM;
	for (size_t i = 0; !r && i < kvs.n; i++)
		sealed[i] = cluster__key_mirror(c, &kvs.v[i]) != -EBADMSG;
	for (size_t j = 0; !r && j < nlocal; j++) {
		int in_etcd = 0;
		for (size_t i = 0; i < kvs.n && !in_etcd; i++) {
			struct key_row k;
			in_etcd = sealed[i] &&
				  cluster_key_decode(kvs.v[i].value, kvs.v[i].value_len, &k) == 0 &&
				  !strcmp(k.id, local[j].id);
		}
		if (!in_etcd) {
			store_key_delete(c->d->store, local[j].id);
			log_kv(LOG_INFO, "cluster.key_deleted", "id=%s", local[j].id);
		}
	}
	free(sealed);
	free(local);
	etcd_kvs_clear(&kvs);
	return r;
}

/* The pair of kvs whose key is key, or NULL. */
static const struct etcd_kv *find_kv(const struct etcd_kvs *kvs, const char *key)
{
	for (size_t i = 0; i < kvs->n; i++)
		if (!strcmp(kvs->v[i].key, key))
			return &kvs->v[i];
	return NULL;
}

int cluster__keys_push(struct cluster *c)
{
	struct key_row *keys = NULL;
	size_t n = 0;
	struct etcd_kvs kvs;
	int r = cluster__range_under(c, "keys/", NULL, NULL, &kvs);
	if (r)
		return r;
	r = store_key_list(c->d->store, NULL, &keys, &n);
	for (size_t i = 0; !r && i < n; i++) {
		/* the store gives no secret and no hash by id: find the hash */
		char hash[AUTH_HASH_HEX_LEN + 1], key[ETCD_KEY_MAX + 1];
		if (store_key_hash(c->d->store, keys[i].id, hash) < 0 ||
		    cluster__key(c, key, "keys/", hash, NULL) < 0)
			continue;
		const struct etcd_kv *kv = find_kv(&kvs, key);
		int unsealed = kv && cluster_unseal(c->secret, c->secret_len, key, kv->value,
						    kv->value_len) != 0;
		if ((kv && !unsealed) || (!kv && !keys[i].admin))
			continue; /* sealed already; or deleted, not this node's to bring back */
		char *text = cluster_key_encode(&keys[i]);
		char *rec = text ? cluster__seal(c, key, text) : NULL;
		r = rec ? 0 : -ENOMEM;
		if (!r && kv) {
			/* a record of an older version, unsealed, of a key this node
			 * holds: its own copy, sealed, takes its place */
			r = etcd_put_at(c->etcd, key, rec, strlen(rec), 0, kv->mod_revision, NULL);
			if (!r)
				log_kv(LOG_INFO, "cluster.key_sealed", "id=%s", keys[i].id);
		} else if (!r) {
			r = etcd_put_new(c->etcd, key, rec, strlen(rec), 0, NULL);
		}
		if (r == -EEXIST || r == -ESTALE)
			r = 0; /* another node did it first */
		free(text);
		free(rec);
	}
	free(keys);
	etcd_kvs_clear(&kvs);
	return cluster__etcd_result(c, r);
}

static void *view_main(void *arg)
{
	struct cluster *c = arg;
	for (;;) {
		pthread_mutex_lock(&c->lock);
		int stop = c->stop;
		pthread_mutex_unlock(&c->lock);
		if (stop)
			break;
		int64_t rev = 0;
		int r = read_nodes(c, &rev);
		if (!r)
			r = read_keys(c);
		if (!r)
			r = etcd_watch(c->etcd, c->prefix, rev + 1, VIEW_WATCH_MS, on_watch, c,
				       &c->stop_flag);
		if (r < 0 && r != -ECANCELED) {
			log_kv(LOG_DEBUG, "cluster.view_retry", "err=%d", r);
			cluster__etcd_result(c, r);
			cluster__wait(c, VIEW_RETRY_MS, NULL);
		}
	}
	return NULL;
}

int cluster__view_start(struct cluster *c)
{
	int64_t rev;
	int r = read_nodes(c, &rev);
	if (!r)
		r = read_keys(c);
	if (r)
		return r;
	r = -pthread_create(&c->view_thread, NULL, view_main, c);
	if (!r)
		c->threads |= 2;
	return r;
}
