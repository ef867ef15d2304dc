/*
 * net_loop.c - the network service's event loop (see net_loop.h).
 */
#include "daemon/net/net_loop.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

#define BATCH 64

struct call {
	void (*fn)(void *arg);
	void *arg;
	int wait, done;
	struct call *next;
};

struct deferred {
	void (*fn)(void *p);
	void *p;
};

struct net_loop {
	int ep, wake;
	pthread_t thread;
	int started;
	pthread_mutex_t lock;      /* calls, stopping */
	pthread_cond_t cond;       /* a waited call finished */
	struct call *head, *tail;
	int stopping;
	struct net_watch wake_w;
	struct net_timer **heap;   /* min-heap on at_ms */
	size_t n_heap, cap_heap;
	struct deferred *defer;
	size_t n_defer, cap_defer;
	int64_t now;
};

/* ---- timers: a binary heap ------------------------------------------------ */

static void heap_put(struct net_loop *l, size_t i, struct net_timer *t)
{
	l->heap[i] = t;
	t->slot = i + 1;
}

static void sift_up(struct net_loop *l, size_t i)
{
	struct net_timer *t = l->heap[i];
	while (i > 0 && l->heap[(i - 1) / 2]->at_ms > t->at_ms) {
		heap_put(l, i, l->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_put(l, i, t);
}

static void sift_down(struct net_loop *l, size_t i)
{
	struct net_timer *t = l->heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= l->n_heap)
			break;
		if (c + 1 < l->n_heap && l->heap[c + 1]->at_ms < l->heap[c]->at_ms)
			c++;
		if (l->heap[c]->at_ms >= t->at_ms)
			break;
		heap_put(l, i, l->heap[c]);
		i = c;
	}
	heap_put(l, i, t);
}

void net_loop_timer_clear(struct net_loop *l, struct net_timer *t)
{
	if (!t->slot)
		return;
	size_t i = t->slot - 1;
	t->slot = 0;
	struct net_timer *last = l->heap[--l->n_heap];
	if (i == l->n_heap)
		return;
	heap_put(l, i, last);
	sift_down(l, i);
	sift_up(l, last->slot - 1);
}

int net_loop_timer_set(struct net_loop *l, struct net_timer *t, int64_t at_ms)
{
	net_loop_timer_clear(l, t);
	if (l->n_heap == l->cap_heap) {
		size_t cap = l->cap_heap ? l->cap_heap * 2 : 64;
		struct net_timer **h = realloc(l->heap, cap * sizeof(*h));
		if (!h)
			return -ENOMEM;
		l->heap = h;
		l->cap_heap = cap;
	}
	t->at_ms = at_ms;
	heap_put(l, l->n_heap++, t);
	sift_up(l, l->n_heap - 1);
	return 0;
}

static void run_timers(struct net_loop *l)
{
	while (l->n_heap && l->heap[0]->at_ms <= l->now) {
		struct net_timer *t = l->heap[0];
		net_loop_timer_clear(l, t);
		t->fn(t, l->now);
	}
}

/* ---- descriptors ------------------------------------------------------------ */

int net_loop_add(struct net_loop *l, struct net_watch *w, int fd, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = w};
	if (epoll_ctl(l->ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	w->fd = fd;
	w->events = events;
	return 0;
}

int net_loop_set(struct net_loop *l, struct net_watch *w, uint32_t events)
{
	if (w->fd < 0 || w->events == events)
		return 0;
	struct epoll_event ev = {.events = events, .data.ptr = w};
	if (epoll_ctl(l->ep, EPOLL_CTL_MOD, w->fd, &ev) < 0)
		return -errno;
	w->events = events;
	return 0;
}

void net_loop_del(struct net_loop *l, struct net_watch *w)
{
	if (w->fd < 0)
		return;
	epoll_ctl(l->ep, EPOLL_CTL_DEL, w->fd, NULL);
	w->fd = -1;
	w->events = 0;
}

void net_loop_defer_free(struct net_loop *l, void (*fn)(void *p), void *p)
{
	if (l->n_defer == l->cap_defer) {
		size_t cap = l->cap_defer ? l->cap_defer * 2 : 64;
		struct deferred *d = realloc(l->defer, cap * sizeof(*d));
		if (!d) {
			fn(p);
			return;
		}
		l->defer = d;
		l->cap_defer = cap;
	}
	l->defer[l->n_defer++] = (struct deferred){fn, p};
}

int64_t net_loop_now(const struct net_loop *l)
{
	return l->now;
}

/* ---- calls from other threads ----------------------------------------------- */

static void run_calls(struct net_loop *l)
{
	pthread_mutex_lock(&l->lock);
	struct call *c = l->head;
	l->head = l->tail = NULL;
	pthread_mutex_unlock(&l->lock);
	while (c) {
		struct call *next = c->next;
		c->fn(c->arg);
		if (c->wait) {
			pthread_mutex_lock(&l->lock);
			c->done = 1;
			pthread_cond_broadcast(&l->cond);
			pthread_mutex_unlock(&l->lock);
		} else {
			free(c);
		}
		c = next;
	}
}

static void on_wake(struct net_watch *w, uint32_t events)
{
	(void)events;
	uint64_t v;
	ssize_t r = read(w->fd, &v, sizeof(v));
	(void)r;
}

int net_loop_call(struct net_loop *l, void (*fn)(void *arg), void *arg, int wait)
{
	if (wait && l->started && pthread_equal(pthread_self(), l->thread)) {
		fn(arg);
		return 0;
	}
	struct call local = {fn, arg, 1, 0, NULL};
	struct call *c = wait ? &local : calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	if (!wait)
		*c = (struct call){fn, arg, 0, 0, NULL};
	pthread_mutex_lock(&l->lock);
	if (l->stopping) {
		pthread_mutex_unlock(&l->lock);
		if (!wait)
			free(c);
		return -ESHUTDOWN;
	}
	if (l->tail)
		l->tail->next = c;
	else
		l->head = c;
	l->tail = c;
	uint64_t one = 1;
	ssize_t r = write(l->wake, &one, sizeof(one));
	(void)r;
	while (wait && !c->done)
		pthread_cond_wait(&l->cond, &l->lock);
	pthread_mutex_unlock(&l->lock);
	return 0;
}

/* ---- the thread ----------------------------------------------------------------- */

static void *loop_main(void *arg)
{
	struct net_loop *l = arg;
	struct epoll_event ev[BATCH];
	for (;;) {
		l->now = util_now_ms();
		int timeout = -1;
		if (l->n_heap) {
			int64_t d = l->heap[0]->at_ms - l->now;
			timeout = d <= 0 ? 0 : d > 60000 ? 60000 : (int)d;
		}
		int n = epoll_wait(l->ep, ev, BATCH, timeout);
		if (n < 0 && errno != EINTR) {
			log_kv(LOG_ERROR, "net.loop_failed", "err=%d", -errno);
			break;
		}
		l->now = util_now_ms();
		for (int i = 0; i < n; i++) {
			struct net_watch *w = ev[i].data.ptr;
			if (w->fd >= 0)
				w->fn(w, ev[i].events);
		}
		run_timers(l);
		run_calls(l);
		for (size_t i = 0; i < l->n_defer; i++)
			l->defer[i].fn(l->defer[i].p);
		l->n_defer = 0;
		pthread_mutex_lock(&l->lock);
		int stop = l->stopping && !l->head;
		pthread_mutex_unlock(&l->lock);
		if (stop)
			break;
	}
	return NULL;
}

int net_loop_new(struct net_loop **out)
{
	struct net_loop *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->ep = epoll_create1(EPOLL_CLOEXEC);
	l->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int e = l->ep < 0 || l->wake < 0 ? -errno : 0;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	l->wake_w.fn = on_wake;
	l->wake_w.fd = -1;
	if (!e)
		e = net_loop_add(l, &l->wake_w, l->wake, EPOLLIN);
	if (e) {
		net_loop_free(l);
		return e;
	}
	l->now = util_now_ms();
	*out = l;
	return 0;
}

int net_loop_start(struct net_loop *l)
{
	int e = pthread_create(&l->thread, NULL, loop_main, l);
	if (e)
		return -e;
	l->started = 1;
	return 0;
}

void net_loop_free(struct net_loop *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	l->stopping = 1;
	pthread_mutex_unlock(&l->lock);
	if (l->started) {
		uint64_t one = 1;
		ssize_t r = write(l->wake, &one, sizeof(one));
		(void)r;
		pthread_join(l->thread, NULL);
	}
	run_calls(l); /* posted before the stop, after the thread ended */
	for (size_t i = 0; i < l->n_defer; i++)
		l->defer[i].fn(l->defer[i].p);
	if (l->ep >= 0)
		close(l->ep);
	if (l->wake >= 0)
		close(l->wake);
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->cond);
	free(l->heap);
	free(l->defer);
	free(l);
}
