/*
 * port_resp.c - a proxied server's answer through http-parser, with caps
 * (see port_resp.h).
 */
#include "daemon/ports/port_resp.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <strings.h>

/* Interim answers (100 Continue, 103 Early Hints ...) skipped at most. */
#define INTERIM_MAX 16

#define R(p) ((struct port_resp *)(p)->data)

/* What a callback found wrong, kept until feed returns. */
enum { FAIL_NONE = 0, FAIL_BIG, FAIL_SPACE, FAIL_PROTO };

static int fail(struct port_resp *r, int why)
{
	r->failed = why;
	return 1; /* a non-zero return stops http-parser */
}

/* Count len more bytes of the head; past the cap, fail. */
static int count(struct port_resp *r, size_t len)
{
	r->head_len += len;
	return r->head_len > PORT_RESP_HEAD_MAX ? fail(r, FAIL_BIG) : 0;
}

/* Append len bytes to the header store (a NUL is always kept free after). */
static int store_add(struct port_resp *r, const char *at, size_t len)
{
	if (count(r, len) || len >= sizeof(r->store) - r->store_len)
		return fail(r, FAIL_BIG);
	memcpy(r->store + r->store_len, at, len);
	r->store_len += len;
	return 0;
}

static int store_nul(struct port_resp *r)
{
	if (r->store_len >= sizeof(r->store))
		return fail(r, FAIL_BIG);
	r->store[r->store_len++] = '\0';
	return 0;
}

/* A token character of a header name (RFC 9110 5.6.2). */
static int tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int tchar_all(const char *at, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!tchar((unsigned char)at[i]))
			return 0;
	return 1;
}

/* A field value's bytes (RFC 9110 5.5): no controls but HTAB. */
static int value_ok(const char *at, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)at[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return 0;
	}
	return 1;
}

static int on_message_begin(http_parser *p)
{
	struct port_resp *r = R(p);
	r->nheaders = 0;
	r->store_len = 0;
	r->head_len = 0;
	r->in_value = 0;
	return 0;
}

/* The reason phrase: counted with the status line's fixed part. */
static int on_status(http_parser *p, const char *at, size_t len)
{
	(void)at;
	return count(R(p), len + sizeof("HTTP/1.1 200 \r\n") - 1);
}

/* A trailer field's piece (RFC 9112 7.1.2), after the final head: checked
 * and counted against the head's cap, then dropped (the proxy forwards no
 * trailers); the final head's headers stay as they were. */
static int trailer(struct port_resp *r, const char *at, size_t len, int value)
{
	if (value ? !value_ok(at, len) : !tchar_all(at, len))
		return fail(r, FAIL_PROTO);
	return count(r, len + (value ? 0 : sizeof(": \r\n") - 1));
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
	struct port_resp *r = R(p);
	if (r->head_done)
		return trailer(r, at, len, 0);
	if (r->in_value || r->nheaders == 0) {
		/* a new header: end the previous value, start a name */
		if (r->nheaders && store_nul(r))
			return 1;
		if (r->nheaders == PORT_RESP_HEADERS_MAX)
			return fail(r, FAIL_BIG);
		r->headers[r->nheaders].name = (uint16_t)r->store_len;
		r->headers[r->nheaders].value = UINT16_MAX;
		r->nheaders++;
		r->in_value = 0;
		if (count(r, sizeof(": \r\n") - 1))
			return 1;
	}
	if (!tchar_all(at, len))
		return fail(r, FAIL_PROTO);
	return store_add(r, at, len);
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
	struct port_resp *r = R(p);
	if (r->head_done)
		return trailer(r, at, len, 1);
	if (r->nheaders == 0)
		return fail(r, FAIL_PROTO);
	if (!r->in_value) {
		if (store_nul(r))
			return 1;
		r->headers[r->nheaders - 1].value = (uint16_t)r->store_len;
		r->in_value = 1;
	}
	if (!value_ok(at, len))
		return fail(r, FAIL_PROTO);
	return store_add(r, at, len);
}

static int is_interim(unsigned status)
{
	return status >= 100 && status < 200 && status != 101;
}

static int on_headers_complete(http_parser *p)
{
	struct port_resp *r = R(p);
	if (r->nheaders) {
		/* a name without a value callback: an empty value */
		if (!r->in_value) {
			if (store_nul(r))
				return 1;
			r->headers[r->nheaders - 1].value = (uint16_t)r->store_len;
		}
		if (store_nul(r))
			return 1;
	}
	unsigned status = p->status_code;
	if (status < 100 || status > 599)
		return fail(r, FAIL_PROTO);
	if (is_interim(status))
		return 1; /* no body; the final answer follows */
	if (status == 101 && !p->upgrade)
		return fail(r, FAIL_PROTO); /* 101 without Upgrade and Connection: upgrade */
	r->status = status;
	r->head_done = 1;
	r->upgrade = p->upgrade;
	if (status == 204 || status == 304 || status == 101) {
		r->content_length = -1;
		return 1;
	}
	r->content_length = !(p->flags & F_CHUNKED) && p->content_length != ULLONG_MAX
				    ? (int64_t)p->content_length
				    : -1;
	return r->head_request ? 1 : 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
	struct port_resp *r = R(p);
	if (!r->out || len > r->out_cap - r->out_len)
		return fail(r, FAIL_SPACE);
	memcpy(r->out + r->out_len, at, len);
	r->out_len += len;
	return 0;
}

static int on_message_complete(http_parser *p)
{
	struct port_resp *r = R(p);
	if (!r->head_done) {
		/* an interim answer ended; the next head starts afresh */
		if (++r->interim > INTERIM_MAX)
			return fail(r, FAIL_PROTO);
		return 0;
	}
	r->complete = 1;
	http_parser_pause(p, 1); /* one answer per connection: the rest is ignored */
	return 0;
}

static const http_parser_settings settings = {
	.on_message_begin = on_message_begin,
	.on_status = on_status,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

void port_resp_init(struct port_resp *r, int head_request)
{
	memset(r, 0, sizeof(*r));
	http_parser_init(&r->p, HTTP_RESPONSE);
	r->p.data = r;
	r->head_request = head_request;
	r->content_length = -1;
}

long port_resp_feed(struct port_resp *r, const char *data, size_t len, char *out,
		    size_t outcap, size_t *outlen)
{
	*outlen = 0;
	if (r->failed)
		return -EPROTO;
	if (r->complete || (r->upgrade && r->head_done))
		return (long)len;
	r->out = out;
	r->out_cap = out ? outcap : 0;
	r->out_len = 0;
	size_t n = http_parser_execute(&r->p, &settings, len ? data : NULL, len);
	*outlen = r->out_len;
	r->out = NULL;
	enum http_errno e = HTTP_PARSER_ERRNO(&r->p);
	if (r->failed == FAIL_BIG)
		return -E2BIG;
	if (r->failed == FAIL_SPACE)
		return -ENOSPC;
	if (r->failed || (e != HPE_OK && e != HPE_PAUSED)) {
		r->failed = FAIL_PROTO;
		return -EPROTO;
	}
	if (len == 0 && !r->complete) {
		/* the guest closed its side before the answer was whole */
		r->failed = FAIL_PROTO;
		return -EPROTO;
	}
	return (long)n;
}

const char *port_resp_header_name(const struct port_resp *r, size_t i)
{
	return r->store + r->headers[i].name;
}

const char *port_resp_header_value(const struct port_resp *r, size_t i)
{
	return r->store + r->headers[i].value;
}

const char *port_resp_header(const struct port_resp *r, const char *name)
{
	for (size_t i = 0; i < r->nheaders; i++)
		if (strcasecmp(port_resp_header_name(r, i), name) == 0)
			return port_resp_header_value(r, i);
	return NULL;
}
