/*
 * sse.h - Server-Sent Events for the streamed routes (exec_stream,
 * run_code_stream): a buffer of formatted events waiting for
 * libmicrohttpd's content reader
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html).
 *
 * Each event is "event: NAME\ndata: JSON\n\n" with the JSON on one line
 * (compact; jansson escapes newlines in strings), so a client splits
 * events on blank lines.  The buffer grows as events are added and
 * empties as the reader takes them; a producer adds only what one agent
 * message makes (at most one agent frame, 8 MiB, which JSON escaping may
 * grow) before the reader drains it, and SSE_BUF_CAP bounds it all the
 * same: an event that would pass it is refused whole, never cut.
 *
 * A zeroed struct sse_buf is an empty buffer.
 *
 * Threads: one struct per response, used by its connection's thread.
 */
#ifndef PANDASTACK_DAEMON_SSE_H
#define PANDASTACK_DAEMON_SSE_H

#include <stddef.h>

#include <jansson.h>

#include "common/dynbuf.h"
#include "daemon/api_errors.h"

/* Most bytes of events waiting for the reader. */
#define SSE_BUF_CAP (64u * 1024u * 1024u)

struct sse_buf {
	struct dynbuf b;        /* pending bytes are b.p[off, b.len) */
	size_t off;
};

/* sse_event - add event name with data (stolen; NULL counts as out of
 * memory).  Returns 0, -ENOMEM, or -E2BIG when the event does not fit
 * under SSE_BUF_CAP (nothing is added). */
int sse_event(struct sse_buf *b, const char *name, json_t *data);

/* sse_error - add the closing error event {"error": {"code", "message"}}
 * with err's code (a row of the error table, api_errors.h) and msg (made
 * valid UTF-8).  Returns as sse_event. */
int sse_error(struct sse_buf *b, enum api_err err, const char *msg);

/* sse_comment - add a comment line ": text" (keepalive).  Returns as
 * sse_event. */
int sse_comment(struct sse_buf *b, const char *text);

/* sse_pending - bytes waiting to be taken. */
size_t sse_pending(const struct sse_buf *b);

/* sse_take - copy up to max pending bytes to out; returns how many. */
size_t sse_take(struct sse_buf *b, char *out, size_t max);

/* sse_free - release the buffer (the struct stays reusable). */
void sse_free(struct sse_buf *b);

#endif
