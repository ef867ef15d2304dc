/*
 * cluster_forward.c - serving a request by relaying it to another node
 * (see cluster_int.h): libcurl in a thread of its own talks to the node
 * while the request's connection thread feeds it the body and hands its
 * answer to the client, both through bounded buffers, so nothing is ever
 * held whole: a 4 GiB upload, a download or an exec_stream of hours flow
 * through at most FWD_IN_CAP + FWD_OUT_CAP bytes.
 *
 * The relayed request keeps the caller's method, path, query, key
 * (Authorization), Content-Type and Content-Length, and adds this node's
 * signature (CLUSTER_NODE_HEADER, cluster_sign.c: over the receiving node,
 * the time, a nonce, the method, the target with its query and the
 * caller's key id), which tells the receiver to serve it itself.  The
 * answer's status, Content-Type and Content-Length come back as they are.
 *
 * Failures: a node that cannot be reached gets 503 sandbox_lost (and is
 * avoided by placement for a while); a node that leaves the cluster while
 * a call is in flight (cluster__forwards_abort) ends it: 503 sandbox_lost
 * before the answer started, an `error` event for a stream, a cut answer
 * otherwise.  A client that leaves ends the relay.
 *
 * Memory: a struct cluster_fwd is shared by the request (r->state), the
 * MHD response and the curl thread, each holding a reference.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "common/dynbuf.h"
#include "common/log.h"
#include "common/thread.h"
#include "common/util.h"
#include "daemon/cluster/cluster_int.h"
#include "daemon/daemon.h"
#include "daemon/http/http_reply.h"
#include "daemon/http/http_req.h"
#include "daemon/http/port_target.h"
#include "daemon/http/route.h"

#define FWD_IN_CAP (1024u * 1024u)      /* request body bytes waiting for curl */
#define FWD_OUT_CAP (1024u * 1024u)     /* answer bytes waiting for the client */
#define FWD_CONNECT_MS 2000
#define FWD_PATH_MAX 16384
#define FWD_POLL_MS 250

struct cluster_fwd {
	struct route route;          /* the forwarding route r->route points at */
	struct cluster *c;
	struct cluster_node node;
	char method[16];
	char *url;                   /* the node's URL of this call */
	struct curl_slist *headers;
	int stream_body;             /* the body comes through chunk() */
	int64_t content_length;      /* of the request, -1 unknown */
	char *body;                  /* a buffered body (copied) */
	size_t body_len;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	int refs;                    /* lock */
	struct dynbuf in;            /* lock: body bytes for curl */
	int in_eof;                  /* lock */
	int started;                 /* lock: the curl thread runs */
	int have_head;               /* lock: the node's status line and headers are in */
	long status;
	char ctype[200];
	int64_t answer_length;       /* -1 unknown */
	struct dynbuf out;           /* lock: answer bytes for the client */
	int done;                    /* lock: curl finished */
	int failed;                  /* lock: ...without the whole answer */
	int connected;               /* lock: a connection to the node was made */
	char why[CURL_ERROR_SIZE];
	int abort;                   /* lock: 1 the client left, 2 the node left */
	int error_event;             /* an error event was sent (SSE answers) */
	struct cluster_fwd *prev, *next; /* c->lock: c->fwds */
};

/* ---- the target -------------------------------------------------------------- */

/* r's path as the route and its parameters give it, each parameter
 * escaped. */
static int request_path(const struct http_req *r, char *out, size_t outlen)
{
	const char *p = r->route->pattern;
	size_t o = 0;
	int np = 0;
	while (*p) {
		if (*p == '{') {
			const char *close = strchr(p, '}');
			if (!close || np >= ROUTE_MAX_PARAMS)
				return -EINVAL;
			char *esc = curl_easy_escape(NULL, r->params[np], 0);
			if (!esc)
				return -ENOMEM;
			size_t n = strlen(esc);
			if (o + n >= outlen) {
				curl_free(esc);
				return -ENAMETOOLONG;
			}
			memcpy(out + o, esc, n);
			o += n;
			curl_free(esc);
			np++;
			p = close + 1;
			continue;
		}
		if (o + 1 >= outlen)
			return -ENAMETOOLONG;
		out[o++] = *p++;
	}
	out[o] = '\0';
	return 0;
}

/* ---- the forward's life ------------------------------------------------------- */

static void fwd_unref(struct cluster_fwd *f)
{
	pthread_mutex_lock(&f->lock);
	int last = --f->refs == 0;
	pthread_mutex_unlock(&f->lock);
	if (!last)
		return;
	struct cluster *c = f->c;
	pthread_mutex_lock(&c->lock);
	if (f->prev)
		f->prev->next = f->next;
	else if (c->fwds == f)
		c->fwds = f->next;
	if (f->next)
		f->next->prev = f->prev;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	dynbuf_free(&f->in);
	dynbuf_free(&f->out);
	curl_slist_free_all(f->headers);
	free(f->url);
	free(f->body);
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->cond);
	free(f);
}

static void fwd_set_abort(struct cluster_fwd *f, int why)
{
	pthread_mutex_lock(&f->lock);
	if (!f->abort)
		f->abort = why;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

void cluster__forwards_abort(struct cluster *c, const char *node)
{
	pthread_mutex_lock(&c->lock);
	for (struct cluster_fwd *f = c->fwds; f; f = f->next)
		if (!strcmp(f->node.name, node))
			fwd_set_abort(f, 2);
	pthread_mutex_unlock(&c->lock);
}

/* Append "&name=value" (escaped) of each query parameter. */
static enum MHD_Result add_query(void *cls, enum MHD_ValueKind kind, const char *key,
				 const char *value)
{
	struct dynbuf *q = cls;
	(void)kind;
	char *k = curl_easy_escape(NULL, key, 0);
	char *v = value ? curl_easy_escape(NULL, value, 0) : NULL;
	if (k)
		dynbuf_addf(q, "%s%s%s%s", q->len ? "&" : "?", k, v ? "=" : "", v ? v : "");
	curl_free(k);
	curl_free(v);
	return MHD_YES;
}

static struct curl_slist *add_header(struct curl_slist *l, const char *name, const char *value)
{
	if (!value || !l)
		return l;
	char line[8192];
	if (snprintf(line, sizeof(line), "%s: %s", name, value) >= (int)sizeof(line))
		return l;
	struct curl_slist *n = curl_slist_append(l, line);
	if (!n)
		curl_slist_free_all(l);
	return n;
}

char *cluster__forward_target(struct http_req *r)
{
	char esc[FWD_PATH_MAX];
	struct dynbuf q;
	dynbuf_init(&q, FWD_PATH_MAX);
	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, add_query, &q);
	char *t = NULL;
	if (!q.truncated && request_path(r, esc, sizeof(esc)) == 0 &&
	    (asprintf(&t, "%s%s", esc, dynbuf_str(&q)) < 0 || strlen(t) >= PORT_TARGET_MAX)) {
		free(t);
		t = NULL;
	}
	dynbuf_free(&q);
	return t;
}

/* A new forward of r to node, registered, one reference (the caller's). */
static struct cluster_fwd *fwd_new(struct cluster *c, struct http_req *r,
				   const struct cluster_node *node)
{
	struct cluster_fwd *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->c = c;
	f->node = *node;
	f->refs = 1;
	f->content_length = -1;
	f->answer_length = -1;
	snprintf(f->method, sizeof(f->method), "%s", r->method);
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	dynbuf_init(&f->in, FWD_IN_CAP);
	dynbuf_init(&f->out, FWD_OUT_CAP);
	pthread_mutex_lock(&c->lock);
	f->next = c->fwds;
	if (c->fwds)
		c->fwds->prev = f;
	c->fwds = f;
	pthread_mutex_unlock(&c->lock);

	char sig[600];
	char *target = cluster__forward_target(r);
	int e = target ? 0 : -ENAMETOOLONG;
	if (!e)
		e = cluster__sign(c, node->name, r->method, target, r->who.key_id,
				  (int64_t)(util_wall_ns() / 1000000u), sig, sizeof(sig));
	if (!e && asprintf(&f->url, "%s%s", node->url, target) < 0) {
		f->url = NULL;
		e = -ENOMEM;
	}
	free(target);
	struct curl_slist *h = e ? NULL : curl_slist_append(NULL, "Expect:");
	h = add_header(h, "Authorization", http_header(r, "Authorization"));
	h = add_header(h, "Content-Type", http_header(r, "Content-Type"));
	h = add_header(h, "Accept", http_header(r, "Accept"));
	h = add_header(h, CLUSTER_NODE_HEADER, sig);
	const char *cl = http_header(r, "Content-Length");
	if (cl && *cl && strspn(cl, "0123456789") == strlen(cl) && strlen(cl) < 19)
		f->content_length = strtoll(cl, NULL, 10);
	f->headers = h;
	if (!h) {
		fwd_unref(f);
		return NULL;
	}
	return f;
}

/* ---- the curl thread --------------------------------------------------------- */

static size_t on_head(char *p, size_t size, size_t n, void *arg)
{
	struct cluster_fwd *f = arg;
	size_t len = size * n;
	char line[512];
	size_t l = len < sizeof(line) - 1 ? len : sizeof(line) - 1;
	memcpy(line, p, l);
	line[l] = '\0';
	line[strcspn(line, "\r\n")] = '\0';
	pthread_mutex_lock(&f->lock);
	long code;
	if (!strncmp(line, "HTTP/", 5) && sscanf(line, "HTTP/%*s %ld", &code) == 1) {
		f->status = code;
		f->ctype[0] = '\0';
		f->answer_length = -1;
	} else if (!strncasecmp(line, "Content-Type:", 13)) {
		const char *v = line + 13 + strspn(line + 13, " \t");
		snprintf(f->ctype, sizeof(f->ctype), "%s", v);
	} else if (!strncasecmp(line, "Content-Length:", 15)) {
		const char *v = line + 15 + strspn(line + 15, " \t");
		if (*v && strspn(v, "0123456789") == strlen(v) && strlen(v) < 19)
			f->answer_length = strtoll(v, NULL, 10);
	} else if (line[0] == '\0' && f->status >= 200) {
		f->have_head = 1; /* the blank line after the last header block */
		pthread_cond_broadcast(&f->cond);
	}
	pthread_mutex_unlock(&f->lock);
	return len;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct cluster_fwd *f = arg;
	size_t len = size * n;
	pthread_mutex_lock(&f->lock);
	f->have_head = 1;
	while (!f->abort && f->out.len + len > FWD_OUT_CAP && f->out.len > 0)
		pthread_cond_wait(&f->cond, &f->lock);
	int ok = !f->abort && dynbuf_add(&f->out, p, len) == 0;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	return ok ? len : 0;
}

static size_t on_read(char *p, size_t size, size_t n, void *arg)
{
	struct cluster_fwd *f = arg;
	size_t room = size * n;
	pthread_mutex_lock(&f->lock);
	while (!f->abort && f->in.len == 0 && !f->in_eof)
		pthread_cond_wait(&f->cond, &f->lock);
	size_t take = 0;
	if (f->abort) {
		pthread_mutex_unlock(&f->lock);
		return CURL_READFUNC_ABORT;
	}
	take = f->in.len < room ? f->in.len : room;
	if (take) {
		memcpy(p, f->in.p, take);
		dynbuf_consume(&f->in, take);
	}
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	return take;
}

static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	struct cluster_fwd *f = arg;
	(void)a, (void)b, (void)c, (void)d;
	pthread_mutex_lock(&f->lock);
	int stop = f->abort != 0;
	pthread_mutex_unlock(&f->lock);
	return stop;
}

static void *fwd_main(void *arg)
{
	struct cluster_fwd *f = arg;
	CURL *h = curl_easy_init();
	CURLcode cc = CURLE_OUT_OF_MEMORY;
	char err[CURL_ERROR_SIZE] = "";
	if (h) {
		curl_easy_setopt(h, CURLOPT_URL, f->url);
		curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L); /* the target as signed */
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, f->headers);
		curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
		curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)FWD_CONNECT_MS);
		curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
		curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 5L);
		curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 2L);
		curl_easy_setopt(h, CURLOPT_ERRORBUFFER, err);
		curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_head);
		curl_easy_setopt(h, CURLOPT_HEADERDATA, f);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, f);
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, f);
		if (f->c->d->cfg.cluster_ca_file[0])
			curl_easy_setopt(h, CURLOPT_CAINFO, f->c->d->cfg.cluster_ca_file);
		if (f->stream_body) {
			curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
			curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, f->method);
			curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
			curl_easy_setopt(h, CURLOPT_READDATA, f);
			if (f->content_length >= 0)
				curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE,
						 (curl_off_t)f->content_length);
		} else if (!strcmp(f->method, "GET")) {
			curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
		} else {
			curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, f->method);
			if (f->body_len || !strcmp(f->method, "POST")) {
				curl_easy_setopt(h, CURLOPT_POSTFIELDS, f->body ? f->body : "");
				curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
						 (curl_off_t)f->body_len);
			}
		}
		cc = curl_easy_perform(h);
	}
	long connects = 0;
	if (h) {
		curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
		double ct = 0;
		curl_easy_getinfo(h, CURLINFO_CONNECT_TIME, &ct);
		connects = connects > 0 || ct > 0;
	}
	pthread_mutex_lock(&f->lock);
	f->done = 1;
	f->failed = cc != CURLE_OK;
	f->connected = (int)connects;
	snprintf(f->why, sizeof(f->why), "%s", err[0] ? err : curl_easy_strerror(cc));
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	if (h)
		curl_easy_cleanup(h);
	fwd_unref(f);
	return NULL;
}

static int fwd_start(struct cluster_fwd *f)
{
	pthread_mutex_lock(&f->lock);
	if (f->started) {
		pthread_mutex_unlock(&f->lock);
		return 0;
	}
	f->started = 1;
	f->refs++; /* the thread's */
	pthread_mutex_unlock(&f->lock);
	int e = -thread_start_detached(fwd_main, f);
	if (e) {
		pthread_mutex_lock(&f->lock);
		f->done = f->failed = 1;
		f->refs--;
		snprintf(f->why, sizeof(f->why), "cannot start a thread");
		pthread_mutex_unlock(&f->lock);
		return -e;
	}
	return 0;
}

/* ---- the answer to the client ------------------------------------------------ */

static ssize_t read_answer(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct cluster_fwd *f = cls;
	(void)pos;
	pthread_mutex_lock(&f->lock);
	while (f->out.len == 0 && !f->done && !f->abort)
		pthread_cond_wait(&f->cond, &f->lock);
	ssize_t n;
	if (f->out.len > 0) {
		size_t take = f->out.len < max ? f->out.len : max;
		memcpy(buf, f->out.p, take);
		dynbuf_consume(&f->out, take);
		pthread_cond_broadcast(&f->cond);
		n = (ssize_t)take;
	} else if (f->done && !f->failed) {
		n = MHD_CONTENT_READER_END_OF_STREAM;
	} else if (!strncmp(f->ctype, "text/event-stream", 17) && !f->error_event) {
		/* a stream ends with a clear event rather than a cut */
		f->error_event = 1;
		int k = snprintf(buf, max,
				 "event: error\ndata: {\"error\": {\"code\": \"sandbox_lost\", "
				 "\"message\": \"the sandbox's node %s %s\"}}\n\n",
				 f->node.name,
				 f->abort == 2 ? "left the cluster" : "stopped answering");
		n = k > 0 && (size_t)k < max ? k : MHD_CONTENT_READER_END_WITH_ERROR;
	} else {
		n = f->error_event ? MHD_CONTENT_READER_END_OF_STREAM
				   : MHD_CONTENT_READER_END_WITH_ERROR;
	}
	pthread_mutex_unlock(&f->lock);
	return n;
}

static void free_answer(void *cls)
{
	struct cluster_fwd *f = cls;
	fwd_set_abort(f, 1); /* the client is done, one way or another */
	fwd_unref(f);
}

/*
 * Wait for the node's answer to begin and relay it, or answer the failure.
 * Returns 0 when r was answered, -ECONNREFUSED when no connection was made
 * and try_other is set (then r is not answered).
 */
static int relay(struct cluster_fwd *f, struct http_req *r, int try_other)
{
	pthread_mutex_lock(&f->lock);
	while (!f->have_head && !f->done && !f->abort) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += FWD_POLL_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&f->cond, &f->lock, &ts);
		if (!f->have_head && !f->done && http_conn_gone(r->conn))
			f->abort = 1;
	}
	int have_head = f->have_head, abort = f->abort, connected = f->connected;
	long status = f->status;
	char why[CURL_ERROR_SIZE];
	snprintf(why, sizeof(why), "%s", f->why);
	if (!have_head && abort != 1) {
		/* the call never reached the node, or it went away */
		f->abort = f->abort ? f->abort : 1;
		pthread_cond_broadcast(&f->cond);
	}
	pthread_mutex_unlock(&f->lock);
	if (!have_head) {
		if (abort == 1) {
			r->abort = 1; /* the client left */
			return 0;
		}
		if (!connected && abort != 2) {
			cluster__node_suspect(f->c, f->node.name);
			if (try_other)
				return -ECONNREFUSED;
		}
		char q[CURL_ERROR_SIZE + 8];
		log_kv(LOG_WARN, "cluster.forward_failed", "node=%s route=%s err=%s", f->node.name,
		       r->route->pattern, log_quote(why, q, sizeof(q)));
		http_reply_error(r, API_ERR_SANDBOX_LOST, "the sandbox's node %s %s", f->node.name,
				 abort == 2 ? "left the cluster" : "does not answer");
		return 0;
	}
	pthread_mutex_lock(&f->lock);
	f->refs++; /* the response's */
	int64_t len = f->answer_length;
	pthread_mutex_unlock(&f->lock);
	struct MHD_Response *resp = MHD_create_response_from_callback(
		len >= 0 ? (uint64_t)len : MHD_SIZE_UNKNOWN, 64 * 1024, read_answer, f,
		free_answer);
	if (!resp) {
		fwd_unref(f);
		http_reply_error(r, API_ERR_INTERNAL, "out of memory");
		return 0;
	}
	if (f->ctype[0])
		MHD_add_response_header(resp, "Content-Type", f->ctype);
	http_reply_response(r, (unsigned)status, resp);
	return 0;
}

/* ---- the forwarding route's handlers ------------------------------------------ */

static void fwd_state_free(void *state)
{
	struct cluster_fwd *f = state;
	fwd_set_abort(f, 1);
	fwd_unref(f);
}

static void fwd_begin(struct http_req *r)
{
	struct cluster_fwd *f = r->state;
	if (fwd_start(f) < 0)
		http_reply_error(r, API_ERR_INTERNAL, "cannot start the forward");
}

static void fwd_chunk(struct http_req *r, const char *data, size_t len)
{
	struct cluster_fwd *f = r->state;
	pthread_mutex_lock(&f->lock);
	while (len > 0 && !f->done && !f->abort) {
		size_t room = FWD_IN_CAP - f->in.len;
		if (room == 0) {
			pthread_cond_wait(&f->cond, &f->lock);
			continue;
		}
		size_t take = len < room ? len : room;
		dynbuf_add(&f->in, data, take);
		data += take;
		len -= take;
		pthread_cond_broadcast(&f->cond);
	}
	pthread_mutex_unlock(&f->lock);
}

static void fwd_handle(struct http_req *r)
{
	struct cluster_fwd *f = r->state;
	if (!f->stream_body && r->body_len) {
		f->body = malloc(r->body_len);
		if (!f->body) {
			http_reply_error(r, API_ERR_INTERNAL, "out of memory");
			return;
		}
		memcpy(f->body, r->body, r->body_len);
		f->body_len = r->body_len;
	}
	pthread_mutex_lock(&f->lock);
	f->in_eof = 1;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	if (fwd_start(f) < 0) {
		http_reply_error(r, API_ERR_INTERNAL, "cannot start the forward");
		return;
	}
	relay(f, r, 0);
}

int cluster__forward(struct cluster *c, struct http_req *r, const struct cluster_node *node)
{
	struct cluster_fwd *f = fwd_new(c, r, node);
	if (!f)
		return -ENOMEM;
	f->route = *r->route;
	f->stream_body = r->route->body == ROUTE_BODY_STREAM;
	f->route.handle = fwd_handle;
	f->route.begin = f->stream_body ? fwd_begin : NULL;
	f->route.chunk = f->stream_body ? fwd_chunk : NULL;
	r->route = &f->route;
	r->state = f;
	r->state_free = fwd_state_free;
	log_kv(LOG_DEBUG, "cluster.forward", "node=%s route=%s", node->name, f->route.pattern);
	return 0;
}

int cluster__forward_now(struct cluster *c, struct http_req *r, const struct cluster_node *node)
{
	struct cluster_fwd *f = fwd_new(c, r, node);
	if (!f)
		return -ENOMEM;
	if (r->body_len && !(f->body = malloc(r->body_len))) {
		fwd_unref(f);
		return -ENOMEM;
	}
	if (r->body_len)
		memcpy(f->body, r->body, r->body_len);
	f->body_len = r->body_len;
	int e = fwd_start(f);
	if (!e)
		e = relay(f, r, 1);
	fwd_unref(f); /* the answer, if any, holds its own reference */
	return e;
}
