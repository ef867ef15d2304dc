/*
 * fuzz_proto.c - libFuzzer target for the agent frame decoder, both
 * directions: the input is fed in pieces (sizes taken from the input) to a
 * host-role and an agent-role decoder + stream table, as a hostile peer would
 * send it.  Any crash, leak or sanitizer report is a bug.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void run(enum proto_role role, const uint8_t *data, size_t size)
{
	struct proto_decoder d;
	struct proto_mux m;
	proto_decoder_init(&d);
	proto_mux_init(&m, role);
	if (role == PROTO_ROLE_HOST)
		for (uint32_t id = 1; id <= 8; id++)
			proto_mux_open(&m, id);
	size_t off = 0;
	while (off < size) {
		size_t n = 1 + data[off] % 97; /* piece size from the input */
		if (n > size - off)
			n = size - off;
		if (proto_decoder_feed(&d, data + off, n) < 0)
			break;
		off += n;
		struct proto_frame f;
		int r;
		while ((r = proto_decoder_next(&d, &f)) != 0) {
			if (r < 0)
				continue;
			int c = proto_mux_check(&m, &f);
			if (c == 0 && f.type == PROTO_DATA)
				proto_mux_consumed(&m, f.stream, f.len);
			if (c == 0 && (f.type == PROTO_END || f.type == PROTO_ERROR))
				proto_mux_close(&m, f.stream);
			if (f.type == PROTO_HELLO || f.type == PROTO_HELLO_ACK) {
				struct proto_hello h;
				proto_hello_decode(f.payload, f.len, &h);
			}
		}
	}
	proto_decoder_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	run(PROTO_ROLE_HOST, data, size);
	run(PROTO_ROLE_AGENT, data, size);
	return 0;
}
