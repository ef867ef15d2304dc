/*
 * fuzz_agent_netconf.c - libFuzzer target for netconf_reply_check (the
 * agent's reader of the kernel's netlink answers, src/agent/netconf.h):
 * the first 4 bytes are the sequence number looked for, the rest the
 * datagram, at an odd address (datagrams need not be aligned).  The answer
 * must be one of the documented values; any crash or sanitizer report is a
 * bug.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/netconf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4)
		return 0;
	uint32_t seq;
	memcpy(&seq, data, 4);
	size -= 4;
	uint8_t *buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf + 1, data + 4, size);
	int r = netconf_reply_check(buf + 1, size, seq);
	free(buf);
	if (r > 0 || r < -4095)
		abort();
	return 0;
}
