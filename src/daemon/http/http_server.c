/*
 * http_server.c - libmicrohttpd glue: routing, auth, body handling, request
 * logs (see http_server.h).
 */
#include "daemon/http/http_server.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "common/log.h"
#include "common/util.h"
#include "daemon/daemon.h"
#include "daemon/http/http_front.h"
#include "daemon/http/http_head.h"
#include "daemon/http/http_reply.h"
#include "daemon/http/port_target.h"

/* A body past its cap is read and dropped up to this much more, so the
 * client gets its 413; a client that keeps sending is cut off. */
#define DISCARD_MAX (64u * 1024 * 1024)

/* Connections held at once (each has a thread once its head is in);
 * libmicrohttpd's own limit leaves room for those the front is closing. */
#define CONNECTION_LIMIT 1024
#define MHD_CONNECTION_LIMIT (CONNECTION_LIMIT + 128)

/* Largest TLS certificate or key file read, bytes. */
#define TLS_FILE_MAX (1024u * 1024u)

/* Per-connection buffer: also the largest piece of body handed over at once. */
#define CONNECTION_MEMORY (256u * 1024)

struct http_server {
	struct MHD_Daemon *mhd;
	struct http_front *front;      /* accepts, and hands connections to mhd */
	char *tls_cert, *tls_key;      /* PEM, kept for the daemon's life */
	struct daemon *d;
	const struct route *table;
	size_t ntable;
};

/* Content-Length of the request, or -1 when absent or unparsable. */
static int64_t content_length(struct http_req *r)
{
	const char *v = http_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (!v || !*v)
		return -1;
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (errno || *end || v[0] == '-' || n > INT64_MAX)
		return -1;
	return (int64_t)n;
}

static uint64_t body_cap(struct http_req *r)
{
	return r->route->body == ROUTE_BODY_STREAM ? r->d->cfg.max_upload : r->route->body_cap;
}

/* Headers are in: route, authenticate, check the announced size, begin. */
/*
 * libmicrohttpd percent-decodes the URL path and hands it over as a C
 * string, so a "%00" would cut the path short: /v1/sandboxes/ID%00/x would
 * act on /v1/sandboxes/ID.  The decoder below is libmicrohttpd's own
 * (MHD_http_unescape) and notes, per connection thread, which decoded
 * strings held a %00; on_headers refuses a path among them.  (Query values
 * keep their NUL and are refused by http_query_check.)  The request line is
 * decoded in the connection's own thread just before its first callback.
 */
#define NUL_SEEN_MAX 64
static __thread const char *nul_seen[NUL_SEEN_MAX];
static __thread unsigned nul_seen_n;

static size_t unescape_noting_nul(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	for (const char *p = strchr(s, '%'); p; p = strchr(p + 1, '%'))
		if (p[1] == '0' && p[2] == '0') {
			if (nul_seen_n < NUL_SEEN_MAX)
				nul_seen[nul_seen_n++] = s;
			break;
		}
	return MHD_http_unescape(s);
}

/* 1 if url was decoded from a string holding %00; forgets what was noted. */
static int url_had_nul(const char *url)
{
	int hit = 0;
	for (unsigned i = 0; i < nul_seen_n; i++)
		hit |= nul_seen[i] == url;
	nul_seen_n = 0;
	return hit;
}

struct header_count {
	const char *name;
	unsigned n;
};

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value)
{
	struct header_count *c = cls;
	(void)kind;
	(void)value;
	if (key && !strcasecmp(key, c->name))
		c->n++;
	return MHD_YES;
}

/* How many times the request carries header name (case-insensitive). */
static unsigned header_count(struct http_req *r, const char *name)
{
	struct header_count c = {name, 0};
	MHD_get_connection_values(r->conn, MHD_HEADER_KIND, count_header, &c);
	return c.n;
}

static enum MHD_Result count_header_bytes(void *cls, enum MHD_ValueKind kind, const char *key,
					  size_t key_size, const char *value, size_t value_size)
{
	size_t *bytes = cls;
	(void)kind;
	(void)key;
	(void)value;
	*bytes += key_size + value_size + 4; /* ": " and CRLF */
	return MHD_YES;
}

/*
 * A head the front could not check (HTTPS: http_front.h) that is over
 * HTTP_HEAD_MAX bytes of headers is refused as the front refuses it on
 * plain HTTP.  (libmicrohttpd 0.9.75 itself ends a header value at a NUL
 * byte, so no NUL reaches here.)  Returns 1 when it answered.
 */
static int refuse_large_head(struct http_req *r)
{
	size_t bytes = 0;
	MHD_get_connection_values_n(r->conn, MHD_HEADER_KIND, count_header_bytes, &bytes);
	if (bytes <= HTTP_HEAD_MAX)
		return 0;
	r->close_after = 1;
	http_reply_error(r, API_ERR_HEADERS_TOO_LARGE, "the request's head is over %u KiB",
			 HTTP_HEAD_MAX / 1024);
	return 1;
}

/*
 * A request whose framing or identity is ambiguous: two Content-Length
 * headers (libmicrohttpd reads the first; a proxy in front may have used the
 * other: request smuggling), Content-Length beside Transfer-Encoding, or two
 * Host or Authorization headers.  RFC 9112 sections 6.3 and 3.2: answer 400
 * and close the connection.  Returns 1 when it answered.
 */
static int refuse_ambiguous(struct http_req *r)
{
	static const char *const once[] = {MHD_HTTP_HEADER_CONTENT_LENGTH, MHD_HTTP_HEADER_HOST,
					   MHD_HTTP_HEADER_AUTHORIZATION};
	for (size_t i = 0; i < sizeof(once) / sizeof(once[0]); i++)
		if (header_count(r, once[i]) > 1) {
			r->close_after = 1;
			http_reply_error(r, API_ERR_INVALID_HEADER, "the request has %s twice",
					 once[i]);
			return 1;
		}
	if (header_count(r, MHD_HTTP_HEADER_CONTENT_LENGTH) &&
	    header_count(r, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
		r->close_after = 1;
		http_reply_error(r, API_ERR_INVALID_HEADER,
				 "the request has both Content-Length and Transfer-Encoding");
		return 1;
	}
	return 0;
}

/*
 * A request for a sandbox's exposed port: the Host form first (it may name
 * any path, even one of the API's), then the path form.  Returns 1 with
 * r->route, r->params ({id}, {port}) and r->port_rest set; 0 when the
 * request is not for a port; -1 when an answer was sent.
 */
static int claim_port(struct http_server *srv, struct http_req *r)
{
	unsigned port = 0;
	char id[PORT_ID_MAX];
	const char *rest = NULL;
	int k = 0;
	if (port_target_from_host(http_header(r, MHD_HTTP_HEADER_HOST), srv->d->cfg.proxy_domain,
				  &port, id)) {
		k = 1;
		rest = r->raw_target;
	} else if (r->raw_target) {
		k = port_target_from_path(r->raw_target, &port, id, &rest);
		r->port_path_form = k == 1;
	}
	if (k < 0)
		http_reply_error(r, API_ERR_NOT_FOUND,
				 "no such route: a port is 1-65535 of a sandbox id (sbx_...)");
	if (k == 1 && !rest)
		http_reply_error(r, API_ERR_NOT_FOUND, "the request target is over %u bytes",
				 PORT_TARGET_MAX - 1);
	if (k != 1 || !rest)
		return k ? -1 : 0;
	const struct route *any = NULL;
	for (size_t i = 0; i < srv->ntable; i++) {
		if (srv->table[i].auth != ROUTE_AUTH_PORT)
			continue;
		if (!any)
			any = &srv->table[i];
		if (strcmp(srv->table[i].method, r->method) == 0) {
			any = &srv->table[i];
			break;
		}
	}
	if (!any)
		return 0;
	r->route = any;
	r->port_rest = rest;
	snprintf(r->params[0], ROUTE_PARAM_MAX, "%s", id);
	snprintf(r->params[1], ROUTE_PARAM_MAX, "%u", port);
	return 1;
}

/* The route's query check (route.h): 1 when refused (answered 400), 0 when
 * the query is one the route takes. */
static int refuse_query(struct http_req *r)
{
	static const char *const none[] = {NULL};
	const struct route *rt = r->route;
	if (rt->auth == ROUTE_AUTH_NONE || rt->auth == ROUTE_AUTH_PORT)
		return 0;
	enum api_err err;
	char msg[160];
	if (http_query_check(r, rt->query ? rt->query : none, &err, msg, sizeof(msg)) == 0)
		return 0;
	char takes[160] = "";
	size_t off = 0;
	for (size_t i = 0; rt->query && rt->query[i] && off < sizeof(takes); i++) {
		size_t l = strlen(rt->query[i]);
		int prefix = l && rt->query[i][l - 1] == '.';
		int k = snprintf(takes + off, sizeof(takes) - off, "%s%s%s", i ? ", " : "",
				 rt->query[i], prefix ? "KEY" : "");
		off += k > 0 ? (size_t)k : 0;
	}
	http_reply_error(r, err, "%s (%s %s takes %s%s)", msg, rt->method, rt->pattern,
			 takes[0] ? "only " : "no query parameters", takes);
	return 1;
}

static void on_headers(struct http_server *srv, struct http_req *r, const char *url)
{
	int path_known;
	int nul = url_had_nul(url); /* first: it forgets what was noted */
	if (refuse_large_head(r) || refuse_ambiguous(r))
		return;
	if (nul) {
		http_reply_error(r, API_ERR_NOT_FOUND, "no such route: the path holds a NUL byte (%%00)");
		return;
	}
	memset(r->params, 0, sizeof(r->params)); /* a route's unused params read "" */
	int claimed = claim_port(srv, r);
	if (claimed < 0)
		return;
	if (!claimed)
		r->route = route_find(srv->table, srv->ntable, r->method, url, r->params,
				      &path_known);
	const struct http_gate *g = srv->d->gate;
	/* a module's own routes (the cluster's node-to-node calls) */
	if (!r->route && g && g->internal && g->internal(g->arg, r, url))
		return;
	if (!r->route) {
		if (path_known)
			http_reply_error(r, API_ERR_METHOD_NOT_ALLOWED,
					 "%s is not allowed on this path", r->method);
		else
			http_reply_error(r, API_ERR_NOT_FOUND, "no such route");
		return;
	}
	int a = r->route->auth == ROUTE_AUTH_NONE || r->route->auth == ROUTE_AUTH_PORT
			? 0
			: auth_check(srv->d->store, http_header(r, MHD_HTTP_HEADER_AUTHORIZATION),
				     &r->who);
	/* a key the local store does not know yet (the cluster: made on
	 * another node a moment ago) */
	if (a == -EACCES && g && g->auth)
		a = g->auth(g->arg, r, &r->who);
	if (a == -EACCES) {
		http_reply_error(r, API_ERR_UNAUTHORIZED,
				 "a valid API key is required: Authorization: Bearer pds_...");
		return;
	}
	if (a < 0) {
		http_reply_error(r, API_ERR_INTERNAL, "the key store failed");
		return;
	}
	if (r->route->auth == ROUTE_AUTH_ADMIN && !r->who.admin) {
		http_reply_error(r, API_ERR_FORBIDDEN, "this call needs an admin key");
		return;
	}
	if (refuse_query(r))
		return;
	/* served elsewhere (the cluster: a sandbox on another node; r->route
	 * may become a forwarding route) */
	if (g && g->route && g->route(g->arg, r))
		return;
	int64_t cl = content_length(r);
	if (cl >= 0 && (uint64_t)cl > body_cap(r)) {
		http_reply_error(r, API_ERR_BODY_TOO_LARGE, "the body is larger than %llu bytes",
				 (unsigned long long)body_cap(r));
		return;
	}
	if (r->route->body == ROUTE_BODY_STREAM && r->route->begin)
		r->route->begin(r);
}

/* A piece of body arrived. */
static void on_body(struct http_req *r, const char *data, size_t n)
{
	r->body_seen += n;
	if (r->route->body == ROUTE_BODY_STREAM) {
		if (r->body_seen > r->d->cfg.max_upload)
			r->body_over = 1;
		if (!r->body_over && r->route->chunk)
			r->route->chunk(r, data, n);
		return;
	}
	if (r->body_over)
		return;
	if (!r->body_buf.p)
		dynbuf_init(&r->body_buf, r->route->body_cap);
	int e = dynbuf_add(&r->body_buf, data, n);
	if (e == -EFBIG) {
		r->body_over = 1; /* the rest is read and dropped; 413 at the end */
		dynbuf_free(&r->body_buf);
	} else if (e < 0) {
		r->abort = 1;
	}
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct http_server *srv = cls;
	struct http_req *r = *con_cls;
	(void)version;
	if (!r) { /* the request line was not seen by on_uri (out of memory) */
		r = *con_cls = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
	}
	if (!r->started) {
		r->started = 1;
		http_front_head_done(conn);
		r->d = srv->d;
		r->conn = conn;
		r->start_ms = util_now_ms();
		snprintf(r->method, sizeof(r->method), "%s", method);
		on_headers(srv, r, url);
		return r->abort ? MHD_NO : MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		if (!r->status)
			on_body(r, upload_data, n);
		else
			r->body_seen += n;
		if (r->body_over && r->body_seen > body_cap(r) + DISCARD_MAX)
			return MHD_NO;
		return r->abort ? MHD_NO : MHD_YES;
	}
	if (!r->status && !r->abort) {
		/* --idle-timeout guards the wait for a request's head and body;
		 * from here the handler and its answer may take as long as the
		 * operation does (an exec of minutes, a quiet stream), and
		 * libmicrohttpd would otherwise cut the connection before the
		 * answer went out.  on_completed sets it back for keep-alive. */
		MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
		if (r->body_over)
			http_reply_error(r, API_ERR_BODY_TOO_LARGE,
					 "the body is larger than %llu bytes",
					 (unsigned long long)body_cap(r));
		else {
			r->body = r->body_buf.p;
			r->body_len = r->body_buf.len;
			r->route->handle(r);
		}
		if (!r->status && !r->abort) {
			log_kv(LOG_ERROR, "http.no_reply", "route=%s", r->route->pattern);
			http_reply_error(r, API_ERR_INTERNAL, "the handler gave no answer");
		}
	}
	return r->abort ? MHD_NO : MHD_YES;
}

/* The request line's target, before libmicrohttpd splits and decodes it:
 * the request's state starts here (it becomes *con_cls). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	(void)cls;
	(void)conn;
	struct http_req *r = calloc(1, sizeof(*r));
	if (r && uri && strlen(uri) < PORT_TARGET_MAX)
		r->raw_target = strdup(uri); /* NULL (too long, no memory): no path form */
	return r;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_req *r = *con_cls;
	struct http_server *srv = cls;
	if (!r)
		return;
	MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT,
				  (unsigned)srv->d->cfg.idle_timeout_s);
	http_front_answered(conn);
	static const char *const terms[] = {"ok", "error", "timeout", "shutdown", "read_error",
					    "client_abort"};
	const char *term = (unsigned)toe < sizeof(terms) / sizeof(terms[0]) ? terms[toe] : "?";
	/* the sandbox a request was about, so that an error can be tied to it */
	const char *sbx = "-";
	if (r->route && strncmp(r->route->pattern, "/v1/sandboxes/{id}", 18) == 0 &&
	    r->params[0][0])
		sbx = r->params[0];
	char q[2 * ROUTE_PARAM_MAX + 8];
	log_kv(r->status >= 500 ? LOG_WARN : LOG_INFO, "http.request",
	       "method=%s route=%s status=%u ms=%lld team=%s sandbox=%s bytes_in=%llu end=%s",
	       r->method, r->route ? r->route->pattern : "-", r->status,
	       (long long)(util_now_ms() - r->start_ms), r->who.team[0] ? r->who.team : "-",
	       log_quote(sbx, q, sizeof(q)), (unsigned long long)r->body_seen, term);
	if (r->state_free)
		r->state_free(r->state);
	dynbuf_free(&r->body_buf);
	free(r->raw_target);
	free(r);
	*con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* libmicrohttpd's messages about a client that went away (its wording in
 * 0.9.7x): routine for a service whose clients may drop a stream or a
 * download at any point, so they are logged at INFO, not WARN. */
static const char *const peer_gone[] = {
	"forcibly closed by remote peer",
	"disconnected when reading request",
	"closed by remote side",
	"is closed when reading request",
	"Failed to send",
};

/* libmicrohttpd's own messages, as log lines. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	char msg[512], q[600];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	enum log_level lvl = LOG_WARN;
	for (size_t i = 0; i < sizeof(peer_gone) / sizeof(peer_gone[0]) && lvl == LOG_WARN; i++)
		if (strstr(msg, peer_gone[i]))
			lvl = LOG_INFO;
	log_kv(lvl, "http.mhd", "msg=%s", log_quote(msg, q, sizeof(q)));
}

static void free_server(struct http_server *srv)
{
	http_front_free(srv->front);
	if (srv->tls_key)
		explicit_bzero(srv->tls_key, strlen(srv->tls_key));
	free(srv->tls_key);
	free(srv->tls_cert);
	free(srv);
}

int http_server_start(struct daemon *d, const struct route *table, size_t ntable,
		      struct http_server **out, unsigned *port)
{
	const struct daemon_cfg *cfg = &d->cfg;
	const char *host = strcmp(cfg->listen_host, "localhost") ? cfg->listen_host : "127.0.0.1";
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
				 .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV};
	char portstr[16];
	snprintf(portstr, sizeof(portstr), "%u", cfg->listen_port);
	struct addrinfo *ai = NULL;
	if (getaddrinfo(host, portstr, &hints, &ai) != 0 || !ai)
		return -EINVAL;
	struct http_server *srv = calloc(1, sizeof(*srv));
	if (!srv) {
		freeaddrinfo(ai);
		return -ENOMEM;
	}
	srv->d = d;
	srv->table = table;
	srv->ntable = ntable;
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_ALLOW_UPGRADE |
			 MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
	size_t len;
	struct http_front_cfg fc = {
		.addr = ai->ai_addr,
		.addrlen = ai->ai_addrlen,
		.tls = cfg->tls_cert[0] != '\0',
		.head_timeout_ms = (unsigned)cfg->head_timeout_s * 1000u,
		.per_ip_max = cfg->max_conns_per_ip,
		.total_max = CONNECTION_LIMIT,
	};
	int e = http_front_new(&fc, &srv->front, port);
	freeaddrinfo(ai);
	if (e < 0) {
		free_server(srv);
		return e;
	}
	if (cfg->tls_cert[0]) {
		if ((e = util_read_file(cfg->tls_cert, TLS_FILE_MAX, &srv->tls_cert, &len)) < 0 ||
		    (e = util_read_file(cfg->tls_key, TLS_FILE_MAX, &srv->tls_key, &len)) < 0) {
			log_kv(LOG_ERROR, "http.tls_files", "err=%s", strerror(-e));
			free_server(srv);
			return -ENOKEY;
		}
		flags |= MHD_USE_TLS;
	}
	/* Options common to HTTP and HTTPS; the TLS pair is added after them
	 * (an MHD_OPTION_END in its place ends the list for plain HTTP). */
	struct MHD_OptionItem tls[] = {
		{cfg->tls_cert[0] ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, srv->tls_cert},
		{MHD_OPTION_HTTPS_MEM_KEY, 0, srv->tls_key},
		{MHD_OPTION_END, 0, NULL},
	};
	srv->mhd = MHD_start_daemon(
		flags, 0, NULL, NULL, on_request, srv,
		MHD_OPTION_EXTERNAL_LOGGER, mhd_log, srv,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
		MHD_OPTION_NOTIFY_CONNECTION, http_front_notify, srv->front,
		MHD_OPTION_URI_LOG_CALLBACK, on_uri, srv,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)MHD_CONNECTION_LIMIT,
		MHD_OPTION_UNESCAPE_CALLBACK, unescape_noting_nul, NULL,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->idle_timeout_s,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
		MHD_OPTION_ARRAY, tls,
		MHD_OPTION_END);
	if (!srv->mhd) {
		free_server(srv);
		return cfg->tls_cert[0] ? -ENOKEY : -EIO;
	}
	if ((e = http_front_start(srv->front, srv->mhd)) < 0) {
		MHD_stop_daemon(srv->mhd);
		free_server(srv);
		return e;
	}
	*out = srv;
	return 0;
}

void http_server_quiesce(struct http_server *s)
{
	if (s)
		http_front_stop(s->front);
}

void http_server_stop(struct http_server *s)
{
	if (!s)
		return;
	http_front_stop(s->front); /* nothing new reaches libmicrohttpd */
	MHD_stop_daemon(s->mhd);
	free_server(s);
}
