/*
 * cluster_node.c - the node thread: this node's lease, its record, and its
 * sandboxes' records (see cluster_int.h).
 *
 * Every NODE_TICK_MS the thread
 *   - renews the lease every ttl/3 (a lease that expired meanwhile, say
 *     while etcd was unreachable, is replaced: the node registers again
 *     and publishes every sandbox again, which is how a node that comes
 *     back adopts what is still alive on it);
 *   - publishes its node record (capacity, templates) when it changed, or
 *     every NODE_RECORD_MS;
 *   - publishes its sandboxes: each SQLite row of this node whose record
 *     text differs from what it last published is put, and the record of
 *     a row that is gone (deleted, purged) is deleted.
 * Before it publishes a sandbox for the first time after registering, it
 * looks for a tombstone (deleted/<id>): a sandbox deleted through another
 * node while this one was gone is stopped here instead.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "daemon/cluster/cluster_int.h"
#include "daemon/daemon.h"
#include "daemon/sandbox/capacity.h"
#include "daemon/sandbox/sandbox.h"

#define NODE_TICK_MS 250
#define NODE_RECORD_MS 2000

/* This node's record as it is now. */
static void node_now(struct cluster *c, struct cluster_node *n)
{
	memset(n, 0, sizeof(*n));
	snprintf(n->name, sizeof(n->name), "%s", c->node);
	snprintf(n->url, sizeof(n->url), "%s", c->url);
	n->updated_at_ms = (int64_t)(util_wall_ns() / 1000000u);
	struct capacity cap;
	if (capacity_read(c->d, &cap) == 0) {
		n->memory_available_bytes = cap.memory_available_bytes;
		n->memory_reserve_bytes = cap.memory_reserve_bytes;
		n->disk_free_bytes = cap.disk_free_bytes;
		n->disk_reserve_bytes = cap.disk_reserve_bytes;
	}
	n->sandboxes_running = sandboxes_count_running(c->d->sandboxes);
	n->vm_memory_overhead_mib = c->d->cfg.vm_memory_overhead_mib;
	pthread_mutex_lock(&c->lock);
	memcpy(n->tpls, c->tpls, c->ntpls * sizeof(c->tpls[0]));
	n->ntpls = c->ntpls;
	pthread_mutex_unlock(&c->lock);
}

static int put_record(struct cluster *c, int64_t lease)
{
	struct cluster_node n;
	node_now(c, &n);
	json_t *o = cluster_node_encode(&n);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	char key[ETCD_KEY_MAX + 1];
	int r = text ? cluster__key(c, key, "nodes/", c->node, NULL) : -ENOMEM;
	char *rec = r ? NULL : cluster__seal(c, key, text);
	if (!r && !rec)
		r = -ENOMEM;
	if (!r)
		r = cluster__etcd_result(c, etcd_put(c->etcd, key, rec, strlen(rec), lease, NULL));
	free(text);
	free(rec);
	return r;
}

/* A new lease and the node record on it. */
static int do_register(struct cluster *c)
{
	int64_t lease = 0;
	int r = cluster__etcd_result(c, etcd_lease_grant(c->etcd, c->ttl_s, &lease));
	if (!r)
		r = put_record(c, lease);
	if (r) {
		if (lease)
			etcd_lease_revoke(c->etcd, lease);
		return r;
	}
	pthread_mutex_lock(&c->lock);
	c->lease = lease;
	pthread_mutex_unlock(&c->lock);
	json_object_clear(c->published); /* publish every sandbox again */
	c->republish = 1;
	log_kv(LOG_INFO, "cluster.registered", "node=%s lease=%lld", c->node, (long long)lease);
	return 0;
}

/* Stop and forget local sandboxes deleted elsewhere while this node was
 * gone (their tombstones), then remove the tombstones. */
static int apply_tombstones(struct cluster *c)
{
	struct etcd_kvs kvs;
	int r = cluster__range_under(c, "deleted/", NULL, NULL, &kvs);
	if (r)
		return r;
	for (size_t i = 0; i < kvs.n; i++) {
		const char *id = strrchr(kvs.v[i].key, '/');
		struct sandbox_row row;
		if (!id || !sandbox_id_valid(id + 1) ||
		    store_sandbox_get(c->d->store, id + 1, &row) < 0)
			continue; /* another node's, or already gone here */
		if (cluster__unseal(c, &kvs.v[i]) < 0) {
			sandbox_row_clear(&row); /* not a node's: logged, ignored */
			continue;
		}
		int e = sbx_delete(c->d->sandboxes, row.team, row.id);
		log_kv(LOG_INFO, "cluster.tombstone", "id=%s team=%s err=%d", row.id, row.team, e);
		sandbox_row_clear(&row);
		if (e == 0 || e == -ENOENT)
			etcd_delete(c->etcd, kvs.v[i].key, 0, NULL);
	}
	etcd_kvs_clear(&kvs);
	return 0;
}

/* Publish the records of this node's rows that changed; delete those of
 * rows that went.  Stops at the first etcd failure (the next tick retries). */
static int publish_sandboxes(struct cluster *c)
{
	if (c->republish) {
		int r = apply_tombstones(c);
		if (r)
			return r;
		c->republish = 0;
	}
	struct sandbox_row *rows = NULL;
	size_t n = 0;
	int r = store_sandbox_list(c->d->store, NULL, NULL, &rows, &n);
	if (r)
		return r;
	json_t *seen = json_object();
	for (size_t i = 0; !r && seen && i < n; i++) {
		char *text = cluster_sandbox_encode(c->node, &rows[i]);
		char key[ETCD_KEY_MAX + 1];
		if (!text || cluster__sandbox_key(c, rows[i].team, rows[i].id, key) < 0) {
			free(text);
			continue;
		}
		json_object_set_new(seen, rows[i].id, json_string(key));
		const char *was = json_string_value(json_object_get(c->published, rows[i].id));
		if (!was || strcmp(was, text) != 0) {
			char *rec = cluster__seal(c, key, text);
			r = rec ? cluster__etcd_result(c, etcd_put(c->etcd, key, rec, strlen(rec), 0,
								   NULL))
				: -ENOMEM;
			free(rec);
			if (!r)
				json_object_set_new(c->published, rows[i].id, json_string(text));
		}
		free(text);
	}
	sandbox_rows_free(rows, n);
	if (!seen)
		return -ENOMEM;
	/* rows that are gone: their records go too */
	const char *id;
	json_t *v;
	void *tmp;
	json_object_foreach_safe(c->published, tmp, id, v) {
		if (r || json_object_get(seen, id))
			continue;
		char team[STORE_NAME_MAX] = "";
		struct cluster_sandbox rec;
		const char *text = json_string_value(v);
		if (text && cluster_sandbox_decode(text, strlen(text), &rec) == 0) {
			snprintf(team, sizeof(team), "%s", rec.row.team);
			sandbox_row_clear(&rec.row);
		}
		char key[ETCD_KEY_MAX + 1];
		if (team[0] && cluster__sandbox_key(c, team, id, key) == 0)
			r = cluster__etcd_result(c, etcd_delete(c->etcd, key, 0, NULL));
		if (!r)
			json_object_del(c->published, id);
	}
	json_decref(seen);
	return r;
}

static void *node_main(void *arg)
{
	struct cluster *c = arg;
	int64_t next_keepalive = util_now_ms() + c->ttl_s * 1000 / 3;
	int64_t next_record = util_now_ms() + NODE_RECORD_MS;
	unsigned last_running = 0;
	while (!cluster__wait(c, NODE_TICK_MS, &c->wake)) {
		pthread_mutex_lock(&c->lock);
		int64_t lease = c->lease;
		pthread_mutex_unlock(&c->lock);
		int64_t now = util_now_ms();
		if (!lease) {
			if (do_register(c) < 0)
				continue;
			next_keepalive = now + c->ttl_s * 1000 / 3;
			next_record = now + NODE_RECORD_MS;
			pthread_mutex_lock(&c->lock);
			lease = c->lease;
			pthread_mutex_unlock(&c->lock);
		} else if (now >= next_keepalive) {
			int64_t left = 0;
			int r = cluster__etcd_result(c, etcd_lease_keepalive(c->etcd, lease, &left));
			if (!r && left == 0) {
				log_kv(LOG_WARN, "cluster.lease_expired", "node=%s lease=%lld", c->node,
				       (long long)lease);
				pthread_mutex_lock(&c->lock);
				c->lease = 0;
				pthread_mutex_unlock(&c->lock);
				continue;
			}
			/* on failure try again soon: the lease may still be saved */
			next_keepalive = now + (r ? 500 : c->ttl_s * 1000 / 3);
		}
		unsigned running = sandboxes_count_running(c->d->sandboxes);
		if (now >= next_record || running != last_running) {
			if (put_record(c, lease) == 0) {
				next_record = now + NODE_RECORD_MS;
				last_running = running;
			}
		}
		publish_sandboxes(c);
	}
	return NULL;
}

int cluster__node_start(struct cluster *c)
{
	int r = do_register(c);
	if (!r)
		r = publish_sandboxes(c);
	if (r)
		return r;
	r = -pthread_create(&c->node_thread, NULL, node_main, c);
	if (!r)
		c->threads |= 1;
	return r;
}
