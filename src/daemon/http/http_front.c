/*
 * http_front.c - the door of the HTTP server (see http_front.h).
 *
 * One thread polls the listen socket, an eventfd that stops it, and every
 * plain-HTTP connection whose head has not come in (peeked with MSG_PEEK, so
 * libmicrohttpd later reads the same bytes) or that is being drained after
 * an error.  Connections handed to libmicrohttpd stay in the table: its
 * callbacks move them between `head` and `busy`, and its CLOSED notice
 * frees the entry, under the table's lock, before libmicrohttpd closes the
 * socket: the front never shuts down a descriptor that was reused.  (A
 * connection libmicrohttpd drops without that notice, out of memory, is
 * caught by the socket's inode: checked before any shutdown.)
 */
#include "daemon/http/http_front.h"

#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "daemon/http/http_head.h"
#include "daemon/http/http_reply.h"
#include "daemon/metrics.h"

/* Entries past total_max: connections being drained, and room for those
 * whose CLOSED notice is on its way. */
#define SLACK 256
#define BACKLOG 512
#define ACCEPTS_PER_TURN 16     /* then the waiting ones' bytes are looked at */
#define TICK_MS 1000            /* longest poll when no deadline is nearer */
#define DRAIN_MS 2000           /* an answered error's connection is read this long... */
#define DRAIN_MAX (1u << 20)    /* ...or this many bytes, then closed */
#define PAGE_MAX 1024           /* an error page, head and body */
#define STALE_MS 10000          /* a dropped entry without a CLOSED notice is checked this often */

enum conn_state {
	C_FREE = 0,
	C_PENDING, /* plain HTTP, ours: waiting for its head */
	C_HEAD,    /* libmicrohttpd's: waiting for a head */
	C_BUSY,    /* libmicrohttpd's: past its head */
	C_DROPPED, /* libmicrohttpd's: shut down by the front, CLOSED to come */
	C_CLOSING, /* ours: an error page went out, draining */
};

struct conn {
	struct http_front *f;      /* the table's owner (for its lock) */
	enum conn_state st;
	int fd;
	dev_t dev;                 /* the socket's device and inode, checked before */
	ino_t ino;                 /* a shutdown (the descriptor may be another's) */
	struct sockaddr_storage addr;
	socklen_t addrlen;
	int64_t since_ms;          /* monotonic: the state's start */
	size_t seen;               /* C_PENDING: bytes peeked so far */
	uint32_t drained;          /* C_CLOSING: bytes read and dropped */
	struct MHD_Connection *mhd;
};

struct http_front {
	struct http_front_cfg cfg;
	int lfd, efd;
	struct MHD_Daemon *mhd;
	pthread_t thread;
	int running;
	pthread_mutex_t mu;        /* guards conns[] */
	struct conn *conns;
	size_t nconns;             /* total_max + SLACK */
	char peek[HTTP_HEAD_MAX + 1];
	struct pollfd *pfd;        /* nconns + 2 */
	struct conn **pconn;       /* the entry of pfd[i + 2] */
};

/* ---- addresses ----------------------------------------------------------- */

static int same_ip(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return 0;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			      &((const struct sockaddr_in6 *)b)->sin6_addr,
			      sizeof(struct in6_addr)) == 0;
	return 0;
}

static const char *ip_text(const struct sockaddr_storage *a, char *out, size_t outlen)
{
	const void *p = a->ss_family == AF_INET6
				? (const void *)&((const struct sockaddr_in6 *)a)->sin6_addr
				: (const void *)&((const struct sockaddr_in *)a)->sin_addr;
	if (!inet_ntop(a->ss_family, p, out, (socklen_t)outlen))
		snprintf(out, outlen, "?");
	return out;
}

/* ---- error pages ---------------------------------------------------------- */

size_t http_front_error_page(enum api_err e, const char *msg, char *out, size_t outlen)
{
	char *body = http_error_json(e, msg);
	if (!body)
		return 0;
	unsigned status = api_errors_status(e);
	const char *reason = MHD_get_reason_phrase_for(status);
	char date[64] = "";
	time_t now = time(NULL);
	struct tm tm;
	if (gmtime_r(&now, &tm))
		strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	int n = snprintf(out, outlen,
			 "HTTP/1.1 %u %s\r\nDate: %s\r\nContent-Type: application/json\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\nCache-Control: %s\r\n"
			 "Content-Security-Policy: %s\r\nX-Content-Type-Options: %s\r\n\r\n%s",
			 status, reason && *reason ? reason : "Error", date, strlen(body),
			 HTTP_REPLY_CACHE_CONTROL, HTTP_REPLY_CSP, HTTP_REPLY_NOSNIFF, body);
	free(body);
	return n > 0 && (size_t)n < outlen ? (size_t)n : 0;
}

/* ---- the table (callers hold f->mu) ----------------------------------------- */

static int counted(enum conn_state st)
{
	return st == C_PENDING || st == C_HEAD || st == C_BUSY;
}

static void forget(struct conn *c)
{
	struct http_front *f = c->f;
	memset(c, 0, sizeof(*c));
	c->f = f;
	c->fd = -1;
}

/* Close a connection of ours (pending or closing). */
static void close_ours(struct conn *c)
{
	close(c->fd);
	forget(c);
}

/* Answer a connection of ours with error e and start draining it. */
static void answer_ours(struct conn *c, enum api_err e, const char *msg)
{
	char page[PAGE_MAX];
	size_t n = http_front_error_page(e, msg, page, sizeof(page));
	if (n)
		(void)send(c->fd, page, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	metrics_http_response(api_errors_status(e));
	/* the client reads the answer before it sees the end; what it still
	 * sends is read and dropped for a moment, so that closing with unread
	 * bytes does not reset the connection before the answer arrives */
	shutdown(c->fd, SHUT_WR);
	c->st = C_CLOSING;
	c->since_ms = util_now_ms();
	c->drained = 0;
}

/* Shut a connection of libmicrohttpd's down: its thread sees the end,
 * closes it and sends CLOSED.  Skipped when the descriptor is no longer
 * the socket the entry was made for. */
static void drop_theirs(struct conn *c)
{
	struct stat st;
	if (fstat(c->fd, &st) == 0 && st.st_dev == c->dev && st.st_ino == c->ino)
		shutdown(c->fd, SHUT_RDWR);
	c->st = C_DROPPED;
	c->since_ms = util_now_ms();
}

static void drop(struct http_front *f, struct conn *c, const char *why)
{
	char ip[64];
	log_kv(LOG_INFO, "http.dropped", "client=%s why=%s held_ms=%lld tls=%d",
	       ip_text(&c->addr, ip, sizeof(ip)), why, (long long)(util_now_ms() - c->since_ms),
	       f->cfg.tls);
	metrics_event(METRICS_HTTP_DROPPED);
	if (c->st == C_PENDING)
		close_ours(c);
	else
		drop_theirs(c);
}

/*
 * The connection to close to make room, of addr's address or (addr NULL)
 * of all, or NULL: one still waiting for its head, the oldest, and among
 * them first one that has sent part of a head and stalled (a plain-HTTP
 * head that came in whole was handed over at once, so a legitimate client
 * waits here only before its first bytes).  A plain-HTTP connection handed
 * to libmicrohttpd has its whole head in and is never closed; over HTTPS
 * the head is libmicrohttpd's to read, so those wait in C_HEAD.
 */
static struct conn *oldest_waiting(struct http_front *f, const struct sockaddr_storage *addr)
{
	struct conn *best = NULL;
	int best_partial = 0;
	for (size_t i = 0; i < f->nconns; i++) {
		struct conn *c = &f->conns[i];
		if (c->st != C_PENDING && !(c->st == C_HEAD && f->cfg.tls))
			continue;
		if (addr && !same_ip(&c->addr, addr))
			continue;
		int partial = c->st == C_PENDING && c->seen > 0;
		if (!best || partial > best_partial ||
		    (partial == best_partial && c->since_ms < best->since_ms)) {
			best = c;
			best_partial = partial;
		}
	}
	return best;
}

/*
 * Room for a new connection from addr: 1 when there is (after closing the
 * oldest waiting one where a cap was reached), 0 when it must be refused.
 */
static int make_room(struct http_front *f, const struct sockaddr_storage *addr)
{
	size_t mine = 0, all = 0;
	for (size_t i = 0; i < f->nconns; i++) {
		if (!counted(f->conns[i].st))
			continue;
		all++;
		mine += same_ip(&f->conns[i].addr, addr);
	}
	if (mine >= f->cfg.per_ip_max) {
		struct conn *v = oldest_waiting(f, addr);
		if (!v)
			return 0;
		drop(f, v, "per_ip_cap");
		all--;
	}
	if (all >= f->cfg.total_max) {
		struct conn *v = oldest_waiting(f, NULL);
		if (!v)
			return 0;
		drop(f, v, "total_cap");
	}
	return 1;
}

static struct conn *free_entry(struct http_front *f)
{
	for (size_t i = 0; i < f->nconns; i++)
		if (f->conns[i].st == C_FREE)
			return &f->conns[i];
	return NULL;
}

/* ---- the thread ------------------------------------------------------------ */

/* Hand c (its head is in, or TLS) to libmicrohttpd.  Called without the
 * lock: libmicrohttpd's notices take it. */
static void hand_over(struct http_front *f, struct conn *c)
{
	int fd = c->fd;
	struct sockaddr_storage addr = c->addr;
	socklen_t addrlen = c->addrlen;
	if (MHD_add_connection(f->mhd, fd, (const struct sockaddr *)&addr, addrlen) != MHD_YES) {
		/* libmicrohttpd closed the socket; no notice comes */
		int e = errno;
		pthread_mutex_lock(&f->mu);
		if (c->fd == fd && c->mhd == NULL)
			forget(c);
		pthread_mutex_unlock(&f->mu);
		log_kv(LOG_WARN, "http.add_failed", "err=%s", strerror(e));
	}
}

static void on_readable(struct http_front *f, struct conn *c);

/*
 * Before a new connection of addr may push out the oldest waiting one, the
 * waiting ones of that address that have bytes not yet looked at are
 * looked at: a head that has come in is handed over, not dropped.
 */
static void look_at_waiting(struct http_front *f, const struct sockaddr_storage *addr)
{
	struct conn *news[64];
	size_t n = 0;
	pthread_mutex_lock(&f->mu);
	for (size_t i = 0; i < f->nconns && n < sizeof(news) / sizeof(news[0]); i++) {
		struct conn *c = &f->conns[i];
		int avail = 0;
		if (c->st != C_PENDING || !same_ip(&c->addr, addr))
			continue;
		if (ioctl(c->fd, FIONREAD, &avail) == 0 && (size_t)avail > c->seen)
			news[n++] = c;
	}
	pthread_mutex_unlock(&f->mu);
	/* only this thread changes pending entries: they stay pending */
	for (size_t i = 0; i < n; i++)
		on_readable(f, news[i]);
}

static void on_accept(struct http_front *f)
{
	for (int k = 0; k < ACCEPTS_PER_TURN; k++) {
		struct sockaddr_storage addr;
		socklen_t addrlen = sizeof(addr);
		int fd = accept4(f->lfd, (struct sockaddr *)&addr, &addrlen,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				log_kv(LOG_WARN, "http.accept_failed", "err=%s", strerror(errno));
			return;
		}
		struct stat st;
		if (fstat(fd, &st) < 0) {
			close(fd);
			continue;
		}
		if (!f->cfg.tls)
			look_at_waiting(f, &addr);
		pthread_mutex_lock(&f->mu);
		/* an entry still naming this descriptor lost its socket
		 * without a notice: it is stale */
		for (size_t i = 0; i < f->nconns; i++)
			if (f->conns[i].st != C_FREE && f->conns[i].fd == fd)
				forget(&f->conns[i]);
		struct conn *c = NULL;
		if (make_room(f, &addr))
			c = free_entry(f);
		if (!c) {
			pthread_mutex_unlock(&f->mu);
			char ip[64];
			log_kv(LOG_INFO, "http.refused", "client=%s why=busy tls=%d",
			       ip_text(&addr, ip, sizeof(ip)), f->cfg.tls);
			if (!f->cfg.tls) {
				char page[PAGE_MAX];
				size_t n = http_front_error_page(
					API_ERR_TOO_MANY_CONNECTIONS,
					"this address holds the most connections it may, all busy", page,
					sizeof(page));
				if (n)
					(void)send(fd, page, n, MSG_NOSIGNAL | MSG_DONTWAIT);
				metrics_http_response(api_errors_status(API_ERR_TOO_MANY_CONNECTIONS));
			}
			close(fd);
			continue;
		}
		c->fd = fd;
		c->dev = st.st_dev;
		c->ino = st.st_ino;
		c->addr = addr;
		c->addrlen = addrlen;
		c->since_ms = util_now_ms();
		c->seen = 0;
		c->mhd = NULL;
		c->st = f->cfg.tls ? C_HEAD : C_PENDING;
		pthread_mutex_unlock(&f->mu);
		if (f->cfg.tls)
			hand_over(f, c);
		else
			on_readable(f, c); /* a head sent with the connect goes on at once */
	}
}

/* Wake poll only when more than have bytes are queued (TCP honours
 * SO_RCVLOWAT in poll): a head that stops half-way costs no turns. */
static void wake_after(int fd, size_t have)
{
	int lowat = (int)have + 1;
	setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat));
}

/* A pending connection is readable: peek at its head.  Called without the
 * lock (only this thread touches a pending entry). */
static void on_readable(struct http_front *f, struct conn *c)
{
	int avail = 0;
	if (ioctl(c->fd, FIONREAD, &avail) == 0 && avail > 0 && (size_t)avail == c->seen)
		return; /* nothing new */
	ssize_t n = recv(c->fd, f->peek, sizeof(f->peek), MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	pthread_mutex_lock(&f->mu);
	if (n <= 0) { /* the client left before its head */
		close_ours(c);
		pthread_mutex_unlock(&f->mu);
		return;
	}
	int lowat_set = c->seen > 0; /* a previous look left SO_RCVLOWAT raised */
	c->seen = (size_t)n;
	size_t head_len = 0;
	enum api_err err = API_ERR_INVALID_REQUEST;
	char msg[200];
	enum http_head_result r = http_head_check(f->peek, (size_t)n, &head_len, &err, msg,
						  sizeof(msg));
	if (r == HTTP_HEAD_BAD) {
		char ip[64];
		log_kv(LOG_INFO, "http.bad_head", "client=%s code=%s",
		       ip_text(&c->addr, ip, sizeof(ip)), api_errors_code(err));
		if (lowat_set)
			wake_after(c->fd, 0); /* the drain reads what is queued */
		answer_ours(c, err, msg);
		pthread_mutex_unlock(&f->mu);
		return;
	}
	if (r == HTTP_HEAD_MORE) {
		wake_after(c->fd, c->seen);
		pthread_mutex_unlock(&f->mu);
		return;
	}
	/* its head is in: libmicrohttpd reads it at once; the deadline
	 * starts again for the short moment until it has */
	if (lowat_set)
		wake_after(c->fd, 0); /* libmicrohttpd reads as usual */
	c->st = C_HEAD;
	c->since_ms = util_now_ms();
	pthread_mutex_unlock(&f->mu);
	hand_over(f, c);
}

/* Read and drop what a closing connection still sends; close it at its
 * end, its limit or its time. */
static void drain(struct conn *c, char *buf, size_t buflen, int64_t now)
{
	for (;;) {
		ssize_t n = recv(c->fd, buf, buflen, MSG_DONTWAIT);
		if (n > 0) {
			c->drained += (uint32_t)n;
			if (c->drained < DRAIN_MAX)
				continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR) &&
		    now - c->since_ms < DRAIN_MS)
			return;
		close_ours(c);
		return;
	}
}

/* Deadlines: returns the ms until the next one (at most TICK_MS). */
static int64_t sweep(struct http_front *f, int64_t now)
{
	int64_t next = TICK_MS;
	pthread_mutex_lock(&f->mu);
	for (size_t i = 0; i < f->nconns; i++) {
		struct conn *c = &f->conns[i];
		int64_t limit;
		if (c->st == C_PENDING || c->st == C_HEAD)
			limit = f->cfg.head_timeout_ms;
		else if (c->st == C_CLOSING)
			limit = DRAIN_MS;
		else if (c->st == C_DROPPED)
			limit = STALE_MS;
		else
			continue;
		int64_t left = c->since_ms + limit - now;
		if (left > 0) {
			if (left < next)
				next = left;
			continue;
		}
		if (c->st == C_CLOSING) {
			close_ours(c);
		} else if (c->st == C_DROPPED) {
			/* libmicrohttpd lost it without a notice (it could not set
			 * it up): the entry is freed once its socket is gone */
			struct stat st;
			if (fstat(c->fd, &st) < 0 || st.st_dev != c->dev || st.st_ino != c->ino)
				forget(c);
			else
				c->since_ms = now;
		} else if (c->st == C_PENDING) {
			char ip[64];
			log_kv(LOG_INFO, "http.head_timeout", "client=%s tls=0",
			       ip_text(&c->addr, ip, sizeof(ip)));
			metrics_event(METRICS_HTTP_DROPPED);
			char msg[120];
			snprintf(msg, sizeof(msg), "the request's head did not arrive within %u ms",
				 f->cfg.head_timeout_ms);
			if (c->seen > 0)
				wake_after(c->fd, 0); /* the drain reads what is queued */
			answer_ours(c, API_ERR_REQUEST_TIMEOUT, msg);
		} else {
			drop(f, c, "head_timeout");
		}
	}
	pthread_mutex_unlock(&f->mu);
	return next;
}

static void *front_main(void *arg)
{
	struct http_front *f = arg;
	for (;;) {
		int64_t wait = sweep(f, util_now_ms());
		size_t np = 0;
		f->pfd[np++] = (struct pollfd){.fd = f->efd, .events = POLLIN};
		f->pfd[np++] = (struct pollfd){.fd = f->lfd, .events = POLLIN};
		pthread_mutex_lock(&f->mu);
		for (size_t i = 0; i < f->nconns; i++) {
			struct conn *c = &f->conns[i];
			if (c->st != C_PENDING && c->st != C_CLOSING)
				continue;
			f->pconn[np - 2] = c;
			f->pfd[np++] = (struct pollfd){.fd = c->fd, .events = POLLIN | POLLRDHUP};
		}
		pthread_mutex_unlock(&f->mu);
		int k = poll(f->pfd, (nfds_t)np, (int)(wait < 1 ? 1 : wait));
		if (k < 0 && errno != EINTR) {
			log_kv(LOG_ERROR, "http.front_poll", "err=%s", strerror(errno));
			usleep(100 * 1000);
			continue;
		}
		if (k <= 0)
			continue;
		if (f->pfd[0].revents)
			break;
		int64_t now = util_now_ms();
		for (size_t i = 2; i < np; i++) {
			if (!f->pfd[i].revents)
				continue;
			struct conn *c = f->pconn[i - 2];
			if (c->st == C_PENDING)
				on_readable(f, c);
			else if (c->st == C_CLOSING) {
				pthread_mutex_lock(&f->mu);
				drain(c, f->peek, sizeof(f->peek), now);
				pthread_mutex_unlock(&f->mu);
			}
		}
		if (f->pfd[1].revents)
			on_accept(f);
	}
	return NULL;
}

/* ---- public -------------------------------------------------------------- */

int http_front_new(const struct http_front_cfg *cfg, struct http_front **out, unsigned *port)
{
	struct http_front *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->cfg = *cfg;
	f->lfd = f->efd = -1;
	f->nconns = (size_t)cfg->total_max + SLACK;
	f->conns = calloc(f->nconns, sizeof(*f->conns));
	f->pfd = calloc(f->nconns + 2, sizeof(*f->pfd));
	f->pconn = calloc(f->nconns, sizeof(*f->pconn));
	pthread_mutex_init(&f->mu, NULL);
	int e = 0;
	if (!f->conns || !f->pfd || !f->pconn) {
		e = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < f->nconns; i++) {
		f->conns[i].f = f;
		forget(&f->conns[i]);
	}
	f->lfd = socket(cfg->addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	f->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (f->lfd < 0 || f->efd < 0) {
		e = -errno;
		goto fail;
	}
	int one = 1;
	setsockopt(f->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (cfg->addr->sa_family == AF_INET6)
		setsockopt(f->lfd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(f->lfd, cfg->addr, cfg->addrlen) < 0 || listen(f->lfd, BACKLOG) < 0) {
		e = -errno;
		goto fail;
	}
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	if (getsockname(f->lfd, (struct sockaddr *)&bound, &blen) < 0) {
		e = -errno;
		goto fail;
	}
	f->cfg.addr = NULL; /* the caller's, used up */
	*port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
						  : ((struct sockaddr_in *)&bound)->sin_port);
	*out = f;
	return 0;
fail:
	http_front_free(f);
	return e;
}

int http_front_start(struct http_front *f, struct MHD_Daemon *mhd)
{
	f->mhd = mhd;
	int e = pthread_create(&f->thread, NULL, front_main, f);
	if (e)
		return -e;
	f->running = 1;
	return 0;
}

void http_front_stop(struct http_front *f)
{
	if (!f)
		return;
	if (f->running) {
		uint64_t one = 1;
		(void)!write(f->efd, &one, sizeof(one));
		pthread_join(f->thread, NULL);
		f->running = 0;
	}
	if (f->lfd >= 0)
		close(f->lfd);
	f->lfd = -1;
	pthread_mutex_lock(&f->mu);
	for (size_t i = 0; i < f->nconns; i++)
		if (f->conns[i].st == C_PENDING || f->conns[i].st == C_CLOSING)
			close_ours(&f->conns[i]);
	pthread_mutex_unlock(&f->mu);
}

void http_front_free(struct http_front *f)
{
	if (!f)
		return;
	http_front_stop(f);
	if (f->efd >= 0)
		close(f->efd);
	pthread_mutex_destroy(&f->mu);
	free(f->conns);
	free(f->pfd);
	free(f->pconn);
	free(f);
}

/* The entry of conn (its socket context), or NULL. */
static struct conn *entry_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

void http_front_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
		       enum MHD_ConnectionNotificationCode code)
{
	struct http_front *f = cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		*socket_context = NULL;
		if (!ci)
			return;
		pthread_mutex_lock(&f->mu);
		for (size_t i = 0; i < f->nconns; i++) {
			struct conn *c = &f->conns[i];
			if ((c->st == C_HEAD || c->st == C_DROPPED) && c->fd == ci->connect_fd &&
			    !c->mhd) {
				c->mhd = conn;
				*socket_context = c;
				break;
			}
		}
		pthread_mutex_unlock(&f->mu);
		return;
	}
	struct conn *c = *socket_context;
	if (!c)
		return;
	pthread_mutex_lock(&f->mu);
	if (c->mhd == conn)
		forget(c);
	pthread_mutex_unlock(&f->mu);
	*socket_context = NULL;
}

void http_front_head_done(struct MHD_Connection *conn)
{
	struct conn *c = entry_of(conn);
	if (!c)
		return;
	pthread_mutex_lock(&c->f->mu);
	if (c->mhd == conn && c->st == C_HEAD) {
		c->st = C_BUSY;
		c->since_ms = util_now_ms();
	}
	pthread_mutex_unlock(&c->f->mu);
}

void http_front_answered(struct MHD_Connection *conn)
{
	struct conn *c = entry_of(conn);
	if (!c)
		return;
	pthread_mutex_lock(&c->f->mu);
	if (c->mhd == conn && c->st == C_BUSY) {
		c->st = C_HEAD;
		c->since_ms = util_now_ms();
	}
	pthread_mutex_unlock(&c->f->mu);
}
