/*
 * test_guest_run.c - the exec and code-cell reader (guest_run) against a
 * fake agent played by this test (fake_agent.h): stdin larger than the
 * protocol's window while the command echoes it (no deadlock), END before
 * data that comes after it, an unknown channel, ERROR frames and failed
 * ENDs, per-event timeouts and the run's deadline, cancel (by the caller
 * and by a collect's stop check), the output cap and its flag, and a code
 * cell's events.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/proto.h"
#include "common/util.h"
#include "engine/guest/guest_run.h"
#include "fake_agent.h"

/* Each test: a fake agent and a connection to it. */
struct fixture {
	struct fake f;
	struct guest_conn *c;
};

static int setup(void **state)
{
	struct fixture *t = calloc(1, sizeof(*t));
	assert_non_null(t);
	t->c = connect_fake(&t->f);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *t = *state;
	guest_conn_close(t->c);
	fake_close(&t->f);
	free(t);
	return 0;
}

static void send_json(struct fake *f, uint8_t type, uint32_t id, const char *json)
{
	fake_send(f, type, 0, id, json, (uint32_t)strlen(json));
}

/* Open an exec run on c and take its OPEN at the fake; *id gets the
 * stream. */
static struct guest_run *open_run(struct guest_conn *c, struct fake *f,
				  const struct guest_run_opts *o, uint32_t *id)
{
	json_t *req = json_pack("{s:s, s:s}", "op", o->kind == GUEST_RUN_CELL ? "context_run" : "exec",
				"cmd", "x");
	struct guest_run *x = NULL;
	assert_int_equal(guest_run_open(c, req, o, &x), 0);
	json_decref(req);
	uint8_t buf[256];
	long got = fake_expect(f, PROTO_OPEN, buf, sizeof(buf));
	assert_true(got > 0);
	*id = (uint32_t)got;
	return x;
}

/* open_run of a plain exec (no stdin, no cap, no deadline). */
static struct guest_run *open_exec(struct fixture *t, uint32_t *id)
{
	struct guest_run_opts o = {.kind = GUEST_RUN_EXEC};
	return open_run(t->c, &t->f, &o, id);
}

/* The next event, which must come within 5 s. */
static struct guest_event next_event(struct guest_run *x)
{
	struct guest_event ev;
	assert_int_equal(guest_run_next(x, &ev, 5000), 1);
	return ev;
}

/* 1 if the fake sees a CANCEL for stream id within 5 s. */
static int fake_sees_cancel(struct fake *f, uint32_t id)
{
	uint8_t buf[256];
	struct proto_frame fr;
	while (fake_next(f, &fr, buf, sizeof(buf), 5000) == 1)
		if (fr.type == PROTO_CANCEL && fr.stream == id)
			return 1;
	return 0;
}

/* --- a `cat` with bounded buffers, like the real agent ---------------------- */

/*
 * The agent side of `cat`: every stdin byte becomes a stdout byte.  Like
 * the agent with a pipe, it grants stdin credit back only for bytes it has
 * sent on as output, and sends output only within the host's credit, so it
 * holds at most one window of input.  A host that
 * writes all stdin before reading any output therefore stalls (the
 * positive control shows it), and one that reads while it writes does not.
 */
struct cat {
	struct fake *f;
	uint32_t id;
	int64_t out_credit;  /* the host's credit for our DATA */
	size_t stdin_bytes;  /* received */
	volatile int done;   /* EOF seen and everything echoed (END sent), or stopped */
};

static void *cat_main(void *arg)
{
	struct cat *k = arg;
	struct fake *f = k->f;
	static uint8_t hold[PROTO_INITIAL_WINDOW];
	static uint8_t buf[PROTO_MAX_DATA];
	size_t held = 0, ungranted = 0;
	int eof = 0;
	int64_t idle_until = util_now_ms() + 10000;
	k->out_credit = PROTO_INITIAL_WINDOW;
	while (!k->done && util_now_ms() < idle_until) {
		/* echo what the host's credit allows */
		while (held > 0 && k->out_credit > 0) {
			size_t n = held < PROTO_MAX_DATA ? held : PROTO_MAX_DATA;
			if ((int64_t)n > k->out_credit)
				n = (size_t)k->out_credit;
			fake_send(f, PROTO_DATA, PROTO_CH_STDOUT, k->id, hold, (uint32_t)n);
			memmove(hold, hold + n, held - n);
			held -= n;
			k->out_credit -= (int64_t)n;
			ungranted += n;
			idle_until = util_now_ms() + 10000;
		}
		/* room again: grant the stdin we passed on */
		if (ungranted >= PROTO_INITIAL_WINDOW / 4 || (ungranted && held == 0)) {
			uint8_t w[4];
			proto_put_u32(w, (uint32_t)ungranted);
			fake_send(f, PROTO_WINDOW, 0, k->id, w, 4);
			ungranted = 0;
		}
		if (eof && held == 0) {
			fake_send(f, PROTO_EOF, PROTO_CH_STDOUT, k->id, NULL, 0);
			send_json(f, PROTO_END, k->id, "{\"exit_code\": 0, \"timed_out\": false}");
			k->done = 1;
			break;
		}
		struct proto_frame fr;
		if (fake_next(f, &fr, buf, sizeof(buf), 50) != 1 || fr.stream != k->id)
			continue;
		if (fr.type == PROTO_WINDOW)
			k->out_credit += proto_get_u32(buf);
		if (fr.type == PROTO_EOF)
			eof = 1;
		if (fr.type == PROTO_DATA) {
			assert_true(held + fr.len <= sizeof(hold)); /* the host kept to our credit */
			memcpy(hold + held, buf, fr.len);
			held += fr.len;
			k->stdin_bytes += fr.len;
		}
	}
	return NULL;
}

static void test_stdin_larger_than_window_while_output_flows(void **state)
{
	struct fixture *t = *state;
	struct fake *f = &t->f;
	struct guest_conn *c = t->c;
	size_t n = 4u << 20; /* 16 times the window, far beyond any pipe */
	uint8_t *in = malloc(n);
	assert_non_null(in);
	for (size_t i = 0; i < n; i++)
		in[i] = (uint8_t)(i * 7 + i / 4096);

	/* Positive control: writing all the input before reading the output
	 * stalls against this agent, so the test below can see a deadlock. */
	json_t *req = json_pack("{s:s, s:s, s:b}", "op", "exec", "cmd", "cat", "stdin", 1);
	struct guest_stream *s;
	assert_int_equal(guest_stream_open(c, req, &s), 0);
	uint8_t buf[256];
	struct cat k1 = {.f = f, .id = (uint32_t)fake_expect(f, PROTO_OPEN, buf, sizeof(buf))};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, cat_main, &k1), 0);
	assert_int_equal(guest_stream_write(s, in, n, 1500), -ETIMEDOUT);
	guest_stream_close(s);
	k1.done = 1; /* stop the fake */
	pthread_join(th, NULL);
	assert_true(k1.stdin_bytes < n);

	/* The reader feeds while it reads: everything comes back, in order. */
	struct guest_run_opts o = {.kind = GUEST_RUN_EXEC, .stdin_data = in, .stdin_len = n,
				   .output_cap = n, .deadline_ms = 30000};
	uint32_t id;
	struct guest_run *x = open_run(c, f, &o, &id);
	struct cat k2 = {.f = f, .id = id};
	assert_int_equal(pthread_create(&th, NULL, cat_main, &k2), 0);
	struct guest_run_result r;
	assert_int_equal(guest_run_collect(x, &r, 250, NULL, NULL), 0);
	pthread_join(th, NULL);
	assert_int_equal(k2.stdin_bytes, n);
	assert_int_equal(r.out_len, n);
	assert_int_equal(r.out_total, n);
	assert_false(r.out_truncated);
	assert_memory_equal(r.out, in, n);
	assert_int_equal(r.exit_code, 0);
	guest_run_result_free(&r);
	guest_run_close(x);
	json_decref(req);
	free(in);
}

/* --- the order and end of events ----------------------------------------------- */

static void test_exec_events_and_end_before_late_data(void **state)
{
	struct fixture *t = *state;
	struct fake *f = &t->f;
	struct guest_conn *c = t->c;
	uint32_t id;
	struct guest_run *x = open_exec(t, &id);
	send_json(f, PROTO_EVENT, id, "{\"event\": \"started\", \"pid\": 42}");
	send_json(f, PROTO_EVENT, id, "{\"event\": \"something-new\"}"); /* skipped */
	fake_send(f, PROTO_DATA, PROTO_CH_STDOUT, id, "out", 3);
	fake_send(f, PROTO_DATA, PROTO_CH_STDERR, id, "err", 3);
	/* END, then data the agent sent after it: the run is over at END */
	send_json(f, PROTO_END, id, "{\"exit_code\": 3}");
	fake_send(f, PROTO_DATA, PROTO_CH_STDOUT, id, "late", 4);

	struct guest_event ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_STARTED);
	assert_int_equal(ev.pid, 42);
	ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_STDOUT);
	assert_int_equal(ev.len, 3);
	assert_memory_equal(ev.data, "out", 3);
	/* guest_run_again hands the same event out once more */
	guest_run_again(x);
	ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_STDOUT);
	assert_memory_equal(ev.data, "out", 3);
	ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_STDERR);
	assert_memory_equal(ev.data, "err", 3);
	ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_EXIT);
	assert_int_equal(json_integer_value(json_object_get(ev.json, "exit_code")), 3);
	/* nothing after the end, however long one waits; the late bytes were
	 * dropped without harm to the connection */
	assert_int_equal(guest_run_next(x, &ev, 300), 0);
	assert_int_equal(guest_run_received(x, GUEST_EV_STDOUT), 3);
	assert_true(guest_conn_alive(c));
	guest_run_close(x);
}

static void test_unknown_channel_is_a_clear_error(void **state)
{
	struct fixture *t = *state;
	struct fake *f = &t->f;
	uint32_t id;
	struct guest_run *x = open_exec(t, &id);
	fake_send(f, PROTO_DATA, PROTO_CH_STDOUT, id, "ok", 2);
	fake_send(f, PROTO_DATA, 7, id, "what", 4);
	struct guest_event ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_STDOUT); /* what came before still arrives */
	ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_ERROR);
	assert_int_equal(ev.err, -EPROTO);
	assert_null(ev.json);
	assert_int_equal(guest_run_next(x, &ev, 100), 0);
	assert_true(fake_sees_cancel(f, id)); /* the agent is told to stop it */
	guest_run_close(x);

	/* the connection is fine: the next run works */
	x = open_exec(t, &id);
	send_json(f, PROTO_END, id, "{\"exit_code\": 0}");
	ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_EXIT);
	guest_run_close(x);
}

static void test_error_frame_and_failed_end(void **state)
{
	struct fixture *t = *state;
	struct fake *f = &t->f;
	struct guest_conn *c = t->c;
	struct guest_run_opts o = {.kind = GUEST_RUN_EXEC};
	uint32_t id;

	/* an ERROR frame */
	struct guest_run *x = open_run(c, f, &o, &id);
	send_json(f, PROTO_ERROR, id, "{\"code\": \"EINVAL\", \"message\": \"bad request\"}");
	struct guest_event ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_ERROR);
	assert_int_equal(ev.err, -EPROTO);
	assert_string_equal(json_string_value(json_object_get(ev.json, "code")), "EINVAL");
	guest_run_close(x);

	/* an exec END with an error: the command could not start */
	x = open_run(c, f, &o, &id);
	send_json(f, PROTO_END, id, "{\"error\": {\"code\": \"ENOENT\", \"message\": \"cwd\"}}");
	ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_ERROR);
	assert_non_null(json_object_get(ev.json, "error"));
	guest_run_close(x);

	/* a cell's END whose error is the cell's exception is its exit... */
	struct guest_run_opts co = {.kind = GUEST_RUN_CELL};
	x = open_run(c, f, &co, &id);
	send_json(f, PROTO_END, id,
		  "{\"execution_count\": 1, \"error\": {\"name\": \"ValueError\", \"value\": \"x\", "
		  "\"traceback\": \"\"}}");
	ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_EXIT);
	guest_run_close(x);
	/* ... and one with a code is the operation's failure */
	x = open_run(c, f, &co, &id);
	send_json(f, PROTO_END, id, "{\"error\": {\"code\": \"ENOENT\", \"message\": \"no ctx\"}}");
	ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_ERROR);
	assert_int_equal(ev.err, -EPROTO);
	guest_run_close(x);

	/* collect reports the same */
	x = open_run(c, f, &o, &id);
	send_json(f, PROTO_ERROR, id, "{\"code\": \"EIO\", \"message\": \"m\"}");
	struct guest_run_result r;
	assert_int_equal(guest_run_collect(x, &r, 1000, NULL, NULL), -EPROTO);
	assert_string_equal(json_string_value(json_object_get(r.end, "code")), "EIO");
	guest_run_result_free(&r);
	guest_run_close(x);
}

/* --- time ---------------------------------------------------------------------- */

static void test_timeouts(void **state)
{
	struct fixture *t = *state;
	struct fake *f = &t->f;
	struct guest_conn *c = t->c;

	/* a wait that sees nothing is not the end of the run */
	uint32_t id;
	struct guest_run *x = open_exec(t, &id);
	struct guest_event ev;
	int64_t t0 = util_now_ms();
	assert_int_equal(guest_run_next(x, &ev, 200), -ETIMEDOUT);
	assert_true(util_now_ms() - t0 >= 190);
	assert_int_equal(guest_run_next(x, &ev, 0), -ETIMEDOUT);
	send_json(f, PROTO_END, id, "{\"exit_code\": 0}");
	ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_EXIT);
	guest_run_close(x);

	/* the run's deadline ends it with -ETIMEDOUT and cancels it */
	struct guest_run_opts o = {.kind = GUEST_RUN_EXEC, .deadline_ms = 300};
	x = open_run(c, f, &o, &id);
	t0 = util_now_ms();
	int k;
	while ((k = guest_run_next(x, &ev, 100)) == -ETIMEDOUT)
		assert_true(util_now_ms() - t0 < 5000);
	assert_int_equal(k, 1);
	assert_int_equal(ev.type, GUEST_EV_ERROR);
	assert_int_equal(ev.err, -ETIMEDOUT);
	assert_true(util_now_ms() - t0 >= 290);
	assert_true(fake_sees_cancel(f, id));
	assert_int_equal(guest_run_next(x, &ev, 100), 0);
	guest_run_close(x);
}

/* --- cancel -------------------------------------------------------------------- */

static int stop_after(void *arg)
{
	int *n = arg;
	return --*n <= 0;
}

static void test_cancel(void **state)
{
	struct fixture *t = *state;
	struct fake *f = &t->f;
	struct guest_conn *c = t->c;
	struct guest_run_opts o = {.kind = GUEST_RUN_EXEC};
	uint32_t id;

	/* the caller cancels: the agent is told, and its answer ends the run */
	struct guest_run *x = open_run(c, f, &o, &id);
	fake_send(f, PROTO_DATA, PROTO_CH_STDOUT, id, "a", 1);
	struct guest_event ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_STDOUT);
	assert_int_equal(guest_run_cancel(x), 0);
	assert_true(fake_sees_cancel(f, id));
	send_json(f, PROTO_END, id, "{\"error\": {\"code\": \"ECANCELED\", \"message\": \"\"}}");
	ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_ERROR);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(ev.json, "error"), "code")),
		"ECANCELED");
	guest_run_close(x);

	/* a collect whose client left: it stops at the third idle check,
	 * and closing the run cancels it in the guest */
	x = open_run(c, f, &o, &id);
	int checks = 3;
	struct guest_run_result r;
	assert_int_equal(guest_run_collect(x, &r, 50, stop_after, &checks), -ECANCELED);
	assert_int_equal(checks, 0);
	guest_run_result_free(&r);
	guest_run_close(x);
	assert_true(fake_sees_cancel(f, id));
}

/* --- caps and cells ------------------------------------------------------------- */

static void test_output_cap_per_channel(void **state)
{
	struct fixture *t = *state;
	struct fake *f = &t->f;
	struct guest_conn *c = t->c;
	struct guest_run_opts o = {.kind = GUEST_RUN_EXEC, .output_cap = 10};
	uint32_t id;
	struct guest_run *x = open_run(c, f, &o, &id);
	fake_send(f, PROTO_DATA, PROTO_CH_STDOUT, id, "12345678", 8);
	fake_send(f, PROTO_DATA, PROTO_CH_STDOUT, id, "abcdefgh", 8);
	fake_send(f, PROTO_DATA, PROTO_CH_STDOUT, id, "ABCDEFGH", 8);
	fake_send(f, PROTO_DATA, PROTO_CH_STDERR, id, "warn", 4);
	send_json(f, PROTO_END, id, "{\"exit_code\": 0}");
	struct guest_run_result r;
	assert_int_equal(guest_run_collect(x, &r, 1000, NULL, NULL), 0);
	assert_int_equal(r.out_len, 10);
	assert_string_equal(r.out, "12345678ab");
	assert_true(r.out_truncated);
	assert_int_equal(r.out_total, 24);
	assert_string_equal(r.err, "warn"); /* stderr has its own cap */
	assert_false(r.err_truncated);
	guest_run_result_free(&r);
	guest_run_close(x);
}

static void test_cell_events_and_shared_cap(void **state)
{
	struct fixture *t = *state;
	struct fake *f = &t->f;
	struct guest_conn *c = t->c;
	struct guest_run_opts o = {.kind = GUEST_RUN_CELL, .output_cap = 100, .cap_shared = 1};
	uint32_t id;
	struct guest_run *x = open_run(c, f, &o, &id);
	send_json(f, PROTO_EVENT, id, "{\"type\": \"accepted\", \"exec_id\": 7}");
	send_json(f, PROTO_EVENT, id, "{\"type\": \"stdout\", \"text\": \"hello\\n\"}");
	send_json(f, PROTO_EVENT, id, "{\"type\": \"stderr\", \"text\": \"oops\"}");
	send_json(f, PROTO_EVENT, id, "{\"type\": \"result\", \"text\": \"2\"}");
	static char big[300];
	snprintf(big, sizeof(big), "{\"type\": \"stdout\", \"text\": \"%0120d\"}", 0);
	send_json(f, PROTO_EVENT, id, big); /* past the cap: left out whole */
	send_json(f, PROTO_EVENT, id, "{\"type\": \"stdout\", \"text\": \"x\"}"); /* and after */
	send_json(f, PROTO_END, id, "{\"execution_count\": 1, \"error\": null}");

	struct guest_event ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_STARTED);
	assert_int_equal(json_integer_value(json_object_get(ev.json, "exec_id")), 7);
	ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_STDOUT);
	assert_int_equal(ev.len, 6);
	assert_memory_equal(ev.data, "hello\n", 6);
	ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_STDERR);
	assert_memory_equal(ev.data, "oops", 4);
	ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_RESULT);
	assert_string_equal(json_string_value(json_object_get(ev.json, "text")), "2");
	ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_STDOUT);
	assert_true(ev.truncated);
	assert_int_equal(ev.len, 0);
	ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_EXIT);
	assert_int_equal(json_integer_value(json_object_get(ev.json, "execution_count")), 1);
	guest_run_close(x);
}

static void test_lost_connection(void **state)
{
	struct fixture *t = *state;
	struct fake *f = &t->f;
	struct guest_conn *c = t->c;
	struct guest_run_opts o = {.kind = GUEST_RUN_EXEC, .stdin_data = "abc", .stdin_len = 3};
	uint32_t id;
	struct guest_run *x = open_run(c, f, &o, &id);
	close(f->fd);
	f->fd = -1;
	struct guest_event ev = next_event(x);
	assert_int_equal(ev.type, GUEST_EV_ERROR);
	assert_int_equal(ev.err, -ECONNRESET);
	guest_run_close(x);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stdin_larger_than_window_while_output_flows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_events_and_end_before_late_data, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_channel_is_a_clear_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_frame_and_failed_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeouts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output_cap_per_channel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cell_events_and_shared_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_connection, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
