/*
 * thread.h - starting the detached worker threads of the daemon (jobs,
 * endings, forwards, splices).  Any thread.
 */
#ifndef PANDASTACK_COMMON_THREAD_H
#define PANDASTACK_COMMON_THREAD_H

/*
 * thread_start_detached - run fn(arg) on a new detached thread with the
 * default stack and the caller's signal mask.  0, or -errno (-EAGAIN:
 * out of threads) and fn never runs: the caller still owns arg.
 */
int thread_start_detached(void *(*fn)(void *), void *arg);

#endif
