/*
 * test_spawn.c - starting programs detached (spawn.h) and running helpers
 * with a deadline (proc.h), with /bin/sh standing in for QEMU: output
 * capped in the logs, the exit status recorded, the pid file, a session of
 * its own, exec failures reported; and the host TSC measurement.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "engine/qemu/host_tsc.h"
#include "engine/qemu/proc.h"
#include "engine/qemu/spawn.h"

static char dir[] = "/tmp/test_spawn_XXXXXX";

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	util_rm_rf(dir);
	return 0;
}

/* Wait until pid is gone (it is not our child: poll a pidfd). */
static void wait_gone(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 10000), 1);
	close(fd);
}

static char *slurp(const char *name)
{
	char path[PATH_MAX + 64], *data = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (util_read_file(path, 1 << 24, &data, &len) < 0)
		return NULL;
	return data;
}

static void test_detached_with_logs_and_exit(void **state)
{
	(void)state;
	char *argv[] = {"/bin/sh", "-c",
			"echo console; echo problem >&2; sleep 0.2; exit 3", NULL};
	pid_t pid = 0;
	assert_int_equal(spawn_detached(argv, dir, NULL, &pid), 0);
	assert_true(pid > 0);
	/* Its own session, and not our child (the monitor is its parent). */
	assert_int_not_equal(getsid(pid), getsid(0));
	assert_int_equal(waitpid(pid, NULL, WNOHANG), -1);
	char *p = slurp("qemu.pid");
	assert_non_null(p);
	assert_int_equal(atoi(p), pid);
	free(p);
	wait_gone(pid);
	char st[96];
	assert_int_equal(spawn_exit_status(dir, 5000, st, sizeof(st)), 0);
	assert_string_equal(st, "exited 3");
	char *con = slurp("console.log"), *log = slurp("qemu.log");
	assert_string_equal(con, "console\n");
	assert_string_equal(log, "problem\n");
	free(con);
	free(log);
	char tail[64];
	assert_int_equal(spawn_log_tail(dir, "qemu.log", NULL, tail, sizeof(tail)), 0);
	assert_string_equal(tail, "problem");
}

/* A known harmless last line is passed over for the one before it; a log
 * of nothing else reads as empty. */
static void test_log_tail_skips_noise(void **state)
{
	(void)state;
	char path[PATH_MAX + 32], tail[128];
	snprintf(path, sizeof(path), "%s/noisy.log", dir);
	const char *text = "first\nthe real reason\n\nqemu: Expected vmdescription section, "
			   "but got 0\n  \n";
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	const char *const skip[] = {"Expected vmdescription section", NULL};
	/* Positive control: without the list, the noise is the last line. */
	assert_int_equal(spawn_log_tail(dir, "noisy.log", NULL, tail, sizeof(tail)), 0);
	assert_non_null(strstr(tail, "vmdescription"));
	assert_int_equal(spawn_log_tail(dir, "noisy.log", skip, tail, sizeof(tail)), 0);
	assert_string_equal(tail, "the real reason");
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("Expected vmdescription section\n", f);
	fclose(f);
	assert_int_equal(spawn_log_tail(dir, "noisy.log", skip, tail, sizeof(tail)), -ENODATA);
	assert_string_equal(tail, "");
	unlink(path);
}

static void test_logs_are_capped(void **state)
{
	(void)state;
	/* 4 MiB of output against a 64 KiB cap: the log stops at the cap,
	 * says so, and the writer is never blocked (it exits normally). */
	char *argv[] = {"/bin/sh", "-c", "head -c 4194304 /dev/zero | tr '\\0' x", NULL};
	pid_t pid = 0;
	struct spawn_opts o = {.log_cap = 65536};
	assert_int_equal(spawn_detached(argv, dir, &o, &pid), 0);
	wait_gone(pid);
	char st[96];
	assert_int_equal(spawn_exit_status(dir, 5000, st, sizeof(st)), 0);
	assert_string_equal(st, "exited 0");
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/console.log", dir);
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_true(sb.st_size >= 65536 && sb.st_size < 65536 + 100);
	char tail[64];
	assert_int_equal(spawn_log_tail(dir, "console.log", NULL, tail, sizeof(tail)), 0);
	assert_non_null(strstr(tail, "log truncated"));
}

static void test_killed_by_signal(void **state)
{
	(void)state;
	char *argv[] = {"/bin/sleep", "100", NULL};
	pid_t pid = 0;
	assert_int_equal(spawn_detached(argv, dir, NULL, &pid), 0);
	assert_int_equal(kill(pid, SIGKILL), 0);
	wait_gone(pid);
	char st[96];
	assert_int_equal(spawn_exit_status(dir, 5000, st, sizeof(st)), 0);
	assert_string_equal(st, "killed by signal 9 (SIGKILL)");
}

static void test_exec_failure_reported(void **state)
{
	(void)state;
	char *argv[] = {"/nonexistent/qemu", NULL};
	pid_t pid = 0;
	assert_int_equal(spawn_detached(argv, dir, NULL, &pid), -ENOENT);
	char *rel[] = {"relative", NULL};
	assert_int_equal(spawn_detached(rel, dir, NULL, &pid), -EINVAL);
	assert_int_equal(spawn_detached(argv, "/nonexistent/dir", NULL, &pid), -ENOENT);
}

/* A fresh folder under dir for one test. */
static void subdir(const char *name, char *out)
{
	snprintf(out, PATH_MAX, "%s/%s", dir, name);
	util_rm_rf(out);
	assert_int_equal(mkdir(out, 0755), 0);
}

static int alive(pid_t pid)
{
	return kill(pid, 0) == 0;
}

/* The child's environment is empty: nothing of ours reaches it. */
static void test_environment_is_empty(void **state)
{
	(void)state;
	char d[PATH_MAX];
	subdir("env", d);
	setenv("PANDASTACK_TEST_SECRET", "s3cret", 1);
	char *argv[] = {"/usr/bin/env", NULL};
	pid_t pid = 0;
	assert_int_equal(spawn_detached(argv, d, NULL, &pid), 0);
	wait_gone(pid);
	char st[96];
	assert_int_equal(spawn_exit_status(d, 5000, st, sizeof(st)), 0);
	assert_string_equal(st, "exited 0");
	char path[PATH_MAX + 32], *out = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "%s/console.log", d);
	assert_int_equal(util_read_file(path, 65536, &out, &len), 0);
	/* Positive control: our own environment has the variable. */
	assert_non_null(getenv("PANDASTACK_TEST_SECRET"));
	assert_int_equal(len, 0);
	free(out);
	unsetenv("PANDASTACK_TEST_SECRET");
}

/* The monitor ends its child at the deadline file's time, and a later
 * deadline written before then postpones it. */
static void test_deadline_ends_child(void **state)
{
	(void)state;
	char d[PATH_MAX];
	subdir("deadline", d);
	char *argv[] = {"/bin/sleep", "100", NULL};
	pid_t pid = 0;
	struct spawn_opts o = {.watch = 1};
	int64_t now = (int64_t)(util_wall_ns() / 1000000u);
	assert_int_equal(spawn_set_deadline(d, now + 400), 0);
	assert_int_equal(spawn_detached(argv, d, &o, &pid), 0);
	/* Postponed by 1.5 s: still alive after the first deadline. */
	assert_int_equal(spawn_set_deadline(d, now + 1500), 0);
	usleep(900 * 1000);
	assert_true(alive(pid));
	wait_gone(pid);
	int64_t ended = (int64_t)(util_wall_ns() / 1000000u);
	assert_true(ended >= now + 1500);
	char st[128];
	assert_int_equal(spawn_exit_status(d, 5000, st, sizeof(st)), 0);
	assert_string_equal(st, "killed by signal 9 (SIGKILL): deadline passed");
	/* Without a deadline nothing ends it (control). */
	subdir("nodeadline", d);
	assert_int_equal(spawn_detached(argv, d, &o, &pid), 0);
	usleep(300 * 1000);
	assert_true(alive(pid));
	kill(pid, SIGKILL);
	wait_gone(pid);
}

/* Removing the folder ends the child. */
static void test_removed_folder_ends_child(void **state)
{
	(void)state;
	char d[PATH_MAX];
	subdir("removed", d);
	char *argv[] = {"/bin/sleep", "100", NULL};
	pid_t pid = 0;
	struct spawn_opts o = {.watch = 1};
	assert_int_equal(spawn_detached(argv, d, &o, &pid), 0);
	usleep(200 * 1000);
	assert_true(alive(pid));
	/* Removing a file in it is not removing it. */
	char f[PATH_MAX + 16];
	snprintf(f, sizeof(f), "%s/qemu.pid", d);
	assert_int_equal(unlink(f), 0);
	usleep(300 * 1000);
	assert_true(alive(pid));
	assert_int_equal(util_rm_rf(d), 0);
	wait_gone(pid);
}

/* A lifeline that reaches EOF before its byte ends the child; after the
 * byte (spawn_release) it does not. */
static void test_lifeline(void **state)
{
	(void)state;
	char d[PATH_MAX];
	char *argv[] = {"/bin/sleep", "100", NULL};
	for (int release = 0; release < 2; release++) {
		subdir(release ? "life-kept" : "life-cut", d);
		int p[2];
		assert_int_equal(pipe2(p, O_CLOEXEC), 0);
		pid_t pid = 0;
		struct spawn_opts o = {.lifeline_fd = p[0]};
		assert_int_equal(spawn_detached(argv, d, &o, &pid), 0);
		close(p[0]);
		usleep(200 * 1000);
		assert_true(alive(pid));
		if (release)
			assert_int_equal(spawn_release(p[1]), 0);
		else
			close(p[1]);
		usleep(500 * 1000);
		if (release) {
			assert_true(alive(pid));
			kill(pid, SIGKILL);
		}
		wait_gone(pid);
		char st[128];
		assert_int_equal(spawn_exit_status(d, 5000, st, sizeof(st)), 0);
		assert_string_equal(st, release ? "killed by signal 9 (SIGKILL)"
						: "killed by signal 9 (SIGKILL): its daemon went away "
						  "before it was used");
	}
}

static void test_proc_run(void **state)
{
	(void)state;
	char out[64];
	int st = 0;
	char *ok[] = {"/bin/sh", "-c", "echo hi; echo there >&2; exit 4", NULL};
	assert_int_equal(proc_run(ok, 5000, out, sizeof(out), &st), 0);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 4);
	assert_non_null(strstr(out, "hi\n"));
	assert_non_null(strstr(out, "there\n"));
	assert_int_equal(proc_run_ok(ok, 5000, out, sizeof(out)), -EIO);
	/* A deadline kills; a grandchild holding the pipe does not hold us. */
	char *slow[] = {"/bin/sleep", "30", NULL};
	int64_t t0 = util_now_ms();
	assert_int_equal(proc_run(slow, 200, NULL, 0, &st), -ETIMEDOUT);
	assert_true(util_now_ms() - t0 < 5000);
	char *bg[] = {"/bin/sh", "-c", "sleep 6 & echo started", NULL};
	t0 = util_now_ms();
	assert_int_equal(proc_run(bg, 20000, out, sizeof(out), &st), 0);
	assert_true(util_now_ms() - t0 < 5000);
	/* Output beyond the buffer is dropped, the buffer stays terminated. */
	char *lots[] = {"/bin/sh", "-c", "head -c 100000 /dev/zero | tr '\\0' y", NULL};
	assert_int_equal(proc_run(lots, 5000, out, 8, &st), 0);
	assert_string_equal(out, "yyyyyyy");
	char *none[] = {"no-such-program-here", NULL};
	assert_int_equal(proc_run(none, 1000, NULL, 0, &st), -ENOENT);
}

static void test_host_tsc(void **state)
{
	(void)state;
	unsigned a = 0, b = 0;
	if (host_tsc_khz(&a) == -ENOTSUP)
		skip();
	assert_int_equal(host_tsc_khz(&b), 0);
	assert_true(a > 100000 && a < 10000000);
	/* Two measurements agree within 0.5 %. */
	unsigned diff = a > b ? a - b : b - a;
	assert_true(diff * 200u < a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_detached_with_logs_and_exit),
		cmocka_unit_test(test_logs_are_capped),
		cmocka_unit_test(test_log_tail_skips_noise),
		cmocka_unit_test(test_killed_by_signal),
		cmocka_unit_test(test_exec_failure_reported),
		cmocka_unit_test(test_environment_is_empty),
		cmocka_unit_test(test_deadline_ends_child),
		cmocka_unit_test(test_removed_folder_ends_child),
		cmocka_unit_test(test_lifeline),
		cmocka_unit_test(test_proc_run),
		cmocka_unit_test(test_host_tsc),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
