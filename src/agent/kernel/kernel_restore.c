/*
 * kernel_restore.c - the barrier a restore that hands a sandbox out waits
 * on (kernel.h, kernel_reseed_all): which contexts still run their
 * after-restore job, and how those that ran fared.  Each context's own step
 * (kernel__restore_check) lives with its client thread (kernel_thread.c);
 * this file calls no other part of the kernels.
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

#include "agent/kernel/kernel_int.h"
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
