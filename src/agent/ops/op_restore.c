/*
 * op_restore.c - the restore operation (docs/agent-protocol.md, "restore"):
 * after every boot and every snapshot restore the host sends its wall clock
 * and 64 bytes of fresh entropy, so that clones of one template have the
 * right time and never share random numbers.
 *
 * Init mode: clock_settime(CLOCK_REALTIME), then RNDADDENTROPY (512 bits
 * credited) and RNDRESEEDCRNG on /dev/urandom; a failure is an error.
 * Test modes (--listen, --port) never set the host's clock; entropy is
 * still added when permitted, and the END says what was done.  Then every
 * code context (and the warm spare) is told to reseed its Python-level
 * generators and OpenSSL's (kernel_reseed_all).
 *
 * A restore that hands the sandbox out (sandbox_id) then runs the
 * after-restore hooks before its END: the executables of env->hooks_dir
 * (restore_hooks.h), and in each code context whose kernel registered
 * functions with pandastack_restore, those (kernel.h).  Both are bounded:
 * the executables end by RESTORE_HOOKS_BUDGET_MS (each one within
 * RESTORE_HOOK_TIMEOUT_MS), and the END goes out at RESTORE_WAIT_MS at the
 * latest, with what did not finish reported.  The report also goes to
 * env->hooks_report (PID 1: /run/pandastack/after-restore.json), where the
 * guest's user can read it, when anything ran.  One restore at a time
 * (EBUSY).
 *
 * The host's package index (pip_index_url, optional) goes into the pip
 * config file env->pip_conf (PID 1: /etc/xdg/pip/pip.conf; test modes: only
 * with --pip-conf): written when the host names one, removed when it does
 * not, so the file always says what the last restore said (a template
 * baked by one daemon serves another).  A failure there is an error.
 *
 * Threads: the loop thread only.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/random.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "agent/astream.h"
#include "agent/kernel/kernel.h"
#include "agent/ops/restore_hooks.h"
#include "common/log.h"
#include "common/pip_index.h"
#include "common/util.h"

/* The hooks' executables all end by this long after the restore began, ms
 * (then RESTORE_HOOK_KILL_WAIT_MS for the last one's kill at most). */
#define RESTORE_HOOKS_BUDGET_MS 20000
/* The END goes out by this long after the restore began, ms, whatever is
 * still running (a kernel's after-restore job: KERNEL_RESTORE_HOOKS_MS,
 * then its interrupt's grace). */
#define RESTORE_WAIT_MS (RESTORE_HOOKS_BUDGET_MS + RESTORE_HOOK_KILL_WAIT_MS + 500)

/* A restore waiting for its hooks. */
struct restore_op {
	struct astream *s;
	json_t *end;                  /* the END so far (owned) */
	char sandbox_id[AGENT_REQ_CTX_ID_MAX + 1];
	int64_t t0_ms;
	struct restore_hooks *hooks;  /* the executables */
	int kernel_fd;                /* kernel_restore_fd, or -1 */
	struct loop_watch kw;
	struct loop_timer deadline;
};

/* The restore whose hooks run now, if any. */
static struct restore_op *running;

/* Add the bytes to the kernel pool (credited) and reseed the CRNG. */
static int add_entropy(const uint8_t *bytes, size_t n)
{
	/* struct rand_pool_info ends in a flexible array: room for it after the header */
	union {
		struct rand_pool_info info;
		uint8_t raw[sizeof(struct rand_pool_info) + AGENT_REQ_ENTROPY_BYTES];
	} e;
	if (n > AGENT_REQ_ENTROPY_BYTES)
		return -EINVAL;
	memset(&e, 0, sizeof(e));
	e.info.entropy_count = (int)(n * 8);
	e.info.buf_size = (int)n;
	memcpy(e.raw + sizeof(struct rand_pool_info), bytes, n);
	int fd = open("/dev/urandom", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = 0;
	if (ioctl(fd, RNDADDENTROPY, &e) < 0)
		rc = -errno;
	else if (ioctl(fd, RNDRESEEDCRNG) < 0)
		rc = -errno;
	close(fd);
	explicit_bzero(&e, sizeof(e));
	return rc;
}

/* The pip config for index url (checked by the request parser): index-url,
 * and trusted-host for plain http (pip refuses an http index otherwise).
 * Written without fsync: it is rewritten at every restore. */
static int write_pip_conf(const char *path, const char *url)
{
	char host[PIP_INDEX_URL_MAX + 1], text[2 * PIP_INDEX_URL_MAX + 256];
	int http = 0;
	if (pip_index_check(url, host, sizeof(host), &http, NULL) < 0)
		return -EINVAL;
	int n = snprintf(text, sizeof(text),
			 "# The host's package index (pandastackd --pip-index-url), written by\n"
			 "# the agent at every restore.  /etc/pip.conf is read after this file.\n"
			 "[global]\nindex-url = %s\n%s%s%s",
			 url, http ? "trusted-host = " : "", http ? host : "", http ? "\n" : "");
	if (n < 0 || (size_t)n >= sizeof(text))
		return -E2BIG;
	/* rewritten at every restore: no fsync */
	return util_write_file_opt(path, text, (size_t)n, 0644, UTIL_FILE_PARENTS);
}

/* Apply the request's index to env->pip_conf.  1 if the file now names
 * it, 0 if there was nothing to do, or -errno. */
static int apply_pip_index(const struct agent_env *env, const char *url)
{
	if (!env->pip_conf)
		return 0;
	if (url) {
		int r = write_pip_conf(env->pip_conf, url);
		return r < 0 ? r : 1;
	}
	return unlink(env->pip_conf) < 0 && errno != ENOENT ? -errno : 0;
}

/* Write the report (the END's hooks part) to env->hooks_report. */
static void write_report(const struct restore_op *x, json_t *report)
{
	const char *path = x->s->env->hooks_report;
	if (!path)
		return;
	char *text = json_dumps(report, JSON_INDENT(1) | JSON_SORT_KEYS);
	int r = -ENOMEM;
	if (text) {
		size_t n = strlen(text);
		text[n] = '\n'; /* json_dumps left room for its NUL: the line's end */
		r = util_write_file_opt(path, text, n + 1, 0644, UTIL_FILE_PARENTS);
		text[n] = '\0';
	}
	free(text);
	if (r < 0)
		log_kv(LOG_WARN, "agent.restore_report_failed", "errno=%d", -r);
}

/* Send the END: what the hooks did so far; what still runs is reported as
 * unfinished (and left to its own bound).  Then the op is over. */
static void finish(struct restore_op *x)
{
	struct loop *l = x->s->env->loop;
	loop_timer_cancel(l, &x->deadline);
	if (x->kernel_fd >= 0)
		loop_watch_del(l, &x->kw);
	x->kernel_fd = -1;
	int failed = 0;
	json_t *hooks = x->hooks ? restore_hooks_report(x->hooks, &failed) : json_array();
	int unfinished = x->hooks && !restore_hooks_finished(x->hooks);
	size_t nhooks = json_array_size(hooks);
	struct kernel_restore_status ks;
	kernel_restore_status(&ks);
	json_t *kh = json_pack("{s:i, s:i, s:i, s:o}", "ran", (int)ks.ran, "failed", (int)ks.failed,
			       "unfinished", (int)ks.pending, "errors",
			       ks.errors ? ks.errors : json_array());
	int64_t ms = util_now_ms() - x->t0_ms;
	json_t *o = x->end;
	x->end = NULL;
	json_t *report = json_pack("{s:s, s:I, s:O?, s:O?, s:b}", "sandbox_id", x->sandbox_id,
				   "ms", (json_int_t)ms, "hooks", hooks, "kernel_hooks", kh,
				   "hooks_unfinished", unfinished);
	/* written when something ran: a restore without hooks leaves the file
	 * of the last one that had some (its sandbox_id tells which) */
	if (report && (nhooks || ks.ran || ks.failed || ks.pending || unfinished))
		write_report(x, report);
	json_decref(report);
	if (o) {
		json_object_set_new(o, "hooks", hooks ? hooks : json_array());
		json_object_set_new(o, "hooks_failed", json_integer(failed + unfinished));
		json_object_set_new(o, "kernel_hooks", kh ? kh : json_object());
		json_object_set_new(o, "hooks_ms", json_integer(ms));
	} else {
		json_decref(hooks);
		json_decref(kh);
	}
	/* (a console line costs ~10 ms under TCG: only when something ran) */
	int bad = failed || unfinished || ks.failed || ks.pending;
	log_kv(bad ? LOG_WARN : nhooks || ks.ran ? LOG_INFO : LOG_DEBUG,
	       "agent.restore_hooks",
	       "hooks_failed=%d hooks_unfinished=%d kernels_ran=%u kernels_failed=%u "
	       "kernels_unfinished=%u ms=%lld",
	       failed, unfinished, ks.ran, ks.failed, ks.pending, (long long)ms);
	restore_hooks_free(x->hooks); /* kills what still runs */
	x->hooks = NULL;
	running = NULL;
	astream_end(x->s, o);
}

/* END once the executables ended and every context settled. */
static void maybe_finish(struct restore_op *x)
{
	if (x->s->ended || (x->hooks && !restore_hooks_finished(x->hooks)))
		return;
	if (x->kernel_fd >= 0) {
		struct kernel_restore_status ks;
		kernel_restore_status(&ks);
		json_decref(ks.errors);
		if (ks.pending)
			return;
	}
	finish(x);
}

static void on_hooks_done(void *ctx)
{
	maybe_finish(ctx);
}

static void on_kernels(struct loop_watch *w, uint32_t ev)
{
	(void)ev;
	maybe_finish(w->ctx);
}

static void on_deadline(struct loop_timer *t, int64_t now)
{
	(void)now;
	struct restore_op *x = t->ctx;
	log_kv(LOG_WARN, "agent.restore_hooks_deadline", "ms=%d", RESTORE_WAIT_MS);
	finish(x);
}

static void restore_cancel(struct astream *s)
{
	struct restore_op *x = s->op;
	struct loop *l = s->env->loop;
	restore_hooks_free(x->hooks); /* the host left: nobody waits for them */
	x->hooks = NULL;
	loop_timer_cancel(l, &x->deadline);
	if (x->kernel_fd >= 0)
		loop_watch_del(l, &x->kw);
	x->kernel_fd = -1;
}

static void restore_destroy(struct astream *s)
{
	struct restore_op *x = s->op;
	struct loop *l = s->env->loop;
	loop_timer_cancel(l, &x->deadline);
	if (x->kernel_fd >= 0)
		loop_watch_del(l, &x->kw);
	restore_hooks_free(x->hooks);
	json_decref(x->end);
	if (running == x)
		running = NULL;
	free(x);
	s->op = NULL;
}

static const struct op_ops restore_ops = {
	.name = "restore",
	.cancel = restore_cancel,
	.destroy = restore_destroy,
};

/* Run the hooks of a restore that hands sandbox_id out, then END with o
 * (taken) and their report.  0, or -errno (o released). */
static int start_hooks(struct astream *s, const char *sandbox_id, json_t *o)
{
	struct restore_op *x = calloc(1, sizeof(*x));
	if (!x) {
		json_decref(o);
		return -ENOMEM;
	}
	x->s = s;
	x->end = o;
	x->t0_ms = util_now_ms();
	x->kernel_fd = -1;
	snprintf(x->sandbox_id, sizeof(x->sandbox_id), "%s", sandbox_id);
	loop_watch_init(&x->kw, on_kernels, x);
	loop_timer_init(&x->deadline, on_deadline, x);
	s->op = x;
	s->ops = &restore_ops;
	running = x;
	struct loop *l = s->env->loop;
	if (s->env->hooks_dir) {
		int r = restore_hooks_start(s->env, s->env->hooks_dir, sandbox_id,
					    x->t0_ms + RESTORE_HOOKS_BUDGET_MS, on_hooks_done, x,
					    &x->hooks);
		if (r < 0)
			return r; /* destroy frees x */
	}
	/* Nothing to wait for (the usual case): END now, with no watch or timer
	 * (under TCG every path a fresh clone runs the first time costs). */
	struct kernel_restore_status ks;
	kernel_restore_status(&ks);
	json_decref(ks.errors);
	if (!ks.pending && (!x->hooks || restore_hooks_finished(x->hooks))) {
		finish(x);
		return 0;
	}
	int fd = ks.pending ? kernel_restore_fd() : -1;
	if (fd >= 0 && loop_watch_add(l, &x->kw, fd, EPOLLIN) == 0)
		x->kernel_fd = fd;
	else if (ks.pending) /* the END then waits for the executables only */
		log_kv(LOG_WARN, "agent.restore_kernel_watch", "errno=%d", fd < 0 ? -fd : 0);
	loop_timer_arm(l, &x->deadline, x->t0_ms + RESTORE_WAIT_MS);
	maybe_finish(x);
	return 0;
}

int op_restore_start(struct astream *s, struct agent_req *req)
{
	if (running) {
		astream_end_err(s, EBUSY, "a restore is running its hooks");
		return 0;
	}
	int init = s->env->init_mode;
	int clock_set = 0;
	int64_t t0 = util_now_us();
	if (init) {
		struct timespec ts = {
			.tv_sec = (time_t)(req->wall_clock_ns / 1000000000u),
			.tv_nsec = (long)(req->wall_clock_ns % 1000000000u),
		};
		if (clock_settime(CLOCK_REALTIME, &ts) < 0) {
			int e = errno;
			astream_end_err(s, e, "clock_settime: %s", strerror(e));
			return 0;
		}
		clock_set = 1;
	}
	int64_t t1 = util_now_us();
	int r = add_entropy(req->entropy, sizeof(req->entropy));
	int64_t t2 = util_now_us();
	explicit_bzero(req->entropy, sizeof(req->entropy));
	if (r < 0 && init) {
		astream_end_err(s, r, "adding entropy: %s", strerror(-r));
		return 0;
	}
	int pip = apply_pip_index(s->env, req->pip_index_url);
	int64_t t3 = util_now_us();
	if (pip < 0) {
		astream_end_err(s, pip, "pip config %s: %s", s->env->pip_conf, strerror(-pip));
		return 0;
	}
	/* warm interpreters reseed their own generators (Python random,
	 * numpy, OpenSSL) from the freshly seeded kernel pool, ahead of user
	 * code; with a sandbox id, kernels with after-restore functions run
	 * them now */
	int kernels = kernel_reseed_all(req->sandbox_id);
	log_kv(LOG_DEBUG, "agent.restore_timing",
	       "clock_us=%lld entropy_us=%lld pip_us=%lld reseed_us=%lld", (long long)(t1 - t0),
	       (long long)(t2 - t1), (long long)(t3 - t2), (long long)(util_now_us() - t3));
	json_t *o = json_object();
	if (o) {
		json_object_set_new(o, "clock_set", json_boolean(clock_set));
		json_object_set_new(o, "entropy_added", json_boolean(r == 0));
		if (r < 0)
			json_object_set_new(o, "entropy_error", json_string(agent_errname(r)));
		json_object_set_new(o, "kernels_reseeded", json_integer(kernels));
		json_object_set_new(o, "pip_index_url", json_boolean(pip == 1));
	}
	log_kv(LOG_INFO, "agent.restore",
	       "clock_set=%d entropy=%d kernels=%d pip_index_url=%d handed_out=%d", clock_set,
	       r == 0, kernels, pip == 1, req->sandbox_id != NULL);
	if (req->sandbox_id)
		return start_hooks(s, req->sandbox_id, o);
	/* what a later restore that hands this guest out would run (a pool
	 * entry: its hand-out waits for the hooks only when there are some) */
	if (o)
		json_object_set_new(o, "hooks_found",
				    json_integer(restore_hooks_count(s->env->hooks_dir)));
	astream_end(s, o);
	return 0;
}
