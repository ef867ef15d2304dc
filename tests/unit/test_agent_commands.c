/*
 * test_agent_commands.c - background commands of the agent (pandastack-agent
 * --listen) driven through guest_conn: command_start, command_list,
 * command_output (offsets, the kept window, waiting), command_stdin,
 * command_kill, timeouts, commands outliving the host, the record limit and
 * the agent's exit killing them.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent_harness.h"
#include "common/proto.h"

/* The agent keeps this much output per channel (commands.h). */
#define KEEP (1024 * 1024)

/* command_start of cmd as id; returns the END (new reference). */
static json_t *start(struct agent_fixture *f, const char *id, const char *cmd)
{
	return harness_call(f->c, json_pack("{s:s, s:s, s:s}", "op", "command_start", "id", id,
					   "cmd", cmd));
}

/* command_output of id from the offsets, waiting up to wait_ms; r gets the
 * bytes and the END. */
static void output(struct agent_fixture *f, const char *id, json_int_t out_off, json_int_t err_off,
		   json_int_t wait_ms, struct exec_result *r)
{
	json_t *req = json_pack("{s:s, s:s, s:I, s:I, s:I}", "op", "command_output", "id", id,
				"stdout_offset", out_off, "stderr_offset", err_off, "wait_ms",
				wait_ms);
	assert_int_equal(harness_exec(f->c, req, NULL, 0, r, 60000), 0);
	assert_null(end_error(r->end));
}

static json_int_t chan_int(json_t *end, const char *chan, const char *key)
{
	return json_integer_value(json_object_get(json_object_get(end, chan), key));
}

static json_t *command_of(json_t *end)
{
	return json_object_get(end, "command");
}

/* Wait up to ms for id's output from offset 0 to contain want on stdout. */
static void wait_stdout(struct agent_fixture *f, const char *id, const char *want, int ms)
{
	int64_t end = util_now_ms() + ms;
	for (;;) {
		struct exec_result r;
		output(f, id, 0, 0, 200, &r);
		int found = r.out && strstr((char *)r.out, want);
		exec_result_clear(&r);
		if (found)
			return;
		assert_true(util_now_ms() < end);
	}
}

/* Wait until id's stderr holds at least n bytes (the agent reads stdout and
 * stderr from separate pipes: one may be taken before the other). */
static void wait_stderr_len(struct agent_fixture *f, const char *id, size_t n, int ms)
{
	int64_t end = util_now_ms() + ms;
	for (;;) {
		struct exec_result r;
		output(f, id, 0, 0, 200, &r);
		size_t got = r.errlen;
		exec_result_clear(&r);
		if (got >= n)
			return;
		assert_true(util_now_ms() < end);
	}
}

/* --- start, list, output, kill ------------------------------------------------ */

static void test_start_list_output_kill(void **state)
{
	struct agent_fixture *f = *state;
	char tok[64];
	harness_sleep_token(tok, sizeof(tok));
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "echo ready; echo warn >&2; exec sleep %s", tok);
	json_t *st = start(f, "cmd_a", cmd);
	assert_null(end_error(st));
	assert_string_equal(json_string_value(json_object_get(st, "id")), "cmd_a");
	assert_true(json_integer_value(json_object_get(st, "pid")) > 0);
	assert_true(json_is_true(json_object_get(st, "running")));
	assert_true(json_is_null(json_object_get(st, "exit_code")));
	assert_string_equal(json_string_value(json_object_get(st, "cwd")), f->a.ws);
	json_decref(st);

	/* it runs with no stream open on it */
	wait_stdout(f, "cmd_a", "ready\n", 10000);
	wait_stderr_len(f, "cmd_a", 5, 10000);
	assert_int_equal(harness_wait_procs(tok, 1, 10000), 1);

	json_t *ls = harness_call(f->c, json_pack("{s:s}", "op", "command_list"));
	json_t *arr = json_object_get(ls, "commands");
	assert_int_equal(json_array_size(arr), 1);
	json_t *one = json_array_get(arr, 0);
	assert_string_equal(json_string_value(json_object_get(one, "id")), "cmd_a");
	assert_non_null(strstr(json_string_value(json_object_get(one, "cmd")), tok));
	assert_true(json_is_true(json_object_get(one, "running")));
	assert_true(json_is_true(json_object_get(one, "stdin_open")));
	json_decref(ls);

	/* everything so far, then nothing new from where that ended */
	struct exec_result r;
	output(f, "cmd_a", 0, 0, 0, &r);
	assert_int_equal(r.outlen, 6);
	assert_memory_equal(r.out, "ready\n", 6);
	assert_int_equal(r.errlen, 5);
	assert_int_equal(chan_int(r.end, "stdout", "offset"), 0);
	assert_int_equal(chan_int(r.end, "stdout", "next_offset"), 6);
	assert_int_equal(chan_int(r.end, "stdout", "dropped"), 0);
	assert_int_equal(chan_int(r.end, "stderr", "total"), 5);
	assert_true(json_is_true(json_object_get(command_of(r.end), "running")));
	exec_result_clear(&r);
	int64_t t0 = util_now_ms();
	output(f, "cmd_a", 6, 5, 300, &r); /* waits: nothing new */
	assert_true(util_now_ms() - t0 >= 250);
	assert_int_equal(r.outlen + r.errlen, 0);
	assert_int_equal(chan_int(r.end, "stdout", "next_offset"), 6);
	exec_result_clear(&r);

	json_t *k = harness_call(f->c, json_pack("{s:s, s:s}", "op", "command_kill", "id",
						 "cmd_a"));
	assert_null(end_error(k));
	assert_true(json_is_false(json_object_get(k, "running")));
	assert_int_equal(json_integer_value(json_object_get(k, "exit_code")), 128 + 9);
	assert_int_equal(json_integer_value(json_object_get(k, "signal")), 9);
	assert_true(json_is_integer(json_object_get(k, "ended_at_ms")));
	json_decref(k);
	assert_int_equal(harness_wait_no_procs(tok, 5000), 0);

	/* an ended command stays readable, and a waiting read answers at once */
	t0 = util_now_ms();
	output(f, "cmd_a", 0, 0, 5000, &r);
	assert_true(util_now_ms() - t0 < 4000);
	assert_int_equal(r.outlen, 6);
	assert_true(json_is_false(json_object_get(command_of(r.end), "running")));
	exec_result_clear(&r);
}

/* A waiting read answers as soon as output comes. */
static void test_output_wait_wakes(void **state)
{
	struct agent_fixture *f = *state;
	json_t *st = start(f, "cmd_w", "sleep 0.5; echo late; sleep 30");
	assert_null(end_error(st));
	json_decref(st);
	int64_t t0 = util_now_ms();
	struct exec_result r;
	output(f, "cmd_w", 0, 0, 20000, &r);
	int64_t took = util_now_ms() - t0;
	assert_true(took >= 300);
	assert_true(took < 15000);
	assert_int_equal(r.outlen, 5);
	assert_memory_equal(r.out, "late\n", 5);
	exec_result_clear(&r);
	json_decref(harness_call(f->c, json_pack("{s:s, s:s}", "op", "command_kill", "id",
						 "cmd_w")));
}

/* Past the kept window the oldest bytes go, and a read says how many. */
static void test_output_window(void **state)
{
	struct agent_fixture *f = *state;
	/* 3 MiB of 'a', then one 'z' */
	json_t *st = start(f, "cmd_big", "head -c 3145728 /dev/zero | tr '\\0' a; printf z");
	assert_null(end_error(st));
	json_decref(st);
	struct exec_result r;
	int64_t end = util_now_ms() + 30000;
	for (;;) { /* until it ended */
		output(f, "cmd_big", 0, 0, 500, &r);
		if (json_is_false(json_object_get(command_of(r.end), "running")))
			break;
		exec_result_clear(&r);
		assert_true(util_now_ms() < end);
	}
	assert_int_equal(chan_int(r.end, "stdout", "total"), 3145728 + 1);
	assert_int_equal(r.outlen, KEEP);
	assert_int_equal(chan_int(r.end, "stdout", "offset"), 3145728 + 1 - KEEP);
	assert_int_equal(chan_int(r.end, "stdout", "dropped"), 3145728 + 1 - KEEP);
	assert_int_equal(r.out[r.outlen - 1], 'z');
	assert_int_equal(r.out[0], 'a');
	assert_int_equal(json_integer_value(json_object_get(command_of(r.end), "exit_code")), 0);
	exec_result_clear(&r);

	/* max_bytes and an offset inside the window */
	json_t *req = json_pack("{s:s, s:s, s:I, s:I}", "op", "command_output", "id", "cmd_big",
				"stdout_offset", (json_int_t)3145728 - 2, "max_bytes", 2);
	assert_int_equal(harness_exec(f->c, req, NULL, 0, &r, 30000), 0);
	assert_int_equal(r.outlen, 2);
	assert_memory_equal(r.out, "aa", 2);
	assert_int_equal(chan_int(r.end, "stdout", "dropped"), 0);
	assert_int_equal(chan_int(r.end, "stdout", "next_offset"), 3145728);
	exec_result_clear(&r);
}

/* --- stdin ------------------------------------------------------------------------ */

static void test_stdin(void **state)
{
	struct agent_fixture *f = *state;
	json_t *st = start(f, "cmd_cat", "cat");
	assert_null(end_error(st));
	json_decref(st);

	struct exec_result r;
	json_t *req = json_pack("{s:s, s:s}", "op", "command_stdin", "id", "cmd_cat");
	assert_int_equal(harness_exec(f->c, req, "hello\n", 6, &r, 30000), 0);
	assert_null(end_error(r.end));
	assert_int_equal(end_int(r.end, "written"), 6);
	assert_true(json_is_true(json_object_get(r.end, "stdin_open")));
	exec_result_clear(&r);
	wait_stdout(f, "cmd_cat", "hello\n", 10000);

	/* 3 MiB through the pipe (more than the protocol's window), then EOF */
	size_t n = 3u << 20;
	uint8_t *big = malloc(n);
	assert_non_null(big);
	memset(big, 'b', n);
	req = json_pack("{s:s, s:s, s:b}", "op", "command_stdin", "id", "cmd_cat", "eof", 1);
	assert_int_equal(harness_exec(f->c, req, big, n, &r, 60000), 0);
	free(big);
	assert_null(end_error(r.end));
	assert_int_equal(end_int(r.end, "written"), (json_int_t)n);
	assert_true(json_is_false(json_object_get(r.end, "stdin_open")));
	exec_result_clear(&r);

	/* cat saw EOF and ended; what it echoed is all there */
	int64_t end = util_now_ms() + 20000;
	for (;;) {
		output(f, "cmd_cat", 0, 0, 500, &r);
		if (json_is_false(json_object_get(command_of(r.end), "running")))
			break;
		exec_result_clear(&r);
		assert_true(util_now_ms() < end);
	}
	assert_int_equal(chan_int(r.end, "stdout", "total"), 6 + (json_int_t)n);
	assert_int_equal(json_integer_value(json_object_get(command_of(r.end), "exit_code")), 0);
	assert_true(json_is_false(json_object_get(command_of(r.end), "stdin_open")));
	exec_result_clear(&r);

	/* stdin of an ended command: nothing is written */
	req = json_pack("{s:s, s:s}", "op", "command_stdin", "id", "cmd_cat");
	assert_int_equal(harness_exec(f->c, req, "x", 1, &r, 30000), 0);
	assert_int_equal(end_int(r.end, "written"), 0);
	assert_true(json_is_false(json_object_get(r.end, "stdin_open")));
	exec_result_clear(&r);
}

/* A command that does not read: the write gives up at its timeout and
 * says how much went in. */
static void test_stdin_timeout(void **state)
{
	struct agent_fixture *f = *state;
	json_t *st = start(f, "cmd_deaf", "sleep 30");
	assert_null(end_error(st));
	json_decref(st);
	size_t n = 1u << 20; /* more than a pipe holds */
	uint8_t *big = calloc(1, n);
	assert_non_null(big);
	struct exec_result r;
	json_t *req = json_pack("{s:s, s:s, s:i}", "op", "command_stdin", "id", "cmd_deaf",
				"timeout_ms", 500);
	assert_int_equal(harness_exec(f->c, req, big, n, &r, 30000), 0);
	free(big);
	assert_null(end_error(r.end));
	json_int_t w = end_int(r.end, "written");
	assert_true(w > 0);
	assert_true(w < (json_int_t)n);
	assert_true(json_is_true(json_object_get(r.end, "stdin_open")));
	exec_result_clear(&r);
	json_decref(harness_call(f->c, json_pack("{s:s, s:s}", "op", "command_kill", "id",
						 "cmd_deaf")));
}

/* --- timeouts, signals, the host leaving ---------------------------------------------- */

static void test_timeout_only_when_asked(void **state)
{
	struct agent_fixture *f = *state;
	json_t *st = harness_call(f->c, json_pack("{s:s, s:s, s:s, s:i}", "op", "command_start",
						  "id", "cmd_t", "cmd", "sleep 30", "timeout_ms",
						  300));
	assert_null(end_error(st));
	json_decref(st);
	st = start(f, "cmd_free", "sleep 1; echo done");
	assert_null(end_error(st));
	json_decref(st);
	struct exec_result r;
	int64_t end = util_now_ms() + 20000;
	for (;;) {
		output(f, "cmd_free", 0, 0, 500, &r);
		if (json_is_false(json_object_get(command_of(r.end), "running")))
			break;
		exec_result_clear(&r);
		assert_true(util_now_ms() < end);
	}
	/* the one without a timeout finished by itself */
	assert_int_equal(json_integer_value(json_object_get(command_of(r.end), "exit_code")), 0);
	assert_true(json_is_false(json_object_get(command_of(r.end), "timed_out")));
	assert_memory_equal(r.out, "done\n", 5);
	exec_result_clear(&r);
	/* the one with a timeout was killed at it */
	output(f, "cmd_t", 0, 0, 0, &r);
	assert_true(json_is_false(json_object_get(command_of(r.end), "running")));
	assert_true(json_is_true(json_object_get(command_of(r.end), "timed_out")));
	assert_int_equal(json_integer_value(json_object_get(command_of(r.end), "signal")), 9);
	exec_result_clear(&r);
}

static void test_kill_signal(void **state)
{
	struct agent_fixture *f = *state;
	json_t *st = start(f, "cmd_trap", "trap 'echo got-term; exit 3' TERM; "
					   "while true; do sleep 0.1; done");
	assert_null(end_error(st));
	json_decref(st);
	usleep(300 * 1000); /* the trap is set */
	json_t *k = harness_call(f->c, json_pack("{s:s, s:s, s:s}", "op", "command_kill", "id",
						 "cmd_trap", "signal", "SIGTERM"));
	assert_null(end_error(k));
	assert_true(json_is_false(json_object_get(k, "running")));
	assert_int_equal(json_integer_value(json_object_get(k, "exit_code")), 3);
	json_decref(k);
	wait_stdout(f, "cmd_trap", "got-term", 5000);

	k = harness_call(f->c, json_pack("{s:s, s:s, s:s}", "op", "command_kill", "id",
					 "cmd_trap", "signal", "SIGSTOP"));
	assert_string_equal(end_error(k), "EINVAL");
	json_decref(k);
}

static void test_commands_outlive_the_host(void **state)
{
	struct agent_fixture *f = *state;
	char tok[64], cmd[256];
	harness_sleep_token(tok, sizeof(tok));
	snprintf(cmd, sizeof(cmd), "sleep %s", tok);
	json_t *st = start(f, "cmd_stay", cmd);
	assert_null(end_error(st));
	json_decref(st);
	guest_conn_close(f->c);
	f->c = NULL;
	usleep(300 * 1000);
	assert_true(harness_count_procs(tok) >= 1);
	assert_int_equal(guest_conn_open(f->a.sock, 5000, &f->c), 0);
	json_t *ls = harness_call(f->c, json_pack("{s:s}", "op", "command_list"));
	json_t *one = json_array_get(json_object_get(ls, "commands"), 0);
	assert_string_equal(json_string_value(json_object_get(one, "id")), "cmd_stay");
	assert_true(json_is_true(json_object_get(one, "running")));
	json_decref(ls);
	json_decref(harness_call(f->c, json_pack("{s:s, s:s}", "op", "command_kill", "id",
						 "cmd_stay")));
	assert_int_equal(harness_wait_no_procs(tok, 5000), 0);
}

/* --- errors and limits ------------------------------------------------------------- */

static void test_errors(void **state)
{
	struct agent_fixture *f = *state;
	static const char *const unknown[] = {"command_kill", "command_output", "command_stdin"};
	for (size_t i = 0; i < 3; i++) {
		json_t *e = harness_call(f->c, json_pack("{s:s, s:s}", "op", unknown[i], "id",
							 "cmd_none"));
		assert_string_equal(end_error(e), "ENOENT");
		json_decref(e);
	}
	json_t *e = start(f, "cmd_x", "sleep 30");
	assert_null(end_error(e));
	json_decref(e);
	e = start(f, "cmd_x", "true");
	assert_string_equal(end_error(e), "EEXIST");
	json_decref(e);
	e = harness_call(f->c, json_pack("{s:s, s:s, s:s, s:s}", "op", "command_start", "id",
					 "cmd_y", "cmd", "true", "cwd", "/nonexistent/dir"));
	assert_string_equal(end_error(e), "ENOENT");
	json_decref(e);
	e = start(f, "bad id!", "true");
	assert_string_equal(end_error(e), "EINVAL");
	json_decref(e);
	e = harness_call(f->c, json_pack("{s:s, s:s, s:s, s:b}", "op", "command_start", "id",
					 "cmd_z", "cmd", "true", "stdin", 1));
	assert_string_equal(end_error(e), "EINVAL"); /* not a field of command_start */
	json_decref(e);
	json_decref(harness_call(f->c, json_pack("{s:s, s:s}", "op", "command_kill", "id",
						 "cmd_x")));
}

static void test_record_limit(void **state)
{
	struct agent_fixture *f = *state;
	char id[32];
	/* 32 running: the 33rd is refused */
	for (int i = 0; i < 32; i++) {
		snprintf(id, sizeof(id), "cmd_run%d", i);
		json_t *st = start(f, id, "sleep 60");
		assert_null(end_error(st));
		json_decref(st);
	}
	json_t *e = start(f, "cmd_more", "true");
	assert_string_equal(end_error(e), "EMFILE");
	json_decref(e);
	/* once one ended, its record makes room */
	json_t *k = harness_call(f->c, json_pack("{s:s, s:s}", "op", "command_kill", "id",
						 "cmd_run0"));
	assert_true(json_is_false(json_object_get(k, "running")));
	json_decref(k);
	e = start(f, "cmd_more", "true");
	assert_null(end_error(e));
	json_decref(e);
	e = harness_call(f->c, json_pack("{s:s, s:s}", "op", "command_output", "id", "cmd_run0"));
	assert_string_equal(end_error(e), "ENOENT");
	json_decref(e);
	json_t *ls = harness_call(f->c, json_pack("{s:s}", "op", "command_list"));
	assert_int_equal(json_array_size(json_object_get(ls, "commands")), 32);
	json_decref(ls);
	for (int i = 1; i < 32; i++) {
		snprintf(id, sizeof(id), "cmd_run%d", i);
		json_decref(harness_call(f->c, json_pack("{s:s, s:s}", "op", "command_kill", "id",
							 id)));
	}
}

/* The agent's exit kills its commands' trees. */
static void test_agent_exit_kills_commands(void **state)
{
	(void)state;
	struct agent_proc a;
	struct guest_conn *c;
	assert_int_equal(harness_start(&a), 0);
	assert_int_equal(guest_conn_open(a.sock, 5000, &c), 0);
	char tok[64], cmd[256];
	harness_sleep_token(tok, sizeof(tok));
	snprintf(cmd, sizeof(cmd), "sleep %s & sleep %s", tok, tok);
	json_t *st = harness_call(c, json_pack("{s:s, s:s, s:s}", "op", "command_start", "id",
					       "cmd_exit", "cmd", cmd));
	assert_null(end_error(st));
	json_decref(st);
	usleep(200 * 1000);
	assert_true(harness_count_procs(tok) >= 2);
	guest_conn_close(c);
	assert_int_equal(harness_stop(&a), 0);
	assert_int_equal(harness_wait_no_procs(tok, 5000), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		AGENT_TEST(test_start_list_output_kill),
		AGENT_TEST(test_output_wait_wakes),
		AGENT_TEST(test_output_window),
		AGENT_TEST(test_stdin),
		AGENT_TEST(test_stdin_timeout),
		AGENT_TEST(test_timeout_only_when_asked),
		AGENT_TEST(test_kill_signal),
		AGENT_TEST(test_commands_outlive_the_host),
		AGENT_TEST(test_errors),
		AGENT_TEST(test_record_limit),
		cmocka_unit_test(test_agent_exit_kills_commands),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
