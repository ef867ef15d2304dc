/*
 * api_ports.c - a sandbox's exposed ports: any request for
 * /v1/sandboxes/{id}/ports/{port}/... or, with --proxy-domain, for the
 * host {port}-{id}.DOMAIN (port_target.h) is proxied over HTTP/1.1 to
 * whatever listens on that port inside the sandbox, through a socket made
 * in the sandbox's network namespace (docs/network.md, "Exposed ports").
 *
 * Access (authorize): public ports answer anyone; private ones (the
 * default) need the sandbox's access token (X-Access-Token, or the
 * access_token query parameter) or an API key of the sandbox's team; a key
 * of another team gets 404 like every other route; nothing or a wrong
 * token gets 401.  The Authorization header and the token never reach the
 * guest.
 *
 * One request, one connection to the guest ("Connection: close"):
 *   begin   authorize, connect (PORT_CONNECT_MS), send the request head:
 *           the method, the target (port_target_forward), the caller's
 *           headers less the hop-by-hop ones, the credentials and any
 *           X-Forwarded-*, plus X-Forwarded-For/-Proto/-Host (and
 *           -Prefix for the path form) and the body's framing;
 *   chunk   each piece of the body as libmicrohttpd reads it: written to
 *           the guest (re-chunked when the caller sent it chunked), so an
 *           upload of any size holds one piece in memory and goes at the
 *           guest's pace;
 *   end     read the answer's head (port_resp.h) and answer with it: the
 *           body through a content reader that reads the guest as the
 *           client takes bytes (a download of any size holds one block);
 *           a 101 hands both sockets to a splice (port_splice.h).
 * The answer starts once the request body has been sent (as with most
 * HTTP/1.1 proxies).  The guest's silence for --idle-timeout (waiting for
 * its head, or between body bytes) ends the request: 504 before the head,
 * a cut connection after it.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/dynbuf.h"
#include "common/log.h"
#include "common/util.h"
#include "daemon/api/api.h"
#include "daemon/daemon.h"
#include "daemon/http/auth.h"
#include "daemon/http/http_reply.h"
#include "daemon/http/port_target.h"
#include "daemon/metrics.h"
#include "daemon/ports/port_resp.h"
#include "daemon/ports/port_splice.h"

#define PORT_CONNECT_MS 5000
#define PORT_BLOCK (64u * 1024)           /* bytes read from the guest at once */
#define PORT_REQ_HEAD_MAX (64u * 1024)    /* the request head sent to the guest */
#define POLL_SLICE_MS 250                 /* client and sandbox checked this often */
#define TOKEN_HEADER "X-Access-Token"

/* Content-Security-Policy of answers served by the path form: they share
 * the API's origin, so their pages run as an opaque origin (no access to
 * the API origin's storage or cookies). */
#define PATH_FORM_CSP "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads"

struct proxy {
	struct sbx *sb;            /* reference */
	int fd;                    /* to the guest; -1 once handed on */
	unsigned port;
	int chunked;               /* the body goes to the guest re-chunked */
	int upgrade_req;           /* the caller asked for a protocol upgrade */
	int send_err;              /* first -errno writing the body to the guest */
	int64_t idle_ms;
	struct MHD_Connection *conn;
	uint64_t up, down;         /* body bytes to and from the guest */
	int64_t t0;
	struct port_resp resp;
	char raw[PORT_BLOCK];      /* bytes read from the guest */
	size_t raw_off, raw_len;   /* after a 101 head: the new protocol's first bytes */
	char body[PORT_BLOCK];     /* body bytes that came with the head */
	size_t body_off, body_len;
};

static void proxy_free(void *p)
{
	struct proxy *x = p;
	if (!x)
		return;
	if (x->fd >= 0)
		close(x->fd);
	metrics_port_bytes(x->up, x->down);
	sbx_release(x->sb);
	free(x);
}

/* ---- access ------------------------------------------------------------- */

/* The sandbox of r if its credentials open the port, else NULL with the
 * answer sent. */
static struct sbx *authorize(struct http_req *r, unsigned port)
{
	struct sbx *sb = NULL;
	sbx_acquire_any(r->d->sandboxes, r->params[0], &sb);
	if (sb && sbx_public_ports(sb))
		return sb;
	const char *token = http_header(r, TOKEN_HEADER);
	if (!token)
		token = http_query(r, PORT_TOKEN_PARAM);
	if (sb && sbx_token_ok(sb, token))
		return sb;
	sbx_release(sb);
	const char *authz = http_header(r, MHD_HTTP_HEADER_AUTHORIZATION);
	int a = authz ? auth_check(r->d->store, authz, &r->who) : -EACCES;
	if (a == 0)
		return api_acquire(r); /* another team's: 404; not running: 409 */
	if (a != -EACCES)
		http_reply_error(r, API_ERR_INTERNAL, "the key store failed");
	else
		http_reply_error(r, API_ERR_UNAUTHORIZED,
				 "port %u of sandbox %.64s is private: send its access token (%s "
				 "header or ?%s=) or an API key of its team",
				 port, r->params[0], TOKEN_HEADER, PORT_TOKEN_PARAM);
	return NULL;
}

/* ---- the guest socket ----------------------------------------------------- */

/* Wait up to PORT_CONNECT_MS for fd's connect.  Returns 0 or -errno. */
static int connect_wait(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int k;
	while ((k = poll(&p, 1, PORT_CONNECT_MS)) < 0 && errno == EINTR)
		;
	if (k == 0)
		return -ETIMEDOUT;
	if (k < 0)
		return -errno;
	int err = 0;
	socklen_t len = sizeof(err);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		return -errno;
	return -err;
}

/* Send n bytes to the guest; each wait for room lasts at most idle_ms.
 * more: more bytes follow at once (MSG_MORE).  Returns 0 or -errno. */
static int send_all(int fd, const char *p, size_t n, int64_t idle_ms, int more)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT | (more ? MSG_MORE : 0));
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		struct pollfd pf = {.fd = fd, .events = POLLOUT};
		int k = poll(&pf, 1, (int)idle_ms);
		if (k == 0)
			return -ETIMEDOUT;
		if (k < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}

/* Read up to n bytes from the guest into buf, waiting for the first until
 * deadline (util_now_ms scale).  Returns the count (0: the guest closed its
 * side), -ETIMEDOUT, -EPIPE (the client left), -ESRCH (the sandbox ended)
 * or -errno. */
static ssize_t recv_wait(struct proxy *x, char *buf, size_t n, int64_t deadline)
{
	for (;;) {
		ssize_t k = recv(x->fd, buf, n, MSG_DONTWAIT);
		if (k >= 0)
			return k;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		int64_t left = deadline - util_now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd pf = {.fd = x->fd, .events = POLLIN};
		if (poll(&pf, 1, left < POLL_SLICE_MS ? (int)left : POLL_SLICE_MS) == 0) {
			if (http_conn_gone(x->conn))
				return -EPIPE;
			if (sbx_ending(x->sb))
				return -ESRCH;
		}
	}
}

/* ---- the request head --------------------------------------------------- */

struct head_ctx {
	struct dynbuf *b;
	const char *connection; /* the caller's Connection header */
	int upgrade_req;
	int path_form;          /* the caller's cookies stay with the daemon's origin */
};

/* Headers the proxy sets itself or keeps from the guest. */
static int dropped(const char *name)
{
	static const char *const own[] = {
		MHD_HTTP_HEADER_AUTHORIZATION, TOKEN_HEADER, MHD_HTTP_HEADER_CONTENT_LENGTH,
		"Expect", "X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host",
		"X-Forwarded-Prefix", "Forwarded", NULL,
	};
	for (size_t i = 0; own[i]; i++)
		if (strcasecmp(name, own[i]) == 0)
			return 1;
	return 0;
}

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *key,
				  const char *value)
{
	struct head_ctx *h = cls;
	(void)kind;
	if (!key || dropped(key) || (h->path_form && port_header_origin_bound(key)))
		return MHD_YES;
	if (port_header_hop(key, h->connection) &&
	    !(h->upgrade_req && strcasecmp(key, MHD_HTTP_HEADER_UPGRADE) == 0))
		return MHD_YES;
	dynbuf_addf(h->b, "%s: %s\r\n", key, value ? value : "");
	return MHD_YES;
}

/* The request head for the guest into b.  Returns 0, -E2BIG (over
 * PORT_REQ_HEAD_MAX), -EINVAL (a target that cannot be sent), -ENOMEM. */
static int build_head(struct http_req *r, struct proxy *x, struct dynbuf *b)
{
	char *tgt = malloc(PORT_TARGET_MAX);
	if (!tgt)
		return -ENOMEM;
	int e = port_target_forward(r->port_rest, tgt, PORT_TARGET_MAX);
	if (e) {
		free(tgt);
		return e == -ENAMETOOLONG ? -E2BIG : e;
	}
	dynbuf_addf(b, "%s %s HTTP/1.1\r\n", r->method, tgt);
	free(tgt);
	const char *conn = http_header(r, MHD_HTTP_HEADER_CONNECTION);
	struct head_ctx h = {
		.b = b,
		.connection = conn,
		.upgrade_req = x->upgrade_req,
		.path_form = r->port_path_form,
	};
	MHD_get_connection_values(r->conn, MHD_HEADER_KIND, add_header, &h);
	char addr[64];
	http_client_addr(r->conn, addr, sizeof(addr));
	dynbuf_addf(b, "X-Forwarded-For: %s\r\nX-Forwarded-Proto: %s\r\n", addr,
		    r->d->cfg.tls_cert[0] ? "https" : "http");
	const char *host = http_header(r, MHD_HTTP_HEADER_HOST);
	if (host)
		dynbuf_addf(b, "X-Forwarded-Host: %s\r\n", host);
	if (r->port_path_form)
		dynbuf_addf(b, "X-Forwarded-Prefix: /v1/sandboxes/%s/ports/%u\r\n", r->params[0],
			    x->port);
	dynbuf_add_str(b, x->upgrade_req ? "Connection: Upgrade\r\n" : "Connection: close\r\n");
	const char *cl = http_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (x->chunked)
		dynbuf_add_str(b, "Transfer-Encoding: chunked\r\n");
	else if (cl)
		dynbuf_addf(b, "Content-Length: %s\r\n", cl);
	e = dynbuf_add_str(b, "\r\n");
	return b->truncated ? -E2BIG : e;
}

/* ---- begin, chunk, end ------------------------------------------------- */

/* Answer a failed connect (err) to port of sb. */
static void reply_connect_failed(struct http_req *r, struct sbx *sb, unsigned port, int err)
{
	if (err == -ESRCH || sbx_ending(sb)) {
		metrics_port_request(METRICS_PORT_NOT_RUNNING);
		http_reply_error(r, API_ERR_SANDBOX_NOT_RUNNING, "sandbox %.64s is not running",
				 sbx_id(sb));
	} else if (err == -ECONNREFUSED) {
		metrics_port_request(METRICS_PORT_NOT_OPEN);
		http_reply_error(r, API_ERR_PORT_NOT_OPEN,
				 "nothing listens on port %u in sandbox %.64s", port, sbx_id(sb));
	} else {
		metrics_port_request(METRICS_PORT_UNREACHABLE);
		http_reply_error(r, API_ERR_PORT_UNREACHABLE,
				 "port %u of sandbox %.64s did not take a connection within %d s (%s)",
				 port, sbx_id(sb), PORT_CONNECT_MS / 1000, strerror(-err));
	}
}

void api_ports_begin(struct http_req *r)
{
	unsigned port = (unsigned)strtoul(r->params[1], NULL, 10);
	struct sbx *sb = authorize(r, port);
	if (!sb) {
		metrics_port_request(METRICS_PORT_REFUSED);
		return;
	}
	struct proxy *x = calloc(1, sizeof(*x));
	if (!x) {
		sbx_release(sb);
		http_reply_error(r, API_ERR_INTERNAL, "out of memory");
		return;
	}
	x->sb = sb;
	x->fd = -1;
	x->port = port;
	x->conn = r->conn;
	x->t0 = util_now_ms();
	x->idle_ms = (int64_t)r->d->cfg.idle_timeout_s * 1000;
	const char *te = http_header(r, MHD_HTTP_HEADER_TRANSFER_ENCODING);
	x->chunked = te && port_header_has_token(te, "chunked");
	x->upgrade_req = http_header(r, MHD_HTTP_HEADER_UPGRADE) &&
			 port_header_has_token(http_header(r, MHD_HTTP_HEADER_CONNECTION),
					       "upgrade");
	port_resp_init(&x->resp, strcmp(r->method, "HEAD") == 0);
	r->state = x;
	r->state_free = proxy_free;

	struct dynbuf head;
	dynbuf_init(&head, PORT_REQ_HEAD_MAX);
	int e = build_head(r, x, &head);
	if (e == -E2BIG || e == -EINVAL)
		metrics_port_request(METRICS_PORT_BAD_REQUEST);
	if (e == -E2BIG) {
		http_reply_error(r, API_ERR_HEADERS_TOO_LARGE,
				 "the request's target and headers are over %u bytes",
				 PORT_REQ_HEAD_MAX);
	} else if (e == -EINVAL) {
		http_reply_error(r, API_ERR_NOT_FOUND, "the request target has bytes it may not hold");
	} else if (e) {
		http_reply_error(r, API_ERR_INTERNAL, "out of memory");
	} else {
		x->fd = sbx_connect_port(sb, port);
		e = x->fd < 0 ? x->fd : connect_wait(x->fd);
		if (!e)
			e = send_all(x->fd, head.p, head.len, x->idle_ms, 1);
		if (e)
			reply_connect_failed(r, sb, port, e == -EPIPE ? -ECONNREFUSED : e);
	}
	dynbuf_free(&head);
}

void api_ports_chunk(struct http_req *r, const char *data, size_t len)
{
	struct proxy *x = r->state;
	if (!x || x->fd < 0 || x->send_err)
		return; /* the rest of the body is read and dropped; the end answers */
	int e = 0;
	if (x->chunked) {
		char size[24];
		int n = snprintf(size, sizeof(size), "%zx\r\n", len);
		e = send_all(x->fd, size, (size_t)n, x->idle_ms, 1);
		if (!e)
			e = send_all(x->fd, data, len, x->idle_ms, 1);
		if (!e)
			e = send_all(x->fd, "\r\n", 2, x->idle_ms, 1);
	} else {
		e = send_all(x->fd, data, len, x->idle_ms, 1);
	}
	if (e)
		x->send_err = e;
	else
		x->up += len;
}

/* Read until the answer's head is in, all of it within idle_ms (a server
 * that trickles its head is cut off like a silent one).  Returns 0, or
 * -errno as recv_wait or port_resp_feed. */
static int read_head(struct proxy *x)
{
	int64_t deadline = util_now_ms() + x->idle_ms;
	while (!x->resp.head_done) {
		ssize_t n = recv_wait(x, x->raw, sizeof(x->raw), deadline);
		if (n < 0)
			return (int)n;
		size_t out = 0;
		long used = port_resp_feed(&x->resp, x->raw, (size_t)n, x->body, sizeof(x->body),
					   &out);
		if (used < 0)
			return (int)used;
		x->body_len = out;
		if (x->resp.head_done && x->resp.upgrade) {
			x->raw_off = (size_t)used;
			x->raw_len = (size_t)n;
		}
	}
	return 0;
}

/* The body of the answer, as the client takes it. */
static ssize_t body_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct proxy *x = cls;
	(void)pos;
	for (;;) {
		if (x->body_off < x->body_len) {
			size_t n = x->body_len - x->body_off;
			if (n > max)
				n = max;
			memcpy(buf, x->body + x->body_off, n);
			x->body_off += n;
			x->down += n;
			return (ssize_t)n;
		}
		if (x->resp.complete || x->resp.head_request)
			return MHD_CONTENT_READER_END_OF_STREAM;
		size_t want = max < sizeof(x->raw) ? max : sizeof(x->raw);
		ssize_t n = recv_wait(x, x->raw, want, util_now_ms() + x->idle_ms);
		if (n < 0) {
			log_kv(LOG_INFO, "port.body_cut", "id=%s port=%u err=%d", sbx_id(x->sb),
			       x->port, (int)n);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		size_t out = 0;
		long used = port_resp_feed(&x->resp, x->raw, (size_t)n, buf, max, &out);
		if (used < 0) {
			log_kv(LOG_INFO, "port.body_bad", "id=%s port=%u err=%ld", sbx_id(x->sb),
			       x->port, used);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		if (out) {
			x->down += out;
			return (ssize_t)out;
		}
	}
}

/* The client's socket after the 101: both go to a splice. */
static void on_upgrade(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra_in,
		       size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	struct proxy *x = cls;
	(void)c;
	(void)con_cls;
	struct port_splice_ends e = {
		.urh = urh,
		.client_fd = sock,
		.client_extra = extra_in,
		.client_extra_len = extra_in_size,
		.guest_fd = x->fd,
		.guest_extra = x->raw + x->raw_off,
		.guest_extra_len = x->raw_len - x->raw_off,
		.sb = x->sb,
		.port = x->port,
		.idle_ms = x->idle_ms,
	};
	x->fd = -1;  /* the splice's now, as is the reference */
	x->sb = NULL;
	int r = port_splice_start(&e);
	if (r < 0)
		log_kv(LOG_WARN, "port.upgrade_failed", "err=%d", r);
}

/* Copy the guest's headers onto resp, less the hop-by-hop ones, those
 * libmicrohttpd writes itself, and on the path form those bound to the
 * daemon's origin (port_header_origin_bound). */
static void copy_headers(struct proxy *x, struct MHD_Response *resp, int path_form)
{
	const char *conn = port_resp_header(&x->resp, MHD_HTTP_HEADER_CONNECTION);
	for (size_t i = 0; i < x->resp.nheaders; i++) {
		const char *k = port_resp_header_name(&x->resp, i);
		if (port_header_hop(k, conn) || strcasecmp(k, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0 ||
		    strcasecmp(k, MHD_HTTP_HEADER_DATE) == 0 ||
		    (path_form && port_header_origin_bound(k)))
			continue;
		/* refused names or values (libmicrohttpd checks them) are left out */
		MHD_add_response_header(resp, k, port_resp_header_value(&x->resp, i));
	}
}

void api_ports_end(struct http_req *r)
{
	struct proxy *x = r->state;
	if (!x || x->fd < 0) {
		http_reply_error(r, API_ERR_INTERNAL, "port request state lost");
		return;
	}
	if (x->chunked && !x->send_err)
		x->send_err = send_all(x->fd, "0\r\n\r\n", 5, x->idle_ms, 0);
	int e = read_head(x);
	if (e == -EPIPE) {
		r->abort = 1; /* the client left */
		return;
	}
	if (e == -ESRCH) {
		metrics_port_request(METRICS_PORT_NOT_RUNNING);
		http_reply_error(r, API_ERR_SANDBOX_NOT_RUNNING, "sandbox %.64s stopped",
				 sbx_id(x->sb));
		return;
	}
	if (e == -ETIMEDOUT) {
		metrics_port_request(METRICS_PORT_TIMEOUT);
		http_reply_error(r, API_ERR_PORT_TIMEOUT,
				 "the server on port %u did not answer within %lld s", x->port,
				 (long long)(x->idle_ms / 1000));
		return;
	}
	if (e || (x->resp.upgrade && !x->upgrade_req)) {
		metrics_port_request(METRICS_PORT_BAD_RESPONSE);
		http_reply_error(r, API_ERR_PORT_BAD_RESPONSE,
				 "the server on port %u %s", x->port,
				 e == -E2BIG ? "answered with a head over 16 KiB or 100 headers"
				 : e == -EPROTO && x->send_err
					 ? "closed the connection while the request was sent"
				 : e == -EPROTO ? "did not answer with HTTP/1.x"
				 : e ? "failed"
				     : "switched protocols unasked");
		return;
	}
	struct MHD_Response *resp;
	if (x->resp.upgrade) {
		resp = MHD_create_response_for_upgrade(on_upgrade, x);
		if (resp) {
			MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "Upgrade");
			const char *up = port_resp_header(&x->resp, MHD_HTTP_HEADER_UPGRADE);
			MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, up ? up : "websocket");
		}
	} else {
		int64_t cl = x->resp.content_length;
		resp = MHD_create_response_from_callback(cl >= 0 ? (uint64_t)cl : MHD_SIZE_UNKNOWN,
							 PORT_BLOCK, body_read, x, proxy_free);
		if (resp) { /* the answer owns x now */
			r->state = NULL;
			r->state_free = NULL;
		}
	}
	if (!resp) {
		http_reply_error(r, API_ERR_INTERNAL, "out of memory");
		return;
	}
	copy_headers(x, resp, r->port_path_form);
	if (r->port_path_form) {
		MHD_add_response_header(resp, "Content-Security-Policy", PATH_FORM_CSP);
		MHD_add_response_header(resp, "X-Content-Type-Options", HTTP_REPLY_NOSNIFF);
	}
	metrics_port_request(x->resp.upgrade ? METRICS_PORT_UPGRADED : METRICS_PORT_FORWARDED);
	log_kv(LOG_INFO, "port.request", "id=%s port=%u status=%u up=%llu upgrade=%d",
	       sbx_id(x->sb), x->port, x->resp.status, (unsigned long long)x->up,
	       x->resp.upgrade);
	http_reply_forwarded(r, x->resp.status, resp);
}
