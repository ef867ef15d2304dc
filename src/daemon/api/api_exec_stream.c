/*
 * api_exec_stream.c - POST /v1/sandboxes/{id}/exec_stream: the same
 * command as /exec, its output relayed as Server-Sent Events
 * (text/event-stream, https://html.spec.whatwg.org/multipage/server-sent-events.html)
 * as it comes.  Events (docs/api.md):
 *
 *   event: started   data: {"pid": n}
 *   event: stdout    data: {"data": "..."}      (a chunk, UTF-8, U+FFFD for bad bytes)
 *   event: stderr    data: {"data": "..."}
 *   event: exit      data: {"exit_code", "duration_ms", "timed_out", "signal",
 *                           "stdout_truncated", "stderr_truncated"}   (last)
 *   event: error     data: {"error": {"code", "message"}}             (last, instead of exit)
 *   ": keepalive" comment lines every API_STREAM_KEEPALIVE_MS of silence.
 *
 * Errors found before the stream starts (bad body, unknown sandbox, agent
 * unreachable, a command that cannot start: the answer waits for the
 * command's first event) are ordinary JSON error answers.  The stream is
 * driven by api_stream.c (client checks, keepalives, the host's own
 * errors); this file turns the run's events into SSE events.  A character
 * split between two output chunks is held back until its end arrives, so
 * only truly invalid bytes are replaced.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "common/util.h"
#include "daemon/api/api.h"
#include "daemon/api/api_stream.h"
#include "daemon/daemon.h"
#include "daemon/http/http_reply.h"
#include "daemon/metrics.h"

/* How long the answer waits for the command's first event, so that a
 * command that cannot start (a missing cwd) gets an ordinary JSON error. */
#define START_WAIT_MS 10000

struct exec_sse {
	struct api_stream s;      /* first: the driver's state */
	uint8_t carry[2][4];      /* per stream (stdout, stderr): a cut UTF-8 sequence */
	size_t carry_len[2];
};

/* An output chunk of stream i (0 stdout, 1 stderr), with its held-back
 * bytes in front; a new cut sequence at the end is held back in turn. */
static int add_output(struct exec_sse *x, int i, const uint8_t *d, size_t n, int final)
{
	size_t held = x->carry_len[i];
	uint8_t *buf = malloc(held + n + 1);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, x->carry[i], held);
	if (n)
		memcpy(buf + held, d, n);
	size_t total = held + n;
	size_t keep = final ? 0 : utf8_incomplete_tail(buf, total);
	memcpy(x->carry[i], buf + total - keep, keep);
	x->carry_len[i] = keep;
	int e = 0;
	if (total - keep > 0)
		e = sse_event(&x->s.out, i == 0 ? "stdout" : "stderr",
			      json_pack("{s:o}", "data", utf8_json_lossy(buf, total - keep)));
	free(buf);
	return e;
}

static void on_event(struct api_stream *s, const struct guest_event *ev)
{
	struct exec_sse *x = (struct exec_sse *)s;
	enum api_err err;
	char msg[400];
	switch (ev->type) {
	case GUEST_EV_STARTED:
		if (ev->pid >= 0)
			sse_event(&s->out, "started", json_pack("{s:I}", "pid", (json_int_t)ev->pid));
		break;
	case GUEST_EV_STDOUT:
	case GUEST_EV_STDERR:
		add_output(x, ev->type == GUEST_EV_STDOUT ? 0 : 1, ev->data, ev->len, 0);
		break;
	case GUEST_EV_EXIT:
	case GUEST_EV_ERROR: /* the agent's answer (the driver takes the host's) */
		add_output(x, 0, NULL, 0, 1);
		add_output(x, 1, NULL, 0, 1);
		if (api_agent_error_map(ev->json, &err, msg, sizeof(msg))) {
			sse_error(&s->out, err, msg);
		} else if (ev->type == GUEST_EV_ERROR) {
			sse_error(&s->out, API_ERR_AGENT_ERROR, "the guest agent failed the command");
		} else {
			int64_t ms = util_now_ms() - s->t0;
			metrics_exec(ms);
			sse_event(&s->out, "exit", api_exit_json(ev->json, ms));
		}
		s->done = 1;
		break;
	case GUEST_EV_RESULT: /* not in an exec */
		break;
	}
}

static void exec_sse_free(struct api_stream *s)
{
	free(s);
}

static const struct api_stream_ops exec_sse_ops = {
	.what = "exec",
	.log_gone = "exec_stream.client_gone",
	.count_gone = 1,
	.event = on_event,
	.free = exec_sse_free,
};

void api_exec_stream(struct http_req *r)
{
	struct exec_body b;
	struct sbx *sb = api_exec_begin(r, &b);
	if (!sb)
		return;
	if (b.background) {
		http_reply_error(r, API_ERR_INVALID_FIELD,
				 "field 'background' is for POST .../exec; read a background "
				 "command's output with GET .../commands/{cid}/output");
		exec_body_clear(&b);
		sbx_release(sb);
		return;
	}
	struct exec_sse *x = calloc(1, sizeof(*x));
	int64_t t0 = util_now_ms();
	int e = x ? api_exec_open(r, sb, &b, api_exec_timeout_ms(r, &b), 0, &x->s.x) : -ENOMEM;
	exec_body_clear(&b);
	if (e) {
		api_reply_agent_failure(r, sb, e, "exec");
		free(x);
		sbx_release(sb);
		return;
	}
	x->s.ops = &exec_sse_ops;
	x->s.sb = sb;
	x->s.t0 = t0;
	/* A command that cannot start ends at once with an error: answer it
	 * as JSON, as /exec does; anything else is kept for the stream. */
	struct guest_event ev;
	if (guest_run_next(x->s.x, &ev, START_WAIT_MS) == 1) {
		if (ev.type == GUEST_EV_ERROR && ev.json && api_agent_error(r, ev.json)) {
			guest_run_close(x->s.x);
			sbx_release(sb);
			free(x);
			return;
		}
		guest_run_again(x->s.x);
	}
	api_stream_respond(r, &x->s);
}
