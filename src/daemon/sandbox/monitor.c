/*
 * monitor.c - the watcher and reaper thread (see monitor.h).
 */
#include "daemon/sandbox/monitor.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "daemon/daemon.h"
#include "daemon/metrics.h"
#include "daemon/sandbox/sandbox.h"
#include "daemon/store/store.h"

/* Most sandboxes watched at once (the per-team limits keep far below). */
#define WATCH_MAX 4096
/* Longest sleep between rounds, ms: bounds how late a vm_alive check or a
 * TTL can be. */
#define ROUND_MS 500
/* Period of the purge of old rows, ms. */
#define PURGE_MS 60000

struct monitor {
	struct daemon *d;
	pthread_t thread;
	int stop_fd;           /* eventfd: written by monitor_stop */
	struct sbx_watch *w;   /* WATCH_MAX entries */
	struct pollfd *fds;    /* 2 + WATCH_MAX */
};

static int64_t wall_ms(void)
{
	return (int64_t)(util_wall_ns() / 1000000u);
}

static void drain(int fd)
{
	uint64_t v;
	ssize_t r = read(fd, &v, sizeof(v));
	(void)r;
}

static void purge(struct daemon *d)
{
	int n = 0;
	int64_t before = wall_ms() - d->cfg.retention_s * 1000;
	if (store_sandbox_purge_ended(d->store, before, &n) == 0 && n > 0)
		log_kv(LOG_INFO, "sandbox.purged", "rows=%d", n);
	sandboxes_paused_expire(d->sandboxes);
}

/* One round: wait for a death, an expiry, a change or the stop; act. */
static int round_once(struct monitor *m)
{
	struct sandboxes *reg = m->d->sandboxes;
	size_t n = sandboxes_watch_list(reg, m->w, WATCH_MAX);
	int64_t now = wall_ms();
	int timeout = ROUND_MS;
	nfds_t nfds = 2;
	m->fds[0] = (struct pollfd){.fd = m->stop_fd, .events = POLLIN};
	m->fds[1] = (struct pollfd){.fd = sandboxes_wake_fd(reg), .events = POLLIN};
	size_t slot[WATCH_MAX];
	for (size_t i = 0; i < n; i++) {
		int64_t left = m->w[i].expires_at_ms - now;
		if (left < timeout)
			timeout = left < 0 ? 0 : (int)left;
		slot[i] = SIZE_MAX;
		if (m->w[i].exit_fd >= 0) {
			slot[i] = nfds;
			m->fds[nfds++] = (struct pollfd){.fd = m->w[i].exit_fd, .events = POLLIN};
		}
	}
	int pr = poll(m->fds, nfds, timeout);
	int stop = pr > 0 && (m->fds[0].revents & POLLIN);
	if (pr > 0 && (m->fds[1].revents & POLLIN))
		drain(m->fds[1].fd);
	now = wall_ms();
	for (size_t i = 0; i < n && !stop; i++) {
		struct sbx *sb = m->w[i].sb;
		int dead = slot[i] != SIZE_MAX ? pr > 0 && m->fds[slot[i]].revents != 0
					       : !sbx_vm_alive(sb);
		/* Count only ends this round started: a delete that killed the
		 * VM a moment ago also makes its pidfd readable. */
		if (dead && sbx_end_async(sb, "error", NULL) == 1) {
			metrics_event(METRICS_VM_DIED);
			log_kv(LOG_WARN, "sandbox.vm_died", "id=%s", sbx_id(sb));
		} else if (!dead && now >= m->w[i].expires_at_ms && sbx_expire_async(sb) == 1) {
			metrics_event(METRICS_TTL_EXPIRED);
			log_kv(LOG_INFO, "sandbox.expired", "id=%s", sbx_id(sb));
		}
	}
	for (size_t i = 0; i < n; i++)
		sbx_release(m->w[i].sb);
	return stop;
}

static void *monitor_main(void *arg)
{
	struct monitor *m = arg;
	int64_t last_purge = 0;
	for (;;) {
		if (round_once(m))
			break;
		int64_t t = util_now_ms();
		if (t - last_purge >= PURGE_MS) {
			purge(m->d);
			last_purge = t;
		}
	}
	return NULL;
}

int monitor_start(struct daemon *d, struct monitor **out)
{
	struct monitor *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->d = d;
	m->w = calloc(WATCH_MAX, sizeof(*m->w));
	m->fds = calloc(2 + WATCH_MAX, sizeof(*m->fds));
	m->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int e = !m->w || !m->fds ? ENOMEM : m->stop_fd < 0 ? errno : 0;
	if (!e)
		e = pthread_create(&m->thread, NULL, monitor_main, m);
	if (e) {
		if (m->stop_fd >= 0)
			close(m->stop_fd);
		free(m->w);
		free(m->fds);
		free(m);
		return -e;
	}
	*out = m;
	return 0;
}

void monitor_stop(struct monitor *m)
{
	if (!m)
		return;
	uint64_t one = 1;
	ssize_t w = write(m->stop_fd, &one, sizeof(one));
	(void)w;
	pthread_join(m->thread, NULL);
	close(m->stop_fd);
	free(m->w);
	free(m->fds);
	free(m);
}
