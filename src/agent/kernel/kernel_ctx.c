/*
 * kernel_ctx.c - the code-context API for the agent's thread (kernel.h):
 * options, the job queue, the event queue, the registry of live contexts.
 * The client thread itself is kernel_thread.c; kernel_ctx_create, which asks
 * the warm pool first, is kernel_create.c.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "agent/jupyter/jupyter_map.h"
#include "agent/kernel/kernel_int.h"
#include "common/deadline.h"
#include "common/log.h"
#include "common/utf8.h"
#include "common/util.h"

extern char **environ;

/* Registry of contexts whose thread runs, for reseed and wait_all. */
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reg_cv; /* CLOCK_MONOTONIC: reg_cv_make */
static pthread_once_t reg_cv_once = PTHREAD_ONCE_INIT;
static struct kernel_ctx *reg_head;
static int reg_stopping; /* destroyed contexts whose thread still runs */

/* --- configuration --------------------------------------------------------*/

static void free_string_array(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* Length of the key of "K=V" including the '=', or 0 if malformed. */
static size_t env_key_len(const char *kv)
{
	const char *eq = kv ? strchr(kv, '=') : NULL;
	return eq && eq != kv ? (size_t)(eq - kv) + 1 : 0;
}

static int env_has(char *const *v, size_t n, const char *kv)
{
	size_t k = env_key_len(kv);
	for (size_t i = 0; i < n; i++)
		if (strncmp(v[i], kv, k) == 0)
			return 1;
	return 0;
}

/* The kernel's environment: the agent's, overridden by the caller's,
 * plus what the kernel needs unless the caller set it. */
static int env_build(struct kernel_cfg *cfg, const char *const *added)
{
	size_t na = 0, ne = 0;
	while (added && added[na]) {
		if (!env_key_len(added[na]))
			return -EINVAL;
		if (++na > KERNEL_ENV_MAX_VARS)
			return -E2BIG;
	}
	while (environ && environ[ne])
		ne++;
	char pid[48];
	snprintf(pid, sizeof(pid), "JPY_PARENT_PID=%ld", (long)getpid());
	const char *forced[] = {
		pid,
		"MPLBACKEND=module://matplotlib_inline.backend_inline",
		"PYDEVD_DISABLE_FILE_VALIDATION=1",
		"PYTHONIOENCODING=utf-8",
		/* A figure as its JSON, not 9 MB of plotly.js per first show. */
		"PLOTLY_RENDERER=plotly_mimetype",
	};
	size_t nf = sizeof(forced) / sizeof(forced[0]);
	cfg->envp = calloc(ne + na + nf + 1, sizeof(char *));
	cfg->env_added = calloc(na + 1, sizeof(char *));
	if (!cfg->envp || !cfg->env_added)
		return -ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < na; i++)
		if (!(cfg->env_added[i] = strdup(added[i])))
			return -ENOMEM;
	for (size_t i = 0; i < ne; i++) {
		if (!env_key_len(environ[i]) || env_has((char *const *)added, na, environ[i]))
			continue;
		int dup = 0;
		for (size_t f = 0; f < nf && !dup; f++)
			dup = env_key_len(forced[f]) == env_key_len(environ[i]) &&
			      strncmp(forced[f], environ[i], env_key_len(forced[f])) == 0;
		if (!dup && !(cfg->envp[n++] = strdup(environ[i])))
			return -ENOMEM;
	}
	for (size_t i = 0; i < na; i++)
		if (!(cfg->envp[n++] = strdup(added[i])))
			return -ENOMEM;
	for (size_t f = 0; f < nf; f++)
		if (!env_has((char *const *)added, na, forced[f]) && !(cfg->envp[n++] = strdup(forced[f])))
			return -ENOMEM;
	return 0;
}

int kernel__cfg_build(struct kernel_cfg *cfg, const struct kernel_opts *o)
{
	memset(cfg, 0, sizeof(*cfg));
	if (!o || o->kind < KERNEL_AUTO || o->kind > KERNEL_FALLBACK ||
	    o->start_timeout_ms < 0 || o->interrupt_grace_ms < 0 ||
	    (o->cwd && o->cwd[0] != '/') || (o->run_dir && o->run_dir[0] != '/'))
		return -EINVAL;
	cfg->kind = o->kind;
	cfg->output_cap = o->output_cap ? o->output_cap : KERNEL_OUTPUT_CAP_DEFAULT;
	if (cfg->output_cap > KERNEL_OUTPUT_CAP_MAX)
		cfg->output_cap = KERNEL_OUTPUT_CAP_MAX;
	cfg->start_timeout_ms = o->start_timeout_ms ? o->start_timeout_ms
						    : KERNEL_START_TIMEOUT_DEFAULT_MS;
	cfg->interrupt_grace_ms = o->interrupt_grace_ms ? o->interrupt_grace_ms
							: KERNEL_INTERRUPT_GRACE_DEFAULT_MS;
	int r = env_build(cfg, o->env);
	if (r == 0 && o->cwd && !(cfg->cwd = strdup(o->cwd)))
		r = -ENOMEM;
	if (r == 0 && o->run_dir && !(cfg->run_dir = strdup(o->run_dir)))
		r = -ENOMEM;
	if (r == 0) {
		cfg->python = kernel_proc_which(o->python ? o->python : "python3", cfg->envp);
		if (!cfg->python)
			r = -errno;
	}
	if (r < 0)
		kernel__cfg_clear(cfg);
	return r;
}

void kernel__cfg_clear(struct kernel_cfg *cfg)
{
	if (!cfg)
		return;
	free(cfg->python);
	free(cfg->cwd);
	free(cfg->run_dir);
	free_string_array(cfg->envp);
	free_string_array(cfg->env_added);
	memset(cfg, 0, sizeof(*cfg));
}

int kernel__cfg_setenv(struct kernel_cfg *cfg, const char *name, const char *value)
{
	char *kv = NULL;
	if (asprintf(&kv, "%s=%s", name, value) < 0)
		return -ENOMEM;
	size_t n = 0, k = strlen(name) + 1;
	for (; cfg->envp && cfg->envp[n]; n++) {
		if (strncmp(cfg->envp[n], kv, k) == 0) {
			free(cfg->envp[n]);
			cfg->envp[n] = kv;
			return 0;
		}
	}
	char **nv = realloc(cfg->envp, (n + 2) * sizeof(char *));
	if (!nv) {
		free(kv);
		return -ENOMEM;
	}
	nv[n] = kv;
	nv[n + 1] = NULL;
	cfg->envp = nv;
	return 0;
}

/* --- jobs and events ------------------------------------------------------*/

struct kernel_job *kernel__job_new(enum kernel_job_kind kind, const char *what,
				   const char *code, size_t len, int64_t timeout_ms)
{
	struct kernel_job *j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	if (utf8_sanitize(code, len, &j->code, &j->code_len) < 0) {
		free(j);
		return NULL;
	}
	j->kind = kind;
	j->what = what;
	j->timeout_ms = timeout_ms;
	return j;
}

void kernel__job_free(struct kernel_job *j)
{
	if (!j)
		return;
	if (j->restore_gen) /* an after-restore job that never ran to its end */
		kernel__restore_done(j->restore_gen, 0, 0, "the after-restore job did not run");
	free(j->code);
	free(j);
}

void kernel__push_front_locked(struct kernel_ctx *c, struct kernel_job *j)
{
	j->id = ++c->next_id;
	j->next = c->jobs;
	c->jobs = j;
	if (!c->jobs_tail)
		c->jobs_tail = j;
}

void kernel__wake(struct kernel_ctx *c)
{
	uint64_t one = 1;
	ssize_t w = write(c->wake_fd, &one, sizeof(one));
	(void)w; /* EAGAIN only when the counter is huge: already awake */
}

void kernel__emit_locked(struct kernel_ctx *c, uint64_t exec_id, json_t *ev)
{
	if (!ev)
		return;
	struct kernel_event *e = c->pooled ? NULL : malloc(sizeof(*e));
	if (!e) {
		json_decref(ev);
		return;
	}
	e->exec_id = exec_id;
	e->ev = ev;
	e->next = NULL;
	if (c->evs_tail)
		c->evs_tail->next = e;
	else
		c->evs = e;
	c->evs_tail = e;
	uint64_t one = 1;
	ssize_t w = write(c->efd, &one, sizeof(one));
	(void)w;
}

void kernel__emit(struct kernel_ctx *c, uint64_t exec_id, json_t *ev)
{
	pthread_mutex_lock(&c->mu);
	kernel__emit_locked(c, exec_id, ev);
	pthread_mutex_unlock(&c->mu);
}

void kernel__fail_job_locked(struct kernel_ctx *c, struct kernel_job *j, const char *name,
			     const char *value)
{
	if (j->kind != JOB_USER)
		return;
	json_t *done = json_pack("{s:s, s:n, s:o, s:i, s:b}", "type", "done", "execution_count",
				 "error", jupyter_make_error(name, value, ""), "duration_ms", 0,
				 "timed_out", 0);
	kernel__emit_locked(c, j->id, done);
}

/* --- lifecycle ------------------------------------------------------------*/

static void reg_cv_make(void)
{
	deadline_cond_init(&reg_cv);
}

static void reg_add(struct kernel_ctx *c)
{
	pthread_mutex_lock(&reg_mu);
	c->reg_next = reg_head;
	if (reg_head)
		reg_head->reg_prev = c;
	reg_head = c;
	pthread_mutex_unlock(&reg_mu);
}

void kernel__ctx_finish(struct kernel_ctx *c)
{
	pthread_mutex_lock(&reg_mu);
	if (c->reg_prev)
		c->reg_prev->reg_next = c->reg_next;
	else if (reg_head == c)
		reg_head = c->reg_next;
	if (c->reg_next)
		c->reg_next->reg_prev = c->reg_prev;
	reg_stopping--;
	pthread_once(&reg_cv_once, reg_cv_make);
	pthread_cond_broadcast(&reg_cv);
	pthread_mutex_unlock(&reg_mu);
	/* out of the registry, no restore can ask it any more: one that asked
	 * and was never looked at (destroyed meanwhile) does not wait for it */
	if (c->restore_gen)
		kernel__restore_done(c->restore_gen, 0, 0, NULL);

	struct kernel_job *j = c->jobs;
	while (j) {
		struct kernel_job *n = j->next;
		kernel__job_free(j);
		j = n;
	}
	struct kernel_event *e = c->evs;
	while (e) {
		struct kernel_event *n = e->next;
		json_decref(e->ev);
		free(e);
		e = n;
	}
	if (c->handover) {
		kernel__cfg_clear(c->handover);
		free(c->handover);
	}
	json_decref(c->ready_ev);
	close(c->efd);
	close(c->wake_fd);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

int kernel__ctx_start(struct kernel_cfg *cfg, int pooled, struct kernel_job *first,
		      struct kernel_ctx **out)
{
	*out = NULL;
	struct kernel_ctx *c = calloc(1, sizeof(*c));
	if (!c) {
		kernel__cfg_clear(cfg);
		kernel__job_free(first);
		return -ENOMEM;
	}
	c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	c->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int r = (c->efd < 0 || c->wake_fd < 0) ? -errno : 0;
	if (r < 0) {
		if (c->efd >= 0)
			close(c->efd);
		if (c->wake_fd >= 0)
			close(c->wake_fd);
		free(c);
		kernel__cfg_clear(cfg);
		kernel__job_free(first);
		return r;
	}
	pthread_mutex_init(&c->mu, NULL);
	if (first)
		kernel__push_front_locked(c, first);
	c->cfg = *cfg;
	memset(cfg, 0, sizeof(*cfg));
	c->pooled = pooled;
	c->idle_since_ms = util_now_ms();
	c->proc.pidfd = -1;
	reg_add(c);

	/* The thread runs with every signal blocked: signals are the agent's. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = -pthread_create(&c->thread, &attr, kernel__thread_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (r < 0) {
		pthread_mutex_lock(&reg_mu);
		reg_stopping++; /* balanced by kernel__ctx_finish */
		pthread_mutex_unlock(&reg_mu);
		kernel__cfg_clear(&c->cfg);
		kernel__ctx_finish(c);
		return r;
	}
	*out = c;
	return 0;
}

int kernel_ctx_fd(const struct kernel_ctx *c)
{
	return c->efd;
}

int kernel_ctx_run(struct kernel_ctx *c, const char *code, size_t len, int64_t timeout_ms,
		   uint64_t *exec_id)
{
	if (!code || len > KERNEL_CODE_MAX || timeout_ms < 0)
		return len > KERNEL_CODE_MAX ? -E2BIG : -EINVAL;
	struct kernel_job *j = kernel__job_new(JOB_USER, "run", code, len, timeout_ms);
	if (!j)
		return -ENOMEM;
	pthread_mutex_lock(&c->mu);
	if (c->stop) {
		pthread_mutex_unlock(&c->mu);
		kernel__job_free(j);
		return -ESHUTDOWN;
	}
	j->id = ++c->next_id;
	if (c->jobs_tail)
		c->jobs_tail->next = j;
	else
		c->jobs = j;
	c->jobs_tail = j;
	*exec_id = j->id;
	pthread_mutex_unlock(&c->mu);
	kernel__wake(c);
	return 0;
}

int kernel_ctx_next_event(struct kernel_ctx *c, uint64_t *exec_id, json_t **ev)
{
	pthread_mutex_lock(&c->mu);
	struct kernel_event *e = c->evs;
	if (!e) {
		uint64_t n;
		ssize_t r = read(c->efd, &n, sizeof(n));
		(void)r;
		pthread_mutex_unlock(&c->mu);
		return -EAGAIN;
	}
	c->evs = e->next;
	if (!c->evs)
		c->evs_tail = NULL;
	pthread_mutex_unlock(&c->mu);
	*exec_id = e->exec_id;
	*ev = e->ev;
	free(e);
	return 0;
}

int kernel_ctx_interrupt(struct kernel_ctx *c)
{
	pthread_mutex_lock(&c->mu);
	int running = c->running_id != 0;
	if (running)
		c->interrupt_req = 1;
	pthread_mutex_unlock(&c->mu);
	if (running)
		kernel__wake(c);
	return 0;
}

int kernel_ctx_cancel(struct kernel_ctx *c, uint64_t exec_id)
{
	int r = -ENOENT;
	pthread_mutex_lock(&c->mu);
	struct kernel_job **pp = &c->jobs, *prev = NULL;
	while (*pp && (*pp)->id != exec_id) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	struct kernel_job *j = *pp;
	if (j && j->kind == JOB_USER) {
		*pp = j->next;
		if (c->jobs_tail == j)
			c->jobs_tail = prev;
		kernel__fail_job_locked(c, j, "Cancelled", "the execution was cancelled before it started");
		kernel__job_free(j);
		r = 0;
	} else if (exec_id && c->running_id == exec_id) {
		c->interrupt_req = 1;
		r = 1;
	}
	pthread_mutex_unlock(&c->mu);
	if (r == 1)
		kernel__wake(c);
	return r < 0 ? r : 0;
}

int kernel_ctx_restart(struct kernel_ctx *c)
{
	pthread_mutex_lock(&c->mu);
	c->restart_req = 1;
	pthread_mutex_unlock(&c->mu);
	kernel__wake(c);
	return 0;
}

int64_t kernel_ctx_idle_ms(struct kernel_ctx *c)
{
	pthread_mutex_lock(&c->mu);
	int64_t idle = (c->jobs || c->running_id) ? 0 : util_now_ms() - c->idle_since_ms;
	pthread_mutex_unlock(&c->mu);
	return idle < 0 ? 0 : idle;
}

pid_t kernel_ctx_pid(struct kernel_ctx *c)
{
	pthread_mutex_lock(&c->mu);
	pid_t p = c->pid_pub;
	pthread_mutex_unlock(&c->mu);
	return p;
}

void kernel_ctx_destroy(struct kernel_ctx *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&reg_mu);
	reg_stopping++;
	pthread_mutex_unlock(&reg_mu);
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	pthread_mutex_unlock(&c->mu);
	kernel__wake(c);
}

int kernel_wait_all(int64_t timeout_ms)
{
	pthread_once(&reg_cv_once, reg_cv_make);
	int64_t end = deadline_after(timeout_ms < 0 ? 0 : timeout_ms);
	int r = 0;
	pthread_mutex_lock(&reg_mu);
	while (reg_stopping > 0 && r == 0)
		r = deadline_cond_wait(&reg_cv, &reg_mu, end);
	pthread_mutex_unlock(&reg_mu);
	return r;
}

int64_t kernel__activity_idle_ms(int64_t now)
{
	int64_t last = INT64_MIN;
	int busy = 0;
	pthread_mutex_lock(&reg_mu);
	for (struct kernel_ctx *c = reg_head; c && !busy; c = c->reg_next) {
		pthread_mutex_lock(&c->mu);
		if (!c->pooled && !c->stop) {
			if (c->jobs || c->running_id)
				busy = 1;
			else if (c->idle_since_ms > last)
				last = c->idle_since_ms;
		}
		pthread_mutex_unlock(&c->mu);
	}
	pthread_mutex_unlock(&reg_mu);
	if (busy)
		return 0;
	if (last == INT64_MIN)
		return INT64_MAX; /* no context at all */
	return now > last ? now - last : 0;
}

int kernel_note_exit(pid_t pid, int status)
{
	return kernel_proc_note_exit(pid, status);
}

int kernel__marked(struct kernel_ctx *c)
{
	return c->mark[0] && access(c->mark, F_OK) == 0;
}

int kernel_reseed_all(const char *sandbox_id)
{
	int n = 0;
	size_t sl = sandbox_id ? strlen(sandbox_id) : 0;
	if (sl > KERNEL_SANDBOX_ID_MAX)
		return -EINVAL;
	/* a restore that hands the sandbox out waits for every context to
	 * settle its part (kernel_restore.c) */
	uint64_t gen = sandbox_id ? kernel__restore_begin() : 0;
	pthread_mutex_lock(&reg_mu);
	for (struct kernel_ctx *c = reg_head; c; c = c->reg_next) {
		pthread_mutex_lock(&c->mu);
		if (!c->stop) {
			c->reseed_due = 1;
			memcpy(c->reseed_sid, sandbox_id ? sandbox_id : "", sl);
			c->reseed_sid[sl] = '\0';
			/* only a kernel with functions registered is woken (a
			 * spare has run none of its owner's code) */
			if (gen && !c->pooled && kernel__marked(c)) {
				kernel__restore_expect(gen);
				c->restore_gen = gen;
				kernel__wake(c);
			}
			n++;
		}
		pthread_mutex_unlock(&c->mu);
	}
	pthread_mutex_unlock(&reg_mu);
	log_kv(LOG_INFO, "kernel.reseed_all", "contexts=%d handed_out=%d", n, gen != 0);
	return n;
}
