/*
 * kernel_pool.c - warm spare contexts, ready before anyone asks.
 *
 * kernel_pool_start remembers the options and fills the pool up to its
 * size (the template's warm_kernels): one spare after another, at once,
 * so the bake can wait for READY and leave every spare in the snapshot
 * with pandas, numpy and pyplot imported (and the template's warm code
 * run).  kernel_ctx_create (kernel_create.c) takes a ready spare
 * (kernel__pool_take).
 *
 * Spares never compete with the user: each kernel process runs at
 * SCHED_IDLE (nice 19) with oom_score_adj 1000 until taken
 * (kernel_proc_spawn's idle standing; the taker's thread promotes it;
 * spare_full_priority keeps them normal, for hosts shared with other
 * work where an idle-class process may never run), and
 * the refill thread here starts a replacement only once no context has
 * had work for KERNEL_POOL_REFILL_IDLE_MS (kernel__activity_idle_ms) and,
 * with refill_cpu_idle (the guest), the CPUs have been idle as long
 * (/proc/stat: user + system time under REFILL_CPU_BUSY_PCT of the
 * elapsed time; low-priority "nice" time, such as a warming spare's, does
 * not count).  One spare warms at a time.  A spare whose kernel dies is
 * dropped and replaced by a later refill; a spare that cannot start, or
 * REFILL_DEATHS_MAX that die before they are ready, mark the pool FAILED
 * (no more refills until the next kernel_pool_start).
 *
 * A spare is an ordinary context with "pooled" set: it drops its events
 * and tells the pool when it is ready, failed or dead.
 *
 * Threads: the agent's thread calls the public functions; spares' threads
 * call kernel__pool_notify; the refill thread runs refill_main.  Lock
 * order: pool_mu, then the registry, then a context's mu.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "agent/kernel/kernel_int.h"
#include "common/deadline.h"
#include "common/log.h"
#include "common/util.h"

/* How often the refill thread looks at the machine while it waits for
 * idle, ms, and the CPU use that still counts as idle, percent. */
#define REFILL_TICK_MS 250
#define REFILL_CPU_BUSY_PCT 25
/* Spares dying before they were ready, in a row, before giving up. */
#define REFILL_DEATHS_MAX 3

enum spare_state { SPARE_STARTING, SPARE_READY, SPARE_FAILED, SPARE_DEAD };

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_cv;          /* CLOCK_MONOTONIC; cv_make */
static pthread_once_t cv_once = PTHREAD_ONCE_INIT;
/* [pool_mu] */
static struct kernel_ctx *spares[KERNEL_POOL_MAX];
static unsigned nspares;
static unsigned target;                 /* pool size while enabled */
static int enabled;
static int fill_now;                    /* kernel_pool_start: no idle wait */
static int failed;                      /* no more refills */
static char fail_reason[256];
static int deaths_before_ready;
static uint64_t notify_seq;             /* bumped by every notify */
static struct kernel_opts saved;        /* strings owned */
static char *spare_python;              /* resolved interpreter */
static pthread_t refill_thread;
static int refill_running, refill_quit;
/* the refill thread's CPU sampling */
static uint64_t cpu_last_busy, cpu_last_total;
static int64_t cpu_last_ms, cpu_busy_at_ms;

static int pool_efd = -1;
static pthread_once_t efd_once = PTHREAD_ONCE_INIT;

static void efd_make(void)
{
	pool_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

int kernel_pool_fd(void)
{
	pthread_once(&efd_once, efd_make);
	return pool_efd >= 0 ? pool_efd : -EMFILE;
}

/* Wake whoever polls kernel_pool_fd.  No lock needed. */
static void signal_efd(void)
{
	int fd = kernel_pool_fd();
	uint64_t one = 1;
	if (fd >= 0) {
		ssize_t w = write(fd, &one, sizeof(one));
		(void)w;
	}
}

static void cv_make(void)
{
	deadline_cond_init(&pool_cv);
}

/* pool_mu held. */
static void notify_locked(void)
{
	pthread_once(&cv_once, cv_make);
	notify_seq++;
	pthread_cond_broadcast(&pool_cv);
	signal_efd();
}

void kernel__pool_notify(void)
{
	pthread_mutex_lock(&pool_mu);
	notify_locked();
	pthread_mutex_unlock(&pool_mu);
}

static void saved_clear(void)
{
	free((char *)saved.python);
	free((char *)saved.run_dir);
	free((char *)saved.cwd);
	free((char *)saved.warm_code);
	for (size_t i = 0; saved.env && saved.env[i]; i++)
		free((char *)saved.env[i]);
	free((char **)saved.env);
	memset(&saved, 0, sizeof(saved));
	free(spare_python);
	spare_python = NULL;
}

/* Keep a copy of env (NULL-terminated "K=V", at most KERNEL_ENV_MAX_VARS
 * are copied; kernel__cfg_build checks them).  pool_mu held. */
static int saved_env_copy(const char *const *env)
{
	size_t n = 0;
	while (env && env[n] && n < KERNEL_ENV_MAX_VARS)
		n++;
	if (!env)
		return 0;
	char **v = calloc(n + 1, sizeof(char *));
	if (!v)
		return -ENOMEM;
	saved.env = (const char *const *)v;
	for (size_t i = 0; i < n; i++)
		if (!(v[i] = strdup(env[i])))
			return -ENOMEM;
	return 0;
}

/* What a spare is doing.  pool_mu held (takes its mu). */
static enum spare_state spare_state(struct kernel_ctx *c, char *err, size_t errlen)
{
	enum spare_state st = SPARE_STARTING;
	pthread_mutex_lock(&c->mu);
	if (c->spare_dead)
		st = SPARE_DEAD;
	else if (c->announced)
		st = SPARE_READY;
	else if (c->fail_reason[0])
		st = SPARE_FAILED;
	if (st == SPARE_FAILED && err && errlen)
		snprintf(err, errlen, "%s", c->fail_reason);
	pthread_mutex_unlock(&c->mu);
	return st;
}

/* Remove spares[i] from the list (the caller destroys or keeps it).
 * pool_mu held. */
static struct kernel_ctx *spare_remove(unsigned i)
{
	struct kernel_ctx *c = spares[i];
	memmove(&spares[i], &spares[i + 1], (nspares - i - 1) * sizeof(spares[0]));
	spares[--nspares] = NULL;
	return c;
}

/* Start one spare from the saved options.  pool_mu held. */
static int start_spare_locked(void)
{
	if (nspares >= KERNEL_POOL_MAX)
		return -ENOSPC;
	struct kernel_opts o = saved;
	o.use_pool = 0;
	struct kernel_cfg cfg;
	int r = kernel__cfg_build(&cfg, &o);
	if (r < 0)
		return r;
	cfg.idle = !saved.spare_full_priority;
	free(spare_python);
	spare_python = strdup(cfg.python);
	char *code = kernel__code_warmup();
	if (code && saved.warm_code) {
		/* the template's own warm code runs after the built-in one */
		char *both = NULL;
		if (asprintf(&both, "%s\n%s\n", code, saved.warm_code) < 0)
			both = NULL;
		free(code);
		code = both;
	}
	struct kernel_job *warm = code ? kernel__job_new(JOB_SETUP, "warm-up", code, strlen(code), 0)
				       : NULL;
	free(code);
	if (!warm || !spare_python) {
		kernel__job_free(warm);
		kernel__cfg_clear(&cfg);
		return -ENOMEM;
	}
	struct kernel_ctx *c = NULL;
	r = kernel__ctx_start(&cfg, 1, warm, &c);
	if (r == 0) {
		spares[nspares++] = c;
		log_kv(LOG_INFO, "kernel.spare_start", "kind=%d spares=%u target=%u fill=%d",
		       (int)saved.kind, nspares, target, fill_now);
	}
	notify_locked();
	return r;
}

/* The pool's state.  pool_mu held. */
static enum kernel_pool_state state_locked(char *err, size_t errlen, unsigned *ready_out)
{
	unsigned ready = 0;
	for (unsigned i = 0; i < nspares; i++)
		ready += spare_state(spares[i], NULL, 0) == SPARE_READY;
	if (ready_out)
		*ready_out = ready;
	if (!enabled)
		return KERNEL_POOL_NONE;
	if (failed) {
		if (err && errlen)
			snprintf(err, errlen, "%s", fail_reason);
		return KERNEL_POOL_FAILED;
	}
	return ready >= target ? KERNEL_POOL_READY : KERNEL_POOL_STARTING;
}

/* CPU time of the whole machine from /proc/stat: busy (user + system +
 * irq + softirq + steal, ticks) and total.  0 or -errno. */
static int cpu_sample(uint64_t *busy, uint64_t *total)
{
	char *txt = NULL;
	size_t len = 0;
	int r = util_read_file("/proc/stat", 256 * 1024, &txt, &len);
	if (r < 0)
		return r;
	unsigned long long v[8] = {0};
	int n = strncmp(txt, "cpu ", 4) == 0
			? sscanf(txt + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
				 &v[2], &v[3], &v[4], &v[5], &v[6], &v[7])
			: 0;
	free(txt);
	if (n < 4)
		return -EINVAL;
	/* user nice system idle iowait irq softirq steal */
	*busy = v[0] + v[2] + v[5] + v[6] + v[7];
	*total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
	return 0;
}

/* Sample the CPUs; ms since they were last seen busy (0: busy now).
 * Refill thread only. */
static int64_t cpu_idle_ms(int64_t now)
{
	uint64_t busy, total;
	if (cpu_sample(&busy, &total) < 0)
		return INT64_MAX; /* no /proc/stat: activity alone decides */
	if (!cpu_last_total || now - cpu_last_ms > 4 * REFILL_TICK_MS) {
		cpu_busy_at_ms = now; /* no recent sample: no window yet */
	} else if (total > cpu_last_total) {
		uint64_t db = busy >= cpu_last_busy ? busy - cpu_last_busy : 0;
		uint64_t dt = total - cpu_last_total;
		if (db * 100 > dt * REFILL_CPU_BUSY_PCT)
			cpu_busy_at_ms = now;
	}
	cpu_last_busy = busy;
	cpu_last_total = total;
	cpu_last_ms = now;
	return now - cpu_busy_at_ms;
}

/* Wait on pool_cv up to ms (pool_mu held). */
static void wait_locked(int64_t ms)
{
	pthread_once(&cv_once, cv_make);
	deadline_cond_wait(&pool_cv, &pool_mu, deadline_after(ms));
}

/*
 * One look at the pool (pool_mu held): drop dead spares, note failures,
 * start a spare when one is missing and the machine is quiet.  Returns how
 * long to wait before the next look, ms (-1: until notified).
 */
static int64_t refill_step(void)
{
	int64_t now = util_now_ms();
	int starting = 0;
	for (unsigned i = 0; i < nspares;) {
		char err[256] = "";
		enum spare_state st = spare_state(spares[i], err, sizeof(err));
		if (st == SPARE_DEAD) {
			struct kernel_ctx *c = spare_remove(i);
			kernel_ctx_destroy(c);
			log_kv(LOG_INFO, "kernel.spare_dropped", "spares=%u", nspares);
			if (++deaths_before_ready >= REFILL_DEATHS_MAX && !failed) {
				failed = 1;
				snprintf(fail_reason, sizeof(fail_reason),
					 "%d spare kernels died before they were ready",
					 deaths_before_ready);
			}
			notify_locked();
			continue;
		}
		if (st == SPARE_FAILED && !failed) {
			failed = 1;
			snprintf(fail_reason, sizeof(fail_reason), "%s", err);
			notify_locked();
		}
		starting |= st == SPARE_STARTING;
		i++;
	}
	if (!enabled || failed || nspares >= target) {
		if (nspares >= target && !starting)
			fill_now = 0;
		return -1;
	}
	if (starting)
		return -1; /* one at a time: wait for its ready (or death) */
	if (!fill_now) {
		int64_t quiet = kernel__activity_idle_ms(now);
		if (saved.refill_cpu_idle) {
			int64_t cpu = cpu_idle_ms(now);
			if (cpu < quiet)
				quiet = cpu;
		}
		if (quiet < KERNEL_POOL_REFILL_IDLE_MS)
			return REFILL_TICK_MS;
	}
	int r = start_spare_locked();
	if (r < 0) {
		failed = 1;
		snprintf(fail_reason, sizeof(fail_reason), "cannot start a spare kernel: %s",
			 strerror(-r));
		log_kv(LOG_WARN, "kernel.spare_failed", "what=start errno=%d", -r);
		notify_locked();
		return -1;
	}
	return -1;
}

static void *refill_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&pool_mu);
	while (!refill_quit) {
		uint64_t seq = notify_seq;
		int64_t wait = refill_step();
		if (refill_quit || notify_seq != seq)
			continue;
		/* -1: until notified; a long bound all the same, for safety */
		wait_locked(wait < 0 ? 60000 : wait);
	}
	pthread_mutex_unlock(&pool_mu);
	return NULL;
}

/* Start the refill thread if it is not running (signals blocked in it:
 * they are the agent's).  pool_mu held. */
static int refill_thread_start(void)
{
	if (refill_running)
		return 0;
	refill_quit = 0;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int r = -pthread_create(&refill_thread, NULL, refill_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r == 0)
		refill_running = 1;
	return r;
}

int kernel_pool_start(const struct kernel_opts *o)
{
	if (!o)
		return -EINVAL;
	if (o->pool_size > KERNEL_POOL_MAX)
		return -EINVAL;
	int r = 0;
	pthread_mutex_lock(&pool_mu);
	saved_clear();
	saved.kind = o->kind;
	saved.output_cap = o->output_cap;
	saved.start_timeout_ms = o->start_timeout_ms;
	saved.interrupt_grace_ms = o->interrupt_grace_ms;
	saved.refill_cpu_idle = o->refill_cpu_idle;
	saved.spare_full_priority = o->spare_full_priority;
	if ((o->python && !(saved.python = strdup(o->python))) ||
	    (o->run_dir && !(saved.run_dir = strdup(o->run_dir))) ||
	    (o->cwd && !(saved.cwd = strdup(o->cwd))) ||
	    (o->warm_code && !(saved.warm_code = strdup(o->warm_code))) ||
	    saved_env_copy(o->env) < 0)
		r = -ENOMEM;
	target = o->pool_size ? o->pool_size : 1;
	enabled = r == 0;
	/* a new start retries: spares that failed (or died) go */
	for (unsigned i = 0; i < nspares;) {
		enum spare_state st = spare_state(spares[i], NULL, 0);
		if (st == SPARE_FAILED || st == SPARE_DEAD)
			kernel_ctx_destroy(spare_remove(i));
		else
			i++;
	}
	failed = 0;
	fail_reason[0] = '\0';
	deaths_before_ready = 0;
	fill_now = 1;
	if (r == 0)
		r = refill_thread_start();
	if (r == 0)
		refill_step(); /* the first spare starts now, not on the thread's turn */
	notify_locked();
	pthread_mutex_unlock(&pool_mu);
	return r;
}

enum kernel_pool_state kernel_pool_state(char *err, size_t errlen)
{
	int fd = kernel_pool_fd();
	if (fd >= 0) {
		uint64_t v;
		ssize_t rd = read(fd, &v, sizeof(v));
		(void)rd;
	}
	if (err && errlen)
		err[0] = '\0';
	pthread_mutex_lock(&pool_mu);
	enum kernel_pool_state st = state_locked(err, errlen, NULL);
	pthread_mutex_unlock(&pool_mu);
	return st;
}

unsigned kernel_pool_ready(void)
{
	unsigned ready = 0;
	pthread_mutex_lock(&pool_mu);
	state_locked(NULL, 0, &ready);
	pthread_mutex_unlock(&pool_mu);
	return ready;
}

size_t kernel_pool_pids(pid_t *out, size_t max)
{
	size_t n = 0;
	pthread_mutex_lock(&pool_mu);
	for (unsigned i = 0; i < nspares && n < max; i++) {
		pid_t p = kernel_ctx_pid(spares[i]);
		if (p > 0)
			out[n++] = p;
	}
	pthread_mutex_unlock(&pool_mu);
	return n;
}

struct kernel_ctx *kernel__pool_take(const struct kernel_cfg *cfg)
{
	struct kernel_ctx *c = NULL;
	pthread_mutex_lock(&pool_mu);
	int compatible = spare_python && strcmp(spare_python, cfg->python) == 0 &&
			 (cfg->kind == KERNEL_AUTO || cfg->kind == saved.kind);
	for (unsigned i = 0; compatible && i < nspares && !c; i++) {
		struct kernel_ctx *s = spares[i];
		pthread_mutex_lock(&s->mu);
		if (s->announced && !s->spare_dead) {
			s->pooled = 0; /* from now on its events are its owner's */
			s->idle_since_ms = util_now_ms(); /* a take is activity */
			c = s;
		}
		pthread_mutex_unlock(&s->mu);
		if (c)
			spare_remove(i);
	}
	if (c) {
		fill_now = 0; /* in use: from now on a refill waits for idle */
		notify_locked(); /* the refill thread has a place to fill */
	}
	pthread_mutex_unlock(&pool_mu);
	return c;
}

void kernel_pool_stop(void)
{
	pthread_mutex_lock(&pool_mu);
	enabled = 0;
	failed = 0;
	fill_now = 0;
	struct kernel_ctx *gone[KERNEL_POOL_MAX];
	unsigned n = nspares;
	memcpy(gone, spares, sizeof(gone));
	memset(spares, 0, sizeof(spares));
	nspares = 0;
	saved_clear();
	int join = refill_running;
	refill_quit = 1;
	notify_locked();
	pthread_mutex_unlock(&pool_mu);
	if (join)
		pthread_join(refill_thread, NULL);
	pthread_mutex_lock(&pool_mu);
	refill_running = 0;
	pthread_mutex_unlock(&pool_mu);
	for (unsigned i = 0; i < n; i++)
		kernel_ctx_destroy(gone[i]);
	kernel__pool_notify();
}
