/*
 * http_server.h - the HTTP server of pandastackd on libmicrohttpd: its
 * start and stop (main.c).  What a request is, for the handlers, is
 * http_req.h.
 *
 * Model: MHD_USE_THREAD_PER_CONNECTION.  Each connection has its own thread,
 * so a handler may block (an exec waiting for its command, an upload waiting
 * for the guest to take bytes, a download waiting for them) without holding
 * up any other request.  Per request the server:
 *   1. matches the route (404 / 405), checks the bearer key (401) and admin
 *      rights (403), checks Content-Length against the route's cap (413),
 *      and for streamed bodies calls route->begin, all before reading the
 *      body: an early answer means the body is never read;
 *   2. reads the body: buffered routes keep at most body_cap bytes (413
 *      beyond), streamed routes get every piece through route->chunk;
 *   3. calls route->handle, which must answer with http_reply_*.
 * One key=value log line per request is written when it completes.
 *
 * Threads: http_server_start/quiesce/stop on the main thread.
 */
#ifndef PANDASTACK_DAEMON_HTTP_SERVER_H
#define PANDASTACK_DAEMON_HTTP_SERVER_H

#include <stddef.h>

#include "daemon/http/http_req.h"

struct daemon;
struct http_server;

/*
 * http_server_start - listen on cfg's host:port and serve the routes of
 * table (ntable entries, static; the API's: routes_table, api.h).  *port
 * receives the bound port (useful with port 0).  Returns 0 with *out (stop
 * with http_server_stop), or -errno (-EADDRINUSE, -EINVAL for a host that
 * is not an IPv4/IPv6 literal or "localhost").
 */
int http_server_start(struct daemon *d, const struct route *table, size_t ntable,
		      struct http_server **out, unsigned *port);

/* http_server_quiesce - stop accepting; requests in flight go on.  Main
 * thread.  NULL: nothing. */
void http_server_quiesce(struct http_server *s);

/* http_server_stop - stop accepting, close connections, join threads.  Every
 * upgraded connection (WebSocket to a sandbox's port) must have been ended
 * first (port_splice_stop_all): libmicrohttpd may not find one. */
void http_server_stop(struct http_server *s);

#endif
