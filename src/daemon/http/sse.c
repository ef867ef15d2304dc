/*
 * sse.c - the Server-Sent Events buffer (see sse.h).
 */
#include "daemon/http/sse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

/* Add the n parts of one event (or comment) whole, or nothing. */
static int add_parts(struct sse_buf *b, const char *const *part, int n)
{
	if (b->off == b->b.len) {
		dynbuf_reset(&b->b);
		b->off = 0;
	}
	if (b->b.cap == 0)
		dynbuf_init(&b->b, SSE_BUF_CAP); /* a zeroed struct: first use */
	size_t total = 0;
	for (int i = 0; i < n; i++)
		total += strlen(part[i]);
	int e = dynbuf_reserve(&b->b, total);
	if (e < 0)
		return e == -EFBIG ? -E2BIG : e;
	for (int i = 0; i < n; i++)
		dynbuf_add_str(&b->b, part[i]); /* fits: reserved above */
	return 0;
}

int sse_event(struct sse_buf *b, const char *name, json_t *data)
{
	char *j = data ? json_dumps(data, JSON_COMPACT) : NULL;
	json_decref(data);
	if (!j)
		return -ENOMEM;
	const char *part[] = {"event: ", name, "\ndata: ", j, "\n\n"};
	int e = add_parts(b, part, 5);
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
	const char *part[] = {": ", text, "\n\n"};
	return add_parts(b, part, 3);
}

size_t sse_pending(const struct sse_buf *b)
{
	return b->b.len - b->off;
}

size_t sse_take(struct sse_buf *b, char *out, size_t max)
{
	size_t n = b->b.len - b->off;
	if (n > max)
		n = max;
	if (n == 0)
		return 0;
	memcpy(out, b->b.p + b->off, n);
	b->off += n;
	if (b->off == b->b.len) {
		dynbuf_reset(&b->b);
		b->off = 0;
	}
	return n;
}

void sse_free(struct sse_buf *b)
{
	dynbuf_free(&b->b);
	memset(b, 0, sizeof(*b));
}
