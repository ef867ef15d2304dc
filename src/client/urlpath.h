/*
 * urlpath.h - building the path-and-query part of an API URL from literal
 * pieces, user-given path segments (sandbox and key ids) and query values
 * (guest file paths), each percent-encoded with libcurl (curl_easy_escape:
 * every byte but RFC 3986's unreserved A-Z a-z 0-9 - . _ ~ becomes %XX).
 *
 *   struct urlpath u;
 *   urlpath_init(&u);
 *   urlpath_lit(&u, "/v1/sandboxes");
 *   urlpath_seg(&u, id);                 -> /v1/sandboxes/sbx_1
 *   urlpath_lit(&u, "/fs");
 *   urlpath_query(&u, "path", "/a b");   -> /v1/sandboxes/sbx_1/fs?path=%2Fa%20b
 *   if (urlpath_status(&u)) ...
 *
 * Errors stick: after the first failure the builder ignores further calls
 * and urlpath_status reports it.  Threads: any (no shared state).
 */
#ifndef PANDASTACK_CLIENT_URLPATH_H
#define PANDASTACK_CLIENT_URLPATH_H

#include <stddef.h>

#define URLPATH_MAX 16384 /* bytes of path + query with the NUL */

struct urlpath {
	char s[URLPATH_MAX]; /* NUL-terminated */
	size_t len;
	int err;             /* 0 or the first -errno */
	int has_query;
};

/*
 * url_escape - percent-encode len bytes of s into out (cap bytes with the
 * NUL).  Returns the encoded length, -ENAMETOOLONG when it does not fit,
 * -ENOMEM.
 */
long url_escape(const char *s, size_t len, char *out, size_t cap);

/* urlpath_init - an empty path. */
void urlpath_init(struct urlpath *u);

/* urlpath_lit - append lit verbatim (a constant of the caller's such as
 * "/v1/sandboxes"; never user input).  Not after a query. */
void urlpath_lit(struct urlpath *u, const char *lit);

/*
 * urlpath_seg - append "/" and seg percent-encoded.  An empty segment, "."
 * and ".." are refused (-EINVAL): they would name another resource.
 */
void urlpath_seg(struct urlpath *u, const char *seg);

/* urlpath_query - append "?key=value" (then "&key=value"), both encoded. */
void urlpath_query(struct urlpath *u, const char *key, const char *value);

/* urlpath_status - 0, or the first error: -EINVAL, -ENAMETOOLONG, -ENOMEM. */
int urlpath_status(const struct urlpath *u);

#endif
