/*
 * cluster_route.c - which node serves a request: calls on a sandbox go to
 * the node its record names; creates go to the node placement chooses;
 * listings read every node's records (see cluster.h).
 *
 * Placement: among the nodes in the cluster that have the template, have
 * room for it (their available memory, less what they keep in reserve and
 * what this node just sent them, holds the sandbox's RAM and QEMU's
 * overhead) and were not just seen failing, the one with the fewest
 * sandboxes (running, plus those this node sent it or placed on itself
 * since that node's last record),
 * then the most free memory, then this node, then by name.  A node that
 * cannot be reached is skipped for the next.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/body_caps.h"
#include "common/log.h"
#include "common/util.h"
#include "daemon/cluster/cluster_int.h"
#include "daemon/daemon.h"
#include "daemon/http/http_reply.h"
#include "daemon/http/request_body.h"
#include "daemon/sandbox/sandbox_json.h"

/*
 * Records read lately, id -> text (c->records, at most RECORDS_CACHED): when
 * etcd cannot answer for a moment (a member cut off, a leader election), a
 * call on a sandbox it saw still finds its node.  A record is only ever
 * read from here in that case.
 */
#define RECORDS_CACHED 20000

static void remember(struct cluster *c, const char *id, const char *text, size_t len)
{
	pthread_mutex_lock(&c->lock);
	if (json_object_size(c->records) >= RECORDS_CACHED)
		json_object_clear(c->records);
	json_object_set_new(c->records, id, json_stringn(text, len));
	pthread_mutex_unlock(&c->lock);
}

static int recall(struct cluster *c, const char *team, const char *id,
		  struct cluster_sandbox *out)
{
	pthread_mutex_lock(&c->lock);
	json_t *v = json_object_get(c->records, id);
	char *text = v ? strndup(json_string_value(v), json_string_length(v)) : NULL;
	pthread_mutex_unlock(&c->lock);
	int r = text ? cluster_sandbox_decode(text, strlen(text), out) : -ENOTCONN;
	free(text);
	if (!r && strcmp(out->row.team, team) != 0) {
		sandbox_row_clear(&out->row);
		r = -ENOENT;
	}
	return r;
}

/* The record of team's sandbox id: 0, -ENOENT (none, or one no node
 * sealed), -ENOTCONN, -EPROTO. */
static int record_get(struct cluster *c, const char *team, const char *id,
		      struct cluster_sandbox *out, int64_t *mod_rev)
{
	char key[ETCD_KEY_MAX + 1];
	struct etcd_kvs kvs;
	int r = cluster__sandbox_key(c, team, id, key);
	if (!r)
		r = cluster__etcd_result(c, etcd_range(c->etcd, key, 0, &kvs));
	if (r == -ENOTCONN)
		return recall(c, team, id, out);
	if (r)
		return r;
	/* a record no node sealed names no node to send anything to */
	r = kvs.n == 1 ? cluster__unseal(c, &kvs.v[0]) == 0 ? 0 : -ENOENT : -ENOENT;
	if (!r)
		r = cluster_sandbox_decode(kvs.v[0].value, kvs.v[0].value_len, out);
	if (!r && strcmp(out->row.id, id) != 0) {
		sandbox_row_clear(&out->row);
		r = -EPROTO;
	}
	if (!r) {
		if (mod_rev)
			*mod_rev = kvs.v[0].mod_revision;
		remember(c, id, kvs.v[0].value, kvs.v[0].value_len);
	}
	etcd_kvs_clear(&kvs);
	return r;
}

/* A running record whose node is not in the cluster reads as lost. */
static void mark_if_lost(struct cluster *c, struct cluster_sandbox *s)
{
	struct cluster_node n;
	if (strcmp(s->row.status, "running") != 0 || cluster__node_find(c, s->node, &n) == 0)
		return;
	snprintf(s->row.status, sizeof(s->row.status), "lost");
	snprintf(s->row.reason, sizeof(s->row.reason),
		 "its node %s left the cluster (its lease expired); it may come back", s->node);
}

/* DELETE of a sandbox whose node is gone: its record goes, and a tombstone
 * tells the node to stop it if it comes back. */
static void delete_lost(struct cluster *c, struct http_req *r, const struct cluster_sandbox *s,
			int64_t mod_rev)
{
	char key[ETCD_KEY_MAX + 1], tomb[ETCD_KEY_MAX + 1];
	char text[160];
	char *rec = NULL;
	snprintf(text, sizeof(text), "{\"node\":\"%s\",\"at_ms\":%lld}", s->node,
		 (long long)(util_wall_ns() / 1000000u));
	int e = cluster__sandbox_key(c, s->row.team, s->row.id, key);
	if (!e)
		e = cluster__key(c, tomb, "deleted/", s->row.id, NULL);
	if (!e && !(rec = cluster__seal(c, tomb, text)))
		e = -ENOMEM;
	if (!e)
		e = cluster__etcd_result(c, etcd_put(c->etcd, tomb, rec, strlen(rec), 0, NULL));
	free(rec);
	if (!e)
		e = cluster__etcd_result(c, etcd_delete_at(c->etcd, key, mod_rev));
	if (e == -ENOTCONN)
		http_reply_error(r, API_ERR_CLUSTER_UNAVAILABLE,
				 "the cluster's store (etcd) cannot be reached");
	else if (e == -ESTALE)
		http_reply_error(r, API_ERR_SANDBOX_NOT_FOUND, "no sandbox '%.64s'", s->row.id);
	else if (e)
		http_reply_error(r, API_ERR_INTERNAL, "could not delete the sandbox's record");
	else {
		log_kv(LOG_INFO, "cluster.lost_deleted", "id=%s node=%s", s->row.id, s->node);
		http_reply_empty(r, 204);
	}
}

/* r carries a node signature that does not verify: 401 (logged). */
static void refuse_signature(struct http_req *r)
{
	http_reply_error(r, API_ERR_UNAUTHORIZED,
			 "the request's %s signature does not verify (stale, replayed, or for "
			 "another request)", CLUSTER_NODE_HEADER);
}

int cluster_route(struct cluster *c, struct http_req *r)
{
	if (strncmp(r->route->pattern, "/v1/sandboxes/{id}", 18) != 0 ||
	    !sandbox_id_valid(r->params[0]))
		return 0;
	int fw = cluster__request_forwarded(c, r);
	if (fw > 0)
		return 0; /* a node sent it here: served here */
	if (fw < 0) {
		refuse_signature(r);
		return 1;
	}
	const char *id = r->params[0];
	struct sandbox_row row;
	if (store_sandbox_get(c->d->store, id, &row) == 0) {
		sandbox_row_clear(&row);
		return 0; /* this node's (or another team's: answered here as 404) */
	}
	struct cluster_sandbox s;
	int64_t mod_rev = 0;
	int e = record_get(c, r->who.team, id, &s, &mod_rev);
	if (e == -ENOENT)
		return 0;
	if (e == -ENOTCONN) {
		http_reply_error(r, API_ERR_CLUSTER_UNAVAILABLE,
				 "sandbox %s is not on this node, and the cluster's store (etcd) "
				 "cannot be reached to find it", id);
		return 1;
	}
	if (e) {
		http_reply_error(r, API_ERR_INTERNAL, "the sandbox's record cannot be read");
		return 1;
	}
	struct cluster_node node;
	int here = !strcmp(s.node, c->node);
	int live = !here && cluster__node_find(c, s.node, &node) == 0;
	int answered = 1;
	if (here) {
		answered = 0; /* a record without a row: the local answer says so */
	} else if (live) {
		if (cluster__forward(c, r, &node) < 0)
			http_reply_error(r, API_ERR_INTERNAL, "out of memory");
		else
			answered = 0; /* the forwarding route takes it from here */
	} else {
		mark_if_lost(c, &s);
		int is_get = !strcmp(r->method, "GET") && !strcmp(r->route->pattern, "/v1/sandboxes/{id}");
		int is_delete = !strcmp(r->method, "DELETE") &&
				!strcmp(r->route->pattern, "/v1/sandboxes/{id}");
		if (is_get)
			http_reply_json(r, 200, sandbox_json(&s.row));
		else if (is_delete)
			delete_lost(c, r, &s, mod_rev);
		else if (!strcmp(s.row.status, "lost"))
			http_reply_error(r, API_ERR_SANDBOX_LOST,
					 "sandbox %s is lost: its node %s left the cluster (its lease "
					 "expired)", id, s.node);
		else
			http_reply_error(r, API_ERR_SANDBOX_NOT_RUNNING, "sandbox %s is not running (its status: %s)", id,
					 s.row.status);
	}
	sandbox_row_clear(&s.row);
	return answered;
}

/* ---- placement ------------------------------------------------------------- */

/* n's entry for template name, or NULL. */
static const struct cluster_tpl *has_template(const struct cluster_node *n, const char *name)
{
	for (size_t i = 0; i < n->ntpls; i++)
		if (!strcmp(n->tpls[i].name, name))
			return &n->tpls[i];
	return NULL;
}

struct candidate {
	struct cluster_node node;
	uint64_t free_bytes;   /* free memory after the sandbox */
	unsigned load;         /* running + placed recently */
	int self;
};

static int cmp_candidates(const void *pa, const void *pb)
{
	const struct candidate *a = pa, *b = pb;
	if (a->load != b->load)
		return a->load < b->load ? -1 : 1;
	if (a->free_bytes != b->free_bytes)
		return a->free_bytes > b->free_bytes ? -1 : 1;
	if (a->self != b->self)
		return a->self ? -1 : 1;
	return strcmp(a->node.name, b->node.name);
}

/* The nodes that could take a sandbox of template, best first, into *out
 * (count returned); *with_template gets how many nodes have it at all. */
static size_t candidates(struct cluster *c, const char *template, struct candidate **out,
			 size_t *with_template)
{
	*out = NULL;
	*with_template = 0;
	int64_t now = util_now_ms();
	pthread_mutex_lock(&c->lock);
	struct candidate *v = calloc(c->nnodes ? c->nnodes : 1, sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; v && i < c->nnodes; i++) {
		const struct cluster_node *nd = &c->nodes[i];
		const struct cluster_tpl *t = has_template(nd, template);
		if (!t)
			continue;
		(*with_template)++;
		uint64_t need = ((uint64_t)t->memory_mib + nd->vm_memory_overhead_mib) << 20;
		uint64_t pending = need * nd->placed_recently;
		uint64_t avail = nd->memory_available_bytes;
		if (nd->suspect_until_ms > now ||
		    avail < need + pending + nd->memory_reserve_bytes)
			continue;
		v[n].node = *nd;
		v[n].free_bytes = avail - need - pending - nd->memory_reserve_bytes;
		/* while creates are pending placed_base is at least the record's
		 * count (an older record read later shows less) */
		v[n].load = nd->placed_recently ? nd->placed_base + nd->placed_recently
						: nd->sandboxes_running;
		v[n].self = !strcmp(nd->name, c->node);
		n++;
	}
	pthread_mutex_unlock(&c->lock);
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_candidates);
	*out = v;
	return n;
}

/*
 * Count a create against node name before it is sent (added 1) or take it
 * back when it could not be (added -1).  Counted before, so that the base
 * is a record without it: a record that shows it can only come later, and
 * takes it off (cluster_placed_carry).
 */
static void note_placed(struct cluster *c, const char *name, int added)
{
	int64_t now = util_now_ms();
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->nnodes; i++) {
		struct cluster_node *nd = &c->nodes[i];
		if (strcmp(nd->name, name) != 0)
			continue;
		if (added < 0) {
			nd->placed_recently -= nd->placed_recently > 0;
			continue;
		}
		if (!nd->placed_recently)
			nd->placed_base = nd->sandboxes_running;
		nd->placed_recently++;
		nd->placed_last_ms = now;
	}
	pthread_mutex_unlock(&c->lock);
}

int cluster_create_place(struct cluster *c, struct http_req *r,
			 const struct create_sandbox_body *b)
{
	int fw = cluster__request_forwarded(c, r);
	if (fw > 0)
		return 0; /* another node placed it here */
	if (fw < 0) {
		refuse_signature(r);
		return 1;
	}
	/* A create needs its record in etcd: find out now, before a VM starts. */
	char key[ETCD_KEY_MAX + 1];
	struct etcd_kvs kvs;
	int e = cluster__key(c, key, "nodes/", c->node, NULL);
	if (!e)
		e = cluster__etcd_result(c, etcd_range(c->etcd, key, 0, &kvs));
	if (e == -ENOTCONN) {
		http_reply_error(r, API_ERR_CLUSTER_UNAVAILABLE,
				 "the cluster's store (etcd) cannot be reached: no sandbox can be "
				 "created until it answers");
		return 1;
	}
	if (!e)
		etcd_kvs_clear(&kvs);
	struct candidate *v;
	size_t with_tpl;
	size_t n = candidates(c, b->template_name, &v, &with_tpl);
	if (!v) {
		http_reply_error(r, API_ERR_INTERNAL, "out of memory");
		return 1;
	}
	int answered = 0, here = 0;
	if (with_tpl == 0 || n == 0) {
		/* No node advertises it (or none has room): this node decides,
		 * with its own 404 template_not_found or 503 host_full. */
		free(v);
		return 0;
	}
	for (size_t i = 0; i < n && !answered && !here; i++) {
		if (v[i].self) {
			/* create here; counted like a create sent elsewhere, or the
			 * next create sees this node's load without it until its
			 * own record comes back through etcd */
			note_placed(c, c->node, 1);
			here = 1;
			break;
		}
		note_placed(c, v[i].node.name, 1);
		e = cluster__forward_now(c, r, &v[i].node);
		if (e == 0) {
			answered = 1;
		} else if (e == -ECONNREFUSED) {
			note_placed(c, v[i].node.name, -1);
			cluster__node_suspect(c, v[i].node.name);
		} else {
			note_placed(c, v[i].node.name, -1);
			http_reply_error(r, API_ERR_INTERNAL, "could not forward the create");
			answered = 1;
		}
	}
	free(v);
	if (!answered && !here) {
		http_reply_error(r, API_ERR_HOST_FULL,
				 "no node that has template '%s' and room for it answered",
				 b->template_name);
		answered = 1;
	}
	return answered;
}

int cluster_create_record(struct cluster *c, const struct sandbox_row *row)
{
	char key[ETCD_KEY_MAX + 1];
	char *text = cluster_sandbox_encode(c->node, row);
	int e = text ? cluster__sandbox_key(c, row->team, row->id, key) : -ENOMEM;
	char *rec = e ? NULL : cluster__seal(c, key, text);
	if (!e && !rec)
		e = -ENOMEM;
	if (!e)
		e = cluster__etcd_result(c, etcd_put_new(c->etcd, key, rec, strlen(rec), 0, NULL));
	free(rec);
	if (!e)
		remember(c, row->id, text, strlen(text));
	free(text);
	if (!e)
		cluster__node_wake(c); /* its record: the new count */
	return e;
}

/* ---- listing ---------------------------------------------------------------- */

static int cmp_rows(const void *pa, const void *pb)
{
	const struct sandbox_row *a = pa, *b = pb;
	if (a->created_at_ms != b->created_at_ms)
		return a->created_at_ms < b->created_at_ms ? -1 : 1;
	return strcmp(a->id, b->id);
}

int cluster_sandbox_list(struct cluster *c, const char *team, const char *status,
			 struct sandbox_row **rows, size_t *n)
{
	struct etcd_kvs kvs;
	*rows = NULL;
	*n = 0;
	int e = cluster__range_under(c, "sandboxes/", team, "/", &kvs);
	if (e == -ENOTCONN) /* this node's own, the best there is */
		return store_sandbox_list(c->d->store, team, status, rows, n);
	if (e)
		return e;
	struct sandbox_row *out = calloc(kvs.n ? kvs.n : 1, sizeof(*out));
	size_t m = 0;
	for (size_t i = 0; out && i < kvs.n && m < STORE_LIST_MAX; i++) {
		struct cluster_sandbox s;
		if (cluster__unseal(c, &kvs.v[i]) < 0)
			continue; /* not a node's: logged, not listed */
		if (cluster_sandbox_decode(kvs.v[i].value, kvs.v[i].value_len, &s) < 0 ||
		    strcmp(s.row.team, team) != 0) {
			log_kv(LOG_WARN, "cluster.bad_sandbox_record", "key=%.120s", kvs.v[i].key);
			continue;
		}
		mark_if_lost(c, &s);
		if (status && strcmp(status, s.row.status) != 0) {
			sandbox_row_clear(&s.row);
			continue;
		}
		out[m++] = s.row;
	}
	etcd_kvs_clear(&kvs);
	if (!out)
		return -ENOMEM;
	qsort(out, m, sizeof(*out), cmp_rows);
	*rows = out;
	*n = m;
	return 0;
}
