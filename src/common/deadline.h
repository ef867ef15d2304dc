/*
 * deadline.h - deadlines as absolute CLOCK_MONOTONIC milliseconds (the clock
 * of util_now_ms), and condition variables that wait until one.
 *
 * A deadline is an int64_t in ms on util_now_ms()'s scale; a negative value
 * means "no deadline" (wait until woken).  Condition variables used with
 * deadline_cond_wait must be made by deadline_cond_init so that their
 * timeouts run on the monotonic clock: a wall-clock jump neither ends a wait
 * early nor stretches it.
 *
 * Threads: any; the wait follows pthread_cond_timedwait's rules (the mutex
 * is held by the caller).
 */
#ifndef PANDASTACK_DEADLINE_H
#define PANDASTACK_DEADLINE_H

#include <pthread.h>
#include <stdint.h>

/* deadline_after - the deadline timeout_ms from now, or -1 (none) when
 * timeout_ms is negative. */
int64_t deadline_after(int64_t timeout_ms);

/* deadline_left - ms left until deadline (0 once it passed), or -1 when
 * there is no deadline (negative). */
int64_t deadline_left(int64_t deadline);

/* deadline_cond_init - initialise cv with its timeouts on CLOCK_MONOTONIC.
 * Returns 0 or -errno from pthread_cond_init. */
int deadline_cond_init(pthread_cond_t *cv);

/*
 * deadline_cond_wait - wait on cv (m held by the caller, as for
 * pthread_cond_wait) until woken or until the deadline (negative: no
 * deadline).  Returns 0 when woken (possibly spuriously: recheck the
 * condition) or -ETIMEDOUT when the deadline has passed.
 */
int deadline_cond_wait(pthread_cond_t *cv, pthread_mutex_t *m, int64_t deadline);

#endif
