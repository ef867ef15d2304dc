/*
 * test_crash.c - the fatal-signal report (common/crash.c): a child that
 * dies of SIGSEGV / SIGABRT writes the crash line and a backtrace, then
 * still dies of that signal; without the handler (the control) no line.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/crash.h"

/* Run a child that (maybe) installs the report, then raises sig; *status
 * is its wait status, out its stderr (NUL-terminated, cut to cap). */
static void run_child(int install, int sig, int *status, char *out, size_t cap)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(p[1], STDERR_FILENO);
		close(p[0]);
		signal(sig, SIG_DFL); /* cmocka catches faults in the parent's tests */
		if (install && crash_report_install("test") < 0)
			_exit(3);
		raise(sig);
		_exit(4);
	}
	close(p[1]);
	size_t n = 0;
	ssize_t k;
	while (n + 1 < cap && (k = read(p[0], out + n, cap - 1 - n)) > 0)
		n += (size_t)k;
	out[n] = '\0';
	close(p[0]);
	assert_int_equal(waitpid(pid, status, 0), pid);
}

static void test_segv_is_reported_and_still_fatal(void **state)
{
	(void)state;
	char out[16384];
	int st;
	run_child(0, SIGSEGV, &st, out, sizeof(out));
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGSEGV);
	assert_null(strstr(out, "event=test.crash")); /* control: nothing without it */

	run_child(1, SIGSEGV, &st, out, sizeof(out));
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGSEGV);
	assert_non_null(strstr(out, "level=error event=test.crash signal=11\n"));
	/* a backtrace follows: at least one frame line after the crash line */
	const char *after = strstr(out, "signal=11\n") + strlen("signal=11\n");
	assert_true(strlen(after) > 0);
}

static void test_abort_is_reported(void **state)
{
	(void)state;
	char out[16384];
	int st;
	run_child(1, SIGABRT, &st, out, sizeof(out));
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGABRT);
	assert_non_null(strstr(out, "event=test.crash signal=6\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_segv_is_reported_and_still_fatal),
		cmocka_unit_test(test_abort_is_reported),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
