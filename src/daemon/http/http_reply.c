/*
 * http_reply.c - queuing answers (see http_reply.h).
 */
#include "daemon/http/http_reply.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/utf8.h"
#include "daemon/daemon.h"
#include "daemon/metrics.h"

int http_reply_forwarded(struct http_req *r, unsigned status, struct MHD_Response *resp)
{
	if (!resp) {
		r->abort = 1;
		return -ENOMEM;
	}
	/* A request whose framing cannot be trusted ends its connection, and
	 * so does every plain-HTTP request: the front checks each head before
	 * libmicrohttpd parses it, and sees only a connection's first
	 * (http_front.h).  An upgrade keeps its connection by definition. */
	if ((r->close_after || !r->d->cfg.tls_cert[0]) && status != MHD_HTTP_SWITCHING_PROTOCOLS)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	enum MHD_Result ok = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	if (ok != MHD_YES) {
		log_kv(LOG_ERROR, "http.queue_failed", "status=%u", status);
		r->abort = 1;
		return -EIO;
	}
	r->status = status;
	metrics_http_response(status);
	return 0;
}

int http_reply_response(struct http_req *r, unsigned status, struct MHD_Response *resp)
{
	/* Answers that set none of their own are not cached, not sniffed, and
	 * render nothing active if a browser opens them. */
	if (resp && !MHD_get_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL))
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
					HTTP_REPLY_CACHE_CONTROL);
	if (resp && !MHD_get_response_header(resp, "Content-Security-Policy"))
		MHD_add_response_header(resp, "Content-Security-Policy", HTTP_REPLY_CSP);
	if (resp && !MHD_get_response_header(resp, "X-Content-Type-Options"))
		MHD_add_response_header(resp, "X-Content-Type-Options", HTTP_REPLY_NOSNIFF);
	return http_reply_forwarded(r, status, resp);
}

int http_reply_text(struct http_req *r, unsigned status, const char *ctype, const char *text,
		    size_t len)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(len, (void *)text, MHD_RESPMEM_MUST_COPY);
	if (resp)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	return http_reply_response(r, status, resp);
}

/* Answer status with the JSON text s (malloc'd; taken). */
static int reply_json_text(struct http_req *r, unsigned status, char *s)
{
	size_t n = strlen(s);
	struct MHD_Response *resp = MHD_create_response_from_buffer(n, s, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(s);
		r->abort = 1;
		return -ENOMEM;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	return http_reply_response(r, status, resp);
}

int http_reply_json(struct http_req *r, unsigned status, json_t *body)
{
	char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!s) {
		r->abort = 1;
		return -ENOMEM;
	}
	return reply_json_text(r, status, s);
}

int http_reply_error(struct http_req *r, enum api_err e, const char *fmt, ...)
{
	unsigned status = api_errors_status(e);
	const char *code = api_errors_code(e);
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (status >= 500) {
		char q[600];
		log_kv(LOG_WARN, "http.error", "status=%u code=%s msg=%s", status, code,
		       log_quote(msg, q, sizeof(q)));
	}
	char *s = http_error_json(e, msg);
	if (!s) {
		r->abort = 1;
		return -ENOMEM;
	}
	return reply_json_text(r, status, s);
}

char *http_error_json(enum api_err e, const char *msg)
{
	json_t *body = json_pack("{s:{s:s, s:o}}", "error", "code", api_errors_code(e), "message",
				 utf8_json_lossy(msg, strlen(msg)));
	char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	return s;
}

int http_reply_empty(struct http_req *r, unsigned status)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	return http_reply_response(r, status, resp);
}
