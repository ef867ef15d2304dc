/*
 * fuzz_qmp.c - the QMP client against arbitrary bytes from "QEMU": the
 * greeting, replies, events, garbage and over-long lines must never crash
 * it or make it read out of bounds.  The input is the whole server side of
 * a session (written to a socketpair, then closed).
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/qemu/qmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int sp[2];
	if (size > 150000 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return 0;
	int big = 1 << 20;
	setsockopt(sp[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	setsockopt(sp[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	size_t off = 0;
	while (off < size) {
		ssize_t w = write(sp[1], data + off, size - off);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	shutdown(sp[1], SHUT_WR);
	struct qmp *q = NULL;
	if (qmp_attach(sp[0], 50, &q) == 0) {
		json_t *ret = NULL;
		json_t *args = json_pack("{s:s}", "fdname", "x");
		qmp_call(q, "query-status", args, 50, &ret);
		json_decref(ret);
		qmp_call_fd(q, "getfd", args, sp[1], 50, NULL);
		json_decref(args);
		json_t *ev = NULL;
		for (int i = 0; i < 200 && qmp_event_next(q, 0, &ev) == 1; i++)
			json_decref(ev);
		qmp_close(q);
	}
	close(sp[1]);
	return 0;
}
