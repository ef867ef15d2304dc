/*
 * http_reply.h - the one way handlers answer: JSON bodies, the API's error
 * shape {"error": {"code": "...", "message": "..."}}, empty answers, and
 * prepared MHD responses (streams).  Each queues the answer on the request's
 * connection, records r->status and counts it in the metrics.
 *
 * Threads: the request's connection thread.  Each returns 0, or -ENOMEM /
 * -EIO when the answer could not be queued (then r->abort is set and the
 * connection is closed).
 */
#ifndef PANDASTACK_DAEMON_HTTP_REPLY_H
#define PANDASTACK_DAEMON_HTTP_REPLY_H

#include <jansson.h>
#include <microhttpd.h>

#include "daemon/api_errors.h"
#include "daemon/http/http_req.h"

/* The headers every answer of the API's own carries unless it sets its own
 * (http_reply_response; the front's error pages, http_front.h). */
#define HTTP_REPLY_CACHE_CONTROL "no-store"
#define HTTP_REPLY_CSP "default-src 'none'; frame-ancestors 'none'; sandbox"
#define HTTP_REPLY_NOSNIFF "nosniff"

/*
 * http_error_json - the body of an error answer, {"error": {"code",
 * "message"}}, for row err with message msg (made valid UTF-8), as compact
 * JSON text (malloc'd, caller frees), or NULL when out of memory.  Pure;
 * any thread.
 */
char *http_error_json(enum api_err err, const char *msg);

/* http_reply_json - answer status with body serialised (body is stolen). */
int http_reply_json(struct http_req *r, unsigned status, json_t *body);

/*
 * http_reply_error - answer err's status with {"error": {"code", "message"}}
 * (err names a row of the error table, api_errors.h); the message is
 * formatted from fmt and made valid UTF-8 (it may quote guest text).  5xx
 * answers are logged at warn with their message.
 */
int http_reply_error(struct http_req *r, enum api_err err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* http_reply_empty - answer status (204 and the like) with no body. */
int http_reply_empty(struct http_req *r, unsigned status);

/* http_reply_text - answer status with len bytes of text (copied) as ctype. */
int http_reply_text(struct http_req *r, unsigned status, const char *ctype, const char *text,
		    size_t len);

/* http_reply_response - answer status with resp (ownership taken; NULL is
 * treated as out of memory).  Every answer gets Cache-Control: no-store,
 * X-Content-Type-Options: nosniff and Content-Security-Policy:
 * default-src 'none'; frame-ancestors 'none'; sandbox, unless resp already
 * sets that header (the dashboard's files do, web_static.h). */
int http_reply_response(struct http_req *r, unsigned status, struct MHD_Response *resp);

/* http_reply_forwarded - answer status with resp (ownership taken; NULL is
 * out of memory) as a server inside a sandbox gave it (exposed ports): the
 * API's own headers above are not added. */
int http_reply_forwarded(struct http_req *r, unsigned status, struct MHD_Response *resp);

#endif
