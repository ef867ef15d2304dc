/*
 * test_proto.c - agent protocol frames and stream multiplexing: encoding,
 * decoding in pieces, bad magic, bad lengths, unknown types, truncation,
 * stream ids and credit accounting.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/proto.h"

/* Encode one frame (header + payload) into out; returns its size. */
static size_t frame(uint8_t *out, uint8_t type, uint8_t flags, uint32_t stream,
		    const void *payload, uint32_t len)
{
	assert_int_equal(proto_encode_hdr(out, type, flags, stream, len), 0);
	if (len)
		memcpy(out + PROTO_HDR_SIZE, payload, len);
	return PROTO_HDR_SIZE + len;
}

static void test_roundtrip_byte_by_byte(void **state)
{
	(void)state;
	uint8_t wire[256];
	size_t n = frame(wire, PROTO_DATA, PROTO_CH_STDERR, 7, "hello", 5);
	n += frame(wire + n, PROTO_EOF, PROTO_CH_STDERR, 7, NULL, 0);
	struct proto_decoder d;
	proto_decoder_init(&d);
	d.syncing = 0;
	struct proto_frame f;
	int got = 0;
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(proto_decoder_feed(&d, wire + i, 1), 0);
		int r;
		while ((r = proto_decoder_next(&d, &f)) == 1) {
			if (got == 0) {
				assert_int_equal(f.type, PROTO_DATA);
				assert_int_equal(f.flags, PROTO_CH_STDERR);
				assert_int_equal(f.stream, 7);
				assert_int_equal(f.len, 5);
				assert_memory_equal(f.payload, "hello", 5);
			} else {
				assert_int_equal(f.type, PROTO_EOF);
				assert_int_equal(f.len, 0);
			}
			got++;
		}
		assert_int_equal(r, 0);
	}
	assert_int_equal(got, 2);
	assert_int_equal(d.dropped, 0);
	proto_decoder_free(&d);
}

static void test_truncated_frame_waits(void **state)
{
	(void)state;
	uint8_t wire[64];
	size_t n = frame(wire, PROTO_OPEN, 0, 3, "{\"op\":\"x\"}", 10);
	struct proto_decoder d;
	proto_decoder_init(&d);
	struct proto_frame f;
	assert_int_equal(proto_decoder_feed(&d, wire, n - 1), 0);
	assert_int_equal(proto_decoder_next(&d, &f), 0);
	assert_int_equal(proto_decoder_feed(&d, wire + n - 1, 1), 0);
	assert_int_equal(proto_decoder_next(&d, &f), 1);
	assert_int_equal(f.len, 10);
	proto_decoder_free(&d);
}

static void test_lost_first_byte_resyncs(void **state)
{
	(void)state;
	uint8_t wire[128];
	struct proto_hello h = {PROTO_VERSION, 42};
	uint8_t hp[PROTO_HELLO_SIZE];
	proto_hello_encode(hp, &h);
	size_t n = frame(wire, PROTO_HELLO, 0, 0, hp, sizeof(hp));
	n += frame(wire + n, PROTO_HELLO, 0, 0, hp, sizeof(hp));
	struct proto_decoder d;
	proto_decoder_init(&d);
	/* the first byte of the first HELLO is lost on the line */
	assert_int_equal(proto_decoder_feed(&d, wire + 1, n - 1), 0);
	struct proto_frame f;
	assert_int_equal(proto_decoder_next(&d, &f), 1);
	assert_int_equal(f.type, PROTO_HELLO);
	struct proto_hello got;
	assert_int_equal(proto_hello_decode(f.payload, f.len, &got), 0);
	assert_int_equal(got.nonce, 42);
	assert_int_equal(d.dropped, PROTO_HDR_SIZE + PROTO_HELLO_SIZE - 1);
	assert_int_equal(proto_decoder_next(&d, &f), 0);
	proto_decoder_free(&d);
}

static void test_bad_magic_then_good_frame(void **state)
{
	(void)state;
	uint8_t wire[128];
	memcpy(wire, "garbage!PSFx0123456789abcdef", 28);
	size_t n = 28 + frame(wire + 28, PROTO_PING, 0, 0, "12345678", 8);
	struct proto_decoder d;
	proto_decoder_init(&d);
	d.syncing = 0; /* as after a handshake: garbage is an error, once */
	assert_int_equal(proto_decoder_feed(&d, wire, n), 0);
	struct proto_frame f;
	assert_int_equal(proto_decoder_next(&d, &f), -EBADMSG);
	assert_int_equal(proto_decoder_next(&d, &f), 1);
	assert_int_equal(f.type, PROTO_PING);
	assert_memory_equal(f.payload, "12345678", 8);
	proto_decoder_free(&d);
}

static void test_oversized_and_unknown(void **state)
{
	(void)state;
	uint8_t wire[64];
	/* a DATA header claiming 64 KiB + 1 bytes */
	proto_put_u32(wire, PROTO_MAGIC);
	wire[4] = PROTO_DATA;
	wire[5] = 1;
	wire[6] = wire[7] = 0;
	proto_put_u32(wire + 8, 9);
	proto_put_u32(wire + 12, PROTO_MAX_DATA + 1);
	/* then an unknown type 99 on stream 4 */
	memcpy(wire + 16, wire, 16);
	wire[16 + 4] = 99;
	proto_put_u32(wire + 16 + 8, 4);
	proto_put_u32(wire + 16 + 12, 0);
	/* then a valid EOF */
	size_t n = 32 + frame(wire + 32, PROTO_EOF, 0, 5, NULL, 0);
	struct proto_decoder d;
	proto_decoder_init(&d);
	assert_int_equal(proto_decoder_feed(&d, wire, n), 0);
	struct proto_frame f;
	assert_int_equal(proto_decoder_next(&d, &f), -EMSGSIZE);
	assert_int_equal(f.stream, 9);
	assert_int_equal(proto_decoder_next(&d, &f), -EPROTO);
	assert_int_equal(f.stream, 4);
	assert_int_equal(proto_decoder_next(&d, &f), 1);
	assert_int_equal(f.type, PROTO_EOF);
	assert_int_equal(f.stream, 5);
	proto_decoder_free(&d);
}

static void test_encode_rejects(void **state)
{
	(void)state;
	uint8_t h[PROTO_HDR_SIZE];
	assert_int_equal(proto_encode_hdr(h, 0, 0, 1, 0), -EINVAL);
	assert_int_equal(proto_encode_hdr(h, 200, 0, 1, 0), -EINVAL);
	assert_int_equal(proto_encode_hdr(h, PROTO_DATA, 0, 1, PROTO_MAX_DATA + 1), -EMSGSIZE);
	assert_int_equal(proto_encode_hdr(h, PROTO_EOF, 0, 1, 1), -EMSGSIZE);
	assert_int_equal(proto_encode_hdr(h, PROTO_END, 0, 1, PROTO_MAX_PAYLOAD + 1), -EMSGSIZE);
	assert_int_equal(proto_encode_hdr(h, PROTO_END, 0, 1, PROTO_MAX_PAYLOAD), 0);
}

static void test_feed_cap(void **state)
{
	(void)state;
	struct proto_decoder d;
	proto_decoder_init(&d);
	static uint8_t junk[65536];
	memset(junk, 'x', sizeof(junk));
	/* garbage is discarded while syncing, so endless junk never fills it */
	for (int i = 0; i < 256; i++) {
		assert_int_equal(proto_decoder_feed(&d, junk, sizeof(junk)), 0);
		struct proto_frame f;
		assert_int_equal(proto_decoder_next(&d, &f), 0);
	}
	assert_int_equal(d.dropped, 256u * sizeof(junk));
	assert_true(d.cap <= PROTO_HDR_SIZE + PROTO_MAX_PAYLOAD);
	proto_decoder_free(&d);
}

static struct proto_frame mk(uint8_t type, uint32_t stream, const void *p, uint32_t len)
{
	struct proto_frame f = {type, 0, stream, len, p};
	return f;
}

static void test_mux_roles_and_ids(void **state)
{
	(void)state;
	struct proto_mux agent;
	proto_mux_init(&agent, PROTO_ROLE_AGENT);
	struct proto_frame f = mk(PROTO_OPEN, 0, "{}", 2);
	assert_int_equal(proto_mux_check(&agent, &f), -EPROTO); /* OPEN on 0 */
	f = mk(PROTO_OPEN, 5, "{}", 2);
	assert_int_equal(proto_mux_check(&agent, &f), 0);
	assert_int_equal(proto_mux_check(&agent, &f), -EEXIST);
	f = mk(PROTO_END, 5, "{}", 2); /* END comes from the agent only */
	assert_int_equal(proto_mux_check(&agent, &f), -EPROTO);
	f = mk(PROTO_DATA, 6, "x", 1);
	assert_int_equal(proto_mux_check(&agent, &f), -ENOENT);
	f = mk(PROTO_HELLO, 5, "x", 1);
	assert_int_equal(proto_mux_check(&agent, &f), -EPROTO);

	struct proto_mux host;
	proto_mux_init(&host, PROTO_ROLE_HOST);
	f = mk(PROTO_OPEN, 5, "{}", 2); /* the agent never opens */
	assert_int_equal(proto_mux_check(&host, &f), -EPROTO);
	assert_int_equal(proto_mux_open(&host, 5), 0);
	f = mk(PROTO_END, 5, "{}", 2);
	assert_int_equal(proto_mux_check(&host, &f), 0);
	proto_mux_close(&host, 5);
	assert_null(proto_mux_find(&host, 5));
	assert_int_equal(proto_mux_check(&host, &f), -ENOENT);
}

static void test_mux_stream_limit(void **state)
{
	(void)state;
	struct proto_mux m;
	proto_mux_init(&m, PROTO_ROLE_HOST);
	for (uint32_t i = 1; i <= PROTO_MAX_STREAMS; i++)
		assert_int_equal(proto_mux_open(&m, i), 0);
	assert_int_equal(proto_mux_open(&m, PROTO_MAX_STREAMS + 1), -EMFILE);
	proto_mux_close(&m, 17);
	assert_int_equal(proto_mux_open(&m, PROTO_MAX_STREAMS + 1), 0);
	assert_int_equal(m.nopen, PROTO_MAX_STREAMS);
}

static void test_mux_credit(void **state)
{
	(void)state;
	static uint8_t chunk[PROTO_MAX_DATA];
	struct proto_mux m;
	proto_mux_init(&m, PROTO_ROLE_AGENT);
	struct proto_frame f = mk(PROTO_OPEN, 1, "{}", 2);
	assert_int_equal(proto_mux_check(&m, &f), 0);
	/* the host may send exactly the initial window */
	f = mk(PROTO_DATA, 1, chunk, PROTO_MAX_DATA);
	for (uint32_t sent = 0; sent < PROTO_INITIAL_WINDOW; sent += PROTO_MAX_DATA)
		assert_int_equal(proto_mux_check(&m, &f), 0);
	assert_int_equal(proto_mux_check(&m, &f), -EOVERFLOW);
	/* consuming half the window grants it back */
	assert_int_equal(proto_mux_consumed(&m, 1, PROTO_INITIAL_WINDOW / 2 - 1), 0);
	assert_int_equal(proto_mux_consumed(&m, 1, 1), PROTO_INITIAL_WINDOW / 2);
	assert_int_equal(proto_mux_check(&m, &f), 0);

	/* send side: credit is taken and refilled by WINDOW */
	assert_int_equal(proto_mux_take_credit(&m, 1, PROTO_INITIAL_WINDOW + 5), PROTO_INITIAL_WINDOW);
	assert_int_equal(proto_mux_take_credit(&m, 1, 1), 0);
	uint8_t w[4];
	proto_put_u32(w, 100);
	f = mk(PROTO_WINDOW, 1, w, 4);
	assert_int_equal(proto_mux_check(&m, &f), 0);
	assert_int_equal(proto_mux_take_credit(&m, 1, 1000), 100);
	/* malformed and excessive windows */
	f = mk(PROTO_WINDOW, 1, w, 3);
	assert_int_equal(proto_mux_check(&m, &f), -EPROTO);
	proto_put_u32(w, 0);
	f = mk(PROTO_WINDOW, 1, w, 4);
	assert_int_equal(proto_mux_check(&m, &f), -EPROTO);
	proto_put_u32(w, PROTO_MAX_WINDOW + 1);
	f = mk(PROTO_WINDOW, 1, w, 4);
	assert_int_equal(proto_mux_check(&m, &f), -EOVERFLOW);
}

/* The room is the cap less the bytes held that are not yet returned as
 * frames. */
static void test_decoder_room(void **state)
{
	(void)state;
	uint8_t wire[64];
	size_t n = frame(wire, PROTO_DATA, PROTO_CH_STDOUT, 3, "abcdef", 6);
	struct proto_decoder d;
	proto_decoder_init(&d);
	d.syncing = 0;
	assert_int_equal(proto_decoder_room(&d), PROTO_DECODER_CAP);
	assert_int_equal(proto_decoder_feed(&d, wire, n - 2), 0);
	assert_int_equal(proto_decoder_room(&d), PROTO_DECODER_CAP - (n - 2));
	assert_int_equal(proto_decoder_feed(&d, wire + n - 2, 2), 0);
	struct proto_frame f;
	assert_int_equal(proto_decoder_next(&d, &f), 1);
	assert_memory_equal(f.payload, "abcdef", 6);
	assert_int_equal(proto_decoder_room(&d), PROTO_DECODER_CAP);
	assert_int_equal(proto_decoder_next(&d, &f), 0);
	assert_int_equal(proto_decoder_room(&d), PROTO_DECODER_CAP);
	/* feeding more than the room is refused */
	assert_int_equal(proto_decoder_feed(&d, wire, 1), 0);
	static uint8_t big[PROTO_DECODER_CAP];
	assert_int_equal(proto_decoder_feed(&d, big, proto_decoder_room(&d) + 1), -ENOBUFS);
	proto_decoder_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decoder_room),
		cmocka_unit_test(test_roundtrip_byte_by_byte),
		cmocka_unit_test(test_truncated_frame_waits),
		cmocka_unit_test(test_lost_first_byte_resyncs),
		cmocka_unit_test(test_bad_magic_then_good_frame),
		cmocka_unit_test(test_oversized_and_unknown),
		cmocka_unit_test(test_encode_rejects),
		cmocka_unit_test(test_feed_cap),
		cmocka_unit_test(test_mux_roles_and_ids),
		cmocka_unit_test(test_mux_stream_limit),
		cmocka_unit_test(test_mux_credit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
