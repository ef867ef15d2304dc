/*
 * api_commands.c - background commands of a sandbox (docs/api.md,
 * "Background commands"): POST .../exec with "background": true (start),
 * GET /v1/sandboxes/{id}/commands (list), POST .../commands/{cid}/kill,
 * GET .../commands/{cid}/output, POST .../commands/{cid}/stdin.
 *
 * A background command belongs to the guest agent (docs/agent-protocol.md,
 * "Background commands"), under the id the daemon chose ("cmd_" + 20 hex
 * digits): it outlives the request that started it and a daemon restart,
 * and the agent is the one truth about it, so the daemon keeps no record.
 * What the agent says about a command is guest data: api_command_json keeps
 * only known fields of the right type and range; output arrives as the
 * run's capped DATA (guest_run.h), counted by the daemon itself.
 *
 * Threads: the connection's thread (each call its own agent stream).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/utf8.h"
#include "common/util.h"
#include "daemon/api/api.h"
#include "daemon/daemon.h"
#include "daemon/http/http_reply.h"
#include "engine/guest/guest_run.h"

/* The agent answers a kill within 2 s. */
#define KILL_WAIT_MS 10000
/* The agent's bound on a stdin write that the command does not read, ms. */
#define STDIN_TIMEOUT_MS 30000

int api_command_id_valid(const char *s)
{
	if (strncmp(s, "cmd_", 4) != 0 || strlen(s) != 4 + API_CMD_ID_HEX)
		return 0;
	for (const char *p = s + 4; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return 0;
	return 1;
}

/* A guest integer in [lo, hi], or NULL (absent, wrong type, out of range). */
static json_t *int_or_null(json_t *g, const char *k, json_int_t lo, json_int_t hi)
{
	json_t *v = json_object_get(g, k);
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return json_null();
	return json_integer(json_integer_value(v));
}

/* A guest string as at most max bytes of valid UTF-8, or null. */
static json_t *str_or_null(json_t *g, const char *k, size_t max)
{
	json_t *v = json_object_get(g, k);
	if (!json_is_string(v))
		return json_null();
	size_t n = json_string_length(v);
	return utf8_json_lossy(json_string_value(v), n < max ? n : max);
}

/* A guest wall-clock time in ms as an ISO time, or null. */
static json_t *time_or_null(json_t *g, const char *k)
{
	json_t *v = json_object_get(g, k);
	if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
	    json_integer_value(v) > API_COMMAND_MS_MAX)
		return json_null();
	char t[32];
	util_iso_time((int64_t)json_integer_value(v), t);
	return json_string(t);
}

json_t *api_command_json(json_t *g)
{
	const char *id = json_string_value(json_object_get(g, "id"));
	if (!id || !api_command_id_valid(id))
		return NULL;
	json_t *o = json_pack("{s:s}", "id", id);
	if (!o)
		return NULL;
	int running = json_is_true(json_object_get(g, "running"));
	json_object_set_new(o, "pid", int_or_null(g, "pid", 1, 0x7fffffff));
	json_object_set_new(o, "cmd", str_or_null(g, "cmd", API_COMMAND_CMD_SHOWN));
	json_object_set_new(o, "cwd", str_or_null(g, "cwd", 4095));
	json_object_set_new(o, "started_at", time_or_null(g, "started_at_ms"));
	json_object_set_new(o, "running", json_boolean(running));
	json_object_set_new(o, "ended_at", running ? json_null() : time_or_null(g, "ended_at_ms"));
	json_object_set_new(o, "exit_code", running ? json_null() : int_or_null(g, "exit_code", 0, 255));
	json_object_set_new(o, "signal", running ? json_null() : int_or_null(g, "signal", 1, 127));
	json_object_set_new(o, "timed_out", json_boolean(json_is_true(json_object_get(g, "timed_out"))));
	json_object_set_new(o, "stdout_bytes", int_or_null(g, "stdout_bytes", 0, API_COMMAND_BYTES_MAX));
	json_object_set_new(o, "stderr_bytes", int_or_null(g, "stderr_bytes", 0, API_COMMAND_BYTES_MAX));
	json_object_set_new(o, "stdin_open",
			    json_boolean(running && json_is_true(json_object_get(g, "stdin_open"))));
	return o;
}

int api_command_reply_error(struct http_req *r, json_t *res)
{
	json_t *e = json_object_get(res, "error");
	if (!json_is_object(e) && json_is_string(json_object_get(res, "code")))
		e = res;
	const char *code = json_string_value(json_object_get(e, "code"));
	const char *msg = json_string_value(json_object_get(e, "message"));
	if (!code)
		return api_agent_error(r, res);
	/* ENOENT names the command only on its own routes; at a start it is the
	 * cwd that does not exist (api_agent_error: file_not_found). */
	if (!strcmp(code, "ENOENT") && api_command_id_valid(r->params[1])) {
		http_reply_error(r, API_ERR_COMMAND_NOT_FOUND, "no command '%.64s'", r->params[1]);
		return 1;
	}
	if (!strcmp(code, "EMFILE")) {
		http_reply_error(r, API_ERR_TOO_MANY_COMMANDS, "%.300s", msg ? msg : "");
		return 1;
	}
	if (!strcmp(code, "EBUSY")) {
		http_reply_error(r, API_ERR_COMMAND_BUSY, "%.300s", msg ? msg : "");
		return 1;
	}
	return api_agent_error(r, res);
}

/* One call whose END is a command object: answer status with it. */
void api_command_reply(struct http_req *r, struct sbx *sb, int e, json_t *res,
			  unsigned status, const char *what)
{
	if (e && e != -EPROTO) {
		api_reply_agent_failure(r, sb, e, what);
		return;
	}
	if (api_command_reply_error(r, res))
		return;
	json_t *o = api_command_json(res);
	if (!o) {
		http_reply_error(r, API_ERR_AGENT_ERROR, "the guest agent's answer to %s makes no sense",
				 what);
		return;
	}
	http_reply_json(r, status, o);
}

void api_command_start(struct http_req *r, struct sbx *sb, const struct exec_body *b)
{
	char id[4 + API_CMD_ID_HEX + 1];
	uint8_t rnd[API_CMD_ID_HEX / 2];
	char hex[API_CMD_ID_HEX + 1];
	util_random(rnd, sizeof(rnd));
	util_hex(rnd, sizeof(rnd), hex);
	snprintf(id, sizeof(id), "cmd_%s", hex);
	/* no timeout unless one was asked for */
	json_t *req = api_exec_request(sb, b, b->has_timeout ? b->timeout_ms : 0, 0);
	if (req) {
		json_object_set_new(req, "op", json_string("command_start"));
		json_object_set_new(req, "id", json_string(id));
		json_object_del(req, "stdin");
		json_object_del(req, "output_cap");
	}
	json_t *res = NULL;
	int e = req ? sbx_call(sb, req, API_AGENT_CALL_MS, &res) : -ENOMEM;
	json_decref(req);
	if (!e)
		log_kv(LOG_INFO, "command.started", "sandbox=%s id=%s", sbx_id(sb), id);
	api_command_reply(r, sb, e, res, 201, "command start");
	json_decref(res);
}

void api_commands_list(struct http_req *r)
{
	struct sbx *sb = api_acquire(r);
	if (!sb)
		return;
	json_t *req = json_pack("{s:s}", "op", "command_list");
	json_t *res = NULL;
	int e = req ? sbx_call(sb, req, API_AGENT_CALL_MS, &res) : -ENOMEM;
	json_decref(req);
	if (e && e != -EPROTO) {
		api_reply_agent_failure(r, sb, e, "command list");
	} else if (!api_command_reply_error(r, res)) {
		json_t *arr = json_array();
		json_t *g = json_object_get(res, "commands");
		for (size_t i = 0; arr && i < json_array_size(g) && i < API_COMMANDS_LISTED; i++) {
			json_t *o = api_command_json(json_array_get(g, i));
			if (o)
				json_array_append_new(arr, o);
		}
		http_reply_json(r, 200, arr ? json_pack("{s:o}", "commands", arr) : NULL);
	}
	json_decref(res);
	sbx_release(sb);
}

int api_command_check_cid(struct http_req *r)
{
	if (api_command_id_valid(r->params[1]))
		return 1;
	http_reply_error(r, API_ERR_COMMAND_NOT_FOUND, "no command '%.64s'", r->params[1]);
	return 0;
}

void api_commands_kill(struct http_req *r)
{
	struct command_kill_body b;
	struct body_error be;
	if (body_parse_command_kill(r->body, r->body_len, &b, &be) < 0) {
		api_reply_body_error(r, &be);
		return;
	}
	if (!api_command_check_cid(r))
		return;
	struct sbx *sb = api_acquire(r);
	if (!sb)
		return;
	json_t *req = json_pack("{s:s, s:s, s:s}", "op", "command_kill", "id", r->params[1],
				"signal", b.signal);
	json_t *res = NULL;
	int e = req ? sbx_call(sb, req, KILL_WAIT_MS, &res) : -ENOMEM;
	json_decref(req);
	/* an END with "error" (no such command, ...) is an answer, not a kill */
	if (!e && !json_object_get(res, "error"))
		log_kv(LOG_INFO, "command.killed", "sandbox=%s id=%s signal=%s", sbx_id(sb),
		       r->params[1], b.signal);
	api_command_reply(r, sb, e, res, 200, "command kill");
	json_decref(res);
	sbx_release(sb);
}

int api_command_call(struct http_req *r, struct sbx *sb, json_t *req,
		     const struct guest_run_opts *o, struct guest_run_result *res)
{
	struct guest_stream *st = NULL;
	struct guest_run *x = NULL;
	int e = req ? sbx_stream_open(sb, req, &st) : -ENOMEM;
	if (!e)
		e = guest_run_start(st, o, &x);
	if (!e)
		e = api_collect(r, x, res);
	guest_run_close(x);
	return e;
}

void api_commands_stdin(struct http_req *r)
{
	struct command_stdin_body b;
	struct body_error be;
	if (body_parse_command_stdin(r->body, r->body_len, &b, &be) < 0) {
		api_reply_body_error(r, &be);
		return;
	}
	struct sbx *sb = api_command_check_cid(r) ? api_acquire(r) : NULL;
	if (!sb) {
		command_stdin_body_clear(&b);
		return;
	}
	json_t *req = json_pack("{s:s, s:s, s:b, s:I}", "op", "command_stdin", "id", r->params[1],
				"eof", b.eof, "timeout_ms", (json_int_t)STDIN_TIMEOUT_MS);
	struct guest_run_opts o = {
		.kind = GUEST_RUN_EXEC,
		.stdin_data = b.data ? b.data : "",
		.stdin_len = b.len,
		.output_cap = 1, /* the agent sends no output here */
		.deadline_ms = STDIN_TIMEOUT_MS + GUEST_RUN_END_GRACE_MS,
	};
	struct guest_run_result res = {0};
	int e = api_command_call(r, sb, req, &o, &res);
	json_decref(req);
	if (e == -ECANCELED) {
		r->abort = 1;
	} else if (e && e != -EPROTO) {
		api_reply_agent_failure(r, sb, e, "command stdin");
	} else if (!api_command_reply_error(r, res.end)) {
		json_t *w = json_object_get(res.end, "written");
		json_int_t n = json_is_integer(w) && json_integer_value(w) >= 0 &&
					       (size_t)json_integer_value(w) <= b.len
				       ? json_integer_value(w)
				       : 0;
		http_reply_json(r, 200, json_pack("{s:I, s:b}", "written", n, "stdin_open",
						  json_is_true(json_object_get(res.end, "stdin_open"))));
	}
	guest_run_result_free(&res);
	command_stdin_body_clear(&b);
	sbx_release(sb);
}
