/*
 * api_sandboxes.c - POST/GET /v1/sandboxes, GET/DELETE /v1/sandboxes/{id},
 * POST /v1/sandboxes/{id}/ttl.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/api.h"
#include "daemon/cluster/cluster.h"
#include "daemon/daemon.h"
#include "daemon/http/http_reply.h"
#include "daemon/sandbox/sandbox.h"
#include "daemon/sandbox/sandbox_json.h"
#include "daemon/store/store.h"

#define MAX_META_FILTERS 32

void api_sandboxes_create(struct http_req *r)
{
	struct create_sandbox_body b;
	struct body_error be;
	if (body_parse_create_sandbox(r->body, r->body_len, &r->d->limits, &b, &be) < 0) {
		api_reply_body_error(r, &be);
		return;
	}
	/* cluster: the create may be placed on another node */
	if (r->d->cluster && cluster_create_place(r->d->cluster, r, &b)) {
		create_sandbox_body_clear(&b);
		return;
	}
	struct sandbox_row row;
	struct sbx_err err;
	const char *from = NULL;
	int e = sbx_create(r->d->sandboxes, r->who.team, &b, &row, &from, &err);
	create_sandbox_body_clear(&b);
	if (e < 0) {
		http_reply_error(r, err.err, "%s", err.message);
		return;
	}
	/* cluster: sandbox -> this node, in etcd, or no sandbox */
	if (r->d->cluster && (e = cluster_create_record(r->d->cluster, &row)) < 0) {
		sbx_delete(r->d->sandboxes, r->who.team, row.id);
		sandbox_row_clear(&row);
		http_reply_error(r, e == -ENOTCONN ? API_ERR_CLUSTER_UNAVAILABLE : API_ERR_INTERNAL,
				 "the sandbox could not be recorded in the cluster's store (etcd)");
		return;
	}
	json_t *o = api_sandbox_json_full(r, &row);
	/* Only the create's answer says which path served it. */
	if (o)
		json_object_set_new(o, "restored_from", json_string(from));
	sandbox_row_clear(&row);
	http_reply_json(r, 201, o);
}

/* Query filters of GET /v1/sandboxes. */
struct list_filter {
	const char *status;
	const char *meta_key[MAX_META_FILTERS];
	const char *meta_val[MAX_META_FILTERS];
	int nmeta;
	const char *bad;   /* first unknown or bad parameter */
};

static enum MHD_Result collect_filter(void *cls, enum MHD_ValueKind kind, const char *key,
				      const char *value)
{
	struct list_filter *f = cls;
	(void)kind;
	if (!strcmp(key, "status") && value) {
		f->status = value;
	} else if (!strncmp(key, "metadata.", 9) && body_meta_key_ok(key + 9) && value &&
		   f->nmeta < MAX_META_FILTERS) {
		f->meta_key[f->nmeta] = key + 9;
		f->meta_val[f->nmeta++] = value;
	} else if (!f->bad) {
		f->bad = key;
	}
	return MHD_YES;
}

static int matches(const struct sandbox_row *row, const struct list_filter *f)
{
	if (f->nmeta == 0)
		return 1;
	json_t *meta = json_loads(row->metadata_json ? row->metadata_json : "{}", 0, NULL);
	int ok = json_is_object(meta);
	for (int i = 0; ok && i < f->nmeta; i++) {
		const char *v = json_string_value(json_object_get(meta, f->meta_key[i]));
		ok = v && strcmp(v, f->meta_val[i]) == 0;
	}
	json_decref(meta);
	return ok;
}

void api_sandboxes_list(struct http_req *r)
{
	/* the query's names were checked with the route (routes.c) */
	struct list_filter f = {0};
	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, collect_filter, &f);
	if (f.nmeta == MAX_META_FILTERS && f.bad && !strncmp(f.bad, "metadata.", 9)) {
		http_reply_error(r, API_ERR_INVALID_QUERY, "at most %d metadata filters",
				 MAX_META_FILTERS);
		return;
	}
	if (f.bad && !strncmp(f.bad, "metadata.", 9)) {
		http_reply_error(r, API_ERR_INVALID_QUERY,
				 "metadata filter '%.64s': KEY must be 1-%d characters of [A-Za-z0-9_.-]"
				 " and a value is required", f.bad, BODY_META_KEY_MAX);
		return;
	}
	if (f.bad) {
		http_reply_error(r, API_ERR_INVALID_QUERY,
				 "unknown query parameter '%.64s' (use status= or metadata.KEY=)",
				 f.bad);
		return;
	}
	static const char *const states[] = {"running", "paused", "stopped", "error", "lost"};
	int known = !f.status;
	for (size_t i = 0; f.status && i < 5; i++)
		known |= !strcmp(f.status, states[i]);
	if (!known) {
		http_reply_error(r, API_ERR_INVALID_QUERY,
				 "status must be running, paused, stopped, error or lost");
		return;
	}
	struct sandbox_row *rows;
	size_t n;
	/* cluster: every node's sandboxes */
	int e = r->d->cluster
			? cluster_sandbox_list(r->d->cluster, r->who.team, f.status, &rows, &n)
			: store_sandbox_list(r->d->store, r->who.team, f.status, &rows, &n);
	if (e < 0) {
		http_reply_error(r, API_ERR_INTERNAL, "could not list sandboxes");
		return;
	}
	json_t *arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		if (matches(&rows[i], &f))
			json_array_append_new(arr, sandbox_json(&rows[i]));
	sandbox_rows_free(rows, n);
	http_reply_json(r, 200, arr ? json_pack("{s:o}", "sandboxes", arr) : NULL);
}

void api_sandboxes_get(struct http_req *r)
{
	struct sandbox_row row;
	if (api_sandbox_row(r, &row) < 0)
		return;
	json_t *o = api_sandbox_json_full(r, &row);
	sandbox_row_clear(&row);
	http_reply_json(r, 200, o);
}

void api_sandboxes_delete(struct http_req *r)
{
	int e = sbx_delete(r->d->sandboxes, r->who.team, r->params[0]);
	if (e == -ENOENT) {
		http_reply_error(r, API_ERR_SANDBOX_NOT_FOUND, "no sandbox '%.64s'", r->params[0]);
		return;
	}
	if (e < 0) {
		http_reply_error(r, API_ERR_INTERNAL, "could not delete the sandbox");
		return;
	}
	http_reply_empty(r, 204);
}

void api_sandboxes_ttl(struct http_req *r)
{
	struct ttl_body b;
	struct body_error be;
	if (body_parse_ttl(r->body, r->body_len, &r->d->limits, &b, &be) < 0) {
		api_reply_body_error(r, &be);
		return;
	}
	struct sandbox_row row;
	int e = sbx_set_ttl(r->d->sandboxes, r->who.team, r->params[0], b.ttl_seconds, &row);
	if (e == -ENOENT) {
		http_reply_error(r, API_ERR_SANDBOX_NOT_FOUND, "no sandbox '%.64s'", r->params[0]);
		return;
	}
	if (e == -ESRCH) {
		http_reply_error(r, API_ERR_SANDBOX_NOT_RUNNING, "sandbox %.64s is not running",
				 r->params[0]);
		return;
	}
	if (e < 0) {
		http_reply_error(r, API_ERR_INTERNAL, "could not update the sandbox");
		return;
	}
	json_t *o = sandbox_json(&row);
	sandbox_row_clear(&row);
	http_reply_json(r, 200, o);
}
