/*
 * client_int.h - what client.c and client_transfer.c share: the
 * client's fields, request set-up, answer buffers and error mapping.
 * Not for commands; they use client.h and client_transfer.h.
 * Threads: as client.h (one thread per client).
 */
#ifndef PANDASTACK_CLIENT_CLIENT_INT_H
#define PANDASTACK_CLIENT_CLIENT_INT_H

#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "client/client.h"
#include "common/dynbuf.h"

struct client {
	CURL *curl;
	char *base;                    /* without trailing "/" */
	char *ca_file;                 /* CURLOPT_CAINFO, or NULL: the system's store */
	struct curl_slist *hdr_plain;  /* auth + accept */
	struct curl_slist *hdr_json;   /* + Content-Type: application/json */
	struct curl_slist *hdr_bytes;  /* + Content-Type: application/octet-stream */
	char errbuf[CURL_ERROR_SIZE];
	int64_t started_ms;            /* of the request under way, for the debug log */
	char *pin;                     /* client_pin's public key pin, or NULL */
};

/* Which Content-Type a request's body has. */
enum client_body_kind { CLIENT_BODY_NONE = 0, CLIENT_BODY_JSON = 1, CLIENT_BODY_BYTES = 2 };

/*
 * client__prepare - reset c's handle and set it up for method on path with
 * the headers for body kind.  Returns 0, -ENAMETOOLONG (URL too long),
 * -ENOMEM, -EIO.
 */
int client__prepare(struct client *c, const char *method, const char *path,
		    enum client_body_kind kind);

/*
 * client__transport_error - err for a transfer that ended with rc (not
 * CURLE_OK); returns the matching -errno (see client.h).
 */
int client__transport_error(struct client *c, CURLcode rc, struct client_error *err);

/*
 * client__http_error - err for an answer with HTTP status >= 300 and body
 * (len bytes, may be NULL); returns -EREMOTEIO.
 */
int client__http_error(long status, const char *body, size_t len, struct client_error *err);

/*
 * client__perform - run the request set up on c's handle (method and path
 * for the debug line, PANDASTACK_LOG=debug).  *status gets the answer's HTTP
 * status, 0 when none came.  Returns libcurl's result.
 */
CURLcode client__perform(struct client *c, const char *method, const char *path, long *status);

/*
 * client__json_answer - the outcome of a request whose answer went to b
 * (dynbuf_write): for a failed transfer (cc not CURLE_OK) -EFBIG
 * (response_too_large: b passed its cap), -ENOMEM, or client__transport_error;
 * for an HTTP error status client__http_error; else *resp from the JSON of b
 * (taken: b is left empty; an empty body gives json NULL; -EBADMSG when it
 * is not JSON).
 * Returns 0 with *resp, or -errno with *err.
 */
int client__json_answer(struct client *c, CURLcode cc, long status, struct dynbuf *b,
			struct client_response *resp, struct client_error *err);


#endif
