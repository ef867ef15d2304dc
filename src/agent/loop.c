/*
 * loop.c - epoll, timers and child reaping for the agent (see loop.h).
 *
 * Design: one epoll instance; the SIGCHLD signalfd is an ordinary watch
 * inside it.  Timers are an unsorted doubly-linked list scanned per
 * iteration (the agent has at most a few hundred).  Events fetched by
 * epoll_wait are kept in the loop so loop_watch_del can blank the ones not
 * yet dispatched; that makes freeing an object from any callback safe.
 * Threads: the loop thread only.
 */
#include "agent/loop.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"

#define LOOP_MAX_EVENTS 64

struct child_reg {
	pid_t pid;
	loop_child_cb cb;
	void *ctx;
};

struct loop {
	int epfd;
	int sigfd;
	struct loop_watch sigwatch;
	struct epoll_event ev[LOOP_MAX_EVENTS];
	int nev;               /* events fetched in this iteration */
	int evpos;             /* index being dispatched */
	struct loop_timer *timers;
	uint64_t gen;          /* iteration counter: timers armed now wait a turn */
	struct child_reg *kids;
	size_t nkids, capkids;
	loop_idle_cb idle;
	void *idle_ctx;
	loop_child_cb orphan;
	void *orphan_ctx;
};

static void reap_children(struct loop *l)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		if (pid <= 0)
			return; /* 0: none ready; -1: ECHILD or EINTR */
		int found = 0;
		for (size_t i = 0; i < l->nkids; i++) {
			if (l->kids[i].pid != pid)
				continue;
			struct child_reg r = l->kids[i];
			l->kids[i] = l->kids[--l->nkids];
			r.cb(r.ctx, pid, status);
			found = 1;
			break;
		}
		if (!found && l->orphan)
			l->orphan(l->orphan_ctx, pid, status);
	}
}

static void on_sigchld(struct loop_watch *w, uint32_t revents)
{
	(void)revents;
	struct loop *l = w->ctx;
	struct signalfd_siginfo si[16];
	while (read(l->sigfd, si, sizeof(si)) > 0)
		;
	reap_children(l);
}

int loop_new(struct loop **out)
{
	struct loop *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		int e = -errno;
		free(l);
		return e;
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	l->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (l->sigfd < 0) {
		int e = -errno;
		close(l->epfd);
		free(l);
		return e;
	}
	loop_watch_init(&l->sigwatch, on_sigchld, l);
	int r = loop_watch_add(l, &l->sigwatch, l->sigfd, EPOLLIN);
	if (r < 0) {
		close(l->sigfd);
		close(l->epfd);
		free(l);
		return r;
	}
	*out = l;
	return 0;
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	close(l->sigfd);
	close(l->epfd);
	free(l->kids);
	free(l);
}

void loop_set_idle(struct loop *l, loop_idle_cb cb, void *ctx)
{
	l->idle = cb;
	l->idle_ctx = ctx;
}

void loop_set_orphan_hook(struct loop *l, loop_child_cb cb, void *ctx)
{
	l->orphan = cb;
	l->orphan_ctx = ctx;
}

void loop_watch_init(struct loop_watch *w, loop_watch_cb cb, void *ctx)
{
	w->fd = -1;
	w->events = 0;
	w->cb = cb;
	w->ctx = ctx;
}

int loop_watch_add(struct loop *l, struct loop_watch *w, int fd, uint32_t events)
{
	if (w->fd >= 0)
		return -EEXIST;
	struct epoll_event ev = {.events = events, .data.ptr = w};
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	w->fd = fd;
	w->events = events;
	return 0;
}

int loop_watch_set(struct loop *l, struct loop_watch *w, uint32_t events)
{
	if (w->fd < 0)
		return -ENOENT;
	if (w->events == events)
		return 0;
	struct epoll_event ev = {.events = events, .data.ptr = w};
	if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, w->fd, &ev) < 0)
		return -errno;
	w->events = events;
	return 0;
}

void loop_watch_del(struct loop *l, struct loop_watch *w)
{
	if (w->fd < 0)
		return;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, w->fd, NULL);
	w->fd = -1;
	w->events = 0;
	for (int i = l->evpos + 1; i < l->nev; i++)
		if (l->ev[i].data.ptr == w)
			l->ev[i].data.ptr = NULL;
}

void loop_timer_init(struct loop_timer *t, loop_timer_cb cb, void *ctx)
{
	memset(t, 0, sizeof(*t));
	t->cb = cb;
	t->ctx = ctx;
}

static void timer_unlink(struct loop *l, struct loop_timer *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else
		l->timers = t->next;
	if (t->next)
		t->next->prev = t->prev;
	t->prev = t->next = NULL;
}

void loop_timer_arm(struct loop *l, struct loop_timer *t, int64_t due_ms)
{
	if (t->armed)
		timer_unlink(l, t);
	t->due_ms = due_ms;
	t->armed = 1;
	t->gen = l->gen; /* armed during an expiry pass: waits for the next */
	t->prev = NULL;
	t->next = l->timers;
	if (l->timers)
		l->timers->prev = t;
	l->timers = t;
}

void loop_timer_cancel(struct loop *l, struct loop_timer *t)
{
	if (!t->armed)
		return;
	timer_unlink(l, t);
	t->armed = 0;
}

int loop_child_watch(struct loop *l, pid_t pid, loop_child_cb cb, void *ctx)
{
	if (l->nkids == l->capkids) {
		size_t n = l->capkids ? l->capkids * 2 : 32;
		struct child_reg *k = realloc(l->kids, n * sizeof(*k));
		if (!k)
			return -ENOMEM;
		l->kids = k;
		l->capkids = n;
	}
	l->kids[l->nkids++] = (struct child_reg){.pid = pid, .cb = cb, .ctx = ctx};
	return 0;
}

void loop_child_forget(struct loop *l, pid_t pid)
{
	for (size_t i = 0; i < l->nkids; i++) {
		if (l->kids[i].pid == pid) {
			l->kids[i] = l->kids[--l->nkids];
			return;
		}
	}
}

void loop_child_sigreset(void)
{
	sigset_t none;
	sigemptyset(&none);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Milliseconds until the earliest armed timer (0 if overdue), or -1. */
static int next_timer_wait(struct loop *l, int64_t now)
{
	int64_t best = -1;
	for (struct loop_timer *t = l->timers; t; t = t->next) {
		int64_t d = t->due_ms - now;
		if (d < 0)
			d = 0;
		if (best < 0 || d < best)
			best = d;
	}
	if (best > 24 * 3600 * 1000)
		best = 24 * 3600 * 1000;
	return (int)best;
}

static void fire_timers(struct loop *l, int64_t now)
{
	for (;;) {
		struct loop_timer *due = NULL;
		for (struct loop_timer *t = l->timers; t; t = t->next) {
			if (t->due_ms <= now && t->gen < l->gen) {
				due = t;
				break;
			}
		}
		if (!due)
			return;
		timer_unlink(l, due);
		due->armed = 0;
		due->cb(due, now);
	}
}

int loop_run_once(struct loop *l, int max_wait_ms)
{
	int64_t now = util_now_ms();
	int wait = next_timer_wait(l, now);
	if (max_wait_ms >= 0 && (wait < 0 || max_wait_ms < wait))
		wait = max_wait_ms;
	int n = epoll_wait(l->epfd, l->ev, LOOP_MAX_EVENTS, wait);
	if (n < 0 && errno != EINTR)
		return -errno;
	l->nev = n > 0 ? n : 0;
	for (l->evpos = 0; l->evpos < l->nev; l->evpos++) {
		struct loop_watch *w = l->ev[l->evpos].data.ptr;
		if (w)
			w->cb(w, l->ev[l->evpos].events);
	}
	l->nev = 0;
	l->evpos = 0;
	/* Timers armed from now on belong to the next generation. */
	l->gen++;
	fire_timers(l, util_now_ms());
	if (l->idle)
		l->idle(l->idle_ctx);
	return 0;
}
