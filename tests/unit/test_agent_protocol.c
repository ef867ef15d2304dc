/*
 * test_agent_protocol.c - the agent's side of the protocol against a host
 * that misbehaves: garbage before and after the handshake, oversized and
 * unknown frames, bad JSON, credit overrun, frames the host may not send,
 * a wrong version, a second HELLO on a live link, and hosts that vanish
 * mid-stream or mid-frame; every time the agent must stay up, clean up
 * (kill commands, remove partial uploads) and serve the next host.
 * Raw frames are written with common/proto.h; guest_conn is used where a
 * well-behaved host is enough.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cmocka.h>

#include "agent_harness.h"
#include "common/proto.h"

/* --- a raw, hostile host ---------------------------------------------------------- */

struct raw {
	int fd;
	struct proto_decoder dec;
};

static void raw_connect(struct raw *r, const char *sock)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	strcpy(a.sun_path, sock);
	r->fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(r->fd >= 0);
	assert_int_equal(connect(r->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	proto_decoder_init(&r->dec);
}

static void raw_close(struct raw *r)
{
	close(r->fd);
	proto_decoder_free(&r->dec);
}

static void raw_bytes(struct raw *r, const void *p, size_t n)
{
	assert_int_equal(util_write_all(r->fd, p, n), 0);
}

/* A frame header with any length (even over the caps) and payload. */
static void raw_frame(struct raw *r, uint8_t type, uint8_t flags, uint32_t stream,
		      uint32_t len_field, const void *payload, size_t n)
{
	uint8_t h[PROTO_HDR_SIZE];
	proto_put_u32(h, PROTO_MAGIC);
	h[4] = type;
	h[5] = flags;
	h[6] = h[7] = 0;
	proto_put_u32(h + 8, stream);
	proto_put_u32(h + 12, len_field);
	raw_bytes(r, h, sizeof(h));
	if (n)
		raw_bytes(r, payload, n);
}

/* Next frame from the agent (payload copied into out, NUL-terminated). */
static int raw_next(struct raw *r, struct proto_frame *f, char *out, size_t outlen, int ms)
{
	int64_t end = util_now_ms() + ms;
	for (;;) {
		int k = proto_decoder_next(&r->dec, f);
		if (k == 1) {
			size_t n = f->len < outlen - 1 ? f->len : outlen - 1;
			memcpy(out, f->payload, n);
			out[n] = '\0';
			return 1;
		}
		int64_t left = end - util_now_ms();
		if (left <= 0)
			return 0;
		struct pollfd p = {.fd = r->fd, .events = POLLIN};
		if (poll(&p, 1, (int)left) <= 0)
			return 0;
		uint8_t buf[65536];
		ssize_t n = read(r->fd, buf, sizeof(buf));
		if (n <= 0)
			return -1;
		assert_int_equal(proto_decoder_feed(&r->dec, buf, (size_t)n), 0);
	}
}

/* Wait for a frame of type on stream; skips others.  Returns 1 or 0. */
static int raw_expect(struct raw *r, uint8_t type, uint32_t stream, char *out, size_t outlen)
{
	struct proto_frame f;
	while (raw_next(r, &f, out, outlen, 10000) == 1)
		if (f.type == type && f.stream == stream)
			return 1;
	return 0;
}

static void raw_hello(struct raw *r, uint32_t version, uint64_t nonce)
{
	uint8_t p[PROTO_HELLO_SIZE];
	struct proto_hello h = {.version = version, .nonce = nonce};
	proto_hello_encode(p, &h);
	raw_frame(r, PROTO_HELLO, 0, 0, sizeof(p), p, sizeof(p));
}

static void raw_open(struct raw *r, uint32_t id, const char *json)
{
	raw_frame(r, PROTO_OPEN, 0, id, (uint32_t)strlen(json), json, strlen(json));
}

static void test_hostile_frames(void **state)
{
	struct agent_fixture *f = *state;
	struct raw r;
	char buf[4096];
	guest_conn_close(f->c); /* one host at a time: free the agent */
	f->c = NULL;
	raw_connect(&r, f->a.sock);
	/* noise before the handshake is skipped (sync mode) */
	raw_bytes(&r, "\x00\xffPSF garbage PS", 16);
	raw_hello(&r, PROTO_VERSION, 99);
	assert_true(raw_expect(&r, PROTO_HELLO_ACK, 0, buf, sizeof(buf)));
	struct proto_hello h;
	assert_int_equal(proto_hello_decode((uint8_t *)buf, PROTO_HELLO_SIZE, &h), 0);
	assert_int_equal(h.nonce, 99);

	/* bad JSON in OPEN: ERROR on that stream */
	raw_open(&r, 1, "{not json");
	assert_true(raw_expect(&r, PROTO_ERROR, 1, buf, sizeof(buf)));
	assert_non_null(strstr(buf, "EBADMSG"));

	/* an unknown op: END with EINVAL */
	raw_open(&r, 2, "{\"op\": \"frobnicate\"}");
	assert_true(raw_expect(&r, PROTO_END, 2, buf, sizeof(buf)));
	assert_non_null(strstr(buf, "EINVAL"));

	/* an oversized DATA header on an open stream: ERROR, stream closed */
	raw_open(&r, 3, "{\"op\": \"exec\", \"cmd\": \"sleep 30\", \"stdin\": true}");
	assert_true(raw_expect(&r, PROTO_EVENT, 3, buf, sizeof(buf)));
	raw_frame(&r, PROTO_DATA, 0, 3, 1u << 20, NULL, 0);
	assert_true(raw_expect(&r, PROTO_ERROR, 3, buf, sizeof(buf)));
	assert_non_null(strstr(buf, "EMSGSIZE"));

	/* an unknown frame type, and a frame larger than any payload cap */
	raw_frame(&r, 77, 0, 4, 0, NULL, 0);
	assert_true(raw_expect(&r, PROTO_ERROR, 4, buf, sizeof(buf)));
	raw_frame(&r, PROTO_OPEN, 0, 5, 0xfffffff0u, NULL, 0);
	assert_true(raw_expect(&r, PROTO_ERROR, 5, buf, sizeof(buf)));

	/* DATA beyond the credit: ERROR (EOVERFLOW) on the stream */
	raw_open(&r, 6, "{\"op\": \"exec\", \"cmd\": \"sleep 30\", \"stdin\": true}");
	assert_true(raw_expect(&r, PROTO_EVENT, 6, buf, sizeof(buf)));
	static uint8_t chunk[PROTO_MAX_DATA];
	for (unsigned i = 0; i < PROTO_INITIAL_WINDOW / PROTO_MAX_DATA + 1; i++)
		raw_frame(&r, PROTO_DATA, 0, 6, sizeof(chunk), chunk, sizeof(chunk));
	assert_true(raw_expect(&r, PROTO_ERROR, 6, buf, sizeof(buf)));
	assert_non_null(strstr(buf, "EOVERFLOW"));

	/* frames the host may not send, and DATA on a wrong channel */
	raw_open(&r, 7, "{\"op\": \"exec\", \"cmd\": \"sleep 30\", \"stdin\": true}");
	assert_true(raw_expect(&r, PROTO_EVENT, 7, buf, sizeof(buf)));
	raw_frame(&r, PROTO_DATA, 2, 7, 3, "abc", 3);
	assert_true(raw_expect(&r, PROTO_ERROR, 7, buf, sizeof(buf)));
	raw_frame(&r, PROTO_END, 0, 8, 2, "{}", 2);
	assert_true(raw_expect(&r, PROTO_ERROR, 8, buf, sizeof(buf)));

	/* random garbage after the handshake costs nothing but an ERROR */
	uint8_t junk[4096];
	util_random(junk, sizeof(junk));
	raw_bytes(&r, junk, sizeof(junk));
	/* PING still answered, and a fresh exec works on the same link */
	raw_frame(&r, PROTO_PING, 0, 0, 8, "12345678", 8);
	assert_true(raw_expect(&r, PROTO_PONG, 0, buf, sizeof(buf)));
	assert_memory_equal(buf, "12345678", 8);
	raw_open(&r, 9, "{\"op\": \"exec\", \"cmd\": \"echo alive\"}");
	assert_true(raw_expect(&r, PROTO_DATA, 9, buf, sizeof(buf)));
	assert_string_equal(buf, "alive\n");
	assert_true(raw_expect(&r, PROTO_END, 9, buf, sizeof(buf)));
	assert_non_null(strstr(buf, "\"exit_code\":0"));
	raw_close(&r);
	assert_true(harness_alive(&f->a));
}

static void test_version_mismatch_and_missing_socket(void **state)
{
	struct agent_fixture *f = *state;
	guest_conn_close(f->c); /* one host at a time: free the agent */
	f->c = NULL;
	struct raw r;
	char buf[512];
	raw_connect(&r, f->a.sock);
	raw_hello(&r, PROTO_VERSION + 1, 5);
	assert_true(raw_expect(&r, PROTO_ERROR, 0, buf, sizeof(buf)));
	assert_non_null(strstr(buf, "EPROTONOSUPPORT"));
	raw_close(&r);
	struct guest_conn *c = NULL;
	char missing[PATH_MAX + 32];
	snprintf(missing, sizeof(missing), "%s/nope.sock", f->a.dir);
	assert_int_equal(guest_conn_open(missing, 1000, &c), -ENOENT);
	assert_int_equal(guest_conn_open(f->a.sock, 5000, &f->c), 0);
}

/* The host disconnects with a command running and an upload half done; the
 * agent kills the command, removes the temporary file, and a new host gets
 * a fresh handshake. */
static void test_disconnect_mid_stream_and_reconnect(void **state)
{
	struct agent_fixture *f = *state;
	char tok[32], cmd[128];
	harness_sleep_token(tok, sizeof(tok));
	snprintf(cmd, sizeof(cmd), "echo go; sleep %s", tok);
	struct guest_stream *ex, *up;
	json_t *req = json_pack("{s:s, s:s}", "op", "exec", "cmd", cmd);
	assert_int_equal(guest_stream_open(f->c, req, &ex), 0);
	json_decref(req);
	struct guest_msg m;
	enum guest_msg_kind kind;
	do { /* wait until the command runs */
		assert_int_equal(guest_stream_read(ex, &m, 10000), 1);
		kind = m.kind;
		guest_msg_clear(&m);
	} while (kind != GUEST_MSG_DATA);
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/half.bin", f->a.ws);
	req = json_pack("{s:s, s:s}", "op", "file_write", "path", path);
	assert_int_equal(guest_stream_open(f->c, req, &up), 0);
	json_decref(req);
	uint8_t data[100000] = {1};
	assert_int_equal(guest_stream_write(up, data, sizeof(data), 10000), 0);
	assert_true(harness_count_procs(tok) >= 1);

	guest_conn_close(f->c);
	f->c = NULL;
	/* the streams' owners see the connection gone */
	assert_int_equal(guest_stream_read(ex, &m, 1000), -ECONNRESET);
	assert_int_equal(guest_stream_write(up, data, 10, 1000), -ECONNRESET);
	guest_stream_close(ex);
	guest_stream_close(up);

	assert_int_equal(harness_wait_no_procs(tok, 5000), 0);
	assert_int_equal(guest_conn_open(f->a.sock, 5000, &f->c), 0);
	/* the upload left nothing: no target, no temporary file */
	json_t *end = harness_call(f->c, json_pack("{s:s, s:s}", "op", "list", "path", f->a.ws));
	assert_non_null(end);
	assert_int_equal(json_array_size(json_object_get(end, "entries")), 0);
	json_decref(end);
	struct exec_result r;
	assert_int_equal(harness_sh(f->c, "echo back", &r), 0);
	assert_string_equal((char *)r.out, "back\n");
	exec_result_clear(&r);
}

/* A second HELLO on a live connection starts over: running commands are
 * killed, and the same stream id may be opened again. */
static void test_rehello_resets_streams(void **state)
{
	struct agent_fixture *f = *state;
	guest_conn_close(f->c);
	f->c = NULL;
	struct raw r;
	char buf[512], tok[32], req[128];
	harness_sleep_token(tok, sizeof(tok));
	snprintf(req, sizeof(req), "{\"op\": \"exec\", \"cmd\": \"echo up; sleep %s\"}", tok);
	raw_connect(&r, f->a.sock);
	raw_hello(&r, PROTO_VERSION, 1);
	assert_true(raw_expect(&r, PROTO_HELLO_ACK, 0, buf, sizeof(buf)));
	raw_open(&r, 1, req);
	assert_true(raw_expect(&r, PROTO_DATA, 1, buf, sizeof(buf)));
	assert_true(harness_count_procs(tok) >= 1);
	raw_hello(&r, PROTO_VERSION, 2);
	assert_true(raw_expect(&r, PROTO_HELLO_ACK, 0, buf, sizeof(buf)));
	struct proto_hello h;
	assert_int_equal(proto_hello_decode((uint8_t *)buf, PROTO_HELLO_SIZE, &h), 0);
	assert_int_equal(h.nonce, 2);
	assert_int_equal(harness_wait_no_procs(tok, 5000), 0);
	raw_open(&r, 1, "{\"op\": \"exec\", \"cmd\": \"echo again\"}");
	assert_true(raw_expect(&r, PROTO_DATA, 1, buf, sizeof(buf)));
	assert_string_equal(buf, "again\n");
	raw_close(&r);
}

/* A raw host that vanishes in the middle of sending a frame. */
static void test_disconnect_mid_frame(void **state)
{
	struct agent_fixture *f = *state;
	guest_conn_close(f->c);
	f->c = NULL;
	for (int round = 0; round < 3; round++) {
		struct raw r;
		char buf[512];
		raw_connect(&r, f->a.sock);
		raw_hello(&r, PROTO_VERSION, (uint64_t)round);
		assert_true(raw_expect(&r, PROTO_HELLO_ACK, 0, buf, sizeof(buf)));
		raw_open(&r, 1, "{\"op\": \"exec\", \"cmd\": \"cat\", \"stdin\": true}");
		raw_frame(&r, PROTO_DATA, 0, 1, 1000, "only part", 9);
		raw_close(&r);
	}
	assert_int_equal(guest_conn_open(f->a.sock, 5000, &f->c), 0);
	struct exec_result r;
	assert_int_equal(harness_sh(f->c, "echo fine", &r), 0);
	assert_string_equal((char *)r.out, "fine\n");
	exec_result_clear(&r);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		AGENT_TEST(test_hostile_frames),
		AGENT_TEST(test_version_mismatch_and_missing_socket),
		AGENT_TEST(test_disconnect_mid_stream_and_reconnect),
		AGENT_TEST(test_rehello_resets_streams),
		AGENT_TEST(test_disconnect_mid_frame),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
