/*
 * api_snapshots.c - snapshots of sandboxes and what is made from them
 * (docs/api.md, "Snapshots, forks, pause and resume"):
 * POST /v1/sandboxes/{id}/snapshots, GET /v1/snapshots,
 * GET/DELETE /v1/snapshots/{id}, POST /v1/sandboxes/{id}/fork,
 * POST /v1/sandboxes/{id}/pause and .../resume.  Creating a sandbox from a
 * snapshot is POST /v1/sandboxes (api_sandboxes.c).
 *
 * Only a team's user snapshots are visible: the daemon's own (the capture
 * of a fork, a paused sandbox's) never are, and one the team deleted while
 * something still needs its files is gone for the API at once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "daemon/api/api.h"
#include "daemon/daemon.h"
#include "daemon/http/http_reply.h"
#include "daemon/sandbox/sandbox.h"
#include "daemon/sandbox/sandbox_json.h"
#include "daemon/sandbox/snapshots.h"
#include "daemon/store/store.h"

/* 1 when row is a snapshot the API shows to team. */
static int visible(const struct snapshot_row *row, const char *team)
{
	return !strcmp(row->team, team) && !strcmp(row->kind, "user") &&
	       !strcmp(row->state, "ready");
}

/* The API's snapshot object; parent_shown: its parent is one the team sees. */
static json_t *snapshot_json(const struct snapshot_row *row, int parent_shown)
{
	char created[32];
	util_iso_time(row->created_at_ms, created);
	return json_pack("{s:s, s:s, s:s, s:s, s:I, s:o, s:o}", "id", row->id, "sandbox_id",
			 row->sandbox_id, "template", row->template_name, "created_at", created,
			 "size_bytes", (json_int_t)row->size_bytes, "name",
			 row->name[0] ? json_string(row->name) : json_null(), "parent",
			 parent_shown && row->parent[0] ? json_string(row->parent) : json_null());
}

/* The snapshot object of row, looking its parent up. */
static json_t *snapshot_json_lookup(struct http_req *r, const struct snapshot_row *row)
{
	struct snapshot_row p;
	int shown = 0;
	if (row->parent[0] && store_snapshot_get(r->d->store, row->parent, &p) == 0) {
		shown = visible(&p, r->who.team);
		snapshot_row_clear(&p);
	}
	return snapshot_json(row, shown);
}

static void reply_sbx_err(struct http_req *r, const struct sbx_err *err)
{
	http_reply_error(r, err->err, "%s", err->message);
}

void api_snapshots_create(struct http_req *r)
{
	struct snapshot_body b;
	struct body_error be;
	if (body_parse_snapshot(r->body, r->body_len, &b, &be) < 0) {
		api_reply_body_error(r, &be);
		return;
	}
	struct snapshot_row row;
	struct sbx_err err;
	int e = sbx_snapshot(r->d->sandboxes, r->who.team, r->params[0], b.name, &row, &err);
	snapshot_body_clear(&b);
	if (e < 0) {
		reply_sbx_err(r, &err);
		return;
	}
	json_t *o = snapshot_json_lookup(r, &row);
	snapshot_row_clear(&row);
	http_reply_json(r, 201, o);
}

void api_snapshots_list(struct http_req *r)
{
	const char *sandbox = http_query(r, "sandbox_id");
	struct snapshot_row *rows = NULL;
	size_t n = 0;
	if (store_snapshot_list(r->d->store, r->who.team, "user", "ready", &rows, &n) < 0) {
		http_reply_error(r, API_ERR_INTERNAL, "could not list snapshots");
		return;
	}
	json_t *arr = json_array();
	for (size_t i = 0; arr && i < n; i++) {
		if (sandbox && strcmp(rows[i].sandbox_id, sandbox) != 0)
			continue;
		int shown = 0; /* its parent is in the list when the team sees it */
		for (size_t k = 0; rows[i].parent[0] && k < n && !shown; k++)
			shown = !strcmp(rows[k].id, rows[i].parent);
		json_array_append_new(arr, snapshot_json(&rows[i], shown));
	}
	snapshot_rows_free(rows, n);
	http_reply_json(r, 200, arr ? json_pack("{s:o}", "snapshots", arr) : NULL);
}

/* The visible snapshot of {id}: 0 with *row, or the answer sent. */
static int find_visible(struct http_req *r, struct snapshot_row *row)
{
	int e = snap_id_valid(r->params[0]) ? store_snapshot_get(r->d->store, r->params[0], row)
					    : -ENOENT;
	if (e == 0 && !visible(row, r->who.team)) {
		snapshot_row_clear(row);
		e = -ENOENT;
	}
	if (e == -ENOENT)
		http_reply_error(r, API_ERR_SNAPSHOT_NOT_FOUND, "no snapshot '%.64s'", r->params[0]);
	else if (e < 0)
		http_reply_error(r, API_ERR_INTERNAL, "could not read the snapshot");
	return e;
}

void api_snapshots_get(struct http_req *r)
{
	struct snapshot_row row;
	if (find_visible(r, &row) < 0)
		return;
	json_t *o = snapshot_json_lookup(r, &row);
	snapshot_row_clear(&row);
	http_reply_json(r, 200, o);
}

void api_snapshots_delete(struct http_req *r)
{
	struct snapshot_row row;
	if (find_visible(r, &row) < 0)
		return;
	snapshot_row_clear(&row);
	int needed = 0;
	if (store_snapshot_paused_need(r->d->store, row.id, &needed) < 0) {
		http_reply_error(r, API_ERR_INTERNAL, "the registry failed");
		return;
	}
	if (needed) {
		http_reply_error(r, API_ERR_SNAPSHOT_IN_USE,
				 "snapshot %s is needed by a paused sandbox: resume or delete it first",
				 row.id);
		return;
	}
	/* Gone for the API now; its files go when nothing needs them. */
	if (store_snapshot_set_state(r->d->store, row.id, "deleted") < 0) {
		http_reply_error(r, API_ERR_INTERNAL, "could not delete the snapshot");
		return;
	}
	snaps_gc(r->d->snaps);
	http_reply_empty(r, 204);
}

void api_sandboxes_fork(struct http_req *r)
{
	struct fork_body b;
	struct body_error be;
	if (body_parse_fork(r->body, r->body_len, &r->d->limits, &b, &be) < 0) {
		api_reply_body_error(r, &be);
		return;
	}
	struct sandbox_row *rows = NULL;
	struct sbx_err err;
	if (sbx_fork(r->d->sandboxes, r->who.team, r->params[0], (unsigned)b.count, b.ttl_seconds,
		     &rows, &err) < 0) {
		reply_sbx_err(r, &err);
		return;
	}
	json_t *arr = json_array();
	for (int64_t i = 0; arr && i < b.count; i++)
		json_array_append_new(arr, api_sandbox_json_full(r, &rows[i]));
	sandbox_rows_free(rows, (size_t)b.count);
	http_reply_json(r, 201, arr ? json_pack("{s:o}", "sandboxes", arr) : NULL);
}

/* Pause (no body) or resume (an optional ttl_seconds). */
static void pause_or_resume(struct http_req *r, int resume)
{
	struct body_error be;
	struct resume_body rb = {0};
	int bad = resume ? body_parse_resume(r->body, r->body_len, &r->d->limits, &rb, &be)
			 : body_parse_empty(r->body, r->body_len, &be);
	if (bad < 0) {
		api_reply_body_error(r, &be);
		return;
	}
	struct sandbox_row row;
	struct sbx_err err;
	int e = resume ? sbx_resume(r->d->sandboxes, r->who.team, r->params[0], rb.ttl_seconds,
				    &row, &err)
		       : sbx_pause(r->d->sandboxes, r->who.team, r->params[0], &row, &err);
	if (e < 0) {
		reply_sbx_err(r, &err);
		return;
	}
	json_t *o = sandbox_json(&row);
	sandbox_row_clear(&row);
	http_reply_json(r, 200, o);
}

void api_sandboxes_pause(struct http_req *r)
{
	pause_or_resume(r, 0);
}

void api_sandboxes_resume(struct http_req *r)
{
	pause_or_resume(r, 1);
}
