/*
 * sse.h - Server-Sent Events for the streamed routes (exec_stream,
 * run_code_stream): a buffer of formatted events waiting for
 * libmicrohttpd's content reader
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html).
 *
 * Each event is "event: NAME\ndata: JSON\n\n" with the JSON on one line
 * (compact; jansson escapes newlines in strings), so a client splits
 * events on blank lines.  The buffer grows as events are added and
 * shrinks as the reader takes them; a producer adds only what one agent
 * message makes (at most one agent frame, 8 MiB) before the reader drains
 * it, which bounds it.
 *
 * Threads: one struct per response, used by its connection's thread.
 */
#ifndef PANDASTACK_DAEMON_SSE_H
#define PANDASTACK_DAEMON_SSE_H

#include <stddef.h>

#include <jansson.h>

#include "daemon/api_errors.h"

struct sse_buf {
	char *p;
	size_t len, off, alloc; /* pending bytes are p[off, len) */
};

/* sse_event - add event name with data (stolen; NULL counts as out of
 * memory).  Returns 0 or -ENOMEM. */
int sse_event(struct sse_buf *b, const char *name, json_t *data);

/* sse_error - add the closing error event {"error": {"code", "message"}}
 * with err's code (a row of the error table, api_errors.h) and msg (made
 * valid UTF-8).  Returns 0 or -ENOMEM. */
int sse_error(struct sse_buf *b, enum api_err err, const char *msg);

/* sse_comment - add a comment line ": text" (keepalive).  0 or -ENOMEM. */
int sse_comment(struct sse_buf *b, const char *text);

/* sse_pending - bytes waiting to be taken. */
size_t sse_pending(const struct sse_buf *b);

/* sse_take - copy up to max pending bytes to out; returns how many. */
size_t sse_take(struct sse_buf *b, char *out, size_t max);

/* sse_free - release the buffer (the struct stays reusable). */
void sse_free(struct sse_buf *b);

#endif
