/*
 * kernel_life.c - a context's kernel and its jobs, on the context's client
 * thread (whose loop is kernel_thread.c): starts the kernel process, runs
 * queued jobs one at a time, turns kernel messages into events, handles
 * deaths, interrupts and restarts.
 *
 * States (c->st):
 *
 *   NONE --start--> STARTING --kernel answers--> READY --dies--> NONE
 *     ^                |  (dies / no answer in time)     (restart at once,
 *     |                v                                  run ends in error)
 *     +--new work-- FAILED   (AUTO: first try the fallback kernel)
 *
 * One job runs at a time (c->cur); the rest wait in c->jobs, so a busy
 * context queues and never sends a second execute_request.  A run ends
 * when the kernel sent both its reply and idle (or one of them plus
 * FINISH_GRACE_MS), when the kernel dies, or when the interrupt after a
 * timeout went unanswered for the grace period (kill + restart).
 * Threads: this file runs only on the client thread.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/jupyter/jupyter_conn.h"
#include "agent/jupyter/jupyter_map.h"
#include "agent/kernel/kernel_int.h"
#include "common/log.h"
#include "common/util.h"

/* After the reply without idle (or idle without reply), wait this long. */
#define FINISH_GRACE_MS 3000
/* Reaped by the agent but not yet reported: give up after this long, ms
 * (kernel_thread.c looks again every DEATH_RECHECK_MS). */
#define DEATH_REPORT_WAIT_MS 1000
/* Deaths within this long of being ready count as quick; after this many
 * quick deaths in a row, restart only when work waits. */
#define QUICK_DEATH_MS 10000
#define QUICK_DEATHS 3
/* Re-interrupt: first look this long after the interrupt, then twice as
 * long each time, up to the last, ms. */
#define REINT_FIRST_MS 100
#define REINT_MAX_MS 1000

/* AUTO: the interpreter found without ipykernel, so later contexts on it
 * start the fallback at once instead of failing a launch first. */
static pthread_mutex_t missing_mu = PTHREAD_MUTEX_INITIALIZER;
static char missing_python[256];

static int ipykernel_missing(const char *python)
{
	pthread_mutex_lock(&missing_mu);
	int r = python && strcmp(missing_python, python) == 0;
	pthread_mutex_unlock(&missing_mu);
	return r;
}

static void note_ipykernel_missing(const char *python)
{
	pthread_mutex_lock(&missing_mu);
	snprintf(missing_python, sizeof(missing_python), "%s", python ? python : "");
	pthread_mutex_unlock(&missing_mu);
}

/* --- the private folder ---------------------------------------------------*/

static int make_dir(struct kernel_ctx *c)
{
	if (c->dir[0])
		return 0;
	const char *cands[] = { c->cfg.run_dir, "/run/pandastack/kernels", "/tmp" };
	int r = -ENOENT;
	for (size_t i = c->cfg.run_dir ? 0 : 1; i < 3; i++) {
		if (!cands[i] || (r = util_mkdir_p(cands[i], 0700)) < 0)
			continue;
		char tmpl[sizeof(c->dir)];
		if ((size_t)snprintf(tmpl, sizeof(tmpl), "%s/k.XXXXXX", cands[i]) >= JUPYTER_DIR_MAX) {
			r = -ENAMETOOLONG;
			continue;
		}
		if (!mkdtemp(tmpl)) {
			r = -errno;
			continue;
		}
		snprintf(c->dir, sizeof(c->dir), "%s", tmpl);
		return 0;
	}
	return r;
}

/* --- jobs -----------------------------------------------------------------*/

/* Hand the current run's pending events to the agent.  Each event leaves
 * the array before it is queued, so once queued only the agent's thread
 * holds a reference to it (jansson's counts are not shared across threads). */
static void flush_events(struct kernel_ctx *c)
{
	json_t *evs = jupyter_exec_take_events(&c->x);
	if (!evs)
		return;
	int user = c->cur && c->cur->kind == JOB_USER;
	if (user && json_array_size(evs) > 0) {
		pthread_mutex_lock(&c->mu);
		while (json_array_size(evs) > 0) {
			json_t *ev = json_incref(json_array_get(evs, 0));
			json_array_remove(evs, 0);
			kernel__emit_locked(c, c->cur->id, ev);
		}
		pthread_mutex_unlock(&c->mu);
	}
	json_decref(evs);
}

static void maybe_announce(struct kernel_ctx *c)
{
	if (!c->ready_pending || c->st != KS_READY || c->cur)
		return;
	pthread_mutex_lock(&c->mu);
	int setup_ahead = c->jobs && c->jobs->kind == JOB_SETUP;
	if (!setup_ahead) {
		const json_t *li = json_object_get(c->kernel_info, "language_info");
		const char *ver = json_string_value(json_object_get(li, "version"));
		json_t *ev = json_pack("{s:s, s:s, s:s, s:s, s:i}", "type", "ready", "kernel",
				       c->be->name, "language", "python", "language_version",
				       ver ? ver : "", "pid", (int)c->proc.pid);
		json_decref(c->ready_ev);
		c->ready_ev = ev ? json_deep_copy(ev) : NULL;
		c->announced = 1;
		kernel__emit_locked(c, 0, ev);
		c->ready_pending = 0;
	}
	int pooled = c->pooled;
	pthread_mutex_unlock(&c->mu);
	if (!setup_ahead) {
		log_kv(LOG_INFO, "kernel.ready", "kernel=%s pid=%ld pooled=%d", c->be->name,
		       (long)c->proc.pid, pooled);
		if (pooled)
			kernel__pool_notify();
	}
}

/*
 * End the current job: its events, then done.  err (stolen) overrides the
 * kernel's error.  A timed-out run reports TimeoutError with the kernel's
 * traceback of the interrupt.
 */
void kernel__finish(struct kernel_ctx *c, json_t *err)
{
	struct kernel_job *j = c->cur;
	int64_t now = util_now_ms();
	if (!j) {
		json_decref(err);
		return;
	}
	flush_events(c);
	if (!err && c->cur_timed_out) {
		char v[160];
		snprintf(v, sizeof(v), "execution timed out after %lld ms and was interrupted",
			 (long long)j->timeout_ms);
		const json_t *kerr = c->x.error ? c->x.error : c->x.reply_error;
		err = jupyter_make_error("TimeoutError", v,
					 json_string_value(json_object_get(kerr, "traceback")));
	}
	int ask_exit = c->x.ask_exit;
	/* exit()/quit() loses the state, like a death: say so (below, the
	 * kernel is replaced) rather than answer a cell without an error */
	if (ask_exit && !err && !c->x.error && !c->x.reply_error && j->kind == JOB_USER)
		err = jupyter_make_error("DeadKernelError",
					 "the code called exit(): the kernel was restarted and "
					 "its state is lost", "");
	json_t *done = jupyter_exec_done(&c->x, now - c->cur_started, c->cur_timed_out, err);
	if (j->kind == JOB_USER) {
		kernel__emit(c, j->id, done);
	} else {
		json_t *e = json_object_get(done, "error");
		if (json_is_object(e))
			log_kv(LOG_WARN, "kernel.setup_failed", "what=%s name=%s", j->what,
			       json_string_value(json_object_get(e, "name")));
		if (j->restore_gen) {
			char why[320] = "";
			if (json_is_object(e))
				snprintf(why, sizeof(why), "%s: %s",
					 json_string_value(json_object_get(e, "name")) ?: "Error",
					 json_string_value(json_object_get(e, "value")) ?: "");
			kernel__restore_done(j->restore_gen, c->proc.pid, 1, why[0] ? why : NULL);
			j->restore_gen = 0;
		}
		json_decref(done);
	}
	snprintf(c->cut_msg_id, sizeof(c->cut_msg_id), "%s",
		 c->x.truncated || c->cur_interrupted || c->cur_timed_out ? c->x.msg_id : "");
	jupyter_exec_clear(&c->x);
	c->cur = NULL;
	c->cur_deadline = c->grace_deadline = c->finish_deadline = 0;
	c->cur_timed_out = c->cur_interrupted = 0;
	c->reint_at = 0;
	pthread_mutex_lock(&c->mu);
	c->running_id = 0;
	c->idle_since_ms = now;
	pthread_mutex_unlock(&c->mu);
	kernel__job_free(j);
	/* exit()/quit(): ipykernel stops by itself ~0.1 s after its reply;
	 * replace it now, so no later run is sent to a kernel on its way out. */
	if (ask_exit && c->proc.pid > 0)
		kernel__kill(c, "the kernel exited: the code called exit()");
	maybe_announce(c);
}

static void finish_with(struct kernel_ctx *c, const char *name, const char *value)
{
	kernel__finish(c, jupyter_make_error(name, value, ""));
}

/*
 * After a restore (kernel_reseed_all) the reseed runs ahead of the next
 * job, not at once: an idle kernel is left asleep.  Under TCG, reseeding
 * the two warm kernels of an idle sandbox right after its restore wrote
 * 15 MiB of guest memory (CPython touches every object it uses) and
 * translated 20 MiB of code, both private to that sandbox.  No code of
 * anyone's runs in the kernel before its reseed.
 */
static void reseed_if_due(struct kernel_ctx *c)
{
	char sid[sizeof(c->reseed_sid)];
	pthread_mutex_lock(&c->mu);
	int due = c->reseed_due && c->jobs;
	memcpy(sid, c->reseed_sid, sizeof(sid));
	pthread_mutex_unlock(&c->mu);
	if (!due)
		return;
	char *code = kernel__code_reseed(sid[0] ? sid : NULL);
	struct kernel_job *j = code ? kernel__job_new(JOB_SETUP, "reseed", code, strlen(code), 0)
				    : NULL;
	free(code);
	if (!j) {
		/* Never run code on generators a clone shares: a new process
		 * seeds its own. */
		kernel__kill(c, "out of memory while reseeding the kernel");
		return;
	}
	pthread_mutex_lock(&c->mu);
	kernel__push_front_locked(c, j);
	c->reseed_due = 0;
	pthread_mutex_unlock(&c->mu);
}

void kernel__start_next(struct kernel_ctx *c)
{
	if (c->st != KS_READY || c->cur)
		return;
	reseed_if_due(c);
	if (c->st != KS_READY)
		return;
	pthread_mutex_lock(&c->mu);
	struct kernel_job *j = c->jobs;
	if (j) {
		c->jobs = j->next;
		if (!c->jobs)
			c->jobs_tail = NULL;
		j->next = NULL;
		c->running_id = j->id;
	}
	pthread_mutex_unlock(&c->mu);
	if (!j)
		return;
	c->cur = j;
	c->cur_heard = 0;
	c->cur_started = util_now_ms();
	c->cur_deadline = j->timeout_ms > 0 ? c->cur_started + j->timeout_ms : 0;
	char msg_id[JUPYTER_ID_SIZE] = "";
	int r = jupyter_exec_init(&c->x, "", c->cfg.output_cap);
	if (r == 0 && j->kind == JOB_USER && kernel_late_flush(&c->late, &c->x) == 0)
		flush_events(c); /* what was printed since the last run comes first */
	if (r == 0)
		r = c->be->execute(c, j->code, j->kind != JOB_USER, msg_id);
	if (r < 0) {
		char v[128];
		snprintf(v, sizeof(v), "could not send the code to the kernel: %s", strerror(-r));
		finish_with(c, "KernelError", v);
		return;
	}
	snprintf(c->x.msg_id, sizeof(c->x.msg_id), "%s", msg_id);
}

/* Fail every queued user job (and drop setup jobs) with name/value. */
static void fail_queue(struct kernel_ctx *c, const char *name, const char *value)
{
	pthread_mutex_lock(&c->mu);
	struct kernel_job *j = c->jobs;
	c->jobs = c->jobs_tail = NULL;
	while (j) {
		struct kernel_job *n = j->next;
		kernel__fail_job_locked(c, j, name, value);
		kernel__job_free(j);
		j = n;
	}
	c->idle_since_ms = util_now_ms();
	pthread_mutex_unlock(&c->mu);
}

/* --- the kernel's life ----------------------------------------------------*/

static void set_pid(struct kernel_ctx *c, pid_t pid)
{
	pthread_mutex_lock(&c->mu);
	c->pid_pub = pid;
	if (pid == 0)
		c->announced = 0;
	pthread_mutex_unlock(&c->mu);
}

/* Close channels and forget the process (already ended or abandoned);
 * what is left of its process group (children it started) is killed, as
 * its state is gone. */
void kernel__drop(struct kernel_ctx *c)
{
	if (c->proc.pid > 0)
		kernel_proc_signal(&c->proc, SIGKILL);
	if (c->be)
		c->be->stop(c);
	c->bs = NULL;
	kernel_proc_release(&c->proc);
	json_decref(c->kernel_info);
	c->kernel_info = NULL;
	c->ready_pending = 0;
	c->death_wait_until = 0;
	set_pid(c, 0);
}

/*
 * The kernel could not start: fall back (AUTO, when the interpreter has no
 * ipykernel) or give up for now.  Any other failure (killed by the guest's
 * OOM killer, too slow on a loaded host) is reported as such: falling back
 * would silently turn a rich kernel into plain text for the context's life.
 */
void kernel__start_failed(struct kernel_ctx *c, const char *why)
{
	int was_jupyter = c->be == &kernel_jupyter_backend;
	if (c->proc.pid > 0 && !c->proc.exited)
		kernel_proc_kill(&c->proc, KILL_WAIT_MS);
	kernel__drop(c);
	c->st = KS_NONE;
	if (c->cfg.kind == KERNEL_AUTO && was_jupyter && !c->fallback_tried &&
	    strstr(why, "No module named")) {
		c->fallback_tried = 1;
		note_ipykernel_missing(c->cfg.python);
		char q[300];
		log_kv(LOG_INFO, "kernel.fallback", "reason=%s", log_quote(why, q, sizeof(q)));
		return;
	}
	c->st = KS_FAILED;
	char q[300];
	log_kv(LOG_WARN, "kernel.start_failed", "reason=%s", log_quote(why, q, sizeof(q)));
	char v[400];
	snprintf(v, sizeof(v), "the kernel could not start: %s", why);
	if (c->cur)
		finish_with(c, "KernelError", v);
	fail_queue(c, "KernelError", v);
	pthread_mutex_lock(&c->mu);
	snprintf(c->fail_reason, sizeof(c->fail_reason), "%s", why);
	kernel__emit_locked(c, 0, json_pack("{s:s, s:s}", "type", "failed", "error", v));
	int pooled = c->pooled;
	pthread_mutex_unlock(&c->mu);
	if (pooled)
		kernel__pool_notify();
}

void kernel__start(struct kernel_ctx *c)
{
	int fallback = c->cfg.kind == KERNEL_FALLBACK ||
		       (c->cfg.kind == KERNEL_AUTO &&
			(c->fallback_tried || ipykernel_missing(c->cfg.python)));
	c->be = fallback ? &kernel_fallback_backend : &kernel_jupyter_backend;
	c->kill_reason[0] = '\0';
	/* A process started from here on seeds itself from the kernel RNG; a
	 * restore between this and the spawn sets the flag again (harmless). */
	pthread_mutex_lock(&c->mu);
	c->reseed_due = 0;
	pthread_mutex_unlock(&c->mu);
	int r = make_dir(c);
	if (r == 0) {
		/* pandastack_restore marks this folder when functions are
		 * registered; a new process has registered none */
		char mark[sizeof(c->mark)];
		if ((size_t)snprintf(mark, sizeof(mark), "%s/%s", c->dir, KERNEL_RESTORE_MARK) >=
		    sizeof(mark))
			mark[0] = '\0';
		unlink(mark);
		pthread_mutex_lock(&c->mu);
		memcpy(c->mark, mark, sizeof(mark));
		pthread_mutex_unlock(&c->mu);
		r = kernel__cfg_setenv(&c->cfg, "PANDASTACK_KERNEL_DIR", c->dir);
	}
	if (r == 0)
		r = c->be->start(c);
	if (r < 0) {
		char why[160];
		snprintf(why, sizeof(why), "%s: %s", c->dir[0] ? "starting python" : "private folder",
			 strerror(-r));
		c->st = KS_STARTING;
		kernel__start_failed(c, why);
		return;
	}
	c->st = KS_STARTING;
	c->start_deadline = util_now_ms() + c->cfg.start_timeout_ms;
	set_pid(c, c->proc.pid);
	log_kv(LOG_INFO, "kernel.start", "kernel=%s pid=%ld", c->be->name, (long)c->proc.pid);
}

/* why, plus the last line the kernel printed (for start failures). */
void kernel__with_last_words(struct kernel_ctx *c, const char *why, char *out, size_t n)
{
	char tail[512] = "";
	if (c->be && c->bs && c->be->log_tail)
		c->be->log_tail(c, tail, sizeof(tail));
	size_t len = strlen(tail);
	while (len > 0 && (tail[len - 1] == '\n' || tail[len - 1] == '\r' || tail[len - 1] == ' '))
		tail[--len] = '\0';
	char *last = strrchr(tail, '\n');
	last = last ? last + 1 : tail;
	if (*last)
		snprintf(out, n, "%s: %s", why, last);
	else
		snprintf(out, n, "%s", why);
}

/* The process ended (status known, or given up on). */
static void on_death(struct kernel_ctx *c)
{
	char why[256];
	int ours = c->kill_reason[0] != '\0';
	if (ours)
		snprintf(why, sizeof(why), "%s", c->kill_reason);
	else
		kernel_proc_describe(&c->proc, why, sizeof(why));
	c->kill_reason[0] = '\0';
	/* A kernel that keeps dying on its own soon after it started is not
	 * restarted in a loop: after QUICK_DEATHS the next start waits for work. */
	if (!ours && c->st == KS_READY) {
		int quick = util_now_ms() - c->ready_at_ms < QUICK_DEATH_MS;
		c->quick_deaths = quick ? c->quick_deaths + 1 : 0;
		c->lazy_start = c->quick_deaths >= QUICK_DEATHS;
	}
	if (c->st == KS_STARTING) {
		char full[400];
		kernel__with_last_words(c, why, full, sizeof(full));
		kernel__start_failed(c, full);
		return;
	}
	kernel__drop(c);
	c->st = KS_NONE;
	char q[300];
	log_kv(LOG_WARN, "kernel.died", "reason=%s", log_quote(why, q, sizeof(q)));
	/* A spare is not restarted: the pool replaces it when it refills. */
	pthread_mutex_lock(&c->mu);
	int pooled = c->pooled;
	if (pooled)
		c->spare_dead = 1;
	pthread_mutex_unlock(&c->mu);
	if (pooled) {
		c->no_restart = 1;
		kernel__pool_notify();
	}
	if (c->cur) {
		char v[400];
		snprintf(v, sizeof(v), "%s; the kernel was restarted and its state is lost", why);
		if (c->cur_timed_out)
			finish_with(c, "TimeoutError", v);
		else
			finish_with(c, "DeadKernelError", v);
	}
	kernel__emit(c, 0, json_pack("{s:s, s:s}", "type", "restarted", "reason", why));
}

/* Kill the kernel's group for reason, then handle the death. */
void kernel__kill(struct kernel_ctx *c, const char *reason)
{
	if (c->proc.pid <= 0)
		return;
	kernel_proc_kill(&c->proc, KILL_WAIT_MS);
	snprintf(c->kill_reason, sizeof(c->kill_reason), "%s", reason);
	on_death(c);
}

void kernel__check_death(struct kernel_ctx *c, int64_t now)
{
	if (c->proc.pid <= 0)
		return;
	int r = kernel_proc_poll(&c->proc);
	if (r == 1) {
		on_death(c);
	} else if (r == -EAGAIN) {
		if (!c->death_wait_until)
			c->death_wait_until = now + DEATH_REPORT_WAIT_MS;
		if (now >= c->death_wait_until) {
			kernel_proc_give_up(&c->proc);
			on_death(c);
		}
	}
}

void kernel__interrupt(struct kernel_ctx *c, int timed_out, int64_t now)
{
	if (!c->cur || c->cur_interrupted)
		return;
	c->cur_interrupted = 1;
	c->cur_timed_out |= timed_out;
	c->grace_deadline = now + c->cfg.interrupt_grace_ms;
	int r = kernel_proc_signal(&c->proc, SIGINT);
	log_kv(LOG_INFO, "kernel.interrupt", "pid=%ld timed_out=%d r=%d", (long)c->proc.pid,
	       timed_out, r);
	char st;
	c->reint_at = 0;
	if (r == 0 && kernel_proc_sample(&c->proc, &st, &c->reint_cpu) == 0) {
		c->reint_step_ms = REINT_FIRST_MS;
		c->reint_at = now + c->reint_step_ms;
		c->reint_heard = c->cur_heard;
	}
}

/*
 * The interrupted run has not ended.  CPython runs a Python-level signal
 * handler between bytecodes, and only a signal arriving *during* a
 * blocking system call cuts the call short: a SIGINT that lands after the
 * interpreter's last check but before the call (time.sleep's
 * clock_nanosleep, a read) only sets a flag, and the KeyboardInterrupt
 * comes when the call returns, maybe minutes later.  So while the kernel
 * shows no reaction - nothing heard from the run since the interrupt, its
 * main thread asleep and its CPU time unchanged - the interrupt is sent
 * again, at growing intervals, until the grace period ends.  (The same
 * covers an interrupt that came before the cell started, which kernels
 * ignore.)  A kernel that reacts (it prints, reports the error, ends the
 * cell, or computes) is left alone.
 */
void kernel__reinterrupt(struct kernel_ctx *c, int64_t now)
{
	char st;
	uint64_t cpu;
	if (c->cur_heard != c->reint_heard || kernel_proc_sample(&c->proc, &st, &cpu) < 0) {
		c->reint_at = 0;
		return;
	}
	if (st == 'S' && cpu == c->reint_cpu) {
		int r = kernel_proc_signal(&c->proc, SIGINT);
		log_kv(LOG_INFO, "kernel.interrupt_again", "pid=%ld after_ms=%lld r=%d",
		       (long)c->proc.pid, (long long)(now - (c->grace_deadline -
							     c->cfg.interrupt_grace_ms)), r);
		if (c->reint_step_ms < REINT_MAX_MS)
			c->reint_step_ms *= 2;
		if (c->reint_step_ms > REINT_MAX_MS)
			c->reint_step_ms = REINT_MAX_MS;
	}
	c->reint_cpu = cpu;
	c->reint_at = now + c->reint_step_ms;
}

/* --- callbacks from the backends ------------------------------------------*/

/* 1 if m shows the cell itself doing something (output, a result, an
 * error, its end), not just its start (status busy, execute_input), which
 * can follow an interrupt the kernel ignored as it came too early. */
static int is_reaction(const struct jupyter_msg *m)
{
	const char *t = m->msg_type ? m->msg_type : "";
	if (strcmp(t, "execute_input") == 0)
		return 0;
	if (strcmp(t, "status") == 0) {
		const char *st = json_string_value(json_object_get(m->content, "execution_state"));
		return st && strcmp(st, "idle") == 0;
	}
	return 1;
}

void kernel__on_message(struct kernel_ctx *c, const struct jupyter_msg *m)
{
	int late = kernel_late_route(&c->late, m, c->cur ? c->x.msg_id : NULL, c->cut_msg_id,
				     c->cur && c->cur->kind == JOB_USER ? &c->x : NULL);
	if (late == 2)
		flush_events(c);
	if (late)
		return;
	if (!c->cur)
		return;
	int r = jupyter_exec_feed(&c->x, m);
	if (r <= 0)
		return;
	if (is_reaction(m))
		c->cur_heard++;
	flush_events(c);
	if (jupyter_exec_complete(&c->x)) {
		kernel__finish(c, NULL);
	} else if ((c->x.got_reply || c->x.got_idle) && !c->finish_deadline) {
		c->finish_deadline = util_now_ms() + FINISH_GRACE_MS;
	}
}

void kernel__on_ready(struct kernel_ctx *c, const json_t *kernel_info)
{
	if (c->st != KS_STARTING)
		return;
	c->st = KS_READY;
	c->ready_at_ms = util_now_ms();
	c->start_deadline = 0;
	json_decref(c->kernel_info);
	c->kernel_info = kernel_info ? json_deep_copy(kernel_info) : json_object();
	c->ready_pending = 1;
	maybe_announce(c);
}

void kernel__on_output(struct kernel_ctx *c, int is_stderr, const char *s, size_t n)
{
	if (!c->cur) {
		kernel_late_add(&c->late, is_stderr, s, n);
		return;
	}
	c->cur_heard++;
	if (c->cur->kind != JOB_USER)
		return;
	if (jupyter_exec_stream(&c->x, is_stderr, s, n) == 0)
		flush_events(c);
}

void kernel__on_lost(struct kernel_ctx *c, const char *why)
{
	kernel__kill(c, why);
}

_Static_assert(JUPYTER_FRAME_MAX == 64ll << 20, "the gap's message names the cap");

void kernel__on_iopub_gap(struct kernel_ctx *c)
{
	static const char gap[] = "\n[pandastack: output lost: the kernel sent more than "
				  "64 MiB at once]\n";
	if (!c->cur || c->cur->kind != JOB_USER)
		return;
	if (jupyter_exec_stream(&c->x, 1, gap, sizeof(gap) - 1) == 0)
		flush_events(c);
}

