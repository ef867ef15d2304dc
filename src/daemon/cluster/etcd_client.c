/*
 * etcd_client.c - etcd v3 over its JSON gateway with libcurl (see
 * etcd_client.h): the members, authentication, and every call but the
 * watch (etcd_watch.c).
 */
#include "daemon/cluster/etcd_client.h"
#include "daemon/cluster/etcd_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "common/base64.h"
#include "common/dynbuf.h"
#include "common/log.h"
#include "common/util.h"

int etcd_prefix_end(const char *prefix, char *out, size_t outlen)
{
	size_t n = strlen(prefix);
	if (n + 1 > outlen)
		return -ENAMETOOLONG;
	memcpy(out, prefix, n + 1);
	while (n > 0) {
		unsigned char c = (unsigned char)out[n - 1];
		if (c < 0xff) {
			out[n - 1] = (char)(c + 1);
			out[n] = '\0';
			return (int)n;
		}
		out[--n] = '\0';
	}
	if (outlen < 2)
		return -ENAMETOOLONG;
	out[0] = '\0'; /* every key: etcd reads "\0" as the end of the key space */
	return 1;
}

static int add_endpoint(struct etcd *e, const char *s, size_t len)
{
	while (len && (*s == ' ' || *s == '\t')) {
		s++;
		len--;
	}
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '/'))
		len--;
	if (len == 0 || e->n == ETCD_ENDPOINTS_MAX)
		return -EINVAL;
	const char *scheme = "http://";
	if (len > 7 && !strncmp(s, "etcd://", 7)) {
		s += 7;
		len -= 7;
	} else if (len > 7 && !strncmp(s, "http://", 7)) {
		s += 7;
		len -= 7;
	} else if (len > 8 && !strncmp(s, "https://", 8)) {
		scheme = "https://";
		s += 8;
		len -= 8;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= 0x20 || c >= 0x7f || c == '/' || c == '?' || c == '#' || c == '@')
			return -EINVAL;
	}
	if (len == 0 || !memchr(s, ':', len) ||
	    snprintf(e->urls[e->n], URL_MAX, "%s%.*s", scheme, (int)len, s) >= URL_MAX)
		return -EINVAL;
	e->n++;
	return 0;
}

/* Copy s (may be NULL: "") into out (cap bytes); -EINVAL when it does not fit. */
static int copy_opt(char *out, size_t cap, const char *s)
{
	return snprintf(out, cap, "%s", s ? s : "") >= (int)cap ? -EINVAL : 0;
}

int etcd_open(const char *endpoints, const struct etcd_opts *o, struct etcd **out)
{
	*out = NULL;
	if (!endpoints || !*endpoints)
		return -EINVAL;
	struct etcd *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	/* "etcd://a:1,b:2", "https://a:1,b:2": the scheme of the first names
	 * all that have none. */
	const char *p = endpoints;
	const char *scheme = "";
	static const char *const schemes[] = {"etcd://", "http://", "https://"};
	for (size_t i = 0; i < 3 && !scheme[0]; i++)
		if (!strncmp(p, schemes[i], strlen(schemes[i])))
			scheme = schemes[i];
	while (*p) {
		size_t len = strcspn(p, ",");
		char one[URL_MAX];
		int has_scheme = memmem(p, len, "://", 3) != NULL;
		if (snprintf(one, sizeof(one), "%s%.*s", has_scheme ? "" : scheme, (int)len, p) >=
			    (int)sizeof(one) ||
		    add_endpoint(e, one, strlen(one)) < 0) {
			free(e);
			return -EINVAL;
		}
		p += len;
		if (*p == ',')
			p++;
	}
	if (e->n == 0) {
		free(e);
		return -EINVAL;
	}
	static const struct etcd_opts none;
	if (!o)
		o = &none;
	if (copy_opt(e->ca_file, sizeof(e->ca_file), o->ca_file) < 0 ||
	    copy_opt(e->cert_file, sizeof(e->cert_file), o->cert_file) < 0 ||
	    copy_opt(e->key_file, sizeof(e->key_file), o->key_file) < 0 ||
	    copy_opt(e->user, sizeof(e->user), o->user) < 0 ||
	    !e->cert_file[0] != !e->key_file[0] || (e->user[0] && !o->password)) {
		free(e);
		return -EINVAL;
	}
	if (e->user[0] && !(e->password = strdup(o->password))) {
		free(e);
		return -ENOMEM;
	}
	pthread_mutex_init(&e->lock, NULL);
	pthread_mutex_init(&e->auth_lock, NULL);
	*out = e;
	return 0;
}

void etcd_close(struct etcd *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->nidle; i++)
		curl_easy_cleanup(e->idle[i]);
	if (e->password) {
		explicit_bzero(e->password, strlen(e->password));
		free(e->password);
	}
	explicit_bzero(e->token, sizeof(e->token));
	pthread_mutex_destroy(&e->lock);
	pthread_mutex_destroy(&e->auth_lock);
	free(e);
}

void etcd_last_error(struct etcd *e, char *out, size_t cap)
{
	pthread_mutex_lock(&e->lock);
	snprintf(out, cap, "%s", e->last_error[0] ? e->last_error : "no call failed");
	pthread_mutex_unlock(&e->lock);
}

size_t etcd_endpoint_count(const struct etcd *e)
{
	return e->n;
}

static CURL *take_handle(struct etcd *e)
{
	CURL *h = NULL;
	pthread_mutex_lock(&e->lock);
	if (e->nidle)
		h = e->idle[--e->nidle];
	pthread_mutex_unlock(&e->lock);
	if (h) {
		curl_easy_reset(h);
		return h;
	}
	return curl_easy_init();
}

static void give_handle(struct etcd *e, CURL *h)
{
	pthread_mutex_lock(&e->lock);
	if (e->nidle < IDLE_HANDLES) {
		e->idle[e->nidle++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&e->lock);
	if (h)
		curl_easy_cleanup(h);
}

/* See etcd_int.h. */
void etcd__set_common(struct etcd *e, CURL *h, const char *url, struct curl_slist *hdrs)
{
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)ETCD_CONNECT_MS);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 5L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 2L);
	if (e->ca_file[0])
		curl_easy_setopt(h, CURLOPT_CAINFO, e->ca_file);
	if (e->cert_file[0]) {
		curl_easy_setopt(h, CURLOPT_SSLCERT, e->cert_file);
		curl_easy_setopt(h, CURLOPT_SSLKEY, e->key_file);
	}
}

/* See etcd_int.h. */
void etcd__note_error(struct etcd *e, const char *url, const char *what)
{
	pthread_mutex_lock(&e->lock);
	snprintf(e->last_error, sizeof(e->last_error), "%.300s: %.300s", url, what);
	pthread_mutex_unlock(&e->lock);
}

/*
 * A TLS failure that trying again will not mend: this client's certificate
 * or key cannot be used, the member's certificate is not trusted, or the
 * member refused the handshake (no client certificate, or one it does not
 * trust).  The last shows in several ways: an alert, or under TLS 1.3 (the
 * client's side of the handshake ends before the member has checked its
 * certificate) a connection closed at the first read or write (an HTTP/2
 * error when etcd negotiated HTTP/2).  So a failure to send or receive on
 * an https:// connection before any answer counts too: post() concludes
 * only when every attempt of a call, over every member for ETCD_CALL_MS,
 * failed that way, while a member that is down or restarting refuses the
 * TCP connection itself (and a dead pooled connection is retried afresh by
 * libcurl).
 */
static int tls_refused(CURL *h, CURLcode cc, const char *url)
{
	switch (cc) {
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_ISSUER_ERROR:
		return 1;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_HTTP2:        /* the same over HTTP/2, which etcd offers with TLS */
	case CURLE_HTTP2_STREAM: {
		long status = 0;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		return !strncmp(url, "https://", 8) && status == 0;
	}
	default:
		return 0;
	}
}

/* etcd's answer says the token is no good (expired, lost with a member's
 * restart, or older than a change of users and roles). */
static int token_refused(long status, const char *msg)
{
	return status == 401 || strstr(msg, "invalid auth token") ||
	       strstr(msg, "auth store is old");
}

/*
 * POST body to path on the members, the last good one first, until one
 * answers 2xx: its body into *answer (the caller's dynbuf, cleared first).
 * token (may be "") goes into the Authorization header.  Rounds over the
 * members go on for ETCD_CALL_MS in all (a leader election after a member
 * left takes about a second), each attempt bounded by ETCD_ATTEMPT_MS.
 * Returns 0, -ENOTCONN (no member answered), -EKEYEXPIRED (etcd refused the
 * token), -EACCES (etcd refused the user, or every member refused this
 * client's TLS), -EIO (another refusal), -ENOMEM.
 */
static int post(struct etcd *e, const char *path, const char *body, const char *token,
		struct dynbuf *answer)
{
	CURL *h = take_handle(e);
	if (!h)
		return -ENOMEM;
	struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	char auth[ETCD_TOKEN_MAX + 32];
	if (hdrs && token[0]) {
		snprintf(auth, sizeof(auth), "Authorization: %s", token);
		struct curl_slist *l = curl_slist_append(hdrs, auth);
		if (!l)
			curl_slist_free_all(hdrs);
		hdrs = l;
		explicit_bzero(auth, sizeof(auth));
	}
	if (!hdrs) {
		give_handle(e, h);
		return -ENOMEM;
	}
	pthread_mutex_lock(&e->lock);
	size_t first = e->current;
	pthread_mutex_unlock(&e->lock);
	int r = -ENOTCONN;
	size_t attempts = 0, refused_tls = 0;
	int64_t deadline = util_now_ms() + ETCD_CALL_MS;
	for (size_t k = 0; r == -ENOTCONN; k++) {
		int64_t left = deadline - util_now_ms();
		if (k > 0 && k % e->n == 0) {
			if (left < ETCD_ROUND_PAUSE_MS * 2)
				break;
			struct timespec ts = {0, ETCD_ROUND_PAUSE_MS * 1000000L};
			nanosleep(&ts, NULL);
			left -= ETCD_ROUND_PAUSE_MS;
		}
		if (left <= 0)
			break;
		size_t i = (first + k) % e->n;
		char url[URL_MAX + 64];
		char errbuf[CURL_ERROR_SIZE] = "";
		snprintf(url, sizeof(url), "%s%s", e->urls[i], path);
		dynbuf_free(answer);
		dynbuf_init(answer, ETCD_ANSWER_MAX);
		etcd__set_common(e, h, url, hdrs);
		curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
				 (long)(left < ETCD_ATTEMPT_MS ? left : ETCD_ATTEMPT_MS));
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, dynbuf_write);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, answer);
		CURLcode cc = curl_easy_perform(h);
		long status = 0;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
		attempts++;
		if (cc == CURLE_OK && status >= 200 && status < 300) {
			pthread_mutex_lock(&e->lock);
			e->current = i;
			pthread_mutex_unlock(&e->lock);
			r = 0;
			break;
		}
		char msg[200] = "";
		if (cc == CURLE_OK)
			etcd_decode_error(answer->p, answer->len, msg, sizeof(msg));
		char q[220];
		log_kv(LOG_DEBUG, "etcd.call_failed", "url=%s curl=%d status=%ld msg=%s", url,
		       (int)cc, status, log_quote(msg, q, sizeof(q)));
		if (cc != CURLE_OK) {
			int tls = tls_refused(h, cc, url);
			char what[CURL_ERROR_SIZE + 96];
			snprintf(what, sizeof(what), "%s%s",
				 tls ? "TLS refused (no client certificate, or one it does not "
				       "trust?): "
				     : "",
				 errbuf[0] ? errbuf : curl_easy_strerror(cc));
			etcd__note_error(e, e->urls[i], what);
			refused_tls += (size_t)tls;
		} else {
			char what[240];
			snprintf(what, sizeof(what), "HTTP %ld %s", status, msg);
			etcd__note_error(e, e->urls[i], what);
		}
		if (cc == CURLE_OPERATION_TIMEDOUT)
			log_kv(LOG_WARN, "etcd.attempt_timeout", "path=%s member=%zu", path, i);
		if (cc == CURLE_OK && status >= 400 && status < 500) {
			if (token_refused(status, msg)) {
				r = -EKEYEXPIRED; /* the caller authenticates again */
				break;
			}
			log_kv(LOG_WARN, "etcd.refused", "path=%s status=%ld msg=%s", path, status,
			       log_quote(msg, q, sizeof(q)));
			/* no user while etcd's authentication is on is a 400 */
			r = status == 403 || strstr(msg, "user name is empty") ? -EACCES : -EIO;
		}
	}
	if (r == -ENOTCONN && attempts > 0 && refused_tls == attempts)
		r = -EACCES; /* every member refused this client's TLS */
	curl_slist_free_all(hdrs);
	give_handle(e, h);
	return r;
}

/* Ask etcd for a token for e->user (/v3/auth/authenticate): into out.
 * -EACCES when etcd refused the user or password. */
static int authenticate(struct etcd *e, char out[ETCD_TOKEN_MAX])
{
	json_t *req = json_pack("{s:s, s:s}", "name", e->user, "password", e->password);
	char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_t *pw = json_object_get(req, "password");
	if (pw) /* jansson keeps its own copy: wipe it too */
		explicit_bzero((char *)json_string_value(pw), json_string_length(pw));
	json_decref(req);
	if (!body)
		return -ENOMEM;
	struct dynbuf a;
	dynbuf_init(&a, ETCD_ANSWER_MAX);
	int r = post(e, "/v3/auth/authenticate", body, "", &a);
	explicit_bzero(body, strlen(body));
	free(body);
	if (r == -EIO)
		r = -EACCES; /* a 4xx answer to authenticate: the user or password is wrong */
	if (!r)
		r = etcd_decode_auth(a.p, a.len, out, ETCD_TOKEN_MAX);
	if (a.p)
		explicit_bzero(a.p, a.len);
	dynbuf_free(&a);
	if (r == -EACCES)
		log_kv(LOG_WARN, "etcd.auth_refused", "user=%s", e->user);
	else if (!r)
		log_kv(LOG_INFO, "etcd.authenticated", "user=%s", e->user);
	return r;
}

/* See etcd_int.h. */
int etcd__token_get(struct etcd *e, char out[ETCD_TOKEN_MAX], unsigned *gen)
{
	out[0] = '\0';
	*gen = 0;
	if (!e->user[0])
		return 0;
	pthread_mutex_lock(&e->auth_lock);
	pthread_mutex_lock(&e->lock);
	memcpy(out, e->token, ETCD_TOKEN_MAX);
	*gen = e->token_gen;
	pthread_mutex_unlock(&e->lock);
	int r = 0;
	if (!out[0]) {
		r = authenticate(e, out);
		pthread_mutex_lock(&e->lock);
		if (!r) {
			memcpy(e->token, out, ETCD_TOKEN_MAX);
			*gen = ++e->token_gen;
		}
		pthread_mutex_unlock(&e->lock);
	}
	pthread_mutex_unlock(&e->auth_lock);
	return r;
}

/* See etcd_int.h. */
void etcd__token_drop(struct etcd *e, unsigned gen)
{
	pthread_mutex_lock(&e->lock);
	if (e->token_gen == gen)
		explicit_bzero(e->token, sizeof(e->token));
	pthread_mutex_unlock(&e->lock);
}

/* post() with the token, authenticating again once when etcd refused it. */
static int post_authed(struct etcd *e, const char *path, const char *body,
		       struct dynbuf *answer)
{
	int r = -EACCES;
	for (int attempt = 0; attempt < 2; attempt++) {
		char token[ETCD_TOKEN_MAX];
		unsigned gen;
		r = etcd__token_get(e, token, &gen);
		if (!r)
			r = post(e, path, body, token, answer);
		explicit_bzero(token, sizeof(token));
		if (r != -EKEYEXPIRED)
			return r;
		etcd__token_drop(e, gen);
	}
	return -EACCES; /* a fresh token refused at once */
}

/* base64 of len bytes of p as a new JSON string (NULL: ENOMEM). */
static json_t *b64(const void *p, size_t len)
{
	char *s = NULL;
	size_t n = 0;
	if (base64_encode(p, len, &s, &n) < 0)
		return NULL;
	json_t *j = json_stringn(s, n);
	free(s);
	return j;
}

/* See etcd_int.h. */
json_t *etcd__key_obj(const char *key, int prefix)
{
	json_t *o = json_object();
	if (!o || json_object_set_new(o, "key", b64(key, strlen(key))) < 0) {
		json_decref(o);
		return NULL;
	}
	if (prefix) {
		char end[ETCD_KEY_MAX + 2];
		int n = etcd_prefix_end(key, end, sizeof(end));
		if (n < 0 || json_object_set_new(o, "range_end", b64(end, (size_t)n)) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

/* Serialise req (stolen), POST it, decode with the caller. */
static int etcd_call(struct etcd *e, const char *path, json_t *req, struct dynbuf *answer)
{
	dynbuf_init(answer, ETCD_ANSWER_MAX);
	if (!req)
		return -ENOMEM;
	char *body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (!body)
		return -ENOMEM;
	int r = post_authed(e, path, body, answer);
	free(body);
	return r;
}

int etcd_range(struct etcd *e, const char *key, int prefix, struct etcd_kvs *out)
{
	memset(out, 0, sizeof(*out));
	json_t *req = etcd__key_obj(key, prefix);
	if (req && prefix)
		json_object_set_new(req, "limit", json_integer(ETCD_KVS_MAX));
	struct dynbuf a;
	int r = etcd_call(e, "/v3/kv/range", req, &a);
	if (!r)
		r = etcd_decode_range(a.p, a.len, out);
	dynbuf_free(&a);
	return r;
}

static json_t *put_obj(const char *key, const void *val, size_t len, int64_t lease)
{
	json_t *o = etcd__key_obj(key, 0);
	if (o && json_object_set_new(o, "value", b64(val, len)) < 0) {
		json_decref(o);
		return NULL;
	}
	if (o && lease)
		json_object_set_new(o, "lease", json_integer(lease));
	return o;
}

int etcd_put(struct etcd *e, const char *key, const void *val, size_t len, int64_t lease,
	     int64_t *revision)
{
	struct dynbuf a;
	int64_t rev = 0;
	int r = etcd_call(e, "/v3/kv/put", put_obj(key, val, len, lease), &a);
	if (!r)
		r = etcd_decode_write(a.p, a.len, &rev, NULL);
	if (revision)
		*revision = rev;
	dynbuf_free(&a);
	return r;
}

/* A transaction: if compare holds, do then (both stolen).  *succeeded. */
static int txn(struct etcd *e, json_t *compare, json_t *then, int *succeeded, int64_t *revision)
{
	json_t *req = compare && then ? json_pack("{s:[o], s:[o]}", "compare", compare, "success",
						  then)
				      : NULL;
	if (!req) {
		json_decref(compare);
		json_decref(then);
	}
	struct dynbuf a;
	int64_t rev = 0;
	int r = etcd_call(e, "/v3/kv/txn", req, &a);
	if (!r)
		r = etcd_decode_txn(a.p, a.len, succeeded, &rev, NULL);
	if (revision)
		*revision = rev;
	dynbuf_free(&a);
	return r;
}

/* compare key's target ("CREATE"/"MOD") revision equal to rev. */
static json_t *cmp_rev(const char *key, const char *target, int64_t rev)
{
	json_t *o = etcd__key_obj(key, 0);
	if (!o)
		return NULL;
	json_object_set_new(o, "target", json_string(target));
	json_object_set_new(o, "result", json_string("EQUAL"));
	json_object_set_new(o, !strcmp(target, "CREATE") ? "create_revision" : "mod_revision",
			    json_integer(rev));
	return o;
}

/*
 * After a conditional put was refused: does key hold exactly val on lease
 * already?  post() sends a write again when an attempt's answer did not
 * come in time, and the first may have been applied: then the second finds
 * its own write and is refused.  Its value is the caller's, byte for byte
 * (records carry ids and times), so that write is this one.  1 if so (and
 * *revision its mod_revision), 0 if not, or -errno.
 */
static int already_written(struct etcd *e, const char *key, const void *val, size_t len,
			   int64_t lease, int64_t *revision)
{
	struct etcd_kvs kvs;
	int r = etcd_range(e, key, 0, &kvs);
	if (r < 0)
		return r;
	int same = kvs.n == 1 && kvs.v[0].value_len == len && kvs.v[0].lease == lease &&
		   memcmp(kvs.v[0].value, val, len) == 0;
	if (same) {
		log_kv(LOG_INFO, "etcd.write_found", "key_len=%zu", kvs.v[0].key_len);
		if (revision)
			*revision = kvs.v[0].mod_revision;
	}
	etcd_kvs_clear(&kvs);
	return same;
}

int etcd_put_new(struct etcd *e, const char *key, const void *val, size_t len, int64_t lease,
		 int64_t *revision)
{
	json_t *put = put_obj(key, val, len, lease);
	int ok = 0;
	int r = txn(e, cmp_rev(key, "CREATE", 0),
		    put ? json_pack("{s:o}", "request_put", put) : NULL, &ok, revision);
	if (r || ok)
		return r;
	r = already_written(e, key, val, len, lease, revision);
	return r < 0 ? r : r ? 0 : -EEXIST;
}

int etcd_put_at(struct etcd *e, const char *key, const void *val, size_t len, int64_t lease,
		int64_t mod_rev, int64_t *revision)
{
	json_t *put = put_obj(key, val, len, lease);
	int ok = 0;
	int r = txn(e, cmp_rev(key, "MOD", mod_rev),
		    put ? json_pack("{s:o}", "request_put", put) : NULL, &ok, revision);
	if (r || ok)
		return r;
	r = already_written(e, key, val, len, lease, revision);
	return r < 0 ? r : r ? 0 : -ESTALE;
}

int etcd_delete(struct etcd *e, const char *key, int prefix, int64_t *deleted)
{
	struct dynbuf a;
	int64_t rev, n = 0;
	int r = etcd_call(e, "/v3/kv/deleterange", etcd__key_obj(key, prefix), &a);
	if (!r)
		r = etcd_decode_write(a.p, a.len, &rev, &n);
	if (deleted)
		*deleted = n;
	dynbuf_free(&a);
	return r;
}

int etcd_delete_at(struct etcd *e, const char *key, int64_t mod_rev)
{
	json_t *del = etcd__key_obj(key, 0);
	int ok = 0;
	int r = txn(e, cmp_rev(key, "MOD", mod_rev),
		    del ? json_pack("{s:o}", "request_delete_range", del) : NULL, &ok, NULL);
	return r ? r : ok ? 0 : -ESTALE;
}

int etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *id)
{
	struct dynbuf a;
	int64_t ttl = 0;
	*id = 0;
	int r = etcd_call(e, "/v3/lease/grant", json_pack("{s:I}", "TTL", (json_int_t)ttl_s), &a);
	if (!r)
		r = etcd_decode_lease(a.p, a.len, id, &ttl);
	dynbuf_free(&a);
	return r;
}

int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl_s)
{
	struct dynbuf a;
	int64_t got = 0;
	*ttl_s = 0;
	int r = etcd_call(e, "/v3/lease/keepalive", json_pack("{s:I}", "ID", (json_int_t)id), &a);
	if (!r)
		r = etcd_decode_lease(a.p, a.len, &got, ttl_s);
	dynbuf_free(&a);
	return r;
}

int etcd_lease_revoke(struct etcd *e, int64_t id)
{
	struct dynbuf a;
	int r = etcd_call(e, "/v3/lease/revoke", json_pack("{s:I}", "ID", (json_int_t)id), &a);
	dynbuf_free(&a);
	return r;
}
