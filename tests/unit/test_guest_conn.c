/*
 * test_guest_conn.c - the host side (guest_conn) against a fake, hostile
 * agent played by this test on a Unix socket: the handshake (resent HELLO,
 * stale nonces, wrong version, EPROTONOSUPPORT, timeout), and after it DATA
 * beyond the credit, DATA on the host's channel, bad JSON in END, an EVENT
 * flood, garbage on stream 0, PING, an agent that stops reading, streams
 * outliving their connection, and a flood of ERROR frames that the log
 * takes only a few lines of.  A broken agent must cost its stream
 * or its connection, never the caller.
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
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/proto.h"
#include "common/util.h"
#include "engine/guest/guest_stream.h"
#include "fake_agent.h"

/* The test's agent thread for the handshake: accept, wait for HELLOs, ack
 * as told. */
struct hs {
	struct fake *f;
	int mode;          /* 0 ack the 3rd HELLO, 1 stale nonce only, 2 wrong version, 3 ERROR */
	int hellos;
	uint64_t nonce;
};

static void *hs_main(void *arg)
{
	struct hs *h = arg;
	struct fake *f = h->f;
	f->fd = accept(f->lfd, NULL, NULL);
	uint8_t buf[4096];
	struct proto_frame fr;
	while (fake_next(f, &fr, buf, sizeof(buf), 3000) == 1) {
		if (fr.type != PROTO_HELLO)
			continue;
		struct proto_hello hello;
		proto_hello_decode(buf, fr.len, &hello);
		h->nonce = hello.nonce;
		if (++h->hellos < 3)
			continue; /* pretend the first ones were lost */
		if (h->mode == 0) {
			send_ack(f, hello.nonce + 1, PROTO_VERSION, "{}"); /* stale: ignored */
			send_ack(f, hello.nonce, PROTO_VERSION, "{\"agent\": \"fake\"}");
			return NULL;
		}
		if (h->mode == 1)
			send_ack(f, hello.nonce ^ 0xff, PROTO_VERSION, "{}");
		if (h->mode == 2) {
			send_ack(f, hello.nonce, PROTO_VERSION + 1, "{}");
			return NULL;
		}
		if (h->mode == 3) {
			const char *e = "{\"code\": \"EPROTONOSUPPORT\"}";
			fake_send(f, PROTO_ERROR, 0, 0, e, (uint32_t)strlen(e));
			return NULL;
		}
	}
	return NULL;
}

static void test_handshake(void **state)
{
	(void)state;
	for (int mode = 0; mode < 4; mode++) {
		struct fake f;
		fake_listen(&f);
		struct hs h = {.f = &f, .mode = mode};
		pthread_t th;
		assert_int_equal(pthread_create(&th, NULL, hs_main, &h), 0);
		struct guest_conn *c = NULL;
		int r = guest_conn_open(f.path, mode == 1 ? 600 : 5000, &c);
		pthread_join(th, NULL);
		assert_true(h.hellos >= 3); /* HELLO is resent until acked */
		if (mode == 0) {
			assert_int_equal(r, 0);
			assert_string_equal(
				json_string_value(json_object_get(guest_conn_info(c), "agent")), "fake");
			guest_conn_close(c);
		} else {
			assert_int_equal(r, mode == 1 ? -ETIMEDOUT : -EPROTONOSUPPORT);
		}
		fake_close(&f);
	}
}


static struct guest_stream *open_exec(struct guest_conn *c, struct fake *f, uint32_t *id)
{
	json_t *req = json_pack("{s:s, s:s}", "op", "exec", "cmd", "x");
	struct guest_stream *s;
	assert_int_equal(guest_stream_open(c, req, &s), 0);
	json_decref(req);
	uint8_t buf[256];
	long got = fake_expect(f, PROTO_OPEN, buf, sizeof(buf));
	assert_true(got > 0);
	*id = (uint32_t)got;
	assert_int_equal(guest_stream_id(s), *id);
	return s;
}

static void test_stream_violations_fail_only_that_stream(void **state)
{
	(void)state;
	struct fake f;
	struct guest_conn *c = connect_fake(&f);
	uint8_t buf[256];
	uint32_t a, b, d, e, g;
	struct guest_stream *sa = open_exec(c, &f, &a), *sb = open_exec(c, &f, &b),
			    *sd = open_exec(c, &f, &d), *se = open_exec(c, &f, &e),
			    *sg = open_exec(c, &f, &g);

	/* a: more DATA than the 256 KiB credit */
	static uint8_t chunk[PROTO_MAX_DATA];
	for (unsigned i = 0; i < PROTO_INITIAL_WINDOW / PROTO_MAX_DATA + 1; i++)
		fake_send(&f, PROTO_DATA, PROTO_CH_STDOUT, a, chunk, sizeof(chunk));
	/* b: DATA on channel 0 (the host's) */
	fake_send(&f, PROTO_DATA, PROTO_CH_IN, b, "x", 1);
	/* d: END that is not JSON */
	fake_send(&f, PROTO_END, 0, d, "{nope", 5);
	/* e: an EVENT flood past the per-stream cap */
	static char ev[1 << 20];
	memset(ev, ' ', sizeof(ev));
	memcpy(ev, "{\"x\":1}", 7);
	for (int i = 0; i < 17; i++)
		fake_send(&f, PROTO_EVENT, 0, e, ev, sizeof(ev));
	/* g: a good stream, to show the connection is fine */
	fake_send(&f, PROTO_DATA, PROTO_CH_STDOUT, g, "ok", 2);
	fake_send(&f, PROTO_END, 0, g, "{\"exit_code\": 0}", 16);

	struct guest_msg m;
	int k;
	int data_msgs = 0;
	while ((k = guest_stream_read(sa, &m, 5000)) == 1) {
		data_msgs++;
		guest_msg_clear(&m);
	}
	assert_int_equal(k, -EPROTO);
	assert_int_equal(data_msgs, 4); /* what was within the credit still arrives */
	assert_int_equal(guest_stream_read(sb, &m, 5000), -EPROTO);
	assert_int_equal(guest_stream_read(sd, &m, 5000), -EPROTO);
	while ((k = guest_stream_read(se, &m, 5000)) == 1)
		guest_msg_clear(&m);
	assert_int_equal(k, -EPROTO);
	assert_int_equal(guest_stream_read(sg, &m, 5000), 1);
	assert_int_equal(m.kind, GUEST_MSG_DATA);
	assert_memory_equal(m.data, "ok", 2);
	guest_msg_clear(&m);
	assert_int_equal(guest_stream_read(sg, &m, 5000), 1);
	assert_int_equal(m.kind, GUEST_MSG_END);
	assert_int_equal(json_integer_value(json_object_get(m.json, "exit_code")), 0);
	guest_msg_clear(&m);
	assert_int_equal(guest_stream_read(sg, &m, 1000), 0);

	/* the agent was told to stop the failed streams that it had not ended
	 * itself (d sent its END, so it needs no CANCEL) */
	int cancelled[3] = {0};
	struct proto_frame fr;
	while (!(cancelled[0] && cancelled[1] && cancelled[2]) &&
	       fake_next(&f, &fr, buf, sizeof(buf), 5000) == 1) {
		if (fr.type != PROTO_CANCEL)
			continue;
		assert_true(fr.stream == a || fr.stream == b || fr.stream == e);
		cancelled[fr.stream == a ? 0 : fr.stream == b ? 1 : 2] = 1;
	}
	assert_true(cancelled[0] && cancelled[1] && cancelled[2]);
	assert_true(guest_conn_alive(c));
	/* a write on a failed stream reports it */
	assert_int_equal(guest_stream_write(sa, "x", 1, 1000), -EPROTO);

	/* PING is answered */
	fake_send(&f, PROTO_PING, 0, 0, "abcdefgh", 8);
	assert_true(fake_expect(&f, PROTO_PONG, buf, sizeof(buf)) == 0);
	assert_memory_equal(buf, "abcdefgh", 8);

	guest_stream_close(sa);
	guest_stream_close(sb);
	guest_stream_close(sd);
	guest_stream_close(se);
	guest_stream_close(sg);
	guest_conn_close(c);
	fake_close(&f);
}

static void test_garbage_kills_connection_not_caller(void **state)
{
	(void)state;
	struct fake f;
	struct guest_conn *c = connect_fake(&f);
	uint32_t a;
	struct guest_stream *sa = open_exec(c, &f, &a);
	assert_int_equal(util_write_all(f.fd, "this is not a frame at all....", 30), 0);
	struct guest_msg m;
	assert_int_equal(guest_stream_read(sa, &m, 5000), -ECONNRESET);
	assert_false(guest_conn_alive(c));
	struct guest_stream *sb;
	json_t *req = json_pack("{s:s}", "op", "stat");
	assert_int_equal(guest_stream_open(c, req, &sb), -ECONNRESET);
	json_t *res = NULL;
	assert_int_equal(guest_call(c, req, 1000, &res), -ECONNRESET);
	json_decref(req);
	guest_stream_close(sa);
	guest_conn_close(c);
	fake_close(&f);
}

/* Reads and counts what the host sends, never granting credit. */
struct drain {
	struct fake *f;
	volatile int stop;
	size_t data_bytes;
};

static void *drain_main(void *arg)
{
	struct drain *d = arg;
	static uint8_t buf[PROTO_MAX_DATA];
	struct proto_frame fr;
	while (!d->stop)
		if (fake_next(d->f, &fr, buf, sizeof(buf), 50) == 1 && fr.type == PROTO_DATA)
			d->data_bytes += fr.len;
	return NULL;
}

/* An agent that grants no more credit: the write times out instead of
 * hanging, having sent exactly the credit, and goes on once granted. */
static void test_stalled_agent_times_out(void **state)
{
	(void)state;
	struct fake f;
	struct guest_conn *c = connect_fake(&f);
	uint32_t a;
	struct guest_stream *sa = open_exec(c, &f, &a);
	struct drain d = {.f = &f};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, drain_main, &d), 0);
	size_t n = 1u << 20;
	uint8_t *big = calloc(1, n);
	int64_t t0 = util_now_ms();
	assert_int_equal(guest_stream_write(sa, big, n, 300), -ETIMEDOUT);
	assert_true(util_now_ms() - t0 < 5000);
	assert_true(guest_conn_alive(c));
	/* the agent grants more: the write goes on */
	uint8_t w[4];
	proto_put_u32(w, 128 * 1024);
	fake_send(&f, PROTO_WINDOW, 0, a, w, 4);
	assert_int_equal(guest_stream_write(sa, big, 128 * 1024, 5000), 0);
	usleep(200 * 1000);
	d.stop = 1;
	pthread_join(th, NULL);
	assert_int_equal(d.data_bytes, PROTO_INITIAL_WINDOW + 128 * 1024);
	free(big);
	/* a read with nothing coming times out */
	struct guest_msg m;
	assert_int_equal(guest_stream_read(sa, &m, 100), -ETIMEDOUT);
	/* the agent leaves: the reader wakes with -ECONNRESET */
	close(f.fd);
	f.fd = -1;
	assert_int_equal(guest_stream_read(sa, &m, 5000), -ECONNRESET);
	assert_int_equal(guest_stream_write(sa, "x", 1, 1000), -ECONNRESET);
	guest_conn_close(c);
	/* the stream outlives the connection handle; closing it frees both */
	guest_stream_close(sa);
	fake_close(&f);
}

/* Messages that arrived before END are all delivered, then 0; the agent
 * ending a stream makes further writes -EPIPE. */
static void test_end_then_zero_and_epipe(void **state)
{
	(void)state;
	struct fake f;
	struct guest_conn *c = connect_fake(&f);
	uint32_t a;
	struct guest_stream *sa = open_exec(c, &f, &a);
	fake_send(&f, PROTO_EVENT, 0, a, "{\"event\": \"started\"}", 20);
	fake_send(&f, PROTO_DATA, PROTO_CH_STDERR, a, "err", 3);
	fake_send(&f, PROTO_EOF, PROTO_CH_STDERR, a, NULL, 0);
	fake_send(&f, PROTO_END, 0, a, "{\"error\": {\"code\": \"ENOSPC\"}}", 29);
	static const enum guest_msg_kind want[] = {GUEST_MSG_EVENT, GUEST_MSG_DATA, GUEST_MSG_EOF,
						   GUEST_MSG_END};
	for (size_t i = 0; i < 4; i++) {
		struct guest_msg m;
		assert_int_equal(guest_stream_read(sa, &m, 5000), 1);
		assert_int_equal(m.kind, want[i]);
		if (m.kind == GUEST_MSG_DATA || m.kind == GUEST_MSG_EOF)
			assert_int_equal(m.channel, PROTO_CH_STDERR);
		guest_msg_clear(&m);
	}
	struct guest_msg m;
	assert_int_equal(guest_stream_read(sa, &m, 1000), 0);
	assert_int_equal(guest_stream_write(sa, "x", 1, 1000), -EPIPE);
	assert_int_equal(guest_stream_cancel(sa), 0); /* harmless after the end */
	guest_stream_close(sa);
	/* frames for the closed stream are dropped quietly */
	fake_send(&f, PROTO_DATA, PROTO_CH_STDOUT, a, "late", 4);
	assert_true(guest_conn_alive(c));
	guest_conn_close(c);
	fake_close(&f);
}

/* A thread opening a stream while the restore gate is pending. */
struct late_open {
	struct guest_conn *c;
	int done;          /* set (atomically) when guest_stream_open returned */
	int r;
	struct guest_stream *s;
};

static void *late_open_main(void *arg)
{
	struct late_open *o = arg;
	json_t *req = json_pack("{s:s, s:s}", "op", "exec", "cmd", "x");
	o->r = guest_stream_open(o->c, req, &o->s);
	json_decref(req);
	__atomic_store_n(&o->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* The restore sent as a gate: guest_conn_restore_send returns before the
 * agent answers; a stream opened meanwhile reaches the agent only after the
 * restore's END; a failed restore fails every later open. */
static void test_restore_gate_orders_and_fails_closed(void **state)
{
	(void)state;
	for (int fail = 0; fail < 2; fail++) {
		struct fake f;
		struct guest_conn *c = connect_fake(&f);
		assert_int_equal(guest_conn_restore_send(c, NULL, 5000), 0);
		uint8_t buf[512];
		struct proto_frame fr;
		assert_int_equal(fake_next(&f, &fr, buf, sizeof(buf), 5000), 1);
		assert_int_equal(fr.type, PROTO_OPEN);
		assert_non_null(memmem(buf, fr.len, "\"op\":\"restore\"", 14));
		uint32_t rid = fr.stream;
		struct late_open o = {.c = c};
		pthread_t th;
		assert_int_equal(pthread_create(&th, NULL, late_open_main, &o), 0);
		/* the probe: nothing reaches the agent while the restore is open */
		assert_int_equal(fake_next(&f, &fr, buf, sizeof(buf), 300), 0);
		assert_int_equal(__atomic_load_n(&o.done, __ATOMIC_ACQUIRE), 0);
		if (fail)
			fake_send(&f, PROTO_END, 0, rid, "{\"error\": {\"code\": \"EIO\"}}", 26);
		else
			fake_send(&f, PROTO_END, 0, rid, "{\"clock_set\": true}", 19);
		pthread_join(th, NULL);
		if (!fail) {
			assert_int_equal(o.r, 0);
			assert_true(fake_expect(&f, PROTO_OPEN, buf, sizeof(buf)) > 0);
			assert_non_null(memmem(buf, 40, "exec", 4));
			guest_stream_close(o.s);
			assert_int_equal(guest_stream_gate_wait(c), 0);
		} else {
			assert_int_equal(o.r, -EIO);
			struct guest_stream *s;
			json_t *req = json_pack("{s:s}", "op", "exec");
			assert_int_equal(guest_stream_open(c, req, &s), -EIO);
			json_decref(req);
			assert_int_equal(guest_stream_gate_wait(c), -EIO);
			/* and the host sent the agent nothing more */
			assert_int_equal(fake_next(&f, &fr, buf, sizeof(buf), 200), 0);
		}
		guest_conn_close(c);
		fake_close(&f);
	}
}

/* guest_conn_restore on a thread (the fake answers on the test's). */
struct restore_call {
	struct guest_conn *c;
	const struct guest_restore_opts *o;
	int r;
};

static void *restore_main(void *arg)
{
	struct restore_call *rc = arg;
	rc->r = guest_conn_restore(rc->c, rc->o, 5000);
	return NULL;
}

/* A restore that hands a sandbox out sends its id only to an agent that
 * lists the "restore_hooks" feature (an older one refuses unknown fields),
 * and what the agent answers about its hooks is the guest's word: a hostile
 * report is logged without harm, a silly count is clamped. */
static void test_restore_sandbox_id_and_hostile_report(void **state)
{
	(void)state;
	static const char *const ends[] = {
		"{\"hooks\": [1, {\"name\": 5, \"exit_code\": \"x\"}, {\"skipped\": true}], "
		"\"kernel_hooks\": {\"failed\": 2, \"errors\": \"\\u0000\"}, "
		"\"hooks_found\": 99999999999}",
		"{\"hooks\": {}, \"kernel_hooks\": [], \"hooks_found\": -3}",
	};
	for (int feature = 0; feature < 2; feature++) {
		struct fake f;
		struct guest_conn *c =
			connect_fake_info(&f, feature ? "{\"features\": [\"restore_hooks\"]}" : "{}");
		struct guest_restore_opts o = {.sandbox_id = "sbx_0123"};
		struct restore_call rc = {.c = c, .o = &o};
		pthread_t th;
		assert_int_equal(pthread_create(&th, NULL, restore_main, &rc), 0);
		uint8_t buf[512];
		struct proto_frame fr;
		assert_int_equal(fake_next(&f, &fr, buf, sizeof(buf), 5000), 1);
		assert_int_equal(fr.type, PROTO_OPEN);
		assert_non_null(memmem(buf, fr.len, "\"op\":\"restore\"", 14));
		static const char want[] = "\"sandbox_id\":\"sbx_0123\"";
		int sent = memmem(buf, fr.len, want, sizeof(want) - 1) != NULL;
		assert_int_equal(sent, feature);
		fake_send(&f, PROTO_END, 0, fr.stream, ends[feature], (uint32_t)strlen(ends[feature]));
		pthread_join(th, NULL);
		assert_int_equal(rc.r, 0); /* the report was logged, whatever it held */
		assert_int_equal(guest_conn_restore_hooks_found(c), feature ? 0 : INT32_MAX);
		/* an id that is not one is refused before anything is sent */
		o.sandbox_id = "sbx/../x";
		assert_int_equal(guest_conn_restore_send(c, &o, 5000), -EINVAL);
		assert_int_equal(fake_next(&f, &fr, buf, sizeof(buf), 200), 0);
		guest_conn_close(c);
		fake_close(&f);
	}
}

/* A gate nobody read when the connection closes: no leak, no hang. */
static void test_restore_gate_dropped_at_close(void **state)
{
	(void)state;
	struct fake f;
	struct guest_conn *c = connect_fake(&f);
	assert_int_equal(guest_conn_restore_send(c, NULL, 5000), 0);
	guest_conn_close(c);
	fake_close(&f);
}

/* A guest flooding ERROR frames on stream 0 costs the daemon's log a
 * bounded number of lines, and the connection keeps working. */
static void test_agent_error_flood_bounded_in_log(void **state)
{
	(void)state;
	struct fake f;
	struct guest_conn *c = connect_fake(&f);
	char logpath[] = "/tmp/pandastack-errlog-XXXXXX";
	int lfd = mkstemp(logpath);
	assert_true(lfd >= 0);
	int saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_int_equal(dup2(lfd, STDERR_FILENO), STDERR_FILENO);
	const char *e = "{\"code\": \"EFLOOD\", \"message\": \"from a hostile guest\"}";
	for (int i = 0; i < 20000; i++)
		fake_send(&f, PROTO_ERROR, 0, 0, e, (uint32_t)strlen(e));
	/* the frames before a PING are handled before its PONG */
	uint8_t buf[64];
	fake_send(&f, PROTO_PING, 0, 0, "syncsync", 8);
	assert_true(fake_expect(&f, PROTO_PONG, buf, sizeof(buf)) == 0);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	char *text = NULL;
	size_t len = 0;
	assert_int_equal(util_read_file(logpath, 1 << 24, &text, &len), 0);
	unlink(logpath);
	close(lfd);
	unsigned lines = 0;
	for (const char *p = text; (p = strstr(p, "event=guest_conn.agent_error ")); p++)
		lines++;
	free(text);
	/* the probe sees the lines (the first are logged), and no more than
	 * the minute's allowance */
	assert_true(lines >= 1);
	assert_true(lines <= 10);
	assert_true(len < 10 * 512);
	assert_true(guest_conn_alive(c));
	guest_conn_close(c);
	fake_close(&f);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handshake),
		cmocka_unit_test(test_stream_violations_fail_only_that_stream),
		cmocka_unit_test(test_garbage_kills_connection_not_caller),
		cmocka_unit_test(test_stalled_agent_times_out),
		cmocka_unit_test(test_end_then_zero_and_epipe),
		cmocka_unit_test(test_agent_error_flood_bounded_in_log),
		cmocka_unit_test(test_restore_gate_orders_and_fails_closed),
		cmocka_unit_test(test_restore_gate_dropped_at_close),
		cmocka_unit_test(test_restore_sandbox_id_and_hostile_report),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
