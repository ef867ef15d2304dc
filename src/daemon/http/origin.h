/*
 * origin.h - web origins (RFC 6454): the Origin header a browser sends and
 * the lists of allowed origins an operator gives (--mcp-allowed-origins).
 *
 * An origin is "scheme://host[:port]" with scheme http or https and no
 * path.  The normal form, which is what is compared, has the scheme and
 * host in lower case and leaves the scheme's default port (80, 443) out,
 * as browsers do: "HTTP://Example.COM:80" is "http://example.com".  An
 * IPv6 host keeps its brackets.  Two origins are the same only if their
 * normal forms are equal byte for byte; nothing is resolved, and a host
 * name is never compared with an address.
 *
 * Threads: pure functions; any thread.
 */
#ifndef PANDASTACK_DAEMON_ORIGIN_H
#define PANDASTACK_DAEMON_ORIGIN_H

#include <stddef.h>

/* Bytes of an origin's normal form, with its NUL. */
#define ORIGIN_MAX 300

/*
 * origin_normalize - the normal form of s (an Origin header value or one
 * item of a list; one trailing '/' is allowed) into out (ORIGIN_MAX bytes).
 * Returns 0, or -EINVAL for anything that is not such an origin ("null",
 * a path, a user, a port outside 1-65535, a byte outside the host's
 * characters).
 */
int origin_normalize(const char *s, char out[ORIGIN_MAX]);

/*
 * origin_list_check - 0 when list is "" or ORIGIN[,ORIGIN...] (spaces
 * around the commas allowed), each one origin_normalize takes; else
 * -EINVAL with the first bad item named in why (whylen bytes).
 */
int origin_list_check(const char *list, char *why, size_t whylen);

/*
 * origin_in_list - 1 when the origin whose normal form is norm is one of
 * list's (a list origin_list_check takes; items that are not origins never
 * match); else 0.
 */
int origin_in_list(const char *norm, const char *list);

#endif
