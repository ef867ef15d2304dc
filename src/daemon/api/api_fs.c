/*
 * api_fs.c - file metadata routes: GET .../fs/stat, GET .../fs/list,
 * DELETE .../fs, POST .../fs/mkdir.  Each is one agent operation (stat,
 * list, remove, mkdir in docs/agent-protocol.md); guest errors map to the
 * API's codes (api_agent_error).  Transfers are in api_fs_transfer.c.
 */
#include <errno.h>
#include <string.h>

#include "daemon/api/api.h"
#include "daemon/daemon.h"
#include "daemon/http/http_reply.h"

const char *api_fs_query_path(struct http_req *r)
{
	const char *p = http_query(r, "path");
	struct body_error be;
	if (body_check_path(p, &be) < 0) {
		api_reply_body_error(r, &be);
		return NULL;
	}
	return p;
}

/*
 * Run op on the request's sandbox.  Returns the END object (new reference)
 * for the caller to answer with, or NULL when an answer was already sent
 * (no sandbox, agent failure, guest error).
 */
static json_t *fs_call(struct http_req *r, struct sbx *sb, json_t *req, const char *what)
{
	json_t *res = NULL;
	int e = req ? sbx_call(sb, req, API_AGENT_CALL_MS, &res) : -ENOMEM;
	json_decref(req);
	/* A guest error comes as an END with "error" (e == 0) or an ERROR
	 * frame (-EPROTO): both carry the errno name to map. */
	if ((e == 0 || e == -EPROTO) && api_agent_file_error(r, res)) {
		json_decref(res);
		return NULL;
	}
	if (e == 0)
		return res;
	json_decref(res);
	api_reply_agent_failure(r, sb, e == -EPROTO ? -EIO : e, what);
	return NULL;
}

/* Answer status with the stat object of path in sb. */
static void reply_stat(struct http_req *r, struct sbx *sb, const char *path, unsigned status)
{
	json_t *res = fs_call(r, sb, json_pack("{s:s, s:s}", "op", "stat", "path", path), "stat");
	json_t *o = res ? api_fs_entry_json(res) : NULL;
	if (o)
		http_reply_json(r, status, o);
	else if (res)
		http_reply_error(r, API_ERR_AGENT_ERROR, "the guest sent a malformed stat");
	json_decref(res);
}

void api_fs_stat(struct http_req *r)
{
	const char *path = api_fs_query_path(r);
	struct sbx *sb = path ? api_acquire(r) : NULL;
	if (!sb)
		return;
	reply_stat(r, sb, path, 200);
	sbx_release(sb);
}

void api_fs_list(struct http_req *r)
{
	const char *path = api_fs_query_path(r);
	struct sbx *sb = path ? api_acquire(r) : NULL;
	if (!sb)
		return;
	json_t *res = fs_call(r, sb, json_pack("{s:s, s:s}", "op", "list", "path", path), "list");
	if (res) {
		json_t *entries = json_object_get(res, "entries");
		json_t *arr = json_array();
		size_t i;
		json_t *e;
		json_array_foreach(entries, i, e) {
			json_t *o = api_fs_entry_json(e);
			if (o && arr)
				json_array_append_new(arr, o);
			else
				json_decref(o);
		}
		json_t *out = arr ? json_pack("{s:s, s:o, s:b}", "path", path, "entries", arr,
					      "truncated",
					      json_is_true(json_object_get(res, "truncated")))
				  : NULL;
		http_reply_json(r, 200, out);
		json_decref(res);
	}
	sbx_release(sb);
}

void api_fs_remove(struct http_req *r)
{
	const char *path = api_fs_query_path(r);
	if (!path)
		return;
	if (strcmp(path, "/") == 0) {
		http_reply_error(r, API_ERR_INVALID_PATH, "the root directory cannot be removed");
		return;
	}
	int recursive;
	struct body_error be;
	if (body_parse_bool_query("recursive", http_query(r, "recursive"), 0, &recursive, &be) < 0) {
		api_reply_body_error(r, &be);
		return;
	}
	struct sbx *sb = api_acquire(r);
	if (!sb)
		return;
	json_t *res = fs_call(r, sb,
			      json_pack("{s:s, s:s, s:b}", "op", "remove", "path", path,
					"recursive", recursive),
			      "remove");
	if (res) {
		http_reply_empty(r, 204);
		json_decref(res);
	}
	sbx_release(sb);
}

void api_fs_mkdir(struct http_req *r)
{
	struct mkdir_body b;
	struct body_error be;
	if (body_parse_mkdir(r->body, r->body_len, &b, &be) < 0) {
		api_reply_body_error(r, &be);
		return;
	}
	struct sbx *sb = api_acquire(r);
	if (!sb) {
		mkdir_body_clear(&b);
		return;
	}
	json_t *res = fs_call(r, sb,
			      json_pack("{s:s, s:s, s:b, s:i}", "op", "mkdir", "path", b.path,
					"parents", b.parents, "mode", 0755),
			      "mkdir");
	if (res) {
		json_decref(res);
		reply_stat(r, sb, b.path, 201);
	}
	mkdir_body_clear(&b);
	sbx_release(sb);
}
