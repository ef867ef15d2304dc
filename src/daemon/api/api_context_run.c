/*
 * api_context_run.c - running a cell in a code context (docs/api.md, "Code
 * contexts"):
 *
 *   POST .../contexts/{ctx}/run_code {code, timeout_seconds?}
 *        -> 200 Execution {"results", "stdout", "stderr", "error",
 *           "execution_count", "exit_code", "duration_ms"}
 *   POST .../contexts/{ctx}/run_code_stream (same body)
 *        -> 200 text/event-stream: stdout, stderr and result events as the
 *           kernel produces them, then done (or error)
 *
 * The agent's context_run stream carries EVENT {"type": "accepted"} at
 * once (or END with an error: an unknown context is then a plain 404),
 * then {"type": "stdout" | "stderr", "text"} and {"type": "result", ...}
 * events, and END with the done object {"execution_count", "error",
 * "duration_ms", "timed_out"}.  The run is read through the engine's one
 * reader (guest_run.h, kind GUEST_RUN_CELL), which turns these into typed
 * events.  Everything from the guest is checked: a result keeps only its
 * known fields of the right type, and what one run may make the daemon
 * hold is capped (RUN_HOLD_CAP, the reader's shared output cap; beyond it
 * output is dropped with a marker on stderr).
 *
 * The guest enforces the cell's timeout (it interrupts the cell; the
 * context keeps its state) and a run waits its turn behind the context's
 * earlier ones, so the daemon sets no deadline of its own: it stops when
 * the client leaves (the run is cancelled), the sandbox ends or the agent
 * connection is lost.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "daemon/api/api.h"
#include "daemon/api/api_stream.h"
#include "daemon/daemon.h"
#include "daemon/http/http_reply.h"
#include "daemon/http/sse.h"

/* Wait for the agent to accept the run (or refuse it), ms. */
#define ACCEPT_WAIT_MS API_AGENT_CALL_MS
/* Most bytes of output and results one run may make the daemon hold (the
 * guest caps a run's output at 16 MiB by default). */
#define RUN_HOLD_CAP (64u * 1024 * 1024)

static const char *const text_fields[] = {"text",  "html",  "markdown",   "svg",
					  "png",   "jpeg",  "latex",      "javascript"};

/* A result event re-built from its known fields (guest data); NULL when
 * it has none.  New reference. */
static json_t *clean_result(json_t *ev)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	for (size_t i = 0; i < sizeof(text_fields) / sizeof(text_fields[0]); i++) {
		json_t *v = json_object_get(ev, text_fields[i]);
		if (json_is_string(v))
			json_object_set(o, text_fields[i], v);
	}
	json_t *j = json_object_get(ev, "json");
	if (j && !json_is_null(j))
		json_object_set(o, "json", j);
	json_t *x = json_object_get(ev, "extra");
	if (json_is_object(x) && json_object_size(x) > 0)
		json_object_set(o, "extra", x);
	if (json_object_size(o) == 0) {
		json_decref(o);
		return NULL;
	}
	json_object_set_new(o, "is_main_result",
			    json_boolean(json_is_true(json_object_get(ev, "is_main_result"))));
	return o;
}

/* The error object of a done (guest data), or a new null. */
static json_t *clean_error(json_t *done)
{
	json_t *e = json_object_get(done, "error");
	if (!json_is_object(e))
		return json_null();
	static const char *const f[] = {"name", "value", "traceback"};
	json_t *o = json_object();
	for (size_t i = 0; o && i < 3; i++) {
		json_t *v = json_object_get(e, f[i]);
		json_object_set_new(o, f[i], json_is_string(v) ? json_copy(v) : json_string(""));
	}
	return o ? o : json_null();
}

/* The closing fields of an Execution from the agent's done. */
static json_t *done_json(json_t *done, int64_t measured_ms)
{
	json_t *err = clean_error(done);
	json_t *n = json_object_get(done, "execution_count");
	json_t *d = json_object_get(done, "duration_ms");
	int64_t ms = json_is_integer(d) && json_integer_value(d) >= 0 ? json_integer_value(d)
								       : measured_ms;
	return json_pack("{s:o, s:o, s:i, s:I}", "error", err, "execution_count",
			 json_is_integer(n) && json_integer_value(n) >= 0 ? json_copy(n)
									 : json_null(),
			 "exit_code", json_is_object(err) ? 1 : 0, "duration_ms", (json_int_t)ms);
}

/* One run: the guest run and what the answer needs of it. */
struct run {
	struct api_stream s;    /* first: the driver's state when streamed */
	char ctx[ROUTE_PARAM_MAX];
};

static const char drop_marker[] = "\n[pandastack: output dropped: the run produced more than "
				  "64 MiB]\n";

/* Open the run and wait for the agent to accept it.  Answers the request
 * itself on failure (returns -1), else 0 with u->s.sb, x and t0 set. */
static int run_open(struct http_req *r, struct run *u)
{
	struct code_body b;
	struct body_error be;
	if (body_parse_code(r->body, r->body_len, &r->d->limits, 0, &b, &be) < 0) {
		api_reply_body_error(r, &be);
		return -1;
	}
	if (!api_context_id_valid(r->params[1])) {
		http_reply_error(r, API_ERR_CONTEXT_NOT_FOUND, "no context '%.64s'", r->params[1]);
		code_body_clear(&b);
		return -1;
	}
	u->s.sb = api_acquire(r);
	if (!u->s.sb) {
		code_body_clear(&b);
		return -1;
	}
	int64_t timeout_ms = b.has_timeout ? b.timeout_ms : r->d->cfg.exec_default_timeout_s * 1000;
	snprintf(u->ctx, sizeof(u->ctx), "%s", r->params[1]);
	u->s.ctx = u->ctx;
	u->s.t0 = util_now_ms();
	json_t *req = json_pack("{s:s, s:s, s:s%, s:I}", "op", "context_run", "id", u->ctx, "code",
				b.code, b.code_len, "timeout_ms", (json_int_t)timeout_ms);
	struct guest_stream *st = NULL;
	int e = req ? sbx_stream_open(u->s.sb, req, &st) : -ENOMEM;
	json_decref(req);
	code_body_clear(&b);
	struct guest_run_opts o = {.kind = GUEST_RUN_CELL, .output_cap = RUN_HOLD_CAP, .cap_shared = 1};
	if (!e)
		e = guest_run_start(st, &o, &u->s.x);
	/* The first event: "accepted", or the end with why not. */
	struct guest_event ev;
	if (!e && (e = guest_run_next(u->s.x, &ev, ACCEPT_WAIT_MS)) == 1) {
		e = 0;
		if (ev.type == GUEST_EV_ERROR && !ev.json) {
			e = ev.err;
		} else if (ev.type == GUEST_EV_EXIT || ev.type == GUEST_EV_ERROR) {
			if (!api_context_reply_missing(r, ev.json) && !api_agent_error(r, ev.json))
				http_reply_error(r, API_ERR_AGENT_ERROR,
						 "the agent answered a run with nothing");
			goto out;
		} else if (ev.type != GUEST_EV_STARTED) {
			guest_run_again(u->s.x); /* output first: keep it */
		}
		if (!e)
			return 0;
	}
	api_reply_agent_failure(r, u->s.sb, e ? e : -ECONNRESET, "run_code");
out:
	guest_run_close(u->s.x);
	sbx_release(u->s.sb);
	u->s.x = NULL;
	u->s.sb = NULL;
	return -1;
}

/* --- the whole Execution ---------------------------------------------------*/

/* The Execution of a run that ended with done (guest data). */
static json_t *execution_json(const struct guest_run_result *res, int64_t measured_ms)
{
	json_t *o = done_json(res->end, measured_ms);
	json_t *results = json_array();
	if (!o || !results) {
		json_decref(o);
		json_decref(results);
		return NULL;
	}
	size_t i;
	json_t *ev;
	json_array_foreach(res->results, i, ev) {
		json_t *clean = clean_result(ev);
		if (clean)
			json_array_append_new(results, clean);
	}
	json_object_set_new(o, "results", results);
	json_object_set_new(o, "stdout", json_stringn(res->out, res->out_len));
	json_t *err = json_stringn(res->err, res->err_len);
	if (res->out_truncated || res->err_truncated || res->results_truncated) {
		size_t n = res->err_len + sizeof(drop_marker) - 1;
		char *e = malloc(n);
		if (e) {
			memcpy(e, res->err, res->err_len);
			memcpy(e + res->err_len, drop_marker, sizeof(drop_marker) - 1);
			json_decref(err);
			err = json_stringn(e, n);
			free(e);
		}
	}
	json_object_set_new(o, "stderr", err);
	return o;
}

void api_context_run(struct http_req *r)
{
	struct run u = {0};
	if (run_open(r, &u) < 0)
		return;
	struct guest_run_result res;
	int e = api_collect(r, u.s.x, &res);
	guest_run_close(u.s.x); /* cancels a run still going (client gone) */
	if (e == -ECANCELED) {
		log_kv(LOG_INFO, "run_code.client_gone", "id=%s ctx=%s", sbx_id(u.s.sb), u.ctx);
		r->abort = 1; /* nobody to answer */
	} else if (e == -EPROTO && res.end &&
		   (api_context_reply_missing(r, res.end) || api_agent_error(r, res.end))) {
		/* the agent's error, answered */
	} else if (e) {
		api_reply_agent_failure(r, u.s.sb, e, "run_code");
	} else {
		http_reply_json(r, 200, execution_json(&res, util_now_ms() - u.s.t0));
	}
	guest_run_result_free(&res);
	sbx_release(u.s.sb);
}

/* --- the same as events ----------------------------------------------------*/

static void on_event(struct api_stream *s, const struct guest_event *ev)
{
	enum api_err err;
	char msg[400];
	switch (ev->type) {
	case GUEST_EV_STDOUT:
	case GUEST_EV_STDERR:
		if (ev->len)
			sse_event(&s->out, ev->type == GUEST_EV_STDOUT ? "stdout" : "stderr",
				  json_pack("{s:o}", "text",
					    json_stringn((const char *)ev->data, ev->len)));
		if (ev->truncated)
			sse_event(&s->out, "stderr", json_pack("{s:s}", "text", drop_marker));
		break;
	case GUEST_EV_RESULT:
		if (ev->json) {
			json_t *res = clean_result(ev->json);
			if (res)
				sse_event(&s->out, "result", res);
		}
		if (ev->truncated)
			sse_event(&s->out, "stderr", json_pack("{s:s}", "text", drop_marker));
		break;
	case GUEST_EV_EXIT:
		sse_event(&s->out, "done", done_json(ev->json, util_now_ms() - s->t0));
		s->done = 1;
		break;
	case GUEST_EV_ERROR: /* the agent's answer (the driver takes the host's) */
		if (api_context_missing(ev->json))
			sse_error(&s->out, API_ERR_CONTEXT_NOT_FOUND,
				  "the context went away during the run");
		else if (api_agent_error_map(ev->json, &err, msg, sizeof(msg)))
			sse_error(&s->out, err, msg);
		else
			sse_error(&s->out, API_ERR_AGENT_ERROR, "the guest agent failed the run");
		s->done = 1;
		break;
	case GUEST_EV_STARTED:
		break;
	}
}

static void run_free(struct api_stream *s)
{
	free(s);
}

static const struct api_stream_ops run_sse_ops = {
	.what = "the run",
	.log_gone = "run_code_stream.client_gone",
	.event = on_event,
	.free = run_free,
};

void api_context_run_stream(struct http_req *r)
{
	struct run *u = calloc(1, sizeof(*u));
	if (!u) {
		http_reply_error(r, API_ERR_INTERNAL, "out of memory");
		return;
	}
	if (run_open(r, u) < 0) {
		free(u);
		return;
	}
	u->s.ops = &run_sse_ops;
	api_stream_respond(r, &u->s);
}
