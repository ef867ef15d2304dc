/*
 * api_stream.c - an SSE answer fed by a guest run (see api_stream.h).
 */
#include "daemon/api/api_stream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "common/util.h"
#include "daemon/daemon.h"
#include "daemon/http/http_reply.h"
#include "daemon/metrics.h"

#define BLOCK_SIZE (32u * 1024)

/* The run ended on the host's side (err, no answer from the agent). */
static void host_error(struct api_stream *s, int err)
{
	char msg[160];
	if (sbx_ending(s->sb)) {
		snprintf(msg, sizeof(msg), "the sandbox stopped or was paused during %s", s->ops->what);
		sse_error(&s->out, API_ERR_SANDBOX_NOT_RUNNING, msg);
	} else if (err == -ETIMEDOUT) {
		sse_error(&s->out, API_ERR_AGENT_TIMEOUT,
			  "the guest agent did not end the command in time");
	} else {
		snprintf(msg, sizeof(msg), "lost the guest agent during %s", s->ops->what);
		sse_error(&s->out, API_ERR_AGENT_UNAVAILABLE, msg);
	}
	s->done = 1;
}

/* Wait up to API_STREAM_POLL_MS for the next event and turn it into SSE
 * events.  Returns 0, or -EPIPE when the client has gone. */
static int stream_pump(struct api_stream *s)
{
	struct guest_event ev;
	int k = guest_run_next(s->x, &ev, API_STREAM_POLL_MS);
	if (k == -ETIMEDOUT) {
		if (http_conn_gone(s->conn))
			return -EPIPE;
		if (util_now_ms() - s->last_send_ms >= API_STREAM_KEEPALIVE_MS)
			sse_comment(&s->out, "keepalive");
		return 0;
	}
	if (k <= 0) /* over without a last event: cannot happen, be safe */
		host_error(s, -ECONNRESET);
	else if (ev.type == GUEST_EV_ERROR && !ev.json)
		host_error(s, ev.err);
	else
		s->ops->event(s, &ev);
	return 0;
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct api_stream *s = cls;
	(void)pos;
	for (;;) {
		if (sse_pending(&s->out)) {
			s->last_send_ms = util_now_ms();
			return (ssize_t)sse_take(&s->out, buf, max);
		}
		if (s->done)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (stream_pump(s) < 0) {
			if (s->ops->count_gone)
				metrics_event(METRICS_EXEC_CLIENT_GONE);
			if (s->ctx)
				log_kv(LOG_INFO, s->ops->log_gone, "id=%s ctx=%s", sbx_id(s->sb), s->ctx);
			else
				log_kv(LOG_INFO, s->ops->log_gone, "id=%s", sbx_id(s->sb));
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
	}
}

static void stream_free(void *cls)
{
	struct api_stream *s = cls;
	guest_run_close(s->x); /* cancels the run if it still goes */
	sbx_release(s->sb);
	sse_free(&s->out);
	s->ops->free(s);
}

void api_stream_respond(struct http_req *r, struct api_stream *s)
{
	s->conn = r->conn;
	s->last_send_ms = util_now_ms();
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
