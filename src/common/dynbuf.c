/*
 * dynbuf.c - the capped growable byte buffer (see dynbuf.h).
 */
#include "common/dynbuf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* First allocation, bytes; later ones double. */
#define DYNBUF_MIN_ALLOC 64u

void dynbuf_init(struct dynbuf *b, size_t cap)
{
	memset(b, 0, sizeof(*b));
	b->cap = cap;
}

/* Make alloc hold want bytes plus the NUL (want <= cap).  0 or -ENOMEM. */
static int grow(struct dynbuf *b, size_t want)
{
	if (want >= SIZE_MAX)
		return -ENOMEM;
	if (b->p && want + 1 <= b->alloc)
		return 0;
	size_t limit = b->cap < SIZE_MAX ? b->cap + 1 : SIZE_MAX;
	size_t na = b->alloc ? b->alloc : DYNBUF_MIN_ALLOC;
	while (na < want + 1)
		na = na <= SIZE_MAX / 2 ? na * 2 : want + 1;
	if (na > limit)
		na = limit;
	char *np = realloc(b->p, na);
	if (!np)
		return -ENOMEM;
	if (!b->p)
		np[0] = '\0';
	b->p = np;
	b->alloc = na;
	return 0;
}

int dynbuf_add(struct dynbuf *b, const void *data, size_t n)
{
	if (n == 0)
		return 0;
	size_t room = b->cap - b->len;
	size_t take = n > room ? room : n;
	if (take) {
		int r = grow(b, b->len + take);
		if (r < 0)
			return r;
		memcpy(b->p + b->len, data, take);
		b->len += take;
		b->p[b->len] = '\0';
	}
	if (take < n) {
		b->truncated = 1;
		return -EFBIG;
	}
	return 0;
}

int dynbuf_add_str(struct dynbuf *b, const char *s)
{
	return dynbuf_add(b, s, strlen(s));
}

int dynbuf_vaddf(struct dynbuf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int k = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (k < 0)
		return -EINVAL;
	if (k == 0)
		return 0;
	size_t room = b->cap - b->len;
	size_t take = (size_t)k > room ? room : (size_t)k;
	if (take) {
		int r = grow(b, b->len + take);
		if (r < 0)
			return r;
		/* writes take bytes and the NUL (cuts the rest) */
		vsnprintf(b->p + b->len, take + 1, fmt, ap);
		b->len += take;
	}
	if (take < (size_t)k) {
		b->truncated = 1;
		return -EFBIG;
	}
	return 0;
}

int dynbuf_addf(struct dynbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = dynbuf_vaddf(b, fmt, ap);
	va_end(ap);
	return r;
}

int dynbuf_reserve(struct dynbuf *b, size_t n)
{
	if (n > b->cap - b->len)
		return -EFBIG;
	return grow(b, b->len + n);
}

void dynbuf_commit(struct dynbuf *b, size_t n)
{
	if (!b->p || n > b->alloc - 1 - b->len)
		return; /* more than was reserved: a caller bug, ignore it */
	b->len += n;
	b->p[b->len] = '\0';
}

void dynbuf_consume(struct dynbuf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
	} else {
		memmove(b->p, b->p + n, b->len - n);
		b->len -= n;
	}
	if (b->p)
		b->p[b->len] = '\0';
}

const char *dynbuf_str(const struct dynbuf *b)
{
	return b->p ? b->p : "";
}

char *dynbuf_take(struct dynbuf *b, size_t *len)
{
	char *s = b->p;
	size_t n = b->len;
	if (!s) {
		s = malloc(1);
		if (!s)
			return NULL;
		s[0] = '\0';
	}
	dynbuf_init(b, b->cap);
	if (len)
		*len = n;
	return s;
}

void dynbuf_reset(struct dynbuf *b)
{
	b->len = 0;
	b->truncated = 0;
	if (b->p)
		b->p[0] = '\0';
}

void dynbuf_free(struct dynbuf *b)
{
	free(b->p);
	dynbuf_init(b, b->cap);
}

size_t dynbuf_write(char *data, size_t size, size_t nmemb, void *b)
{
	size_t n = size * nmemb;
	return dynbuf_add(b, data, n) == 0 ? n : 0;
}
