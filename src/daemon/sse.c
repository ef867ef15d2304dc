/*
 * sse.c - the Server-Sent Events buffer (see sse.h).
 */
#include "daemon/sse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

static int add(struct sse_buf *b, const char *d, size_t n)
{
	if (b->off == b->len)
		b->off = b->len = 0;
	if (b->len + n > b->alloc) {
		size_t na = b->alloc ? b->alloc : 4096;
		while (na < b->len + n)
			na *= 2;
		char *np = realloc(b->p, na);
		if (!np)
			return -ENOMEM;
		b->p = np;
		b->alloc = na;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
	return 0;
}

int sse_event(struct sse_buf *b, const char *name, json_t *data)
{
	char *j = data ? json_dumps(data, JSON_COMPACT) : NULL;
	json_decref(data);
	if (!j)
		return -ENOMEM;
	int e = add(b, "event: ", 7);
	if (!e)
		e = add(b, name, strlen(name));
	if (!e)
		e = add(b, "\ndata: ", 7);
	if (!e)
		e = add(b, j, strlen(j));
	if (!e)
		e = add(b, "\n\n", 2);
	free(j);
	return e;
}

int sse_error(struct sse_buf *b, enum api_err e, const char *msg)
{
	json_t *err = json_pack("{s:s, s:o}", "code", api_errors_code(e), "message",
				utf8_json_lossy(msg, strlen(msg)));
	return sse_event(b, "error", err ? json_pack("{s:o}", "error", err) : NULL);
}

int sse_comment(struct sse_buf *b, const char *text)
{
	int e = add(b, ": ", 2);
	if (!e)
		e = add(b, text, strlen(text));
	if (!e)
		e = add(b, "\n\n", 2);
	return e;
}

size_t sse_pending(const struct sse_buf *b)
{
	return b->len - b->off;
}

size_t sse_take(struct sse_buf *b, char *out, size_t max)
{
	size_t n = b->len - b->off;
	if (n > max)
		n = max;
	memcpy(out, b->p + b->off, n);
	b->off += n;
	if (b->off == b->len)
		b->off = b->len = 0;
	return n;
}

void sse_free(struct sse_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}
