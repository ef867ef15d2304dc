/*
 * port_target.h - which sandbox port a request is for, and what of the
 * request the guest is sent (docs/network.md, "Exposed ports").
 *
 * A request reaches port P of sandbox ID in one of two forms:
 *   path form   /v1/sandboxes/ID/ports/P[/REST][?QUERY]  -> the guest gets
 *               /REST?QUERY ("/" when REST is empty)
 *   Host form   Host: P-ID.DOMAIN[:PORT] (E2B's form; the daemon started
 *               with --proxy-domain DOMAIN) -> the guest gets the request
 *               target unchanged.  ID may be written "sbx_HEX" or
 *               "sbx-HEX" (a valid DNS label).
 * Either way the query loses every access_token parameter (the token is
 * for the daemon, never for the guest).
 *
 * Every function here is pure (no I/O, no globals): tests/fuzz/
 * fuzz_port_target.c feeds them.  Inputs are client text: every length is
 * checked; nothing is trusted to be NUL-free beyond its C string.
 * Threads: any.
 */
#ifndef PANDASTACK_DAEMON_PORT_TARGET_H
#define PANDASTACK_DAEMON_PORT_TARGET_H

#include <stddef.h>

/* Bytes of a sandbox id with its NUL ("sbx_" + 20 hex + NUL, rounded). */
#define PORT_ID_MAX 32
/* Longest request target forwarded to the guest, bytes with the NUL. */
#define PORT_TARGET_MAX 8192
/* The query parameter (and, as X-Access-Token, the header) of the token. */
#define PORT_TOKEN_PARAM "access_token"

/*
 * port_target_from_host - does the Host header value host name port P of
 * sandbox ID under domain ("P-ID.DOMAIN", an optional ":PORT" after it,
 * compared case-insensitively, one trailing dot allowed)?  P is 1..65535 in
 * decimal without leading zeros; ID has the form of a sandbox id.  Returns
 * 1 with *port and id (PORT_ID_MAX bytes, in its "sbx_" spelling, lower
 * case) filled, or 0.  host or domain NULL or empty: 0.
 */
int port_target_from_host(const char *host, const char *domain, unsigned *port,
			  char id[PORT_ID_MAX]);

/*
 * port_target_from_path - does the raw (not percent-decoded) request target
 * raw have the path form?  Returns 1 with id, *port and *rest (pointing
 * into raw at what follows the port: "", "/..." or "?...") filled; 0 when
 * raw is not under /v1/sandboxes/ID/ports/; -EINVAL when it is but P is
 * not a port number (1..65535) or ID is not a sandbox id.
 */
int port_target_from_path(const char *raw, unsigned *port, char id[PORT_ID_MAX],
			  const char **rest);

/*
 * port_target_forward - the request target sent to the guest for rest
 * (a raw target: "/x?y", "?y", "" ...): a path starting with "/" (added
 * when missing) and the query without any parameter whose percent-decoded
 * name is PORT_TOKEN_PARAM (no "?" left when nothing remains).  Writes
 * out (outlen bytes, NUL-terminated).  Returns 0, -ENAMETOOLONG when it
 * does not fit, -EINVAL when rest holds a byte that may not appear in a
 * request target (controls, space, DEL).
 */
int port_target_forward(const char *rest, char *out, size_t outlen);

/*
 * port_header_hop - 1 if the header name must not cross the proxy
 * (RFC 9110 7.6.1 and 7.6.3: Connection, Keep-Alive, Proxy-Connection,
 * Proxy-Authenticate, Proxy-Authorization, TE, Trailer, Transfer-Encoding,
 * Upgrade, and every name listed in the Connection header's value
 * connection, which may be NULL), else 0.  Case-insensitive.
 */
int port_header_hop(const char *name, const char *connection);

/*
 * port_header_origin_bound - 1 if the header name must not cross the path
 * form of a port in either direction, else 0 (case-insensitive).  The path
 * form shares the daemon's origin with the API, the dashboard and every
 * other sandbox's ports, so the origin's state is not a guest's to read or
 * set (Cookie, Set-Cookie, Set-Cookie2, Clear-Site-Data), and the daemon's
 * own security header is not a guest's to replace (X-Content-Type-Options:
 * the proxy sends its own nosniff).  The Host form, an origin of the
 * sandbox's own, keeps them all.
 */
int port_header_origin_bound(const char *name);

/*
 * port_header_has_token - 1 if the comma-separated header value v (may be
 * NULL) holds token (case-insensitive, e.g. "upgrade" in "keep-alive,
 * Upgrade"), else 0.
 */
int port_header_has_token(const char *v, const char *token);

#endif
