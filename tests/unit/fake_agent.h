/*
 * fake_agent.h - a fake, scriptable guest agent for the host-side tests of
 * the agent client (test_guest_conn.c, test_guest_run.c): a listening Unix
 * socket; the test accepts, completes the handshake and then sends any
 * frame it likes (good or hostile) and reads what the host sends.
 *
 * Header-only: each test binary is one .c.  The fake's calls are made by
 * one thread at a time (the test's, or a thread it starts).
 */
#ifndef PANDASTACK_TESTS_FAKE_AGENT_H
#define PANDASTACK_TESTS_FAKE_AGENT_H

#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
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

/* Each test uses some of the helpers. */
#define FAKE static __attribute__((unused))

/* The fake agent: a listening socket; the test accepts and talks. */
struct fake {
	char dir[64];
	char path[128];
	int lfd, fd;
	struct proto_decoder dec;
};

FAKE void fake_listen(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/pandastack-conn-test-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/agent.sock", f->dir);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	strcpy(a.sun_path, f->path);
	f->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(f->lfd, 2), 0);
	f->fd = -1;
	proto_decoder_init(&f->dec);
}

FAKE void fake_close(struct fake *f)
{
	if (f->fd >= 0)
		close(f->fd);
	close(f->lfd);
	proto_decoder_free(&f->dec);
	unlink(f->path);
	rmdir(f->dir);
}

FAKE void fake_send(struct fake *f, uint8_t type, uint8_t flags, uint32_t id, const void *p,
		      uint32_t len)
{
	uint8_t h[PROTO_HDR_SIZE];
	proto_put_u32(h, PROTO_MAGIC);
	h[4] = type;
	h[5] = flags;
	h[6] = h[7] = 0;
	proto_put_u32(h + 8, id);
	proto_put_u32(h + 12, len);
	assert_int_equal(util_write_all(f->fd, h, sizeof(h)), 0);
	if (len)
		assert_int_equal(util_write_all(f->fd, p, len), 0);
}

/* Next frame from the host (payload copied into out).  1, or 0 on timeout
 * or EOF. */
FAKE int fake_next(struct fake *f, struct proto_frame *fr, uint8_t *out, size_t outlen, int ms)
{
	int64_t end = util_now_ms() + ms;
	for (;;) {
		int k = proto_decoder_next(&f->dec, fr);
		if (k == 1) {
			memcpy(out, fr->payload, fr->len < outlen ? fr->len : outlen);
			return 1;
		}
		int64_t left = end - util_now_ms();
		if (left <= 0)
			return 0;
		struct pollfd p = {.fd = f->fd, .events = POLLIN};
		if (poll(&p, 1, (int)left) <= 0)
			return 0;
		uint8_t buf[65536];
		ssize_t n = read(f->fd, buf, sizeof(buf));
		if (n <= 0)
			return 0;
		assert_int_equal(proto_decoder_feed(&f->dec, buf, (size_t)n), 0);
	}
}

/* Skip frames until one of type (on any stream); returns its stream id or
 * -1 on timeout. */
FAKE long fake_expect(struct fake *f, uint8_t type, uint8_t *out, size_t outlen)
{
	struct proto_frame fr;
	while (fake_next(f, &fr, out, outlen, 5000) == 1)
		if (fr.type == type)
			return fr.stream;
	return -1;
}

FAKE void send_ack(struct fake *f, uint64_t nonce, uint32_t version, const char *info)
{
	uint8_t p[256];
	struct proto_hello h = {.version = version, .nonce = nonce};
	proto_hello_encode(p, &h);
	size_t n = strlen(info);
	memcpy(p + PROTO_HELLO_SIZE, info, n);
	fake_send(f, PROTO_HELLO_ACK, 0, 0, p, (uint32_t)(PROTO_HELLO_SIZE + n));
}

/* Accept and complete a handshake on f (blocking, in the test thread:
 * guest_conn_open runs in a helper thread). */
struct opener {
	struct fake *f;
	struct guest_conn *c;
	int r;
};

FAKE void *open_main(void *arg)
{
	struct opener *o = arg;
	o->r = guest_conn_open(o->f->path, 5000, &o->c);
	return NULL;
}

/* connect_fake_info - the same, the HELLO_ACK carrying info (JSON text). */
FAKE struct guest_conn *connect_fake_info(struct fake *f, const char *info)
{
	fake_listen(f);
	struct opener o = {.f = f};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, open_main, &o), 0);
	f->fd = accept(f->lfd, NULL, NULL);
	assert_true(f->fd >= 0);
	uint8_t buf[256];
	struct proto_frame fr;
	assert_int_equal(fake_next(f, &fr, buf, sizeof(buf), 5000), 1);
	assert_int_equal(fr.type, PROTO_HELLO);
	struct proto_hello h;
	proto_hello_decode(buf, fr.len, &h);
	send_ack(f, h.nonce, PROTO_VERSION, info);
	pthread_join(th, NULL);
	assert_int_equal(o.r, 0);
	return o.c;
}

FAKE struct guest_conn *connect_fake(struct fake *f)
{
	return connect_fake_info(f, "{}");
}

#endif
