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
 *   ": keepalive" comment lines every KEEPALIVE_MS of silence.
 *
 * Errors found before the stream starts (bad body, unknown sandbox, agent
 * unreachable, a command that cannot start: the answer waits for the
 * command's first message) are ordinary JSON error answers.  The response is produced
 * by an MHD content reader on the connection's own thread: it blocks on the
 * agent stream at most POLL_MS at a time and checks whether the client is
 * still there; when it left, the reader ends the response and the free
 * callback closes the agent stream, which cancels it: the agent kills the
 * command.  A character split between two output chunks is held back until
 * its end arrives, so only truly invalid bytes are replaced.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "daemon/api.h"
#include "daemon/daemon.h"
#include "daemon/http_reply.h"
#include "daemon/metrics.h"
#include "daemon/sse.h"
#include "common/utf8.h"

#define POLL_MS 250
#define KEEPALIVE_MS 15000
#define END_GRACE_MS 30000
#define BLOCK_SIZE (32u * 1024)
/* How long the answer waits for the command's first message, so that a
 * command that cannot start (a missing cwd) gets an ordinary JSON error. */
#define START_WAIT_MS 10000

struct sse {
	struct sbx *sb;
	struct guest_stream *st;
	struct exec_stdin *feed;  /* stdin writer, NULL when no stdin */
	struct MHD_Connection *conn;
	struct sse_buf out;       /* formatted events not yet handed to MHD */
	uint8_t carry[3][4];      /* per channel: a cut UTF-8 sequence */
	size_t carry_len[3];
	int done;
	int64_t t0, last_send_ms, timeout_ms;
	struct guest_msg held;    /* the first message, read before the answer */
	int has_held;
};

/* An output chunk on channel ch (1 or 2), with the channel's held-back
 * bytes in front; a new cut sequence at the end is held back in turn. */
static int add_output(struct sse *s, int ch, const uint8_t *d, size_t n, int final)
{
	size_t held = s->carry_len[ch];
	uint8_t *buf = malloc(held + n);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, s->carry[ch], held);
	if (n)
		memcpy(buf + held, d, n);
	size_t total = held + n;
	size_t keep = final ? 0 : utf8_incomplete_tail(buf, total);
	memcpy(s->carry[ch], buf + total - keep, keep);
	s->carry_len[ch] = keep;
	int e = 0;
	if (total - keep > 0)
		e = sse_event(&s->out, ch == 1 ? "stdout" : "stderr",
			      json_pack("{s:o}", "data", utf8_json_lossy(buf, total - keep)));
	free(buf);
	return e;
}

/* The command ended (END or ERROR object): flush held bytes, then exit or
 * error. */
static void finish(struct sse *s, json_t *end)
{
	add_output(s, 1, NULL, 0, 1);
	add_output(s, 2, NULL, 0, 1);
	enum api_err err;
	char msg[400];
	if (api_agent_error_map(end, &err, msg, sizeof(msg))) {
		sse_error(&s->out, err, msg);
	} else {
		int64_t ms = util_now_ms() - s->t0;
		metrics_exec(ms);
		sse_event(&s->out, "exit", api_exit_json(end, ms));
	}
	s->done = 1;
}

/* Wait up to POLL_MS for the next agent message and turn it into events.
 * Returns 0, or -EPIPE when the client has gone. */
static int pump(struct sse *s)
{
	struct guest_msg m = {0};
	int rr;
	if (s->has_held) {
		m = s->held;
		s->has_held = 0;
		rr = 1;
	} else {
		rr = guest_stream_read(s->st, &m, POLL_MS);
	}
	int64_t now = util_now_ms();
	if (rr == -ETIMEDOUT) {
		if (http_conn_gone(s->conn))
			return -EPIPE;
		if (s->timeout_ms && now - s->t0 > s->timeout_ms + END_GRACE_MS) {
			sse_error(&s->out, API_ERR_AGENT_TIMEOUT,
				  "the guest agent did not end the command in time");
			s->done = 1;
		} else if (now - s->last_send_ms >= KEEPALIVE_MS) {
			sse_comment(&s->out, "keepalive");
		}
		return 0;
	}
	if (rr <= 0) {
		if (sbx_ending(s->sb))
			sse_error(&s->out, API_ERR_SANDBOX_NOT_RUNNING,
				  "the sandbox stopped during exec");
		else
			sse_error(&s->out, API_ERR_AGENT_UNAVAILABLE,
				  "lost the guest agent during exec");
		s->done = 1;
		return 0;
	}
	if (m.kind == GUEST_MSG_DATA && (m.channel == 1 || m.channel == 2)) {
		add_output(s, m.channel, m.data, m.len, 0);
	} else if (m.kind == GUEST_MSG_EVENT) {
		json_t *pid = json_object_get(m.json, "pid");
		const char *ev = json_string_value(json_object_get(m.json, "event"));
		if (ev && !strcmp(ev, "started") && json_is_integer(pid))
			sse_event(&s->out, "started",
				  json_pack("{s:I}", "pid", (json_int_t)json_integer_value(pid)));
	} else if (m.kind == GUEST_MSG_END || m.kind == GUEST_MSG_ERROR) {
		finish(s, m.json);
	}
	guest_msg_clear(&m);
	return 0;
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct sse *s = cls;
	(void)pos;
	for (;;) {
		if (sse_pending(&s->out)) {
			s->last_send_ms = util_now_ms();
			return (ssize_t)sse_take(&s->out, buf, max);
		}
		if (s->done)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (pump(s) < 0) {
			metrics_event(METRICS_EXEC_CLIENT_GONE);
			log_kv(LOG_INFO, "exec_stream.client_gone", "id=%s", sbx_id(s->sb));
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
	}
}

static void stream_free(void *cls)
{
	struct sse *s = cls;
	if (s->feed) {
		guest_stream_cancel(s->st); /* wakes the feeder if it waits */
		api_exec_stdin_finish(s->feed);
	}
	guest_stream_close(s->st); /* cancels the command if it still runs */
	sbx_release(s->sb);
	if (s->has_held)
		guest_msg_clear(&s->held);
	sse_free(&s->out);
	free(s);
}

void api_exec_stream(struct http_req *r)
{
	struct exec_body b;
	struct body_error be;
	if (body_parse_exec(r->body, r->body_len, &r->d->limits, &b, &be) < 0) {
		api_reply_body_error(r, &be);
		return;
	}
	struct sbx *sb = api_acquire(r);
	if (!sb) {
		exec_body_clear(&b);
		return;
	}
	struct sse *s = calloc(1, sizeof(*s));
	int64_t timeout_ms = api_exec_timeout_ms(r, &b);
	json_t *req = api_exec_request(sb, &b, timeout_ms, r->d->cfg.exec_output_cap);
	int e = s && req ? sbx_stream_open(sb, req, &s->st) : -ENOMEM;
	json_decref(req);
	if (!e)
		e = api_exec_stdin_start(s->st, b.stdin_data, b.stdin_len, &s->feed);
	exec_body_clear(&b);
	if (e) {
		api_reply_agent_failure(r, sb, e, "exec");
		if (s)
			guest_stream_close(s->st);
		free(s);
		sbx_release(sb);
		return;
	}
	s->sb = sb;
	s->conn = r->conn;
	s->t0 = s->last_send_ms = util_now_ms();
	s->timeout_ms = timeout_ms;
	/* A command that cannot start ends at once with an error: answer it
	 * as JSON, as /exec does; anything else is kept for the stream. */
	int rr = guest_stream_read(s->st, &s->held, START_WAIT_MS);
	if (rr > 0) {
		s->has_held = 1;
		if ((s->held.kind == GUEST_MSG_END || s->held.kind == GUEST_MSG_ERROR) &&
		    api_agent_error(r, s->held.json)) {
			stream_free(s);
			return;
		}
	}
	struct MHD_Response *resp =
		MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, BLOCK_SIZE, reader, s, stream_free);
	if (!resp) {
		stream_free(s);
		r->abort = 1;
		return;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(resp, "X-Accel-Buffering", "no");
	http_reply_response(r, 200, resp);
}
