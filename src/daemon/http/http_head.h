/*
 * http_head.h - the daemon's own check of a request head, before
 * libmicrohttpd parses it (http_front.h peeks each plain-HTTP head and
 * passes it here).  libmicrohttpd answers the framing errors it finds with
 * HTML pages of its own; the check refuses them first, so that every error
 * a client meets is the API's JSON shape (docs/api.md, "Errors").
 *
 * Grammar: RFC 9112 section 2-6 (request line, field lines, Content-Length),
 * with the choices RFC 9112 lets a server make taken strictly:
 *   - empty lines before the request line are skipped (2.2);
 *   - lines end in LF, optionally preceded by CR; a CR anywhere else is an
 *     error (2.2), as is a NUL or another control byte (only HTAB is allowed
 *     in field values, RFC 9110 5.5);
 *   - the request line is METHOD SP TARGET SP HTTP/1.0 or HTTP/1.1, single
 *     spaces; the method is a token; the target holds no space or control;
 *   - a field line is NAME ":" OWS VALUE OWS with a token name and no space
 *     before the colon (5.1); a line starting with space or HTAB (obs-fold,
 *     5.2) is an error;
 *   - every Content-Length value is 1*DIGIT; one that does not fit in an
 *     int64 is a body no route takes (413); a list ("5, 5") is an error.
 * Duplicate Content-Length, Host or Authorization headers, and
 * Content-Length beside Transfer-Encoding, are left to the server's own
 * check after parsing (http_server.c), which sees them over TLS too.
 *
 * Pure: no I/O, no globals, any thread.  tests/fuzz/fuzz_http_head.c feeds
 * it; tests/unit/test_daemon_http_head.c holds the cases.
 */
#ifndef PANDASTACK_DAEMON_HTTP_HEAD_H
#define PANDASTACK_DAEMON_HTTP_HEAD_H

#include <stddef.h>

#include "daemon/api_errors.h"

/* Largest request head taken, bytes, from the request line to the empty
 * line that ends it (leading empty lines count too). */
#define HTTP_HEAD_MAX (64u * 1024)

enum http_head_result {
	HTTP_HEAD_MORE = 0, /* no complete head yet, and nothing wrong so far */
	HTTP_HEAD_OK,       /* one complete, acceptable head */
	HTTP_HEAD_BAD,      /* refused: see *err and msg */
};

/*
 * http_head_check - look at the first len bytes a client sent on a
 * connection (buf need not be NUL-terminated and may hold body bytes after
 * the head).  Returns HTTP_HEAD_OK with *head_len set to the bytes of the
 * head (up to and including its empty line); HTTP_HEAD_MORE when the head
 * is not complete and no error is visible yet (a caller holding
 * HTTP_HEAD_MAX bytes gets HTTP_HEAD_BAD instead); or HTTP_HEAD_BAD with
 * *err (API_ERR_INVALID_REQUEST, API_ERR_INVALID_HEADER,
 * API_ERR_BODY_TOO_LARGE, API_ERR_HEADERS_TOO_LARGE) and a sentence for
 * the answer's message in msg (msglen bytes, always NUL-terminated when
 * msglen > 0).  Errors are reported as soon as they are visible, before the
 * head is complete.
 */
enum http_head_result http_head_check(const char *buf, size_t len, size_t *head_len,
				      enum api_err *err, char *msg, size_t msglen);

#endif
