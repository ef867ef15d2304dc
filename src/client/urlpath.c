/*
 * urlpath.c - percent-encoded API paths and queries (see urlpath.h).
 */
#include "client/urlpath.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#include <curl/curl.h>

long url_escape(const char *s, size_t len, char *out, size_t cap)
{
	/* The encoding is at least as long as the input. */
	if (len >= cap || len > INT_MAX)
		return -ENAMETOOLONG;
	if (len == 0) {
		out[0] = '\0';
		return 0;
	}
	/* The handle argument is unused since libcurl 7.82. */
	char *e = curl_easy_escape(NULL, s, (int)len);
	if (!e)
		return -ENOMEM;
	size_t el = strlen(e);
	if (el >= cap) {
		curl_free(e);
		return -ENAMETOOLONG;
	}
	memcpy(out, e, el + 1);
	curl_free(e);
	return (long)el;
}

void urlpath_init(struct urlpath *u)
{
	u->s[0] = '\0';
	u->len = 0;
	u->err = 0;
	u->has_query = 0;
}

/* Append n bytes of raw text. */
static void append(struct urlpath *u, const char *t, size_t n)
{
	if (u->err)
		return;
	if (n >= URLPATH_MAX - u->len) {
		u->err = -ENAMETOOLONG;
		return;
	}
	memcpy(u->s + u->len, t, n);
	u->len += n;
	u->s[u->len] = '\0';
}

/* Append s percent-encoded. */
static void append_escaped(struct urlpath *u, const char *s)
{
	if (u->err)
		return;
	long n = url_escape(s, strlen(s), u->s + u->len, URLPATH_MAX - u->len);
	if (n < 0) {
		u->err = (int)n;
		u->s[u->len] = '\0';
		return;
	}
	u->len += (size_t)n;
}

void urlpath_lit(struct urlpath *u, const char *lit)
{
	if (!u->err && u->has_query)
		u->err = -EINVAL;
	append(u, lit, strlen(lit));
}

void urlpath_seg(struct urlpath *u, const char *seg)
{
	if (u->err)
		return;
	if (u->has_query || !seg || !*seg || strcmp(seg, ".") == 0 || strcmp(seg, "..") == 0) {
		u->err = -EINVAL;
		return;
	}
	append(u, "/", 1);
	append_escaped(u, seg);
}

void urlpath_query(struct urlpath *u, const char *key, const char *value)
{
	if (u->err)
		return;
	if (!key || !*key || !value) {
		u->err = -EINVAL;
		return;
	}
	append(u, u->has_query ? "&" : "?", 1);
	u->has_query = 1;
	append_escaped(u, key);
	append(u, "=", 1);
	append_escaped(u, value);
}

int urlpath_status(const struct urlpath *u)
{
	return u->err;
}
