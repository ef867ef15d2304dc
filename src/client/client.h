/*
 * client.h - the client of the PandaStack REST API (docs/api.md) on libcurl
 * and jansson that the CLI, the MCP server (`pandastack mcp`) and the
 * daemon's own POST /mcp share: one request with an optional JSON body in,
 * the parsed JSON answer or a typed error out.  Streamed file transfers are
 * in client_transfer.h.
 *
 * Every request carries "Authorization: Bearer <key>".  Only http and https
 * are spoken, redirects are not followed (the key must not travel to
 * another host), paths are sent as built (urlpath.h; libcurl does not
 * rewrite dot segments), connecting gives up after CLIENT_CONNECT_TIMEOUT_MS.
 * An https server's certificate and name are checked against the system's
 * CA store, or against the client's CA file alone (as curl --cacert).
 * With PANDASTACK_LOG=debug each request is logged as a key=value line.
 *
 * Errors: functions return 0 or -errno and fill a struct client_error:
 *   -EREMOTEIO     the API answered an HTTP error: status, and code and
 *                  message from its {"error": {"code", "message"}} body
 *                  (or "http_<status>" and the start of a body of
 *                  another shape)
 *   -ECONNREFUSED, -EHOSTUNREACH, -ETIMEDOUT, -EIO   no (complete) answer
 *   -EPROTO        the TLS handshake failed ("tls_failed": an untrusted
 *                  certificate, an unreadable CA file, not a TLS server)
 *   -EFBIG         the answer passed CLIENT_RESPONSE_MAX
 *   -EBADMSG       a 2xx answer that is not JSON
 *   -ENOMEM
 * err->message is the server's text, unsanitised: a caller that prints it
 * sanitises it first (the CLI: out_sanitize, cli/output.h).
 *
 * Threads: a client belongs to one thread at a time; client_new calls
 * curl_global_init, so make the first client before starting threads.
 */
#ifndef PANDASTACK_CLIENT_CLIENT_H
#define PANDASTACK_CLIENT_CLIENT_H

#include <stddef.h>

#include <jansson.h>

#define CLIENT_RESPONSE_MAX (256u << 20) /* bytes of one answer kept in memory */
#define CLIENT_CONNECT_TIMEOUT_MS 10000
#define CLIENT_URL_MAX 2048              /* bytes of the base URL */
#define CLIENT_KEY_MAX 512               /* bytes of the API key */
#define CLIENT_CA_FILE_MAX 4096          /* bytes of the CA file's path */

struct client_error {
	long status;        /* HTTP status; 0 when no answer came */
	char code[64];      /* the API's code ("not_found") or the CLI's ("connect_failed") */
	char message[1024]; /* human-readable; may be cut; not sanitised */
};

struct client_response {
	long status;    /* HTTP status (2xx) */
	json_t *json;   /* the parsed body (new reference), NULL for an empty body */
	char *raw;      /* the body's bytes, NUL-terminated (owned), or NULL */
	size_t raw_len; /* bytes in raw without the NUL */
};

struct client;

/*
 * client_new - a client for base_url ("http://127.0.0.1:8080", with or
 * without a path prefix and trailing "/") sending key as the bearer token;
 * ca_file: the path of a PEM file of the CA certificates that an https
 * server's certificate is checked against instead of the system's store
 * (read by libcurl at each request), or NULL for the system's store.
 * Checked: an http(s) URL of at most CLIENT_URL_MAX bytes; a key of
 * 1..CLIENT_KEY_MAX printable ASCII bytes without spaces; a ca_file path of
 * 1..CLIENT_CA_FILE_MAX bytes.  Strings are copied.
 * Returns 0 with *out (client_free), -EINVAL with a message in err
 * (errlen bytes), -ENOMEM, -EIO (libcurl failed to start).
 */
int client_new(const char *base_url, const char *key, const char *ca_file, struct client **out,
	       char *err, size_t errlen);

/* client_free - close connections and free c.  NULL is a no-op. */
void client_free(struct client *c);

/*
 * client_pin - trust the https server whose public key matches pin
 * (libcurl's CURLOPT_PINNEDPUBLICKEY form "sha256//BASE64" of the DER
 * SubjectPublicKeyInfo) and that one only, whatever name or issuer its
 * certificate has: for a daemon calling its own API at its own socket
 * address.  Returns 0 or -ENOMEM.
 */
int client_pin(struct client *c, const char *pin);

/* client_base - the base URL without trailing "/" (borrowed). */
const char *client_base(const struct client *c);

/*
 * client_call - one request: method ("GET", "POST", "PUT", "DELETE") on path
 * (from urlpath.h: starts with "/", already encoded), with body serialised
 * as JSON when not NULL (borrowed).  On 2xx returns 0 with *resp filled
 * (client_response_clear); otherwise -errno with *err filled (see above) and
 * *resp empty.
 */
int client_call(struct client *c, const char *method, const char *path, const json_t *body,
		struct client_response *resp, struct client_error *err);

/* client_response_clear - free what a response holds (not r itself); safe on
 * a zeroed or cleared response. */
void client_response_clear(struct client_response *r);

#endif
