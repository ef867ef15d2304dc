/*
 * route.h - the daemon's route table: which handler serves which method and
 * path pattern, what authentication it needs and how its body is read.
 *
 * Patterns are literal segments and {param} segments ("/v1/sandboxes/{id}").
 * Routes with ROUTE_AUTH_PORT are not matched by their pattern (which
 * documents them) but by the exposed-port rules of port_target.h, before
 * any pattern: one such route per method, the first serving any method
 * not listed.
 * A {param} matches one non-empty segment of at most ROUTE_PARAM_MAX - 1
 * bytes.  The table (routes.c) is the single list of served routes: the
 * dispatcher uses it, `pandastackd --print-routes` prints it, and a test
 * compares it with docs/openapi.yaml.
 *
 * Every route names the query parameters it takes: any other is refused
 * before its handler runs, so a mistyped option never passes unnoticed.
 *
 * Threads: the table is immutable; matching is pure.
 */
#ifndef PANDASTACK_DAEMON_ROUTE_H
#define PANDASTACK_DAEMON_ROUTE_H

#include <stddef.h>
#include <stdio.h>

#define ROUTE_MAX_PARAMS 2
#define ROUTE_PARAM_MAX 128

struct http_req;

enum route_auth {
	ROUTE_AUTH_KEY = 0,   /* any valid API key */
	ROUTE_AUTH_ADMIN = 1, /* an admin key; others get 403 */
	ROUTE_AUTH_NONE = 2,  /* no key: the dashboard's static files only */
	ROUTE_AUTH_PORT = 3,  /* a sandbox's exposed port: the team's key, the
			       * sandbox's access token, or nothing when its
			       * ports are public; the handler decides */
};

enum route_body {
	ROUTE_BODY_BUFFERED = 0, /* read whole (up to body_cap) before handle() */
	ROUTE_BODY_STREAM = 1,   /* begin(), chunk() per piece, then handle() */
};

struct route {
	const char *method;     /* "GET", "POST", "PUT", "DELETE" */
	const char *pattern;    /* "/v1/sandboxes/{id}/exec" */
	enum route_auth auth;
	enum route_body body;
	size_t body_cap;        /* BUFFERED: max body bytes (413 beyond) */
	/* Called once the whole request arrived; must reply (http_reply_*). */
	void (*handle)(struct http_req *r);
	/* STREAM only: after the headers, before any body byte; may reply to
	 * refuse the request (the body is then never read). */
	void (*begin)(struct http_req *r);
	/* STREAM only: each piece of the body as it arrives (len > 0). */
	void (*chunk)(struct http_req *r, const char *data, size_t len);
	/* The query parameters the route takes (NULL-terminated; an entry
	 * ending in '.' takes any name with that prefix), or NULL for none.
	 * The server refuses any other, a repeated one or a NUL byte with
	 * 400 before the handler runs (http_query_check).  Not checked on
	 * ROUTE_AUTH_NONE and ROUTE_AUTH_PORT routes: their queries belong
	 * to the dashboard's page and to the sandbox's server. */
	const char *const *query;
};

/*
 * route_match_pattern - does path match pattern?  Path parameters are
 * copied in order into params (at most maxparams, each NUL-terminated).
 * Returns 1 on a match, 0 otherwise.  Pure.
 */
int route_match_pattern(const char *pattern, const char *path,
			char params[][ROUTE_PARAM_MAX], int maxparams);

/*
 * route_find - the route of table (n entries) for method and path, or NULL.
 * When NULL, *path_known is 1 if some route matches the path with another
 * method (the caller answers 405), else 0 (404).  Pure.
 */
const struct route *route_find(const struct route *table, size_t n, const char *method,
			       const char *path, char params[][ROUTE_PARAM_MAX],
			       int *path_known);

#endif
