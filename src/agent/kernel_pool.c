/*
 * kernel_pool.c - one warm spare context, ready before anyone asks.
 *
 * The bake starts it (kernel_pool_start) and waits for READY, so the
 * template's snapshot holds a kernel with pandas, numpy and pyplot already
 * imported (and the template's warm code run).  kernel_ctx_create takes it
 * (kernel__pool_take) and the pool at once starts the next spare, at
 * niceness SPARE_NICE so its warm-up does not slow the user's kernel on a
 * one-vCPU guest (the taken kernel goes back to niceness 0).  A spare is
 * an ordinary context with "pooled" set: it drops its events, and it tells
 * the pool when it is ready or failed.
 *
 * Threads: the agent's thread calls the public functions; spares' threads
 * call kernel__pool_notify.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "agent/kernel_int.h"
#include "common/log.h"

#define SPARE_NICE 10

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static struct kernel_ctx *spare;        /* [pool_mu] */
static int enabled;                     /* [pool_mu] */
static struct kernel_opts saved;        /* [pool_mu] strings owned */
static char *spare_python;              /* [pool_mu] resolved interpreter */
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

void kernel__pool_notify(void)
{
	int fd = kernel_pool_fd();
	uint64_t one = 1;
	if (fd >= 0) {
		ssize_t w = write(fd, &one, sizeof(one));
		(void)w;
	}
}

static void saved_clear(void)
{
	free((char *)saved.python);
	free((char *)saved.run_dir);
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

/* Start a spare from the saved options.  pool_mu held. */
static int start_spare_locked(void)
{
	struct kernel_opts o = saved;
	o.cwd = NULL;
	o.use_pool = 0;
	struct kernel_cfg cfg;
	int r = kernel__cfg_build(&cfg, &o);
	if (r < 0)
		return r;
	cfg.nice = SPARE_NICE;
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
	r = kernel__ctx_start(&cfg, 1, warm, &spare);
	if (r == 0)
		log_kv(LOG_INFO, "kernel.spare_start", "kind=%d", (int)saved.kind);
	kernel__pool_notify();
	return r;
}

int kernel_pool_start(const struct kernel_opts *o)
{
	if (!o)
		return -EINVAL;
	int r = 0;
	pthread_mutex_lock(&pool_mu);
	saved_clear();
	saved.kind = o->kind;
	saved.output_cap = o->output_cap;
	saved.start_timeout_ms = o->start_timeout_ms;
	saved.interrupt_grace_ms = o->interrupt_grace_ms;
	if ((o->python && !(saved.python = strdup(o->python))) ||
	    (o->run_dir && !(saved.run_dir = strdup(o->run_dir))) ||
	    (o->warm_code && !(saved.warm_code = strdup(o->warm_code))) ||
	    saved_env_copy(o->env) < 0)
		r = -ENOMEM;
	enabled = r == 0;
	if (r == 0 && !spare)
		r = start_spare_locked();
	pthread_mutex_unlock(&pool_mu);
	return r;
}

/* The spare's state.  pool_mu held. */
static enum kernel_pool_state state_locked(char *err, size_t errlen)
{
	if (!spare)
		return KERNEL_POOL_NONE;
	enum kernel_pool_state st = KERNEL_POOL_STARTING;
	pthread_mutex_lock(&spare->mu);
	if (spare->announced)
		st = KERNEL_POOL_READY;
	else if (spare->fail_reason[0])
		st = KERNEL_POOL_FAILED;
	if (st == KERNEL_POOL_FAILED && err && errlen)
		snprintf(err, errlen, "%s", spare->fail_reason);
	pthread_mutex_unlock(&spare->mu);
	return st;
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
	enum kernel_pool_state st = state_locked(err, errlen);
	pthread_mutex_unlock(&pool_mu);
	return st;
}

struct kernel_ctx *kernel__pool_take(const struct kernel_cfg *cfg)
{
	struct kernel_ctx *c = NULL;
	pthread_mutex_lock(&pool_mu);
	if (spare && spare_python && strcmp(spare_python, cfg->python) == 0 &&
	    (cfg->kind == KERNEL_AUTO || cfg->kind == saved.kind) &&
	    state_locked(NULL, 0) != KERNEL_POOL_FAILED) {
		c = spare;
		spare = NULL;
		if (enabled && start_spare_locked() < 0)
			log_kv(LOG_WARN, "kernel.spare_failed", "what=start");
	}
	pthread_mutex_unlock(&pool_mu);
	return c;
}

void kernel_pool_stop(void)
{
	pthread_mutex_lock(&pool_mu);
	enabled = 0;
	struct kernel_ctx *c = spare;
	spare = NULL;
	saved_clear();
	pthread_mutex_unlock(&pool_mu);
	if (c)
		kernel_ctx_destroy(c);
	kernel__pool_notify();
}
