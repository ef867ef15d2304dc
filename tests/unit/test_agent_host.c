/*
 * test_agent_host.c - the agent (pandastack-agent --listen) driven through
 * guest_conn on the host: exec (exit codes, signals, stderr, env, cwd, stdin,
 * 20 MiB of output, timeouts killing the tree, 64 at once, a 200 MiB upload
 * beside execs, output cap, cancel), restore and request validation.  File
 * operations are in test_agent_files.c; the handshake, reconnects and a
 * hostile host in test_agent_protocol.c.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent_harness.h"
#include "common/pip_index.h"
#include "common/proto.h"

/* --- exec basics ------------------------------------------------------------ */

static void test_exit_codes_and_signals(void **state)
{
	struct agent_fixture *f = *state;
	struct exec_result r;
	assert_int_equal(harness_sh(f->c, "exit 7", &r), 0);
	assert_null(end_error(r.end));
	assert_int_equal(end_int(r.end, "exit_code"), 7);
	assert_true(json_is_null(json_object_get(r.end, "signal")));
	assert_true(json_is_false(json_object_get(r.end, "timed_out")));
	assert_true(json_is_integer(json_object_get(r.end, "duration_ms")));
	exec_result_clear(&r);

	assert_int_equal(harness_sh(f->c, "kill -TERM $$", &r), 0);
	assert_int_equal(end_int(r.end, "exit_code"), 128 + 15);
	assert_int_equal(end_int(r.end, "signal"), 15);
	exec_result_clear(&r);

	assert_int_equal(harness_sh(f->c, "true", &r), 0);
	assert_int_equal(end_int(r.end, "exit_code"), 0);
	assert_int_equal(r.outlen, 0);
	/* the "started" event names the process */
	assert_non_null(r.started);
	assert_string_equal(json_string_value(json_object_get(r.started, "event")), "started");
	assert_true(json_integer_value(json_object_get(r.started, "pid")) > 0);
	exec_result_clear(&r);
}

static void test_stdout_and_stderr(void **state)
{
	struct agent_fixture *f = *state;
	struct exec_result r;
	assert_int_equal(harness_sh(f->c, "echo out; echo err >&2; printf 'x\\0y'", &r), 0);
	assert_int_equal(r.outlen, 7);
	assert_memory_equal(r.out, "out\nx\0y", 7);
	assert_int_equal(r.errlen, 4);
	assert_memory_equal(r.err, "err\n", 4);
	assert_false(json_is_true(json_object_get(r.end, "stdout_truncated")));
	exec_result_clear(&r);
}

static void test_env(void **state)
{
	struct agent_fixture *f = *state;
	struct exec_result r;
	json_t *req = json_pack("{s:s, s:s, s:{s:s, s:s}}", "op", "exec", "cmd",
				"printf '%s|%s|%s|%s' \"$FOO\" \"$HOME\" \"$LANG\" \"$PATH\"", "env",
				"FOO", "bar baz", "HOME", "/custom");
	assert_int_equal(harness_exec(f->c, req, NULL, 0, &r, 10000), 0);
	assert_string_equal((char *)r.out, "bar baz|/custom|C.UTF-8|"
					   "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	exec_result_clear(&r);
	/* commands get a conventional fd limit, not the agent's raised one */
	assert_int_equal(harness_sh(f->c, "ulimit -n", &r), 0);
	assert_true(atoi((char *)r.out) > 0 && atoi((char *)r.out) <= 1024);
	exec_result_clear(&r);
	/* the agent's own environment does not leak into commands */
	setenv("PANDASTACK_TEST_LEAK", "1", 1);
	assert_int_equal(harness_sh(f->c, "env | grep -c PANDASTACK || true", &r), 0);
	assert_string_equal((char *)r.out, "0\n");
	exec_result_clear(&r);
}

static void test_cwd(void **state)
{
	struct agent_fixture *f = *state;
	struct exec_result r;
	char real[PATH_MAX], want[PATH_MAX + 2];
	assert_non_null(realpath(f->a.ws, real));
	snprintf(want, sizeof(want), "%s\n", real);
	assert_int_equal(harness_sh(f->c, "pwd -P", &r), 0);
	assert_string_equal((char *)r.out, want);
	exec_result_clear(&r);

	json_t *req = json_pack("{s:s, s:s, s:s}", "op", "exec", "cmd", "pwd", "cwd", "/");
	assert_int_equal(harness_exec(f->c, req, NULL, 0, &r, 10000), 0);
	assert_string_equal((char *)r.out, "/\n");
	exec_result_clear(&r);

	req = json_pack("{s:s, s:s, s:s}", "op", "exec", "cmd", "pwd", "cwd", "/nonexistent/dir");
	assert_int_equal(harness_exec(f->c, req, NULL, 0, &r, 10000), 0);
	assert_string_equal(end_error(r.end), "ENOENT");
	exec_result_clear(&r);
}

static void test_stdin(void **state)
{
	struct agent_fixture *f = *state;
	struct exec_result r;
	/* given input arrives whole */
	json_t *req = json_pack("{s:s, s:s, s:b}", "op", "exec", "cmd", "cat", "stdin", 1);
	assert_int_equal(harness_exec(f->c, req, "hello\nworld\n", 12, &r, 10000), 0);
	assert_int_equal(r.outlen, 12);
	assert_memory_equal(r.out, "hello\nworld\n", 12);
	exec_result_clear(&r);

	/* 3 MiB of input: more than the credit window and the pipe buffer */
	size_t n = 3u << 20;
	uint8_t *big = malloc(n);
	assert_non_null(big);
	uint64_t st = 42;
	harness_fill(&st, big, n);
	req = json_pack("{s:s, s:s, s:b}", "op", "exec", "cmd", "wc -c", "stdin", 1);
	assert_int_equal(harness_exec(f->c, req, big, n, &r, 30000), 0);
	assert_string_equal((char *)r.out, "3145728\n");
	exec_result_clear(&r);
	free(big);

	/* no input given: the command sees EOF at once instead of hanging */
	assert_int_equal(harness_sh(f->c, "cat; echo done", &r), 0);
	assert_string_equal((char *)r.out, "done\n");
	exec_result_clear(&r);

	/* a command that stops reading early: the rest is dropped, no hang */
	req = json_pack("{s:s, s:s, s:b}", "op", "exec", "cmd", "head -c 5", "stdin", 1);
	big = calloc(1, 1u << 20);
	assert_int_equal(harness_exec(f->c, req, big, 1u << 20, &r, 30000), 0);
	assert_int_equal(r.outlen, 5);
	exec_result_clear(&r);
	free(big);
}

static void test_stdout_20mib(void **state)
{
	struct agent_fixture *f = *state;
	/* seq 1 3000000 is 22.9 MB; build the same text here */
	size_t cap = 24u << 20, n = 0;
	char *want = malloc(cap);
	assert_non_null(want);
	for (int i = 1; i <= 3000000; i++)
		n += (size_t)snprintf(want + n, cap - n, "%d\n", i);
	assert_true(n > (20u << 20));
	struct exec_result r;
	assert_int_equal(harness_sh(f->c, "seq 1 3000000", &r), 0);
	assert_int_equal(end_int(r.end, "exit_code"), 0);
	assert_int_equal(r.outlen, n);
	assert_memory_equal(r.out, want, n);
	exec_result_clear(&r);
	free(want);
}

/* --- killing ------------------------------------------------------------------- */

static void test_timeout_kills_tree(void **state)
{
	struct agent_fixture *f = *state;
	char tok[32], cmd[128];
	harness_sleep_token(tok, sizeof(tok));
	snprintf(cmd, sizeof(cmd), "sleep %s & sleep %s", tok, tok);
	json_t *req = json_pack("{s:s, s:s, s:i}", "op", "exec", "cmd", cmd, "timeout_ms", 300);
	struct exec_result r;
	assert_int_equal(harness_exec(f->c, req, NULL, 0, &r, 30000), 0);
	assert_null(end_error(r.end));
	assert_true(json_is_true(json_object_get(r.end, "timed_out")));
	assert_int_equal(end_int(r.end, "signal"), 9);
	assert_int_equal(end_int(r.end, "exit_code"), 137);
	assert_true(end_int(r.end, "duration_ms") >= 300);
	exec_result_clear(&r);
	assert_int_equal(harness_wait_no_procs(tok, 5000), 0);
}

/* A cgroup v2 folder this host lets us use, or NULL. */
static const char *usable_cgroup(char *buf, size_t len)
{
	static const char *const roots[] = {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"};
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		char p[2 * PATH_MAX];
		snprintf(p, sizeof(p), "%s/cgroup.procs", roots[i]);
		if (access(p, W_OK) < 0)
			continue;
		snprintf(buf, len, "%s/pandastack-test-%d", roots[i], (int)getpid());
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			continue;
		snprintf(p, sizeof(p), "%s/cgroup.kill", buf);
		if (access(p, W_OK) == 0)
			return buf;
		rmdir(buf);
	}
	return NULL;
}

/* A process that leaves the process group (setsid) escapes a pgroup kill,
 * not the exec's cgroup: with --cgroup a timeout leaves nothing behind. */
static void test_timeout_kills_escaped_tree_with_cgroup(void **state)
{
	(void)state;
	char cg[PATH_MAX];
	if (!usable_cgroup(cg, sizeof(cg)))
		skip();
	struct agent_proc a;
	struct guest_conn *c;
	assert_int_equal(harness_start_as(&a, 0, cg), 0);
	assert_int_equal(guest_conn_open(a.sock, 5000, &c), 0);
	char tok[32], cmd[160];
	harness_sleep_token(tok, sizeof(tok));
	snprintf(cmd, sizeof(cmd), "setsid sleep %s & sleep %s & sleep %s", tok, tok, tok);
	json_t *req = json_pack("{s:s, s:s, s:i}", "op", "exec", "cmd", cmd, "timeout_ms", 300);
	struct exec_result r;
	assert_int_equal(harness_exec(c, req, NULL, 0, &r, 30000), 0);
	assert_true(json_is_true(json_object_get(r.end, "timed_out")));
	exec_result_clear(&r);
	assert_int_equal(harness_wait_no_procs(tok, 5000), 0);
	guest_conn_close(c);
	assert_int_equal(harness_stop(&a), 0);
	/* the agent removed its exec groups; only our folder is left */
	assert_int_equal(rmdir(cg), 0);
}

/* The cgroup v2 group an exec's shell reports for itself (the "0::" line
 * of /proc/self/cgroup), in buf, its newline cut. */
static void exec_own_cgroup(struct guest_conn *c, char *buf, size_t len)
{
	json_t *req = json_pack("{s:s, s:s}", "op", "exec", "cmd",
				"grep '^0::' /proc/self/cgroup");
	struct exec_result r;
	assert_int_equal(harness_exec(c, req, NULL, 0, &r, 30000), 0);
	assert_int_equal(end_int(r.end, "exit_code"), 0);
	snprintf(buf, len, "%.*s", (int)strcspn((const char *)r.out, "\n"), (const char *)r.out);
	exec_result_clear(&r);
}

/* With --cgroup every exec starts inside a group of its own under that
 * folder (created there, or joined before execve on older kernels); the
 * control: without --cgroup it stays in the agent's. */
static void test_exec_runs_in_its_own_group(void **state)
{
	struct agent_fixture *f = *state;
	char cg[PATH_MAX], mine[PATH_MAX + 16], got[PATH_MAX + 16], other[PATH_MAX + 16];
	snprintf(mine, sizeof(mine), "/pandastack-test-%d/exec-", (int)getpid());
	exec_own_cgroup(f->c, got, sizeof(got));
	assert_null(strstr(got, "/exec-"));
	if (!usable_cgroup(cg, sizeof(cg)))
		skip();
	struct agent_proc a;
	struct guest_conn *c;
	assert_int_equal(harness_start_as(&a, 0, cg), 0);
	assert_int_equal(guest_conn_open(a.sock, 5000, &c), 0);
	exec_own_cgroup(c, got, sizeof(got));
	exec_own_cgroup(c, other, sizeof(other));
	/* "0::<path>": a group of its own below our folder, a new one each time */
	assert_non_null(strstr(got, mine));
	assert_non_null(strstr(other, mine));
	assert_string_not_equal(got, other);
	guest_conn_close(c);
	assert_int_equal(harness_stop(&a), 0);
	assert_int_equal(rmdir(cg), 0);
}

static void test_cancel_kills_command(void **state)
{
	struct agent_fixture *f = *state;
	char tok[32], cmd[128];
	harness_sleep_token(tok, sizeof(tok));
	snprintf(cmd, sizeof(cmd), "echo started; sleep %s; echo never", tok);
	json_t *req = json_pack("{s:s, s:s}", "op", "exec", "cmd", cmd);
	struct guest_stream *s;
	assert_int_equal(guest_stream_open(f->c, req, &s), 0);
	json_decref(req);
	struct guest_msg m;
	int got_output = 0;
	while (!got_output) {
		assert_int_equal(guest_stream_read(s, &m, 10000), 1);
		got_output = m.kind == GUEST_MSG_DATA;
		guest_msg_clear(&m);
	}
	assert_true(harness_count_procs(tok) >= 1); /* sleep, maybe its sh */
	assert_int_equal(guest_stream_cancel(s), 0);
	struct exec_result r = {0};
	assert_int_equal(harness_collect(s, &r, 10000), 0);
	assert_string_equal(end_error(r.end), "ECANCELED");
	assert_null(strstr(r.out ? (char *)r.out : "", "never"));
	exec_result_clear(&r);
	guest_stream_close(s);
	assert_int_equal(harness_wait_no_procs(tok, 5000), 0);
}

/* A background job that keeps its pipes open, idle or writing, does not
 * hold the exec open for ever; it keeps running. */
static void test_background_job_does_not_hold_exec(void **state)
{
	struct agent_fixture *f = *state;
	char tok[32], cmd[160];
	harness_sleep_token(tok, sizeof(tok));
	snprintf(cmd, sizeof(cmd), "sleep %s & echo started", tok);
	struct exec_result r;
	assert_int_equal(harness_sh(f->c, cmd, &r), 0);
	assert_string_equal((char *)r.out, "started\n");
	assert_int_equal(end_int(r.end, "exit_code"), 0);
	exec_result_clear(&r);
	assert_true(harness_count_procs(tok) >= 1); /* still running */
	harness_kill_procs(tok);
	/* a writer that never stops: the exec still ends, within the caps */
	json_t *req = json_pack("{s:s, s:s, s:i}", "op", "exec", "cmd",
				"(while :; do echo y; done) & echo go", "output_cap", 4096);
	assert_int_equal(harness_exec(f->c, req, NULL, 0, &r, 30000), 0);
	assert_null(end_error(r.end));
	assert_int_equal(end_int(r.end, "exit_code"), 0);
	assert_true(r.outlen >= 3);
	exec_result_clear(&r);
}

/* --- concurrency ------------------------------------------------------------- */

/* 64 execs on one connection, each waiting until all 64 have started: this
 * only finishes if the agent really runs them at the same time. */
static void test_64_concurrent_execs(void **state)
{
	struct agent_fixture *f = *state;
	enum { N = 64 };
	struct guest_stream *s[N];
	for (int i = 0; i < N; i++) {
		char cmd[256];
		snprintf(cmd, sizeof(cmd),
			 "touch ready.%d; i=0; while [ $(ls | grep -c '^ready') -lt %d ]; do "
			 "i=$((i+1)); [ $i -gt 600 ] && exit 9; sleep 0.05; done; echo %d",
			 i, N, i);
		json_t *req = json_pack("{s:s, s:s}", "op", "exec", "cmd", cmd);
		assert_int_equal(guest_stream_open(f->c, req, &s[i]), 0);
		json_decref(req);
	}
	for (int i = 0; i < N; i++) {
		struct exec_result r = {0};
		assert_int_equal(harness_collect(s[i], &r, 60000), 0);
		assert_null(end_error(r.end));
		assert_int_equal(end_int(r.end, "exit_code"), 0);
		char want[16];
		snprintf(want, sizeof(want), "%d\n", i);
		assert_string_equal((char *)r.out, want);
		exec_result_clear(&r);
		guest_stream_close(s[i]);
	}
}

/* An upload of 200 MiB runs on one thread; execs beside it still answer
 * while it is in flight. */
struct upload {
	struct guest_conn *c;
	char path[2 * PATH_MAX];
	size_t total;
	volatile size_t sent;
	int rc;
	json_t *end;
};

static void *upload_main(void *arg)
{
	struct upload *u = arg;
	json_t *req = json_pack("{s:s, s:s}", "op", "file_write", "path", u->path);
	struct guest_stream *s;
	u->rc = guest_stream_open(u->c, req, &s);
	json_decref(req);
	if (u->rc < 0)
		return NULL;
	size_t chunk = 1u << 20;
	uint8_t *buf = malloc(chunk);
	uint64_t st = 7;
	while (buf && u->sent < u->total && u->rc == 0) {
		harness_fill(&st, buf, chunk);
		u->rc = guest_stream_write(s, buf, chunk, 30000);
		__atomic_add_fetch(&u->sent, chunk, __ATOMIC_SEQ_CST);
	}
	free(buf);
	if (u->rc == 0)
		u->rc = guest_stream_write_eof(s);
	struct exec_result r = {0};
	if (u->rc == 0)
		u->rc = harness_collect(s, &r, 60000);
	u->end = json_incref(r.end);
	exec_result_clear(&r);
	guest_stream_close(s);
	return NULL;
}

static void test_upload_beside_exec(void **state)
{
	struct agent_fixture *f = *state;
	struct upload u = {.c = f->c, .total = 200u << 20};
	snprintf(u.path, sizeof(u.path), "%s/big.bin", f->a.ws);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, upload_main, &u), 0);
	while (__atomic_load_n(&u.sent, __ATOMIC_SEQ_CST) < (8u << 20) && u.rc == 0)
		usleep(1000);
	int answered_during_upload = 0;
	for (int i = 0; i < 5; i++) {
		struct exec_result r;
		assert_int_equal(harness_exec(f->c,
					      json_pack("{s:s, s:s}", "op", "exec", "cmd", "echo ping"),
					      NULL, 0, &r, 10000),
				 0);
		assert_string_equal((char *)r.out, "ping\n");
		if (__atomic_load_n(&u.sent, __ATOMIC_SEQ_CST) < u.total)
			answered_during_upload++;
		exec_result_clear(&r);
	}
	pthread_join(th, NULL);
	assert_int_equal(u.rc, 0);
	assert_true(answered_during_upload >= 1);
	assert_null(end_error(u.end));
	assert_int_equal(end_int(u.end, "size"), (json_int_t)u.total);
	json_decref(u.end);
	/* same host: check the bytes on disk */
	int fd = open(u.path, O_RDONLY);
	assert_true(fd >= 0);
	size_t chunk = 1u << 20;
	uint8_t *want = malloc(chunk), *got = malloc(chunk);
	uint64_t st = 7;
	for (size_t off = 0; off < u.total; off += chunk) {
		harness_fill(&st, want, chunk);
		assert_int_equal(util_read_full(fd, got, chunk), (ssize_t)chunk);
		assert_memory_equal(got, want, chunk);
	}
	assert_int_equal(util_read_full(fd, got, 1), 0);
	close(fd);
	free(want);
	free(got);
	unlink(u.path);
}

/* --- output cap ------------------------------------------------------------------ */

static void test_output_cap(void **state)
{
	struct agent_fixture *f = *state;
	json_t *req = json_pack("{s:s, s:s, s:i}", "op", "exec", "cmd",
				"head -c 100000 /dev/zero | tr '\\0' a; echo more >&2", "output_cap",
				1000);
	struct exec_result r;
	assert_int_equal(harness_exec(f->c, req, NULL, 0, &r, 10000), 0);
	const char *marker = "\n[pandastack: output truncated at 1000 bytes]\n";
	assert_int_equal(r.outlen, 1000 + strlen(marker));
	for (int i = 0; i < 1000; i++)
		assert_int_equal(r.out[i], 'a');
	assert_memory_equal(r.out + 1000, marker, strlen(marker));
	assert_true(json_is_true(json_object_get(r.end, "stdout_truncated")));
	assert_false(json_is_true(json_object_get(r.end, "stderr_truncated")));
	assert_string_equal((char *)r.err, "more\n");
	assert_int_equal(end_int(r.end, "exit_code"), 0);
	exec_result_clear(&r);

	/* past the cap the pipe keeps draining: a writer of 50 MB finishes */
	req = json_pack("{s:s, s:s, s:i}", "op", "exec", "cmd",
			"head -c 50000000 /dev/zero; echo $? >&2", "output_cap", 10);
	assert_int_equal(harness_exec(f->c, req, NULL, 0, &r, 60000), 0);
	assert_int_equal(end_int(r.end, "exit_code"), 0);
	assert_string_equal((char *)r.err, "0\n");
	assert_true(json_is_true(json_object_get(r.end, "stdout_truncated")));
	exec_result_clear(&r);
}

/* --- requests, handshake, restore -------------------------------------------------- */

static void test_request_validation(void **state)
{
	struct agent_fixture *f = *state;
	static const char *const bad[] = {
		"{\"op\": \"launch\"}",
		"{\"cmd\": \"true\"}",
		"{\"op\": \"exec\"}",
		"{\"op\": \"exec\", \"cmd\": 5}",
		"{\"op\": \"exec\", \"cmd\": \"true\", \"timeout_ms\": -1}",
		"{\"op\": \"exec\", \"cmd\": \"true\", \"timeout_ms\": 1.5}",
		"{\"op\": \"exec\", \"cmd\": \"true\", \"env\": {\"A\": 1}}",
		"{\"op\": \"exec\", \"cmd\": \"true\", \"env\": {\"A=B\": \"x\"}}",
		"{\"op\": \"exec\", \"cmd\": \"true\", \"cwd\": \"relative\"}",
		"{\"op\": \"exec\", \"cmd\": \"true\", \"stdin\": \"yes\"}",
		"{\"op\": \"exec\", \"cmd\": \"true\", \"colour\": true}",
		"{\"op\": \"stat\", \"path\": \"relative/path\"}",
		"{\"op\": \"mkdir\", \"path\": \"/x\", \"mode\": 99999}",
		"{\"op\": \"restore\", \"wall_clock_ns\": \"12x\", \"entropy\": \"00\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *req = json_loads(bad[i], 0, NULL);
		assert_non_null(req);
		json_t *end = harness_call(f->c, req);
		assert_non_null(end);
		if (!end_error(end) || strcmp(end_error(end), "EINVAL") != 0)
			fail_msg("request %s: %s", bad[i], end_error(end) ? end_error(end) : "ok");
		json_decref(end);
	}
	/* a command longer than one argv string may be */
	char *huge = malloc(200000);
	memset(huge, 'x', 199999);
	huge[199999] = '\0';
	json_t *end = harness_call(f->c, json_pack("{s:s, s:s}", "op", "exec", "cmd", huge));
	assert_string_equal(end_error(end), "E2BIG");
	json_decref(end);
	free(huge);
	/* the connection is still fine */
	struct exec_result r;
	assert_int_equal(harness_sh(f->c, "echo ok", &r), 0);
	assert_string_equal((char *)r.out, "ok\n");
	exec_result_clear(&r);
}

static void test_restore(void **state)
{
	struct agent_fixture *f = *state;
	assert_int_equal(guest_conn_restore(f->c, NULL, 5000), 0);
	/* in --listen mode the agent never touches the host's clock */
	json_t *end = harness_call(
		f->c, json_pack("{s:s, s:s, s:s}", "op", "restore", "wall_clock_ns", "1000000000",
				"entropy",
				"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
				"202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"));
	assert_non_null(end);
	assert_null(end_error(end));
	assert_true(json_is_false(json_object_get(end, "clock_set")));
	json_decref(end);
	assert_true(util_wall_ns() > 1600000000ull * 1000000000ull);
	json_t *info = guest_conn_info(f->c);
	assert_string_equal(json_string_value(json_object_get(info, "mode")), "listen");
	assert_int_equal(json_integer_value(json_object_get(info, "proto")), PROTO_VERSION);
}

/* The agent's pip config file as text ("" when absent). */
static char *pip_conf_text(struct agent_fixture *f)
{
	char *txt = NULL;
	int r = util_read_file(f->a.pip_conf, 1 << 16, &txt, NULL);
	if (r == -ENOENT)
		return strdup("");
	assert_int_equal(r, 0);
	return txt;
}

static json_t *restore_request(const char *pip_index_url)
{
	return json_pack("{s:s, s:s, s:s, s:s}", "op", "restore", "wall_clock_ns", "1000000000",
			 "entropy",
			 "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
			 "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
			 "pip_index_url", pip_index_url);
}

/* The host's package index travels in the restore message into the pip
 * config file; a restore without one removes it; a URL that would break
 * the file's lines is refused on both sides. */
static void test_restore_pip_index(void **state)
{
	struct agent_fixture *f = *state;
	char *txt = pip_conf_text(f);
	assert_string_equal(txt, ""); /* nothing before the first restore */
	free(txt);

	struct guest_restore_opts o = {.pip_index_url = "https://mirror.example/pypi/simple/"};
	assert_int_equal(guest_conn_restore(f->c, &o, 5000), 0);
	txt = pip_conf_text(f);
	assert_non_null(strstr(txt, "\n[global]\nindex-url = https://mirror.example/pypi/simple/\n"));
	assert_null(strstr(txt, "trusted-host"));
	free(txt);

	/* plain http: pip must also be told to trust the host (with its port) */
	o.pip_index_url = "http://user:pw@10.9.8.7:3141/root/pypi/+simple/";
	assert_int_equal(guest_conn_restore(f->c, &o, 5000), 0);
	txt = pip_conf_text(f);
	assert_non_null(strstr(txt, "\nindex-url = http://user:pw@10.9.8.7:3141/root/pypi/+simple/\n"
				    "trusted-host = 10.9.8.7:3141\n"));
	free(txt);

	/* the END says so */
	json_t *end = harness_call(f->c, restore_request("https://idx.example/simple"));
	assert_non_null(end);
	assert_null(end_error(end));
	assert_true(json_is_true(json_object_get(end, "pip_index_url")));
	json_decref(end);

	/* refused by the host before sending, and by the agent if sent anyway:
	 * the file keeps its last content */
	o.pip_index_url = "https://ok.example/\nindex-url = https://evil.example/";
	assert_int_equal(guest_conn_restore(f->c, &o, 5000), -EINVAL);
	end = harness_call(f->c, restore_request(o.pip_index_url));
	assert_non_null(end);
	assert_string_equal(end_error(end), "EINVAL");
	json_decref(end);
	char ent[129];
	memset(ent, '0', 128);
	ent[128] = '\0';
	json_t *bad[] = {json_integer(5), json_string("ftp://ok.example/")};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *req = json_pack("{s:s, s:s, s:s, s:o}", "op", "restore", "wall_clock_ns", "1",
					"entropy", ent, "pip_index_url", bad[i]);
		assert_non_null(req);
		end = harness_call(f->c, req);
		assert_non_null(end);
		if (!end_error(end) || strcmp(end_error(end), "EINVAL") != 0)
			fail_msg("pip_index_url #%zu: %s", i, end_error(end) ? end_error(end) : "ok");
		json_decref(end);
	}
	/* a NUL (which would cut the line short): the JSON itself is refused */
	static const char nul_url[] = "https://ok.example/\0\nx = y";
	end = harness_call(f->c, json_pack("{s:s, s:s, s:s, s:o}", "op", "restore", "wall_clock_ns",
					   "1", "entropy", ent, "pip_index_url",
					   json_stringn(nul_url, sizeof(nul_url) - 1)));
	assert_non_null(end);
	assert_string_equal(json_string_value(json_object_get(end, "code")), "EBADMSG");
	json_decref(end);
	char *huge = malloc(PIP_INDEX_URL_MAX + 2);
	memset(huge, 'a', PIP_INDEX_URL_MAX + 1);
	memcpy(huge, "https://x/", 10);
	huge[PIP_INDEX_URL_MAX + 1] = '\0';
	end = harness_call(f->c, restore_request(huge));
	assert_string_equal(end_error(end), "E2BIG");
	json_decref(end);
	free(huge);
	txt = pip_conf_text(f);
	assert_non_null(strstr(txt, "index-url = https://idx.example/simple\n"));
	assert_null(strstr(txt, "evil"));
	free(txt);

	/* null counts as absent */
	end = harness_call(f->c, json_pack("{s:s, s:s, s:s, s:n}", "op", "restore", "wall_clock_ns",
					   "1", "entropy", ent, "pip_index_url"));
	assert_null(end_error(end));
	assert_true(json_is_false(json_object_get(end, "pip_index_url")));
	json_decref(end);
	txt = pip_conf_text(f);
	assert_string_equal(txt, "");
	free(txt);
	assert_int_equal(guest_conn_restore(f->c, &(struct guest_restore_opts){.pip_index_url =
									 "https://idx.example/simple"},
					    5000),
			 0);

	/* no index: the file goes (pip's default again) */
	assert_int_equal(guest_conn_restore(f->c, NULL, 5000), 0);
	txt = pip_conf_text(f);
	assert_string_equal(txt, "");
	free(txt);
	o.pip_index_url = "";
	assert_int_equal(guest_conn_restore(f->c, &o, 5000), 0);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		AGENT_TEST(test_exit_codes_and_signals),
		AGENT_TEST(test_stdout_and_stderr),
		AGENT_TEST(test_env),
		AGENT_TEST(test_cwd),
		AGENT_TEST(test_stdin),
		AGENT_TEST(test_stdout_20mib),
		AGENT_TEST(test_timeout_kills_tree),
		cmocka_unit_test(test_timeout_kills_escaped_tree_with_cgroup),
		AGENT_TEST(test_exec_runs_in_its_own_group),
		AGENT_TEST(test_cancel_kills_command),
		AGENT_TEST(test_background_job_does_not_hold_exec),
		AGENT_TEST(test_64_concurrent_execs),
		AGENT_TEST(test_upload_beside_exec),
		AGENT_TEST(test_output_cap),
		AGENT_TEST(test_request_validation),
		AGENT_TEST(test_restore_pip_index),
		AGENT_TEST(test_restore),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
