/*
 * api_guest_run.c - what the routes that run a command in the guest share
 * (exec, exec_stream, background commands, one-shot run_code; see api.h):
 * the agent's exec request, the exit object, and the wait that stops when
 * the client leaves.
 */
#include <stdint.h>

#include "daemon/api/api.h"
#include "daemon/daemon.h"
#include "engine/guest/guest_run.h"

int64_t api_exec_timeout_ms(struct http_req *r, const struct exec_body *b)
{
	return b->has_timeout ? b->timeout_ms : r->d->cfg.exec_default_timeout_s * 1000;
}

json_t *api_exec_request(struct sbx *sb, const struct exec_body *b, int64_t timeout_ms,
			 uint64_t output_cap)
{
	json_t *env = json_deep_copy(sbx_env(sb));
	if (!env)
		return NULL;
	if (json_object_update(env, b->env) < 0) {
		json_decref(env);
		return NULL;
	}
	json_t *req = json_pack("{s:s, s:s, s:o, s:I, s:b, s:I}", "op", "exec", "cmd", b->cmd,
				"env", env, "timeout_ms", (json_int_t)timeout_ms, "stdin",
				b->stdin_data != NULL, "output_cap", (json_int_t)output_cap);
	if (req && b->cwd)
		json_object_set_new(req, "cwd", json_string(b->cwd));
	return req;
}

/* An integer field of a guest object, or dflt when absent or out of range. */
static int64_t int_field(json_t *o, const char *k, int64_t lo, int64_t hi, int64_t dflt)
{
	json_t *v = json_object_get(o, k);
	if (!json_is_integer(v))
		return dflt;
	json_int_t x = json_integer_value(v);
	return x < lo || x > hi ? dflt : x;
}

json_t *api_exit_json(json_t *end, int64_t measured_ms)
{
	json_t *sig = json_object_get(end, "signal");
	int64_t s = json_is_integer(sig) ? json_integer_value(sig) : 0;
	return json_pack("{s:I, s:I, s:b, s:o, s:b, s:b}", "exit_code",
			 (json_int_t)int_field(end, "exit_code", -1, 255, -1), "duration_ms",
			 (json_int_t)int_field(end, "duration_ms", 0, INT64_MAX / 2, measured_ms),
			 "timed_out", json_is_true(json_object_get(end, "timed_out")), "signal",
			 s > 0 && s < 128 ? json_integer(s) : json_null(), "stdout_truncated",
			 json_is_true(json_object_get(end, "stdout_truncated")), "stderr_truncated",
			 json_is_true(json_object_get(end, "stderr_truncated")));
}

/* guest_run_collect's stop check: the client left. */
static int client_gone(void *conn)
{
	return http_conn_gone(conn);
}

int api_collect(struct http_req *r, struct guest_run *x, struct guest_run_result *res)
{
	return guest_run_collect(x, res, API_POLL_MS, client_gone, r->conn);
}
