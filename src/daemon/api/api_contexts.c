/*
 * api_contexts.c - code contexts of a sandbox (docs/api.md, "Code
 * contexts"): POST /v1/sandboxes/{id}/contexts (create), GET (list),
 * DELETE .../contexts/{ctx}, POST .../contexts/{ctx}/interrupt and
 * .../restart.  Running code in one is api_context_run.c.
 *
 * A context is a persistent kernel in the guest; the guest agent keeps it
 * by the id the daemon chose ("ctx_" + 20 hex digits), so it survives a
 * daemon restart, and the daemon records it in SQLite (store.h).  The
 * agent is the truth about which contexts live: a list asks it, and rows
 * of contexts it no longer has (reaped after --context-idle-timeout,
 * deleted) are dropped then.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "daemon/api/api.h"
#include "daemon/daemon.h"
#include "daemon/http/http_reply.h"

/* How long a create may wait for its kernel, ms: a fresh ipykernel under
 * TCG takes seconds, a spare still warming up (pandas) tens of seconds. */
#define CREATE_WAIT_MS 80000

int api_context_id_valid(const char *s)
{
	if (strncmp(s, "ctx_", 4) != 0 || strlen(s) != 4 + API_CTX_ID_HEX)
		return 0;
	for (const char *p = s + 4; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return 0;
	return 1;
}

/* The error object of an agent END, or the ERROR object itself. */
static json_t *agent_error_of(json_t *end)
{
	json_t *e = json_object_get(end, "error");
	if (!e && json_is_string(json_object_get(end, "code")))
		e = end;
	return e;
}

int api_context_missing(json_t *end)
{
	const char *code = json_string_value(json_object_get(agent_error_of(end), "code"));
	return code && (!strcmp(code, "ENOENT") || !strcmp(code, "ECANCELED") ||
			!strcmp(code, "ETIMEDOUT") || !strcmp(code, "ESHUTDOWN"));
}

int api_context_reply_missing(struct http_req *r, json_t *end)
{
	if (!api_context_missing(end))
		return 0;
	const char *msg = json_string_value(json_object_get(agent_error_of(end), "message"));
	http_reply_error(r, API_ERR_CONTEXT_NOT_FOUND, "context %.64s: %.200s", r->params[1],
			 msg ? msg : "gone");
	return 1;
}

/* The API's context object from the agent's description (guest data:
 * only known fields of the right type are kept); created_ms (wall clock)
 * wins over the guest's when > 0. */
static json_t *context_json(json_t *g, int64_t created_ms)
{
	json_t *id = json_object_get(g, "id");
	if (!json_is_string(id))
		return NULL;
	if (created_ms <= 0) {
		json_t *c = json_object_get(g, "created_at_ms");
		created_ms = json_is_integer(c) ? (int64_t)json_integer_value(c) : 0;
	}
	char created[32];
	util_iso_time(created_ms, created);
	json_t *o = json_pack("{s:O, s:s, s:s}", "id", id, "language", "python", "created_at",
			      created);
	if (!o)
		return NULL;
	static const char *const strs[] = {"cwd", "kernel", "language_version", "notebook"};
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		json_t *v = json_object_get(g, strs[i]);
		json_object_set_new(o, strs[i], json_is_string(v) ? json_copy(v) : json_null());
	}
	json_object_set_new(o, "busy", json_boolean(json_is_true(json_object_get(g, "busy"))));
	return o;
}

void api_contexts_create(struct http_req *r)
{
	struct context_body b;
	struct body_error be;
	if (body_parse_context(r->body, r->body_len, &b, &be) < 0) {
		api_reply_body_error(r, &be);
		return;
	}
	struct sbx *sb = api_acquire(r);
	if (!sb) {
		context_body_clear(&b);
		return;
	}
	struct context_row row = {0};
	uint8_t rnd[API_CTX_ID_HEX / 2];
	char hex[API_CTX_ID_HEX + 1];
	util_random(rnd, sizeof(rnd));
	util_hex(rnd, sizeof(rnd), hex);
	snprintf(row.id, sizeof(row.id), "ctx_%s", hex);
	snprintf(row.sandbox_id, sizeof(row.sandbox_id), "%s", sbx_id(sb));
	snprintf(row.language, sizeof(row.language), "python");
	json_t *env = json_deep_copy(sbx_env(sb));
	if (env && json_object_update(env, b.env) < 0) {
		json_decref(env);
		env = NULL;
	}
	json_t *req = env ? json_pack("{s:s, s:s, s:s, s:o, s:I}", "op", "context_create", "id",
				      row.id, "language", "python", "env", env, "idle_timeout_ms",
				      (json_int_t)(r->d->cfg.context_idle_timeout_s * 1000))
			  : NULL;
	if (req && b.cwd)
		json_object_set_new(req, "cwd", json_string(b.cwd));
	if (req && b.notebook && b.notebook[0])
		json_object_set_new(req, "notebook", json_string(b.notebook));
	else if (req && b.notebook)
		json_object_set_new(req, "notebook_off", json_true());
	context_body_clear(&b);
	json_t *res = NULL;
	int e = req ? sbx_call(sb, req, CREATE_WAIT_MS, &res) : -ENOMEM;
	json_decref(req);
	const char *gcode = json_string_value(json_object_get(json_object_get(res, "error"),
							       "code"));
	const char *gmsg = json_string_value(json_object_get(json_object_get(res, "error"),
							      "message"));
	if (e && e != -EPROTO) {
		api_reply_agent_failure(r, sb, e, "context create");
	} else if (gcode && !strcmp(gcode, "EMFILE")) {
		http_reply_error(r, API_ERR_TOO_MANY_CONTEXTS, "%.300s", gmsg ? gmsg : "");
	} else if (gcode && !strcmp(gcode, "EIO")) {
		http_reply_error(r, API_ERR_CONTEXT_START_FAILED, "%.400s",
				 gmsg ? gmsg : "the kernel could not start");
	} else if (!api_agent_error(r, res)) {
		json_t *cwd = json_object_get(res, "cwd");
		snprintf(row.cwd, sizeof(row.cwd), "%s",
			 json_is_string(cwd) ? json_string_value(cwd) : "");
		row.created_at_ms = (int64_t)(util_wall_ns() / 1000000u);
		int se = store_context_insert(r->d->store, &row);
		if (se < 0)
			log_kv(LOG_WARN, "context.store_failed", "id=%s errno=%d", row.id, -se);
		json_t *o = context_json(res, row.created_at_ms);
		if (o) {
			json_object_set_new(o, "id", json_string(row.id));
			log_kv(LOG_INFO, "context.created", "sandbox=%s id=%s kernel=%s",
			       row.sandbox_id, row.id,
			       json_string_value(json_object_get(o, "kernel")));
			http_reply_json(r, 201, o);
		} else {
			http_reply_error(r, API_ERR_INTERNAL, "out of memory");
		}
	}
	json_decref(res);
	sbx_release(sb);
}

/* The id of the i-th context of the guest's list, or "". */
static const char *guest_id(json_t *list, size_t i)
{
	const char *id = json_string_value(json_object_get(json_array_get(list, i), "id"));
	return id ? id : "";
}

void api_contexts_list(struct http_req *r)
{
	struct sbx *sb = api_acquire(r);
	if (!sb)
		return;
	json_t *req = json_pack("{s:s}", "op", "context_list");
	json_t *res = NULL;
	int e = req ? sbx_call(sb, req, API_AGENT_CALL_MS, &res) : -ENOMEM;
	json_decref(req);
	struct context_row *rows = NULL;
	size_t n = 0;
	if (e) {
		api_reply_agent_failure(r, sb, e, "context list");
		goto out;
	}
	if (api_agent_error(r, res))
		goto out;
	if (store_context_list(r->d->store, sbx_id(sb), &rows, &n) < 0) {
		http_reply_error(r, API_ERR_INTERNAL, "the registry failed");
		goto out;
	}
	json_t *live = json_object_get(res, "contexts");
	size_t nlive = json_array_size(live);
	json_t *arr = json_array();
	for (size_t i = 0; arr && i < nlive; i++) {
		int64_t created = 0;
		for (size_t k = 0; k < n; k++)
			if (!strcmp(rows[k].id, guest_id(live, i)))
				created = rows[k].created_at_ms;
		json_t *o = context_json(json_array_get(live, i), created);
		if (o)
			json_array_append_new(arr, o);
	}
	/* rows of contexts the guest no longer has (reaped when idle, lost) */
	for (size_t k = 0; k < n; k++) {
		int found = 0;
		for (size_t i = 0; i < nlive && !found; i++)
			found = !strcmp(rows[k].id, guest_id(live, i));
		if (!found)
			store_context_delete(r->d->store, sbx_id(sb), rows[k].id);
	}
	http_reply_json(r, 200, arr ? json_pack("{s:o}", "contexts", arr) : NULL);
out:
	free(rows);
	json_decref(res);
	sbx_release(sb);
}

/*
 * One of the agent's context_delete / _interrupt / _restart (op) on
 * r->params[1]: 204 on success (delete also forgets the row), 404
 * context_not_found, or the agent's failure.  Interrupt and restart take
 * an empty body (or {}).  what names it for logs.
 */
static void context_op(struct http_req *r, const char *op, const char *what)
{
	int del = strcmp(op, "context_delete") == 0;
	struct body_error be;
	if (!del && body_parse_empty(r->body, r->body_len, &be) < 0) {
		api_reply_body_error(r, &be);
		return;
	}
	if (!api_context_id_valid(r->params[1])) {
		http_reply_error(r, API_ERR_CONTEXT_NOT_FOUND, "no context '%.64s'", r->params[1]);
		return;
	}
	struct sbx *sb = api_acquire(r);
	if (!sb)
		return;
	json_t *req = json_pack("{s:s, s:s}", "op", op, "id", r->params[1]);
	json_t *res = NULL;
	int e = req ? sbx_call(sb, req, API_AGENT_CALL_MS, &res) : -ENOMEM;
	json_decref(req);
	if (e && e != -EPROTO) {
		api_reply_agent_failure(r, sb, e, what);
	} else {
		if (del)
			store_context_delete(r->d->store, sbx_id(sb), r->params[1]);
		if (!api_context_reply_missing(r, res) && !api_agent_error(r, res)) {
			char ev[32];
			snprintf(ev, sizeof(ev), "context.%s", what);
			log_kv(LOG_INFO, ev, "sandbox=%s id=%s", sbx_id(sb), r->params[1]);
			http_reply_empty(r, 204);
		}
	}
	json_decref(res);
	sbx_release(sb);
}

void api_contexts_delete(struct http_req *r)
{
	context_op(r, "context_delete", "deleted");
}

void api_contexts_interrupt(struct http_req *r)
{
	context_op(r, "context_interrupt", "interrupted");
}

void api_contexts_restart(struct http_req *r)
{
	context_op(r, "context_restart", "restarted");
}
