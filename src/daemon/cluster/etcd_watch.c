/*
 * etcd_watch.c - etcd_watch (see etcd_client.h): one watch stream of the
 * JSON gateway, read line by line as it comes, with the client's token.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "common/dynbuf.h"
#include "common/util.h"
#include "daemon/cluster/etcd_client.h"
#include "daemon/cluster/etcd_int.h"

struct watch_ctx {
	struct dynbuf line;     /* the part of a message not yet ended by '\n' */
	etcd_watch_fn fn;
	void *arg;
	const volatile int *stop;
	int64_t deadline_ms;
	int result;             /* what ends the watch, once set */
	int ended;
	char reason[160];       /* etcd's reason, when it canceled the watch */
};

static int watch_line(struct watch_ctx *w, const char *p, size_t n)
{
	while (n && (p[n - 1] == '\r' || p[n - 1] == ' '))
		n--;
	if (n == 0)
		return 0;
	struct etcd_watch_msg m;
	int e = etcd_decode_watch(p, n, &m);
	if (e) {
		w->result = e == -ECONNABORTED ? -ENOTCONN : e;
		return 1;
	}
	if (m.canceled) {
		etcd_kvs_clear(&m.events);
		/* a token etcd no longer takes ends the watch at once: the caller's
		 * next call authenticates again */
		w->result = strstr(m.cancel_reason, "Unauthenticated") ||
					    strstr(m.cancel_reason, "auth token")
				    ? -EKEYEXPIRED
				    : -ECANCELED;
		snprintf(w->reason, sizeof(w->reason), "%s", m.cancel_reason);
		return 1;
	}
	int r = w->fn(w->arg, &m);
	etcd_kvs_clear(&m.events);
	if (r) {
		w->result = r;
		return 1;
	}
	return 0;
}

static size_t on_watch_data(char *p, size_t size, size_t n, void *arg)
{
	struct watch_ctx *w = arg;
	size_t total = size * n;
	if (w->ended)
		return 0;
	const char *s = p, *end = p + total;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t take = nl ? (size_t)(nl - s) : (size_t)(end - s);
		if (dynbuf_add(&w->line, s, take) < 0) {
			w->result = -EPROTO;
			w->ended = 1;
			return 0;
		}
		s += take;
		if (!nl)
			break;
		s++; /* the '\n' */
		int stop = watch_line(w, dynbuf_str(&w->line), w->line.len);
		dynbuf_reset(&w->line);
		if (stop) {
			w->ended = 1;
			return 0;
		}
	}
	return total;
}

static int on_watch_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	struct watch_ctx *w = arg;
	(void)a, (void)b, (void)c, (void)d;
	return (w->stop && *w->stop) || util_now_ms() >= w->deadline_ms;
}

int etcd_watch(struct etcd *e, const char *prefix, int64_t start_rev, int max_ms,
	       etcd_watch_fn fn, void *arg, const volatile int *stop)
{
	json_t *create = etcd__key_obj(prefix, 1);
	if (create && start_rev > 0)
		json_object_set_new(create, "start_revision", json_integer(start_rev));
	json_t *req = create ? json_pack("{s:o}", "create_request", create) : NULL;
	char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	CURL *h = body ? curl_easy_init() : NULL;
	if (!h) {
		free(body);
		return -ENOMEM;
	}
	char token[ETCD_TOKEN_MAX];
	unsigned gen;
	int r = etcd__token_get(e, token, &gen);
	if (r) {
		explicit_bzero(token, sizeof(token));
		curl_easy_cleanup(h);
		free(body);
		return r == -EACCES ? r : -ENOTCONN;
	}
	struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	if (hdrs && token[0]) {
		char line[ETCD_TOKEN_MAX + 32];
		snprintf(line, sizeof(line), "Authorization: %s", token);
		struct curl_slist *l = curl_slist_append(hdrs, line);
		explicit_bzero(line, sizeof(line));
		if (!l)
			curl_slist_free_all(hdrs);
		hdrs = l;
	}
	explicit_bzero(token, sizeof(token));
	if (!hdrs) {
		curl_easy_cleanup(h);
		free(body);
		return -ENOMEM;
	}
	struct watch_ctx w = {.fn = fn, .arg = arg, .stop = stop,
			      .deadline_ms = util_now_ms() + max_ms};
	dynbuf_init(&w.line, ETCD_ANSWER_MAX);
	pthread_mutex_lock(&e->lock);
	size_t i = e->current;
	pthread_mutex_unlock(&e->lock);
	char url[URL_MAX + 16];
	snprintf(url, sizeof(url), "%s/v3/watch", e->urls[i]);
	etcd__set_common(e, h, url, hdrs);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_watch_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &w);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_watch_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, &w);
	CURLcode cc = curl_easy_perform(h);
	long status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (w.ended && w.result == -EKEYEXPIRED) {
		etcd__token_drop(e, gen);
		etcd__note_error(e, e->urls[i], w.reason);
		w.result = -ENOTCONN; /* as a failed stream: the caller retries */
	} else if (cc == CURLE_OK && status == 401) {
		etcd__token_drop(e, gen);
	}
	if (w.ended)
		r = w.result;
	else if (cc == CURLE_ABORTED_BY_CALLBACK || cc == CURLE_OK)
		r = 0; /* stopped, or the time is up (etcd never ends a stream itself) */
	else
		r = -ENOTCONN;
	if (r == -ENOTCONN || (cc == CURLE_OK && status != 200)) {
		/* the next call starts with another member */
		pthread_mutex_lock(&e->lock);
		if (e->current == i)
			e->current = (i + 1) % e->n;
		pthread_mutex_unlock(&e->lock);
		if (r == 0)
			r = -ENOTCONN;
	}
	dynbuf_free(&w.line);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(h);
	free(body);
	return r;
}
