/*
 * port_splice.c - upgraded connections to a sandbox's port, copied both
 * ways by a thread each (see port_splice.h).
 */
#include "daemon/ports/port_splice.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/thread.h"
#include "common/util.h"
#include "daemon/metrics.h"
#include "daemon/sandbox/sandbox.h"

/* How often a quiet splice looks at its idle time and its sandbox, ms. */
#define TICK_MS 1000

/* One direction: bytes read from `from`, not yet written to `to`. */
struct dir {
	int from, to;
	char buf[PORT_SPLICE_BUF];
	size_t off, len;
	uint64_t total;
	int eof;       /* from ended its output */
	int done;      /* ... and that end was passed on to `to` */
};

struct splice {
	struct port_splice_ends e;
	struct dir up;   /* client -> guest */
	struct dir down; /* guest -> client */
	int64_t t0, last_io;
};

/* The splices of this process. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;  /* broadcast when n drops */
	unsigned n;
	int stopping;
	int wake_fd;          /* eventfd, readable once stopping */
} reg = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, -1};

/* Move what can move in d without blocking.  Returns 0, or -errno when a
 * side failed. */
static int step(struct splice *s, struct dir *d)
{
	if (d->len == 0 && !d->eof) {
		ssize_t n = recv(d->from, d->buf, sizeof(d->buf), MSG_DONTWAIT);
		if (n > 0) {
			d->off = 0;
			d->len = (size_t)n;
			s->last_io = util_now_ms();
		} else if (n == 0) {
			d->eof = 1;
		} else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			return -errno;
		}
	}
	while (d->off < d->len) {
		ssize_t w = send(d->to, d->buf + d->off, d->len - d->off, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w > 0) {
			d->off += (size_t)w;
			d->total += (uint64_t)w;
			s->last_io = util_now_ms();
			continue;
		}
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (w < 0 && errno == EINTR)
			continue;
		return w < 0 ? -errno : -EPIPE;
	}
	if (d->off == d->len)
		d->off = d->len = 0;
	if (d->eof && d->len == 0 && !d->done) {
		shutdown(d->to, SHUT_WR);
		d->done = 1;
	}
	return 0;
}

/* poll events for fd: read while its direction's buffer is empty, write
 * while the other direction holds bytes for it. */
static short events_for(const struct dir *reading, const struct dir *writing)
{
	short ev = 0;
	if (!reading->eof && reading->len == 0)
		ev |= POLLIN;
	if (writing->len > writing->off)
		ev |= POLLOUT;
	return ev;
}

static const char *splice_run(struct splice *s)
{
	for (;;) {
		if (s->up.done && s->down.done)
			return "closed";
		struct pollfd p[3] = {
			{.fd = s->e.client_fd, .events = events_for(&s->up, &s->down)},
			{.fd = s->e.guest_fd, .events = events_for(&s->down, &s->up)},
			{.fd = reg.wake_fd, .events = POLLIN},
		};
		/* a side with nothing to do is left out, so that its hang-up
		 * does not wake the loop again and again */
		for (int i = 0; i < 2; i++)
			if (!p[i].events)
				p[i].fd = -1;
		int k = poll(p, 3, TICK_MS);
		if (k < 0 && errno != EINTR)
			return "poll_failed";
		if (p[2].revents)
			return "daemon_stopping";
		if (k <= 0) {
			if (util_now_ms() - s->last_io >= s->e.idle_ms)
				return "idle";
			if (sbx_ending(s->e.sb))
				return "sandbox_ended";
			continue;
		}
		if ((p[0].revents | p[1].revents) & POLLERR)
			return "socket_error";
		if (step(s, &s->up) < 0 || step(s, &s->down) < 0)
			return "socket_error";
		if (sbx_ending(s->e.sb))
			return "sandbox_ended";
	}
}

static void finish(struct splice *s)
{
	close(s->e.guest_fd);
	MHD_upgrade_action(s->e.urh, MHD_UPGRADE_ACTION_CLOSE);
	sbx_release(s->e.sb);
	free(s);
	pthread_mutex_lock(&reg.lock);
	reg.n--;
	pthread_cond_broadcast(&reg.cond);
	pthread_mutex_unlock(&reg.lock);
}

static void *splice_main(void *arg)
{
	struct splice *s = arg;
	const char *why = splice_run(s);
	log_kv(LOG_INFO, "port.upgraded_end", "id=%s port=%u up=%llu down=%llu ms=%lld why=%s",
	       sbx_id(s->e.sb), s->e.port, (unsigned long long)s->up.total,
	       (unsigned long long)s->down.total, (long long)(util_now_ms() - s->t0), why);
	metrics_port_bytes(s->up.total, s->down.total);
	finish(s);
	return NULL;
}

/* Close everything e holds (a splice that could not start). */
static void drop(const struct port_splice_ends *e)
{
	close(e->guest_fd);
	MHD_upgrade_action(e->urh, MHD_UPGRADE_ACTION_CLOSE);
	sbx_release(e->sb);
}

int port_splice_start(const struct port_splice_ends *e)
{
	if (e->client_extra_len > PORT_SPLICE_BUF || e->guest_extra_len > PORT_SPLICE_BUF) {
		drop(e);
		return -E2BIG;
	}
	struct splice *s = calloc(1, sizeof(*s));
	if (!s) {
		drop(e);
		return -ENOMEM;
	}
	s->e = *e;
	s->up.from = s->down.to = e->client_fd;
	s->up.to = s->down.from = e->guest_fd;
	/* the bytes read before the splice began go first */
	memcpy(s->up.buf, e->client_extra, e->client_extra_len);
	s->up.len = e->client_extra_len;
	memcpy(s->down.buf, e->guest_extra, e->guest_extra_len);
	s->down.len = e->guest_extra_len;
	s->t0 = s->last_io = util_now_ms();
	pthread_mutex_lock(&reg.lock);
	int r = 0;
	if (reg.wake_fd < 0 && (reg.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		r = -errno;
	else if (reg.stopping || reg.n >= PORT_SPLICE_MAX)
		r = -EMFILE;
	if (!r)
		r = thread_start_detached(splice_main, s);
	if (!r)
		reg.n++;
	pthread_mutex_unlock(&reg.lock);
	if (r) {
		free(s);
		drop(e);
	}
	return r;
}

void port_splice_stop_all(void)
{
	pthread_mutex_lock(&reg.lock);
	reg.stopping = 1;
	if (reg.wake_fd >= 0) {
		uint64_t one = 1;
		ssize_t w = write(reg.wake_fd, &one, sizeof(one));
		(void)w; /* a full counter is awake already */
	}
	while (reg.n > 0)
		pthread_cond_wait(&reg.cond, &reg.lock);
	pthread_mutex_unlock(&reg.lock);
}

unsigned port_splice_count(void)
{
	pthread_mutex_lock(&reg.lock);
	unsigned n = reg.n;
	pthread_mutex_unlock(&reg.lock);
	return n;
}
