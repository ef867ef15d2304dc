/*
 * thread.c - detached worker threads (see thread.h).
 */
#include "thread.h"

#include <pthread.h>

int thread_start_detached(void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	int e = pthread_attr_init(&attr);
	if (e)
		return -e;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_t th;
	e = pthread_create(&th, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return -e;
}
