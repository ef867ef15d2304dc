/*
 * http_req.h - one HTTP request as the handlers see it (struct http_req),
 * the hooks a module above the server takes requests through (struct
 * http_gate), and the request's query, headers and connection.  The server
 * that fills it is http_server.h; handlers answer with http_reply.h.
 *
 * Threads: everything taking a struct http_req on that request's connection
 * thread only.
 */
#ifndef PANDASTACK_DAEMON_HTTP_REQ_H
#define PANDASTACK_DAEMON_HTTP_REQ_H

#include <stddef.h>
#include <stdint.h>

#include "common/dynbuf.h"
#include "daemon/api_errors.h"
#include "daemon/http/auth.h"
#include "daemon/http/route.h"

struct daemon;
struct MHD_Connection; /* libmicrohttpd's, opaque here */

/* One request in flight.  Owned by the server; handlers read its fields
 * and may hang per-request state on state/state_free. */
struct http_req {
	struct daemon *d;
	struct MHD_Connection *conn;
	const struct route *route;
	char method[16];
	char params[ROUTE_MAX_PARAMS][ROUTE_PARAM_MAX]; /* path {params} in order */
	struct auth_ident who;
	char *body;            /* buffered body, NUL-terminated, NULL when empty;
	                        * set when the handler runs (points into body_buf) */
	size_t body_len;
	struct dynbuf body_buf; /* the body being received, capped at body_cap */
	uint64_t body_seen;    /* body bytes received, streamed or not */
	int body_over;         /* the body passed the route's cap */
	int64_t start_ms;      /* monotonic */
	unsigned status;       /* the status answered, 0 before */
	int abort;             /* close the connection without (more) answer */
	int close_after;       /* answer with Connection: close (a request whose
	                        * framing cannot be trusted) */
	char *raw_target;      /* the request target as sent (not decoded, with
				* its query), NULL when over PORT_TARGET_MAX */
	const char *port_rest; /* ROUTE_AUTH_PORT: what the guest is asked for
				* (into raw_target: the whole target in the
				* Host form, what follows the port in the
				* path form) */
	int port_path_form;    /* ROUTE_AUTH_PORT: reached by the path form */
	int started;           /* the first access callback ran */
	void *state;           /* handler state (streamed uploads) */
	void (*state_free)(void *state);
};

/*
 * struct http_gate - hooks through which a module above the HTTP server
 * (the cluster, cluster.h) takes requests before they are served here; the
 * daemon's d->gate (NULL: none).  Each runs on the request's connection
 * thread with arg; a NULL member is skipped.
 *   internal  the URL matched no route: 1 when the hook answered r (or
 *             will), 0 to answer 404/405 as usual;
 *   auth      the local key store did not know r's Authorization header:
 *             returns as auth_check (auth.h), filling *who;
 *   route     after authentication: 1 when r is no longer this server's to
 *             serve (answered, or r->route replaced by the hook's).
 */
struct http_gate {
	void *arg;
	int (*internal)(void *arg, struct http_req *r, const char *url);
	int (*auth)(void *arg, struct http_req *r, struct auth_ident *who);
	int (*route)(void *arg, struct http_req *r);
};

/* http_query - query parameter name of r (borrowed, URL-decoded), or NULL. */
const char *http_query(struct http_req *r, const char *name);

/*
 * http_query_check - validate r's query string: every parameter's name is in
 * allowed (NULL-terminated; an entry ending in '.' allows any name with that
 * prefix, e.g. "metadata."), appears once, and neither name nor value holds
 * a NUL byte (a "%00" would otherwise cut the value short and a path would
 * name another file).  Returns 0, or -EINVAL with a message for a
 * 400 answer in msg (msglen bytes) and *err set to API_ERR_INVALID_QUERY or
 * API_ERR_INVALID_PATH.  Request thread.
 */
int http_query_check(struct http_req *r, const char *const *allowed, enum api_err *err,
		     char *msg, size_t msglen);

/* http_header - request header name (case-insensitive; borrowed) or NULL. */
const char *http_header(struct http_req *r, const char *name);

/*
 * http_client_addr - the address of conn's client, numeric ("192.0.2.7",
 * "2001:db8::7"), into out (outlen bytes; 64 hold any); "unknown" when it
 * cannot be read.  Any thread that holds the connection.
 */
void http_client_addr(struct MHD_Connection *conn, char *out, size_t outlen);

/*
 * http_conn_gone - 1 if the client of conn has closed its side (EOF, reset,
 * hang-up), 0 if it is still there.  Never blocks; does not consume bytes.
 * Long handlers and streamed responses poll it to stop work nobody waits for.
 */
int http_conn_gone(struct MHD_Connection *conn);

#endif
