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
 * "duration_ms", "timed_out"}.  Everything from the guest is checked: a
 * result keeps only its known fields of the right type, and what one run
 * may make the daemon hold is capped (RUN_HOLD_CAP; beyond it output is
 * dropped with a marker on stderr).
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
#include "daemon/api.h"
#include "daemon/daemon.h"
#include "daemon/http_reply.h"
#include "daemon/sse.h"

#define POLL_MS 250
#define KEEPALIVE_MS 15000
#define BLOCK_SIZE (32u * 1024)
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

/*
 * 1 if the END (or ERROR) object is the agent's failure {"error": {"code",
 * "message"}}, not a done whose "error" is the cell's exception {"name",
 * "value", "traceback"}.
 */
static int agent_failed(json_t *end)
{
	json_t *e = json_object_get(end, "error");
	if (!e && json_is_string(json_object_get(end, "code")))
		return 1; /* an ERROR frame */
	return json_is_string(json_object_get(e, "code"));
}

/* One run: the agent stream and what the daemon holds of it. */
struct run {
	struct sbx *sb;
	struct guest_stream *st;
	struct MHD_Connection *conn;
	char ctx[ROUTE_PARAM_MAX];
	size_t held;            /* bytes of output and results kept */
	int dropped;            /* RUN_HOLD_CAP was reached */
	int64_t t0;
};

/* Charge n bytes to the run; 0 if they may be kept, -E2BIG if not (the
 * first refusal returns -ENOSPC: time for the marker). */
static int charge(struct run *u, size_t n)
{
	if (u->held + n <= RUN_HOLD_CAP) {
		u->held += n;
		return 0;
	}
	int first = !u->dropped;
	u->dropped = 1;
	return first ? -ENOSPC : -E2BIG;
}

static const char drop_marker[] = "\n[pandastack: output dropped: the run produced more than "
				  "64 MiB]\n";

/* Open the run and wait for the agent to accept it.  Answers the request
 * itself on failure (returns -1), else 0. */
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
	u->sb = api_acquire(r);
	if (!u->sb) {
		code_body_clear(&b);
		return -1;
	}
	int64_t timeout_ms = b.has_timeout ? b.timeout_ms : r->d->cfg.exec_default_timeout_s * 1000;
	snprintf(u->ctx, sizeof(u->ctx), "%s", r->params[1]);
	u->conn = r->conn;
	u->t0 = util_now_ms();
	json_t *req = json_pack("{s:s, s:s, s:s%, s:I}", "op", "context_run", "id", u->ctx, "code",
				b.code, b.code_len, "timeout_ms", (json_int_t)timeout_ms);
	int e = req ? sbx_stream_open(u->sb, req, &u->st) : -ENOMEM;
	json_decref(req);
	code_body_clear(&b);
	if (e)
		goto fail;
	/* The first message: "accepted", or END with why not. */
	struct guest_msg m = {0};
	e = guest_stream_read(u->st, &m, ACCEPT_WAIT_MS);
	if (e == 1 && m.kind == GUEST_MSG_EVENT) {
		guest_msg_clear(&m);
		return 0;
	}
	if (e == 1) {
		if (!api_context_reply_missing(r, m.json) && !api_agent_error(r, m.json))
			http_reply_error(r, API_ERR_AGENT_ERROR,
					 "the agent answered a run with nothing");
		guest_msg_clear(&m);
		goto out;
	}
	e = e == 0 ? -ECONNRESET : e;
fail:
	api_reply_agent_failure(r, u->sb, e, "run_code");
out:
	guest_stream_close(u->st);
	sbx_release(u->sb);
	memset(u, 0, sizeof(*u));
	return -1;
}

/* --- the whole Execution ---------------------------------------------------*/

/* A growing text (stdout or stderr). */
struct text {
	char *p;
	size_t len, alloc;
};

static int text_add(struct text *t, const char *s, size_t n)
{
	if (t->len + n + 1 > t->alloc) {
		size_t na = t->alloc ? t->alloc : 1024;
		while (na < t->len + n + 1)
			na *= 2;
		char *np = realloc(t->p, na);
		if (!np)
			return -ENOMEM;
		t->p = np;
		t->alloc = na;
	}
	memcpy(t->p + t->len, s, n);
	t->len += n;
	t->p[t->len] = '\0';
	return 0;
}

void api_context_run(struct http_req *r)
{
	struct run u = {0};
	if (run_open(r, &u) < 0)
		return;
	struct text out = {0}, err = {0};
	json_t *results = json_array();
	json_t *end = NULL;
	int e = results ? 0 : -ENOMEM;
	while (!e && !end) {
		struct guest_msg m = {0};
		int rr = guest_stream_read(u.st, &m, POLL_MS);
		if (rr == -ETIMEDOUT) {
			if (http_conn_gone(r->conn)) {
				log_kv(LOG_INFO, "run_code.client_gone", "id=%s ctx=%s",
				       sbx_id(u.sb), u.ctx);
				r->abort = 1;
				break;
			}
			continue;
		}
		if (rr <= 0) {
			e = rr < 0 ? rr : -ECONNRESET;
			break;
		}
		if (m.kind == GUEST_MSG_END || m.kind == GUEST_MSG_ERROR) {
			end = json_incref(m.json ? m.json : json_object());
		} else if (m.kind == GUEST_MSG_EVENT) {
			const char *type = json_string_value(json_object_get(m.json, "type"));
			json_t *txt = json_object_get(m.json, "text");
			int is_out = type && !strcmp(type, "stdout");
			if ((is_out || (type && !strcmp(type, "stderr"))) && json_is_string(txt)) {
				int c = charge(&u, json_string_length(txt));
				if (c == 0)
					e = text_add(is_out ? &out : &err, json_string_value(txt),
						     json_string_length(txt));
				else if (c == -ENOSPC)
					e = text_add(&err, drop_marker, sizeof(drop_marker) - 1);
			} else if (type && !strcmp(type, "result")) {
				json_t *res = clean_result(m.json);
				size_t n = res ? json_dumpb(res, NULL, 0, JSON_COMPACT) : 0;
				int c = res ? charge(&u, n) : -E2BIG;
				if (c == 0)
					json_array_append(results, res);
				else if (c == -ENOSPC)
					e = text_add(&err, drop_marker, sizeof(drop_marker) - 1);
				json_decref(res);
			}
		}
		guest_msg_clear(&m);
	}
	guest_stream_close(u.st); /* cancels a run still going (client gone) */
	if (r->abort) {
		/* the client left: nobody to answer */
	} else if (e) {
		api_reply_agent_failure(r, u.sb, e, "run_code");
	} else if (agent_failed(end)) {
		if (!api_context_reply_missing(r, end))
			api_agent_error(r, end);
	} else {
		json_t *o = done_json(end, util_now_ms() - u.t0);
		if (o) {
			json_object_set_new(o, "results", json_incref(results));
			json_object_set_new(o, "stdout", json_stringn(out.p ? out.p : "", out.len));
			json_object_set_new(o, "stderr", json_stringn(err.p ? err.p : "", err.len));
		}
		http_reply_json(r, 200, o);
	}
	json_decref(end);
	json_decref(results);
	free(out.p);
	free(err.p);
	sbx_release(u.sb);
}

/* --- the same as events ----------------------------------------------------*/

struct run_sse {
	struct run u;
	struct sse_buf out;
	int done;
	int64_t last_send_ms;
};

/* Turn one agent message into events.  Returns -EPIPE when the client
 * has gone, else 0. */
static int sse_pump(struct run_sse *s)
{
	struct guest_msg m = {0};
	int rr = guest_stream_read(s->u.st, &m, POLL_MS);
	if (rr == -ETIMEDOUT) {
		if (http_conn_gone(s->u.conn))
			return -EPIPE;
		if (util_now_ms() - s->last_send_ms >= KEEPALIVE_MS)
			sse_comment(&s->out, "keepalive");
		return 0;
	}
	if (rr <= 0) {
		if (sbx_ending(s->u.sb))
			sse_error(&s->out, API_ERR_SANDBOX_NOT_RUNNING,
				  "the sandbox stopped during the run");
		else
			sse_error(&s->out, API_ERR_AGENT_UNAVAILABLE,
				  "lost the guest agent during the run");
		s->done = 1;
		return 0;
	}
	const char *type = json_string_value(json_object_get(m.json, "type"));
	if (m.kind == GUEST_MSG_END || m.kind == GUEST_MSG_ERROR) {
		enum api_err err;
		char msg[400];
		if (agent_failed(m.json) && api_context_missing(m.json))
			sse_error(&s->out, API_ERR_CONTEXT_NOT_FOUND,
				  "the context went away during the run");
		else if (agent_failed(m.json) &&
			 api_agent_error_map(m.json, &err, msg, sizeof(msg)))
			sse_error(&s->out, err, msg);
		else
			sse_event(&s->out, "done", done_json(m.json, util_now_ms() - s->u.t0));
		s->done = 1;
	} else if (m.kind == GUEST_MSG_EVENT && type) {
		json_t *txt = json_object_get(m.json, "text");
		int is_out = !strcmp(type, "stdout");
		if ((is_out || !strcmp(type, "stderr")) && json_is_string(txt)) {
			int c = charge(&s->u, json_string_length(txt));
			if (c == 0)
				sse_event(&s->out, type, json_pack("{s:O}", "text", txt));
			else if (c == -ENOSPC)
				sse_event(&s->out, "stderr",
					  json_pack("{s:s}", "text", drop_marker));
		} else if (!strcmp(type, "result")) {
			json_t *res = clean_result(m.json);
			size_t n = res ? json_dumpb(res, NULL, 0, JSON_COMPACT) : 0;
			int c = res ? charge(&s->u, n) : -E2BIG;
			if (c == 0)
				sse_event(&s->out, "result", json_incref(res));
			else if (c == -ENOSPC)
				sse_event(&s->out, "stderr",
					  json_pack("{s:s}", "text", drop_marker));
			json_decref(res);
		}
	}
	guest_msg_clear(&m);
	return 0;
}

static ssize_t sse_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct run_sse *s = cls;
	(void)pos;
	for (;;) {
		if (sse_pending(&s->out)) {
			s->last_send_ms = util_now_ms();
			return (ssize_t)sse_take(&s->out, buf, max);
		}
		if (s->done)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (sse_pump(s) < 0) {
			log_kv(LOG_INFO, "run_code_stream.client_gone", "id=%s ctx=%s",
			       sbx_id(s->u.sb), s->u.ctx);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
	}
}

static void sse_run_free(void *cls)
{
	struct run_sse *s = cls;
	guest_stream_close(s->u.st); /* cancels the run if it still goes */
	sbx_release(s->u.sb);
	sse_free(&s->out);
	free(s);
}

void api_context_run_stream(struct http_req *r)
{
	struct run_sse *s = calloc(1, sizeof(*s));
	if (!s) {
		http_reply_error(r, API_ERR_INTERNAL, "out of memory");
		return;
	}
	if (run_open(r, &s->u) < 0) {
		free(s);
		return;
	}
	s->last_send_ms = util_now_ms();
	struct MHD_Response *resp = MHD_create_response_from_callback(
		MHD_SIZE_UNKNOWN, BLOCK_SIZE, sse_reader, s, sse_run_free);
	if (!resp) {
		sse_run_free(s);
		r->abort = 1;
		return;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(resp, "X-Accel-Buffering", "no");
	http_reply_response(r, 200, resp);
}
