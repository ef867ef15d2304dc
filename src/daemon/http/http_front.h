/*
 * http_front.h - the door of the HTTP server: it accepts connections
 * itself, decides which it serves, and hands them to libmicrohttpd
 * (MHD_add_connection), so that no client can lock others out by being
 * slow and every error is the API's JSON.
 *
 * Every connection is in one of these states, in a table of at most
 * total_max (+ a few closing):
 *   head     waiting for (or receiving) a request's head: since its accept,
 *            or since the answer to its previous request went out
 *            (keep-alive, HTTPS only); plain-HTTP connections wait here in
 *            the front's own thread, which peeks at their bytes and checks
 *            the head (http_head.h) before libmicrohttpd sees it;
 *   busy     its request's head is in (the handler runs or the answer
 *            streams); never dropped by the front;
 *   closing  answered by the front (an error) and being drained.
 * Rules:
 *   - a head must be complete within head_timeout_ms of the state's start
 *     (a total deadline, not one per read): a plain connection past it is
 *     answered 408 request_timeout, an HTTPS one is shut down;
 *   - when a new connection would pass per_ip_max for its address (or
 *     total_max in all), a connection of that address (or of all) still
 *     waiting for its head is closed to make room: first the oldest that
 *     sent part of a head and stalled, else the oldest; a plain-HTTP one
 *     whose head came in whole is never closed.  Only when none waits is
 *     the new one refused (429 too_many_connections on plain HTTP, a close
 *     on HTTPS).  So a client that opens hundreds of slow connections only
 *     ever pushes out its own, and a request that sends its head at once is
 *     served.
 * Plain HTTP carries one request per connection (the server answers
 * "Connection: close", http_reply.c): each head is checked here.  Over
 * HTTPS the bytes are encrypted until libmicrohttpd has them, so only the
 * deadline and the caps apply here; the server's own check after parsing
 * (http_server.c) refuses oversized heads there.
 *
 * Threads: http_front_new, _start, _stop on the main thread; the hooks
 * (http_front_notify, _head_done, _answered) on libmicrohttpd's threads.
 * The front has one thread of its own (accept, peek, deadlines).
 */
#ifndef PANDASTACK_DAEMON_HTTP_FRONT_H
#define PANDASTACK_DAEMON_HTTP_FRONT_H

#include <stdint.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "daemon/api_errors.h"

struct http_front;

struct http_front_cfg {
	const struct sockaddr *addr; /* where to listen (IPv4 or IPv6) */
	socklen_t addrlen;
	int tls;                     /* libmicrohttpd serves TLS on these connections */
	unsigned head_timeout_ms;    /* total time for a request's head */
	unsigned per_ip_max;         /* connections one client address may hold */
	unsigned total_max;          /* connections held in all */
};

/*
 * http_front_new - bind and listen on cfg->addr (SO_REUSEADDR; IPv6 only
 * for an IPv6 address).  *port receives the bound port.  Returns 0 with
 * *out, or -errno (-EADDRINUSE, -ENOMEM, ...).  Nothing is accepted before
 * http_front_start.
 */
int http_front_new(const struct http_front_cfg *cfg, struct http_front **out, unsigned *port);

/*
 * http_front_start - start accepting, handing connections to mhd (started
 * with MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC and
 * MHD_OPTION_NOTIFY_CONNECTION, http_front_notify, f).  Returns 0 or
 * -errno (the thread could not start).
 */
int http_front_start(struct http_front *f, struct MHD_Daemon *mhd);

/*
 * http_front_stop - stop accepting and close what the front still holds
 * (listen socket, connections not yet handed over).  Call before
 * MHD_stop_daemon; free with http_front_free after it (libmicrohttpd's
 * last notifications reach f).
 */
void http_front_stop(struct http_front *f);

/* http_front_free - free f (NULL: nothing). */
void http_front_free(struct http_front *f);

/* http_front_notify - libmicrohttpd's MHD_NotifyConnectionCallback; cls is
 * the front. */
void http_front_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
		       enum MHD_ConnectionNotificationCode code);

/* http_front_head_done - the request's head on conn was parsed (the first
 * access callback): the connection is busy. */
void http_front_head_done(struct MHD_Connection *conn);

/* http_front_answered - the answer on conn went out and the connection may
 * carry another request: it waits for a head again. */
void http_front_answered(struct MHD_Connection *conn);

/*
 * http_front_error_page - the bytes of a whole HTTP/1.1 answer carrying the
 * API error e with message msg, with Connection: close and the API's
 * security headers, into out (outlen bytes).  Returns its length, or 0 when
 * it does not fit.  Pure; any thread.
 */
size_t http_front_error_page(enum api_err e, const char *msg, char *out, size_t outlen);

#endif
