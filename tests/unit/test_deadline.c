/*
 * test_deadline.c - monotonic deadlines and condition-variable waits
 * (common/deadline.c): no deadline, a passed deadline, a wait that times
 * out, and a wait another thread ends by signalling.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/deadline.h"
#include "common/util.h"

static void test_deadline_arithmetic(void **state)
{
	(void)state;
	assert_int_equal(deadline_after(-1), -1);
	assert_int_equal(deadline_after(-500), -1);
	assert_int_equal(deadline_left(-1), -1);
	int64_t now = util_now_ms();
	int64_t d = deadline_after(60000);
	assert_true(d >= now + 60000);
	int64_t left = deadline_left(d);
	assert_true(left > 0 && left <= 60000);
	assert_int_equal(deadline_left(now - 10), 0);
	assert_int_equal(deadline_left(0), 0);
}

static void test_wait_times_out(void **state)
{
	(void)state;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv;
	assert_int_equal(deadline_cond_init(&cv), 0);
	pthread_mutex_lock(&m);
	/* a deadline already passed does not wait */
	assert_int_equal(deadline_cond_wait(&cv, &m, util_now_ms() - 1), -ETIMEDOUT);
	int64_t d = deadline_after(30);
	int r;
	do
		r = deadline_cond_wait(&cv, &m, d);
	while (r == 0); /* spurious wake-ups */
	assert_int_equal(r, -ETIMEDOUT);
	assert_true(util_now_ms() >= d);
	pthread_mutex_unlock(&m);
	pthread_cond_destroy(&cv);
}

struct waker {
	pthread_mutex_t m;
	pthread_cond_t cv;
	int flag;
};

static void *wake(void *arg)
{
	struct waker *w = arg;
	pthread_mutex_lock(&w->m);
	w->flag = 1;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->m);
	return NULL;
}

static void test_wait_is_woken(void **state)
{
	(void)state;
	for (int with_deadline = 0; with_deadline < 2; with_deadline++) {
		struct waker w = {.m = PTHREAD_MUTEX_INITIALIZER};
		assert_int_equal(deadline_cond_init(&w.cv), 0);
		/* a minute: only a missed wake-up would reach it */
		int64_t d = with_deadline ? deadline_after(60000) : -1;
		pthread_mutex_lock(&w.m);
		pthread_t t;
		assert_int_equal(pthread_create(&t, NULL, wake, &w), 0);
		int r = 0;
		while (!w.flag && r == 0)
			r = deadline_cond_wait(&w.cv, &w.m, d);
		assert_int_equal(r, 0);
		assert_true(w.flag);
		pthread_mutex_unlock(&w.m);
		pthread_join(t, NULL);
		pthread_cond_destroy(&w.cv);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deadline_arithmetic),
		cmocka_unit_test(test_wait_times_out),
		cmocka_unit_test(test_wait_is_woken),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
