/*
 * deadline.c - monotonic deadlines and condition-variable waits (see
 * deadline.h).
 */
#include "common/deadline.h"

#include <errno.h>
#include <time.h>

#include "common/util.h"

int64_t deadline_after(int64_t timeout_ms)
{
	return timeout_ms < 0 ? -1 : util_now_ms() + timeout_ms;
}

int64_t deadline_left(int64_t deadline)
{
	if (deadline < 0)
		return -1;
	int64_t left = deadline - util_now_ms();
	return left > 0 ? left : 0;
}

int deadline_cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t a;
	int r = pthread_condattr_init(&a);
	if (r)
		return -r;
	r = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	if (!r)
		r = pthread_cond_init(cv, &a);
	pthread_condattr_destroy(&a);
	return -r;
}

int deadline_cond_wait(pthread_cond_t *cv, pthread_mutex_t *m, int64_t deadline)
{
	if (deadline < 0)
		return -pthread_cond_wait(cv, m);
	if (deadline <= util_now_ms())
		return -ETIMEDOUT;
	struct timespec ts = {
		.tv_sec = (time_t)(deadline / 1000),
		.tv_nsec = (long)(deadline % 1000) * 1000000L,
	};
	int r = pthread_cond_timedwait(cv, m, &ts);
	return r == ETIMEDOUT ? -ETIMEDOUT : -r;
}
