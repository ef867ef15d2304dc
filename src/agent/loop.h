/*
 * loop.h - the agent's single-threaded event loop: epoll over file
 * descriptors, one-shot timers on CLOCK_MONOTONIC (ms), and child-process
 * exits through a signalfd for SIGCHLD.
 *
 * Every watch and timer is a struct owned by the caller (embedded in its
 * object); the loop only links it.  Removing a watch from inside any callback
 * is safe: events already fetched for it are dropped.  Children are reaped
 * with waitpid(-1): a pid registered with loop_child_watch gets its callback,
 * any other child (an orphan re-parented to PID 1 or to the subreaper) is
 * reaped quietly and reported to the orphan hook.
 *
 * Threads: the loop thread only; nothing here is thread-safe.
 */
#ifndef PANDASTACK_AGENT_LOOP_H
#define PANDASTACK_AGENT_LOOP_H

#include <stdint.h>
#include <sys/types.h>

struct loop;
struct loop_watch;
struct loop_timer;

/* Callback for a readiness event; revents are EPOLL* bits. */
typedef void (*loop_watch_cb)(struct loop_watch *w, uint32_t revents);
/* Callback for an expired timer; now is CLOCK_MONOTONIC ms. */
typedef void (*loop_timer_cb)(struct loop_timer *t, int64_t now);
/* Callback for a reaped child: status as from waitpid. */
typedef void (*loop_child_cb)(void *ctx, pid_t pid, int status);
/* Called once per loop iteration after all events were dispatched. */
typedef void (*loop_idle_cb)(void *ctx);

struct loop_watch {
	int fd;            /* -1 when not added */
	uint32_t events;   /* EPOLL* bits currently asked for (0: disarmed) */
	loop_watch_cb cb;
	void *ctx;         /* the owner's object */
};

struct loop_timer {
	int64_t due_ms;    /* CLOCK_MONOTONIC ms; meaningful while armed */
	int armed;
	uint64_t gen;      /* loop iteration it was armed in (private) */
	loop_timer_cb cb;
	void *ctx;
	struct loop_timer *prev, *next;
};

/*
 * loop_new - create the loop: epoll instance and a signalfd for SIGCHLD
 * (SIGCHLD is blocked in the calling thread; children must unblock it, see
 * loop_child_sigreset).  Returns 0 with *out, or -errno.
 */
int loop_new(struct loop **out);

/* loop_free - close the loop's descriptors and free it.  Watches, timers and
 * children still registered are forgotten, not closed.  NULL is a no-op. */
void loop_free(struct loop *l);

/* loop_set_idle - cb(ctx) runs after each iteration's events (flush writes,
 * free finished objects).  One hook per loop. */
void loop_set_idle(struct loop *l, loop_idle_cb cb, void *ctx);

/* loop_set_orphan_hook - cb(ctx, pid, status) runs for every reaped child
 * that nobody registered. */
void loop_set_orphan_hook(struct loop *l, loop_child_cb cb, void *ctx);

/* loop_watch_init - make w an unadded watch with callback cb and ctx. */
void loop_watch_init(struct loop_watch *w, loop_watch_cb cb, void *ctx);

/* loop_watch_add - watch fd for events (EPOLLIN/EPOLLOUT...; 0 adds it
 * disarmed).  Returns 0 or -errno (-EEXIST if w is already added). */
int loop_watch_add(struct loop *l, struct loop_watch *w, int fd, uint32_t events);

/* loop_watch_set - change the events of an added watch (no syscall when
 * unchanged).  Returns 0 or -errno. */
int loop_watch_set(struct loop *l, struct loop_watch *w, uint32_t events);

/* loop_watch_del - stop watching (does not close the fd); pending events for
 * w in the current iteration are dropped.  No-op if not added. */
void loop_watch_del(struct loop *l, struct loop_watch *w);

/* loop_timer_init - make t an unarmed timer with callback cb and ctx. */
void loop_timer_init(struct loop_timer *t, loop_timer_cb cb, void *ctx);

/* loop_timer_arm - (re)arm t to fire once at due_ms (CLOCK_MONOTONIC). */
void loop_timer_arm(struct loop *l, struct loop_timer *t, int64_t due_ms);

/* loop_timer_cancel - disarm t.  No-op if unarmed. */
void loop_timer_cancel(struct loop *l, struct loop_timer *t);

/*
 * loop_child_watch - call cb(ctx, pid, status) when child pid is reaped.
 * Returns 0, -ENOMEM.  Register right after fork, before returning to the
 * loop, so the exit cannot be missed.
 */
int loop_child_watch(struct loop *l, pid_t pid, loop_child_cb cb, void *ctx);

/* loop_child_forget - drop the registration of pid (it will be reaped
 * quietly as an orphan).  No-op if unknown. */
void loop_child_forget(struct loop *l, pid_t pid);

/* loop_child_sigreset - in a forked child before exec: unblock every signal
 * and restore default dispositions for the signals the agent changed. */
void loop_child_sigreset(void);

/*
 * loop_run_once - wait for events up to max_wait_ms (-1: until an event or
 * the next timer) and dispatch them, then the expired timers, then the idle
 * hook.  Returns 0 or -errno from epoll_wait (never -EINTR).
 */
int loop_run_once(struct loop *l, int max_wait_ms);

#endif
