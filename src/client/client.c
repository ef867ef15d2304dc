/*
 * client.c - REST requests with JSON bodies over libcurl (see
 * client.h), and the request set-up and error mapping that
 * client_transfer.c shares (client_int.h).
 */
#include "client/client.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "client/urlpath.h"
#include "common/log.h"
#include "common/util.h"

#define CLIENT_USER_AGENT "pandastack-cli/0.1"

static void set_err(struct client_error *err, long status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void set_err(struct client_error *err, long status, const char *code, const char *fmt, ...)
{
	err->status = status;
	snprintf(err->code, sizeof(err->code), "%s", code);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
}

/* ---- answer buffers ------------------------------------------------------- */

/* ---- client --------------------------------------------------------------- */

/* 0 if base is an http(s) URL without query or fragment, else -EINVAL. */
static int check_base_url(const char *base, char *err, size_t errlen)
{
	if (!*base || strlen(base) > CLIENT_URL_MAX) {
		snprintf(err, errlen, "PANDASTACK_API_URL must be 1 to %d bytes", CLIENT_URL_MAX);
		return -EINVAL;
	}
	CURLU *u = curl_url();
	if (!u)
		return -ENOMEM;
	int rc = 0;
	char *scheme = NULL, *query = NULL, *fragment = NULL;
	if (curl_url_set(u, CURLUPART_URL, base, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)) {
		snprintf(err, errlen, "PANDASTACK_API_URL is not an http:// or https:// URL");
		rc = -EINVAL;
	} else if (curl_url_get(u, CURLUPART_QUERY, &query, 0) == CURLUE_OK ||
		   curl_url_get(u, CURLUPART_FRAGMENT, &fragment, 0) == CURLUE_OK) {
		snprintf(err, errlen, "PANDASTACK_API_URL must not have a query or fragment");
		rc = -EINVAL;
	}
	curl_free(scheme);
	curl_free(query);
	curl_free(fragment);
	curl_url_cleanup(u);
	return rc;
}

static int check_key(const char *key, char *err, size_t errlen)
{
	size_t n = strlen(key);
	if (n == 0 || n > CLIENT_KEY_MAX) {
		snprintf(err, errlen, "PANDASTACK_API_KEY must be 1 to %d bytes", CLIENT_KEY_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)key[i];
		if (ch <= 0x20 || ch >= 0x7f) {
			snprintf(err, errlen,
				 "PANDASTACK_API_KEY holds a space or a non-printable character");
			return -EINVAL;
		}
	}
	return 0;
}

static struct curl_slist *headers(const char *auth, const char *ctype)
{
	struct curl_slist *l = curl_slist_append(NULL, auth);
	struct curl_slist *t;
	if (!l)
		return NULL;
	if (!(t = curl_slist_append(l, "Accept: application/json")))
		goto fail;
	l = t;
	if (ctype) {
		if (!(t = curl_slist_append(l, ctype)))
			goto fail;
		l = t;
	}
	return l;
fail:
	curl_slist_free_all(l);
	return NULL;
}

int client_new(const char *base_url, const char *key, const char *ca_file, struct client **out,
	       char *err, size_t errlen)
{
	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	int rc = check_base_url(base_url, err, errlen);
	if (rc)
		return rc;
	if ((rc = check_key(key, err, errlen)))
		return rc;
	if (ca_file && (!*ca_file || strlen(ca_file) > CLIENT_CA_FILE_MAX)) {
		snprintf(err, errlen, "the CA file's path must be 1 to %d bytes", CLIENT_CA_FILE_MAX);
		return -EINVAL;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "libcurl failed to start");
		return -EIO;
	}
	struct client *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->base = strdup(base_url);
	if (!c->base)
		goto nomem;
	size_t bl = strlen(c->base);
	while (bl > 0 && c->base[bl - 1] == '/')
		c->base[--bl] = '\0';
	if (ca_file && !(c->ca_file = strdup(ca_file)))
		goto nomem;
	char auth[CLIENT_KEY_MAX + 32];
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", key);
	c->hdr_plain = headers(auth, NULL);
	c->hdr_json = headers(auth, "Content-Type: application/json");
	c->hdr_bytes = headers(auth, "Content-Type: application/octet-stream");
	explicit_bzero(auth, sizeof(auth));
	if (!c->hdr_plain || !c->hdr_json || !c->hdr_bytes)
		goto nomem;
	c->curl = curl_easy_init();
	if (!c->curl) {
		client_free(c);
		snprintf(err, errlen, "libcurl failed to start");
		return -EIO;
	}
	*out = c;
	return 0;
nomem:
	client_free(c);
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

void client_free(struct client *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	curl_slist_free_all(c->hdr_plain);
	curl_slist_free_all(c->hdr_json);
	curl_slist_free_all(c->hdr_bytes);
	free(c->pin);
	free(c->base);
	free(c->ca_file);
	free(c);
}

int client_pin(struct client *c, const char *pin)
{
	free(c->pin);
	c->pin = strdup(pin);
	return c->pin ? 0 : -ENOMEM;
}

const char *client_base(const struct client *c)
{
	return c->base;
}

int client__prepare(struct client *c, const char *method, const char *path,
		    enum client_body_kind kind)
{
	size_t bl = strlen(c->base), pl = strlen(path);
	if (bl + pl + 1 > CLIENT_URL_MAX + URLPATH_MAX)
		return -ENAMETOOLONG;
	char *url = malloc(bl + pl + 1);
	if (!url)
		return -ENOMEM;
	memcpy(url, c->base, bl);
	memcpy(url + bl, path, pl + 1);

	CURL *h = c->curl;
	curl_easy_reset(h);
	c->errbuf[0] = '\0';
	struct curl_slist *hdr = kind == CLIENT_BODY_JSON    ? c->hdr_json
				 : kind == CLIENT_BODY_BYTES ? c->hdr_bytes
							  : c->hdr_plain;
	CURLcode rc = curl_easy_setopt(h, CURLOPT_URL, url);
	free(url); /* libcurl keeps its own copy */
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(h, CURLOPT_USERAGENT, CLIENT_USER_AGENT);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)CLIENT_CONNECT_TIMEOUT_MS);
	if (rc == CURLE_OK && c->ca_file) /* the file alone: no CA directory either */
		rc = curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
	if (rc == CURLE_OK && c->ca_file)
		rc = curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
	/* a pinned key replaces the CA and name checks; libcurl checks the
	 * pin whether or not it verifies the peer */
	if (rc == CURLE_OK && c->pin)
		rc = curl_easy_setopt(h, CURLOPT_PINNEDPUBLICKEY, c->pin);
	if (rc == CURLE_OK && c->pin)
		rc = curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
	if (rc == CURLE_OK && c->pin)
		rc = curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	if (rc == CURLE_OK) {
		if (strcmp(method, "GET") == 0)
			rc = curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
		else if (strcmp(method, "POST") == 0)
			rc = curl_easy_setopt(h, CURLOPT_POST, 1L);
		else
			rc = curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	}
	c->started_ms = util_now_ms();
	if (rc == CURLE_OUT_OF_MEMORY)
		return -ENOMEM;
	return rc == CURLE_OK ? 0 : -EIO;
}

/* ---- errors ----------------------------------------------------------------- */

int client__transport_error(struct client *c, CURLcode rc, struct client_error *err)
{
	const char *detail = c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc);
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
		set_err(err, 0, "connect_failed", "cannot connect to %s: %s", c->base, detail);
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		set_err(err, 0, "resolve_failed", "cannot resolve the host of %s: %s", c->base,
			detail);
		return -EHOSTUNREACH;
	case CURLE_OPERATION_TIMEDOUT:
		set_err(err, 0, "timeout", "request to %s timed out: %s", c->base, detail);
		return -ETIMEDOUT;
	case CURLE_PEER_FAILED_VERIFICATION:
		set_err(err, 0, "tls_failed",
			"the TLS certificate of %s is not trusted: %s (give its CA's PEM file "
			"with PANDASTACK_CA_FILE or --ca-file)", c->base, detail);
		return -EPROTO;
	case CURLE_SSL_CACERT_BADFILE:
		set_err(err, 0, "tls_failed", "cannot use the CA file %s: %s",
			c->ca_file ? c->ca_file : "(none)", detail);
		return -EPROTO;
	case CURLE_SSL_CONNECT_ERROR:
		set_err(err, 0, "tls_failed", "the TLS handshake with %s failed: %s", c->base, detail);
		return -EPROTO;
	case CURLE_OUT_OF_MEMORY:
		set_err(err, 0, "out_of_memory", "out of memory");
		return -ENOMEM;
	default:
		set_err(err, 0, "transfer_failed", "request to %s failed: %s", c->base, detail);
		return -EIO;
	}
}

int client__http_error(long status, const char *body, size_t len, struct client_error *err)
{
	json_error_t jerr;
	json_t *root = (body && len) ? json_loadb(body, len, 0, &jerr) : NULL;
	json_t *e = json_object_get(root, "error");
	const char *code = json_string_value(json_object_get(e, "code"));
	const char *msg = json_string_value(json_object_get(e, "message"));
	if (code && *code) {
		set_err(err, status, code, "%s", msg ? msg : "");
	} else {
		char c[32];
		snprintf(c, sizeof(c), "http_%ld", status);
		if (body && len)
			set_err(err, status, c, "%.*s", (int)(len > 300 ? 300 : len), body);
		else
			set_err(err, status, c, "the server answered HTTP %ld", status);
	}
	json_decref(root);
	return -EREMOTEIO;
}

/* *resp from a 2xx answer's body b (taken: b is left empty); an empty body
 * gives json NULL.  Returns 0, -EBADMSG (not JSON) with err filled. */
static int take_json(long status, struct dynbuf *b, struct client_response *resp,
		     struct client_error *err)
{
	memset(resp, 0, sizeof(*resp));
	resp->status = status;
	if (b->len == 0) {
		dynbuf_free(b);
		return 0;
	}
	json_error_t jerr;
	json_t *j = json_loadb(b->p, b->len, JSON_ALLOW_NUL | JSON_DECODE_ANY, &jerr);
	if (!j) {
		set_err(err, status, "bad_response",
			"the server's answer (HTTP %ld) is not JSON: %s at byte %d", status,
			jerr.text, jerr.position);
		dynbuf_free(b);
		return -EBADMSG;
	}
	resp->json = j;
	resp->raw = dynbuf_take(b, &resp->raw_len); /* not empty: never NULL */
	return 0;
}

/* The debug line of a finished request (PANDASTACK_LOG=debug). */
static void log_request(struct client *c, const char *method, const char *path, long status,
			CURLcode rc)
{
	char q[512];
	log_kv(LOG_DEBUG, "cli.request", "method=%s path=%s status=%ld curl=%d ms=%" PRId64,
	       method, log_quote(path, q, sizeof(q)), status, (int)rc,
	       util_now_ms() - c->started_ms);
}

CURLcode client__perform(struct client *c, const char *method, const char *path, long *status)
{
	CURLcode cc = curl_easy_perform(c->curl);
	*status = 0;
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, status);
	log_request(c, method, path, *status, cc);
	return cc;
}

int client__json_answer(struct client *c, CURLcode cc, long status, struct dynbuf *b,
			struct client_response *resp, struct client_error *err)
{
	if (cc != CURLE_OK) {
		if (b->truncated) {
			set_err(err, status, "response_too_large",
				"the server's answer is larger than %u bytes", CLIENT_RESPONSE_MAX);
			return -EFBIG;
		}
		if (cc == CURLE_WRITE_ERROR) { /* dynbuf_write: out of memory */
			set_err(err, status, "out_of_memory", "out of memory");
			return -ENOMEM;
		}
		return client__transport_error(c, cc, err);
	}
	if (status < 200 || status >= 300)
		return client__http_error(status, b->p, b->len, err);
	return take_json(status, b, resp, err);
}

/* ---- JSON requests ---------------------------------------------------------- */

int client_call(struct client *c, const char *method, const char *path, const json_t *body,
		struct client_response *resp, struct client_error *err)
{
	memset(resp, 0, sizeof(*resp));
	memset(err, 0, sizeof(*err));
	char *payload = NULL;
	if (body) {
		payload = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
		if (!payload) {
			set_err(err, 0, "out_of_memory", "out of memory");
			return -ENOMEM;
		}
	}
	int rc = client__prepare(c, method, path, body ? CLIENT_BODY_JSON : CLIENT_BODY_NONE);
	if (rc) {
		free(payload);
		set_err(err, 0, rc == -ENAMETOOLONG ? "url_too_long" : "out_of_memory",
			"cannot build the request: %s", strerror(-rc));
		return rc;
	}
	struct dynbuf b;
	dynbuf_init(&b, CLIENT_RESPONSE_MAX);
	CURL *h = c->curl;
	if (payload || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload ? payload : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)(payload ? strlen(payload) : 0));
	}
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, dynbuf_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	long status;
	CURLcode cc = client__perform(c, method, path, &status);
	rc = client__json_answer(c, cc, status, &b, resp, err);
	free(payload);
	dynbuf_free(&b);
	return rc;
}

void client_response_clear(struct client_response *r)
{
	json_decref(r->json);
	free(r->raw);
	memset(r, 0, sizeof(*r));
}
