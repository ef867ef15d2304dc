/*
 * kernel_restore.c - the kernels' part of a restore that hands a sandbox
 * out (kernel.h, kernel_reseed_all): the barrier the restore op waits on,
 * and each context's check for functions registered with pandastack_restore.
 *
 * The barrier: kernel_reseed_all begins a generation and counts every
 * context whose kernel left the mark (the others are not woken: their
 * reseed stays lazy); each such context's client thread settles its part
 * (kernel__restore_check) at once when its kernel is no longer ready (a new
 * process has registered nothing), or when the after-restore job it queued
 * first ends (kernel__finish, or kernel__job_free for a job that never
 * ran).  A settle of an older generation is ignored: a restore that gave up
 * waiting leaves nothing behind for the next one.
 *
 * Threads: the barrier is guarded by its mutex (any thread); the eventfd is
 * written by any thread and read by the agent's thread.
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
#include "common/utf8.h"
#include "common/util.h"

/* Failed kernels described in the status, and bytes of each error. */
#define ERRORS_MAX 8
#define ERROR_BYTES 300

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t gen_now;
static unsigned pending, ran, failed;
static struct {
	pid_t pid;
	char error[ERROR_BYTES + 1];
} errors[ERRORS_MAX];
static unsigned nerrors;
static int efd = -1;

int kernel_restore_fd(void)
{
	pthread_mutex_lock(&mu);
	if (efd < 0)
		efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int r = efd >= 0 ? efd : -errno;
	pthread_mutex_unlock(&mu);
	return r;
}

uint64_t kernel__restore_begin(void)
{
	pthread_mutex_lock(&mu);
	/* made before any context can settle: no signal is lost */
	if (efd < 0)
		efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	uint64_t g = ++gen_now;
	pending = ran = failed = nerrors = 0;
	pthread_mutex_unlock(&mu);
	return g;
}

void kernel__restore_expect(uint64_t gen)
{
	pthread_mutex_lock(&mu);
	if (gen == gen_now)
		pending++;
	pthread_mutex_unlock(&mu);
}

void kernel__restore_done(uint64_t gen, pid_t pid, int job_ran, const char *error)
{
	pthread_mutex_lock(&mu);
	int mine = gen == gen_now && pending > 0;
	if (mine) {
		pending--;
		ran += job_ran;
		if (error) {
			failed++;
			if (nerrors < ERRORS_MAX) {
				errors[nerrors].pid = pid;
				snprintf(errors[nerrors].error, sizeof(errors[nerrors].error), "%s",
					 error);
				nerrors++;
			}
		}
	}
	int fd = efd;
	pthread_mutex_unlock(&mu);
	if (mine && fd >= 0) {
		uint64_t one = 1;
		ssize_t w = write(fd, &one, sizeof(one));
		(void)w; /* EAGAIN only when the counter is huge: already readable */
	}
	if (mine && error) {
		char q[400];
		log_kv(LOG_WARN, "kernel.after_restore_failed", "pid=%ld error=%s", (long)pid,
		       log_quote(error, q, sizeof(q)));
	}
}

void kernel_restore_status(struct kernel_restore_status *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&mu);
	if (efd >= 0) {
		uint64_t v;
		ssize_t r = read(efd, &v, sizeof(v));
		(void)r; /* EAGAIN: nothing new */
	}
	out->pending = pending;
	out->ran = ran;
	out->failed = failed;
	json_t *a = json_array();
	for (unsigned i = 0; a && i < nerrors; i++) {
		json_t *e = json_object();
		if (!e || json_array_append_new(a, e) < 0)
			break;
		json_object_set_new(e, "pid", json_integer(errors[i].pid));
		json_object_set_new(e, "error",
				    utf8_json_lossy(errors[i].error, strlen(errors[i].error)));
	}
	out->errors = a;
	pthread_mutex_unlock(&mu);
}

int kernel__marked(struct kernel_ctx *c)
{
	return c->mark[0] && access(c->mark, F_OK) == 0;
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
