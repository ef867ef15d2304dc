/*
 * http_head.c - the daemon's own check of a request head (see http_head.h).
 */
#include "daemon/http/http_head.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* RFC 9110 5.6.2: tchar. */
static int is_tchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return 1;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static enum http_head_result refuse(enum api_err *err, enum api_err e, char *msg, size_t msglen,
				    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static enum http_head_result refuse(enum api_err *err, enum api_err e, char *msg, size_t msglen,
				    const char *fmt, ...)
{
	*err = e;
	if (msglen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, msglen, fmt, ap);
		va_end(ap);
	}
	return HTTP_HEAD_BAD;
}

/* The name of a field line (a token, so printable), cut for a message. */
static void name_of(const char *line, size_t n, char *out, size_t outlen)
{
	size_t k = 0;
	while (k < n && k + 1 < outlen && is_tchar((unsigned char)line[k]))
		k++;
	memcpy(out, line, k);
	out[k] = '\0';
}

/* A byte that may not appear in a line of kind (0: request line, 1: field
 * line): NUL and controls, except HTAB in a field line; CR is checked by
 * the caller. */
static int forbidden(unsigned char c, int field)
{
	if (c == '\t')
		return !field;
	return c < 0x20 || c == 0x7f;
}

/* The first forbidden byte of line[0..n) or of its partial start, or -1. */
static long first_forbidden(const char *line, size_t n, int field)
{
	for (size_t i = 0; i < n; i++)
		if (forbidden((unsigned char)line[i], field))
			return (long)i;
	return -1;
}

static enum http_head_result request_line(const char *l, size_t n, enum api_err *err, char *msg,
					  size_t msglen)
{
	size_t m = 0;
	while (m < n && is_tchar((unsigned char)l[m]))
		m++;
	if (m == 0 || m == n || l[m] != ' ')
		return refuse(err, API_ERR_INVALID_REQUEST, msg, msglen,
			      "the request line does not start with a method and one space");
	size_t t = m + 1, te = t;
	while (te < n && (unsigned char)l[te] > 0x20 && l[te] != 0x7f)
		te++;
	if (te == t || te == n || l[te] != ' ')
		return refuse(err, API_ERR_INVALID_REQUEST, msg, msglen,
			      "the request line has no target followed by one space and the version");
	const char *v = l + te + 1;
	size_t vn = n - te - 1;
	if (vn == 8 && (memcmp(v, "HTTP/1.1", 8) == 0 || memcmp(v, "HTTP/1.0", 8) == 0))
		return HTTP_HEAD_MORE;
	if (vn == 8 && memcmp(v, "HTTP/", 5) == 0 && v[5] >= '0' && v[5] <= '9' && v[6] == '.' &&
	    v[7] >= '0' && v[7] <= '9')
		return refuse(err, API_ERR_INVALID_REQUEST, msg, msglen,
			      "HTTP/%c.%c is not served here (HTTP/1.0 and HTTP/1.1 are)", v[5], v[7]);
	return refuse(err, API_ERR_INVALID_REQUEST, msg, msglen,
		      "the request line does not end in HTTP/1.0 or HTTP/1.1");
}

/* Content-Length's value v (n bytes, OWS not yet trimmed). */
static enum http_head_result content_length(const char *v, size_t n, enum api_err *err, char *msg,
					    size_t msglen)
{
	while (n && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	int digits = n > 0;
	for (size_t i = 0; i < n && digits; i++)
		digits = v[i] >= '0' && v[i] <= '9';
	if (!digits)
		return refuse(err, API_ERR_INVALID_HEADER, msg, msglen,
			      "Content-Length '%.*s' is not a number of bytes", (int)(n < 32 ? n : 32),
			      v);
	uint64_t x = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(v[i] - '0');
		if (x > ((uint64_t)INT64_MAX - d) / 10)
			return refuse(err, API_ERR_BODY_TOO_LARGE, msg, msglen,
				      "Content-Length %.*s%s is larger than any body taken here",
				      (int)(n < 32 ? n : 32), v, n > 32 ? "..." : "");
		x = x * 10 + d;
	}
	return HTTP_HEAD_MORE;
}

static enum http_head_result field_line(const char *l, size_t n, enum api_err *err, char *msg,
					size_t msglen)
{
	if (l[0] == ' ' || l[0] == '\t')
		return refuse(err, API_ERR_INVALID_HEADER, msg, msglen,
			      "a header line starts with white space (line folding is not taken)");
	size_t m = 0;
	while (m < n && is_tchar((unsigned char)l[m]))
		m++;
	char name[64];
	name_of(l, m, name, sizeof(name));
	if (m == n || l[m] != ':') {
		if (m && m < n && (l[m] == ' ' || l[m] == '\t'))
			return refuse(err, API_ERR_INVALID_HEADER, msg, msglen,
				      "header %s has white space before its colon", name);
		return refuse(err, API_ERR_INVALID_HEADER, msg, msglen,
			      m ? "header %s has a byte that is not allowed in a name, or no colon"
				: "a header line has no name%s",
			      m ? name : "");
	}
	if (m == 0)
		return refuse(err, API_ERR_INVALID_HEADER, msg, msglen, "a header line has no name");
	long bad = first_forbidden(l + m + 1, n - m - 1, 1);
	if (bad >= 0)
		return refuse(err, API_ERR_INVALID_HEADER, msg, msglen,
			      "the value of header %s holds a control byte (0x%02x)", name,
			      (unsigned char)l[m + 1 + (size_t)bad]);
	if (m == 14 && strncasecmp(l, "Content-Length", 14) == 0)
		return content_length(l + m + 1, n - m - 1, err, msg, msglen);
	return HTTP_HEAD_MORE;
}

enum http_head_result http_head_check(const char *buf, size_t len, size_t *head_len,
				      enum api_err *err, char *msg, size_t msglen)
{
	if (msglen)
		msg[0] = '\0';
	size_t limit = len < HTTP_HEAD_MAX ? len : HTTP_HEAD_MAX;
	size_t off = 0;
	int seen_request_line = 0;
	while (off < limit) {
		const char *l = buf + off;
		const char *lf = memchr(l, '\n', limit - off);
		size_t n = lf ? (size_t)(lf - l) : limit - off;
		if (!lf) {
			/* an unfinished line: only what is already wrong in it */
			size_t k = n && l[n - 1] == '\r' ? n - 1 : n;
			if (memchr(l, '\r', k))
				return refuse(err,
					      seen_request_line ? API_ERR_INVALID_HEADER
								: API_ERR_INVALID_REQUEST,
					      msg, msglen, "a line holds a CR that does not end it");
			long bad = first_forbidden(l, k, seen_request_line);
			if (bad >= 0)
				return refuse(err,
					      seen_request_line ? API_ERR_INVALID_HEADER
								: API_ERR_INVALID_REQUEST,
					      msg, msglen, "the %s holds a control byte (0x%02x)",
					      seen_request_line ? "headers" : "request line",
					      (unsigned char)l[bad]);
			break;
		}
		off += n + 1;
		if (n && l[n - 1] == '\r')
			n--;
		if (memchr(l, '\r', n))
			return refuse(err,
				      seen_request_line ? API_ERR_INVALID_HEADER
							: API_ERR_INVALID_REQUEST,
				      msg, msglen, "a line holds a CR that does not end it");
		if (n == 0) {
			if (!seen_request_line)
				continue; /* RFC 9112 2.2: empty lines before the request */
			*head_len = off;
			return HTTP_HEAD_OK;
		}
		enum http_head_result r;
		if (!seen_request_line) {
			long bad = first_forbidden(l, n, 0);
			if (bad >= 0)
				return refuse(err, API_ERR_INVALID_REQUEST, msg, msglen,
					      "the request line holds a control byte (0x%02x)",
					      (unsigned char)l[bad]);
			r = request_line(l, n, err, msg, msglen);
			seen_request_line = 1;
		} else {
			r = field_line(l, n, err, msg, msglen);
		}
		if (r != HTTP_HEAD_MORE)
			return r;
	}
	if (len >= HTTP_HEAD_MAX)
		return refuse(err, API_ERR_HEADERS_TOO_LARGE, msg, msglen,
			      "the request's head is over %u KiB", HTTP_HEAD_MAX / 1024);
	return HTTP_HEAD_MORE;
}
