/*
 * api_exec.c - POST /v1/sandboxes/{id}/exec: run a command, collect its
 * output, answer {stdout, stderr, exit_code, duration_ms, ...}; and the
 * start shared with /exec_stream and the one-shot /run_code.
 *
 * The command runs through the engine's one exec reader (guest_run.h),
 * which also feeds its stdin while reading its output.  Output is kept up
 * to the daemon's exec output cap per stream (the agent cuts there and
 * appends its truncation marker; the daemon keeps MARKER_ROOM more for
 * it); bytes that are not UTF-8 become U+FFFD.  While waiting the handler
 * checks every API_POLL_MS whether the client is still there: if it left, the
 * run is closed, which cancels it, and the agent kills the command.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/utf8.h"
#include "common/util.h"
#include "daemon/api/api.h"
#include "daemon/daemon.h"
#include "daemon/http/http_reply.h"
#include "daemon/metrics.h"
#include "engine/guest/guest_run.h"
/* Bytes kept beyond the cap for the agent's truncation marker. */
#define MARKER_ROOM 256

struct sbx *api_exec_begin(struct http_req *r, struct exec_body *b)
{
	struct body_error be;
	if (body_parse_exec(r->body, r->body_len, &r->d->limits, b, &be) < 0) {
		api_reply_body_error(r, &be);
		return NULL;
	}
	struct sbx *sb = api_acquire(r);
	if (!sb)
		exec_body_clear(b);
	return sb;
}

int api_exec_open(struct http_req *r, struct sbx *sb, const struct exec_body *b,
		  int64_t timeout_ms, size_t hold_cap, struct guest_run **out)
{
	*out = NULL;
	struct guest_stream *st = NULL;
	json_t *req = api_exec_request(sb, b, timeout_ms, r->d->cfg.exec_output_cap);
	int e = req ? sbx_stream_open(sb, req, &st) : -ENOMEM;
	json_decref(req);
	if (e)
		return e;
	struct guest_run_opts o = {
		.kind = GUEST_RUN_EXEC,
		.stdin_data = b->stdin_data,
		.stdin_len = b->stdin_len,
		.output_cap = hold_cap,
		.deadline_ms = timeout_ms ? timeout_ms + GUEST_RUN_END_GRACE_MS : 0,
	};
	return guest_run_start(st, &o, out);
}

void api_exec(struct http_req *r)
{
	struct exec_body b;
	struct sbx *sb = api_exec_begin(r, &b);
	if (!sb)
		return;
	if (b.background)
		api_command_start(r, sb, &b);
	else
		api_exec_run(r, sb, &b, api_exec_timeout_ms(r, &b));
	exec_body_clear(&b);
	sbx_release(sb);
}

static json_t *result_json(const struct guest_run_result *res, int64_t ms)
{
	json_t *o = api_exit_json(res->end, ms);
	if (!o)
		return NULL;
	json_object_set_new(o, "stdout", utf8_json_lossy(res->out, res->out_len));
	json_object_set_new(o, "stderr", utf8_json_lossy(res->err, res->err_len));
	if (res->out_truncated)
		json_object_set_new(o, "stdout_truncated", json_true());
	if (res->err_truncated)
		json_object_set_new(o, "stderr_truncated", json_true());
	return o;
}

void api_exec_run(struct http_req *r, struct sbx *sb, const struct exec_body *b,
		  int64_t timeout_ms)
{
	int64_t t0 = util_now_ms();
	struct guest_run *x = NULL;
	struct guest_run_result res = {0};
	int e = api_exec_open(r, sb, b, timeout_ms, r->d->cfg.exec_output_cap + MARKER_ROOM, &x);
	if (!e)
		e = api_collect(r, x, &res);
	guest_run_close(x); /* cancels a command still running */
	int64_t ms = util_now_ms() - t0;
	if (e == -ECANCELED) {
		metrics_event(METRICS_EXEC_CLIENT_GONE);
		log_kv(LOG_INFO, "exec.client_gone", "id=%s", sbx_id(sb));
		r->abort = 1; /* nobody to answer */
	} else if (e == -EPROTO && res.end && api_agent_error(r, res.end)) {
		/* the agent's error, answered */
	} else if (e) {
		api_reply_agent_failure(r, sb, e, "exec");
	} else {
		metrics_exec(ms);
		http_reply_json(r, 200, result_json(&res, ms));
	}
	guest_run_result_free(&res);
}
