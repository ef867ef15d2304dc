/*
 * client_int.h - what client.c and client_transfer.c share: the
 * client's fields, request set-up, answer buffers and error mapping.
 * Not for commands; they use client.h and client_transfer.h.
 * Threads: as client.h (one thread per client).
 */
#ifndef PANDASTACK_CLI_CLIENT_INT_H
#define PANDASTACK_CLI_CLIENT_INT_H

#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "cli/client.h"
#include "common/dynbuf.h"

struct client {
	CURL *curl;
	char *base;                    /* without trailing "/" */
	struct curl_slist *hdr_plain;  /* auth + accept */
	struct curl_slist *hdr_json;   /* + Content-Type: application/json */
	struct curl_slist *hdr_bytes;  /* + Content-Type: application/octet-stream */
	char errbuf[CURL_ERROR_SIZE];
	int64_t started_ms;            /* of the request under way, for the debug log */
};

/* Which Content-Type a request's body has. */
enum client_body_kind { CLIENT_BODY_NONE = 0, CLIENT_BODY_JSON = 1, CLIENT_BODY_BYTES = 2 };

/*
 * client__buf_write - a CURLOPT_WRITEFUNCTION appending to a struct dynbuf
 * (userdata) whose cap is the largest answer taken.  Past the cap, or out of
 * memory, it stops the transfer (CURLE_WRITE_ERROR); the buffer's truncated
 * flag tells the two apart.
 */
size_t client__buf_write(char *data, size_t size, size_t nmemb, void *userdata);

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

/* client__log - the debug line of a finished request (PANDASTACK_LOG=debug). */
void client__log(struct client *c, const char *method, const char *path, long status,
		 CURLcode rc);

/*
 * client__take_json - make *resp from a 2xx answer's body b (taken: b is left
 * empty).  An empty body gives json NULL.  Returns 0, -EBADMSG (not JSON)
 * with err filled, -ENOMEM.
 */
int client__take_json(long status, struct dynbuf *b, struct client_response *resp,
		      struct client_error *err);

#endif
