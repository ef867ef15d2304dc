/*
 * net_loop.h - the network service's event loop: one thread waiting in
 * epoll(7) for every sandbox's proxy and resolver sockets, their
 * connections and the upstream resolver's sockets, with timers and calls
 * posted from other threads.
 *
 * Everything registered with the loop is used only on its thread, so the
 * modules it runs (net_proxy.c, net_dns.c, net_resolve.c) need no locks of
 * their own; other threads reach them with net_loop_call.  Memory a
 * callback frees while other events of the same batch may still name it
 * goes through net_loop_defer_free (run after the batch).
 *
 * Threads: net_loop_new/start/free and net_loop_call from any thread (not
 * concurrently with free); every other function on the loop's thread only
 * (or before net_loop_start).
 */
#ifndef PANDASTACK_DAEMON_NET_LOOP_H
#define PANDASTACK_DAEMON_NET_LOOP_H

#include <stddef.h>
#include <stdint.h>

struct net_loop;

/* A watched descriptor, embedded in its owner.  fn gets epoll's events
 * (EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP, EPOLLRDHUP). */
struct net_watch {
	void (*fn)(struct net_watch *w, uint32_t events);
	int fd;           /* -1 when not registered */
	uint32_t events;  /* the interest set now */
};

/* A timer, embedded in its owner: fn runs once at at_ms (CLOCK_MONOTONIC). */
struct net_timer {
	void (*fn)(struct net_timer *t, int64_t now_ms);
	int64_t at_ms;
	size_t slot;      /* private: 1 + its place in the heap, 0 when not armed */
};

/* net_loop_new - a loop, not yet running.  0 with *out or -errno. */
int net_loop_new(struct net_loop **out);

/* net_loop_start - start its thread.  0 or -errno. */
int net_loop_start(struct net_loop *l);

/*
 * net_loop_free - stop the thread (calls already posted still run, in
 * order) and release the loop.  Descriptors still registered are not
 * closed: their owners close them.  NULL is a no-op.
 */
void net_loop_free(struct net_loop *l);

/*
 * net_loop_call - run fn(arg) on the loop's thread.  With wait, return
 * after it ran (at once when called on that thread).  Returns 0, -ENOMEM,
 * or -ESHUTDOWN when the loop is stopping (fn does not run).
 */
int net_loop_call(struct net_loop *l, void (*fn)(void *arg), void *arg, int wait);

/* net_loop_add - watch fd for events with w (w->fn set by the caller).
 * 0 or -errno. */
int net_loop_add(struct net_loop *l, struct net_watch *w, int fd, uint32_t events);

/* net_loop_set - change w's interest set (nothing when it is the same). */
int net_loop_set(struct net_loop *l, struct net_watch *w, uint32_t events);

/* net_loop_del - stop watching w (its fd is not closed); events of the
 * current batch for it are dropped.  No-op when w is not registered. */
void net_loop_del(struct net_loop *l, struct net_watch *w);

/* net_loop_timer_set / _clear - arm t for at_ms (re-arming moves it), or
 * disarm it (no-op when not armed).  -ENOMEM when the heap cannot grow. */
int net_loop_timer_set(struct net_loop *l, struct net_timer *t, int64_t at_ms);
void net_loop_timer_clear(struct net_loop *l, struct net_timer *t);

/* net_loop_defer_free - fn(p) after the current batch of events. -ENOMEM
 * runs it at once: callers call it when nothing may still name p except
 * events of this batch. */
void net_loop_defer_free(struct net_loop *l, void (*fn)(void *p), void *p);

/* net_loop_now - CLOCK_MONOTONIC ms, as read at the start of this batch. */
int64_t net_loop_now(const struct net_loop *l);

#endif
