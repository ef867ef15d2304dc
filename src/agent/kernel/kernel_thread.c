/*
 * kernel_thread.c - a context's client thread: its loop takes the agent
 * thread's requests (stop, interrupt, restart, a spare's hand-over),
 * starts the kernel and the next job (kernel_life.c), waits, and enforces
 * every deadline; at the end it tears the kernel down.
 *
 * Every wait is the one zmq_poll per iteration over: the wake eventfd, the
 * kernel's pidfd and the backend's sockets/pipes, with a timeout from the
 * earliest deadline.  Threads: this file runs only on the client thread.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "agent/kernel/kernel_int.h"
#include "common/log.h"
#include "common/util.h"

/* Destroy: wait this long after shutdown_request before killing. */
#define SHUTDOWN_WAIT_MS 500
/* Reaped by the agent but not yet reported: look again this often, ms. */
#define DEATH_RECHECK_MS 20
/* Without pidfd support, look for an exit this often, ms. */
#define NO_PIDFD_POLL_MS 200
#define POLL_ITEMS_MAX 16

static int same_dir(const char *a, const char *b)
{
	return a && b ? strcmp(a, b) == 0 : a == b;
}

/*
 * A spare was taken: h (taken) holds its new owner's settings.  They apply
 * to later restarts; the running kernel gets its normal CPU and OOM
 * standing back at once and, only if the owner's env or cwd differ from
 * the spare's, a setup job ahead of any of the owner's code.  (A
 * reseed due since a restore runs ahead of both: reseed_if_due.)
 */
static void adopt_handover(struct kernel_ctx *c, struct kernel_cfg *h)
{
	int need_setup = (h->env_added && h->env_added[0]) ||
			 (h->cwd && !same_dir(h->cwd, c->cfg.cwd));
	char *python = c->cfg.python;
	c->cfg.python = NULL;
	enum kernel_kind kind = c->cfg.kind;
	kernel__cfg_clear(&c->cfg);
	c->cfg = *h;
	free(c->cfg.python);
	c->cfg.python = python;
	c->cfg.kind = kind;
	c->cfg.nice = 0;
	c->cfg.idle = 0;
	c->no_restart = 0;
	free(h);
	kernel_late_clear(&c->late); /* the spare's own output is not the owner's */
	if (c->proc.pid > 0) {
		int r = kernel_proc_promote(&c->proc);
		if (r < 0)
			log_kv(LOG_WARN, "kernel.promote_failed", "pid=%ld errno=%d",
			       (long)c->proc.pid, -r);
	}
	if (!need_setup)
		return;
	char *code = kernel__code_setup(c->cfg.cwd, c->cfg.env_added);
	struct kernel_job *j = code ? kernel__job_new(JOB_SETUP, "setup", code, strlen(code), 0)
				    : NULL;
	free(code);
	if (!j) {
		/* Without its env and cwd the kernel is not what was asked for. */
		kernel__kill(c, "out of memory while setting up the kernel");
		return;
	}
	pthread_mutex_lock(&c->mu);
	kernel__push_front_locked(c, j);
	pthread_mutex_unlock(&c->mu);
}

/* Requests from the agent's thread.  Returns 1 when asked to stop. */
static int take_requests(struct kernel_ctx *c, int64_t now)
{
	pthread_mutex_lock(&c->mu);
	int stop = c->stop, intr = c->interrupt_req, restart = c->restart_req;
	int have_jobs = c->jobs != NULL;
	struct kernel_cfg *h = c->handover;
	c->interrupt_req = c->restart_req = 0;
	c->handover = NULL;
	pthread_mutex_unlock(&c->mu);
	if (h)
		adopt_handover(c, h);
	if (stop)
		return 1;
	if (intr)
		kernel__interrupt(c, 0, now);
	if (restart && c->st == KS_READY && c->proc.pid > 0)
		kernel__kill(c, "a restart was requested");
	if (c->st == KS_FAILED && have_jobs)
		c->st = KS_NONE; /* new work: try again */
	return 0;
}

static int has_work(struct kernel_ctx *c)
{
	pthread_mutex_lock(&c->mu);
	int r = c->jobs != NULL;
	pthread_mutex_unlock(&c->mu);
	return r;
}

static int64_t min_due(int64_t a, int64_t b)
{
	if (b <= 0)
		return a;
	return a < b ? a : b;
}

static int64_t next_deadline(struct kernel_ctx *c)
{
	int64_t due = INT64_MAX;
	if (c->st == KS_STARTING)
		due = min_due(due, c->start_deadline);
	due = min_due(due, c->cur_interrupted ? 0 : c->cur_deadline);
	due = min_due(due, c->grace_deadline);
	due = min_due(due, c->reint_at);
	due = min_due(due, c->finish_deadline);
	if (c->death_wait_until)
		due = min_due(due, util_now_ms() + DEATH_RECHECK_MS);
	if (c->proc.pid > 0 && c->proc.pidfd < 0)
		due = min_due(due, util_now_ms() + NO_PIDFD_POLL_MS);
	if (c->be && c->bs && (c->st == KS_STARTING || c->st == KS_READY))
		due = min_due(due, c->be->next_due(c));
	return due;
}

static void on_timers(struct kernel_ctx *c, int64_t now)
{
	if (c->st == KS_STARTING && c->start_deadline && now >= c->start_deadline) {
		char why[96], full[400];
		snprintf(why, sizeof(why), "no answer within %lld ms",
			 (long long)c->cfg.start_timeout_ms);
		kernel_proc_kill(&c->proc, KILL_WAIT_MS);
		kernel__with_last_words(c, why, full, sizeof(full));
		kernel__start_failed(c, full);
		return;
	}
	if (c->cur && c->cur_deadline && !c->cur_interrupted && now >= c->cur_deadline)
		kernel__interrupt(c, 1, now);
	if (c->cur && c->cur_interrupted && c->reint_at && now >= c->reint_at)
		kernel__reinterrupt(c, now);
	if (c->cur && c->grace_deadline && now >= c->grace_deadline) {
		char why[160];
		snprintf(why, sizeof(why), "the kernel did not stop within %lld ms of the interrupt",
			 (long long)c->cfg.interrupt_grace_ms);
		kernel__kill(c, why);
		return;
	}
	if (c->cur && c->finish_deadline && now >= c->finish_deadline)
		kernel__finish(c, NULL);
	if (c->death_wait_until || (c->proc.pid > 0 && c->proc.pidfd < 0))
		kernel__check_death(c, now);
	if (c->be && c->bs && (c->st == KS_STARTING || c->st == KS_READY))
		c->be->on_time(c, now);
}

/* Destroy: ask politely, then kill the group; remove the folder. */
static void teardown(struct kernel_ctx *c)
{
	if (c->proc.pid > 0 && !c->proc.exited) {
		if (c->be && c->bs && c->be->shutdown && c->st == KS_READY) {
			c->be->shutdown(c);
			int64_t end = util_now_ms() + SHUTDOWN_WAIT_MS;
			while (kernel_proc_poll(&c->proc) == 0 && util_now_ms() < end) {
				zmq_pollitem_t it = { .fd = c->proc.pidfd, .events = ZMQ_POLLIN };
				if (c->proc.pidfd >= 0)
					zmq_poll(&it, 1, 50);
				else
					usleep(10000);
			}
		}
		kernel_proc_kill(&c->proc, KILL_WAIT_MS);
	}
	kernel__drop(c);
	if (c->cur) {
		jupyter_exec_clear(&c->x);
		kernel__job_free(c->cur);
		c->cur = NULL;
	}
	if (c->dir[0])
		util_rm_rf(c->dir);
	kernel_late_clear(&c->late);
	kernel__cfg_clear(&c->cfg);
	log_kv(LOG_DEBUG, "kernel.destroyed", "dir=%s", c->dir);
}

void kernel__restore_check(struct kernel_ctx *c)
{
	pthread_mutex_lock(&c->mu);
	uint64_t gen = c->restore_gen;
	char sid[sizeof(c->reseed_sid)];
	memcpy(sid, c->reseed_sid, sizeof(sid));
	c->restore_gen = 0;
	pthread_mutex_unlock(&c->mu);
	if (!gen)
		return;
	pid_t pid = c->proc.pid;
	/* a kernel starting now seeds itself and has registered nothing */
	if (c->st != KS_READY) {
		kernel__restore_done(gen, pid, 0, NULL);
		return;
	}
	char *code = kernel__code_reseed(sid[0] ? sid : NULL);
	struct kernel_job *j = code ? kernel__job_new(JOB_SETUP, "after-restore", code,
						      strlen(code), KERNEL_RESTORE_HOOKS_MS)
				    : NULL;
	free(code);
	if (!j) {
		kernel__restore_done(gen, pid, 0, "out of memory");
		/* as reseed_if_due: no code on generators a clone shares */
		kernel__kill(c, "out of memory while reseeding the kernel");
		return;
	}
	j->restore_gen = gen;
	pthread_mutex_lock(&c->mu);
	kernel__push_front_locked(c, j);
	c->reseed_due = 0; /* the job reseeds */
	pthread_mutex_unlock(&c->mu);
	log_kv(LOG_INFO, "kernel.after_restore", "pid=%ld", (long)pid);
}

void *kernel__thread_main(void *arg)
{
	struct kernel_ctx *c = arg;
	zmq_pollitem_t it[POLL_ITEMS_MAX];
	for (;;) {
		int64_t now = util_now_ms();
		if (take_requests(c, now))
			break;
		if (c->st == KS_NONE && !c->no_restart && (!c->lazy_start || has_work(c)))
			kernel__start(c);
		kernel__restore_check(c);
		kernel__start_next(c);

		int n = 0, pid_item = -1;
		it[n++] = (zmq_pollitem_t){ .fd = c->wake_fd, .events = ZMQ_POLLIN };
		if (c->proc.pid > 0 && c->proc.pidfd >= 0 && !c->death_wait_until) {
			pid_item = n;
			it[n++] = (zmq_pollitem_t){ .fd = c->proc.pidfd, .events = ZMQ_POLLIN };
		}
		int nb_first = n, nb = 0;
		if (c->be && c->bs)
			nb = c->be->fill_poll(c, it + n, POLL_ITEMS_MAX - n);
		n += nb;
		int64_t due = next_deadline(c);
		now = util_now_ms();
		long wait = due == INT64_MAX ? -1 : (due <= now ? 0 : (long)(due - now));
		if (zmq_poll(it, n, wait) < 0 && errno != EINTR && errno != ETERM) {
			log_kv(LOG_ERROR, "kernel.poll_failed", "errno=%d", errno);
			usleep(10000);
			continue;
		}
		now = util_now_ms();
		if (it[0].revents & ZMQ_POLLIN) {
			uint64_t v;
			ssize_t rd = read(c->wake_fd, &v, sizeof(v));
			(void)rd;
		}
		/* Channels first: the last output and idle precede the exit. */
		if (nb && c->bs)
			c->be->on_poll(c, it + nb_first, nb, now);
		if (pid_item >= 0 && (it[pid_item].revents & ZMQ_POLLIN) && c->proc.pid > 0)
			kernel__check_death(c, now);
		on_timers(c, now);
	}
	teardown(c);
	/* Free this thread's OpenSSL state (HMAC) now: once kernel__ctx_finish
	 * lets kernel_wait_all return the process may exit before a detached
	 * thread's TLS destructors run. */
	OPENSSL_thread_stop();
	kernel__ctx_finish(c);
	return NULL;
}
