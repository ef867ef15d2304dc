/*
 * fuzz_api_ports.c - libFuzzer target for exposed ports' parsers of outside
 * input: a guest server's answer (src/daemon/ports/port_resp.c, fed in pieces
 * whose sizes come from the input) and a client's Host header and request
 * target (src/daemon/http/port_target.c).
 *
 * The first byte picks the parser.  Checks beyond "no crash, no leak, no
 * UB": the body handed out is never longer than what was fed, a finished
 * head's headers are NUL-terminated inside the parser, a forwarded target
 * starts with "/" and holds no access_token parameter.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/port_target.h"
#include "daemon/ports/port_resp.h"

static void check(int ok)
{
	if (!ok)
		abort();
}

static void answer(const uint8_t *data, size_t size)
{
	static struct port_resp r;
	static char out[4096];
	if (size < 2)
		return;
	port_resp_init(&r, data[0] & 1);
	size_t step = (size_t)data[1] % 64 + 1;
	data += 2;
	size -= 2;
	uint64_t fed = 0, body = 0;
	long k = 0;
	for (size_t off = 0; off < size && k >= 0; off += step) {
		size_t n = size - off < step ? size - off : step;
		size_t got = 0;
		k = port_resp_feed(&r, (const char *)data + off, n, out, sizeof(out), &got);
		check(got <= n);
		fed += n;
		body += got;
		if (k >= 0)
			check((size_t)k <= n);
	}
	if (k >= 0) {
		size_t got = 0;
		port_resp_feed(&r, NULL, 0, out, sizeof(out), &got);
		body += got;
	}
	check(body <= fed);
	if (r.head_done) {
		check(r.status >= 101 && r.status <= 599);
		check(r.nheaders <= PORT_RESP_HEADERS_MAX);
		for (size_t i = 0; i < r.nheaders; i++) {
			const char *name = port_resp_header_name(&r, i);
			const char *value = port_resp_header_value(&r, i);
			check(name >= r.store && name < r.store + sizeof(r.store));
			check(value >= r.store && value < r.store + sizeof(r.store));
			check(memchr(name, '\0', (size_t)(r.store + sizeof(r.store) - name)) != NULL);
			check(memchr(value, '\0', (size_t)(r.store + sizeof(r.store) - value)) != NULL);
			check(!strpbrk(value, "\r\n"));
		}
	}
}

static void target(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return;
	memcpy(s, data, size);
	s[size] = '\0';
	unsigned port = 0;
	char id[PORT_ID_MAX];
	if (port_target_from_host(s, "sbx.test", &port, id) == 1)
		check(port >= 1 && port <= 65535 && strlen(id) == 24);
	const char *rest = NULL;
	if (port_target_from_path(s, &port, id, &rest) == 1)
		check(port >= 1 && port <= 65535 && rest >= s && rest <= s + strlen(s));
	static char out[PORT_TARGET_MAX];
	if (port_target_forward(s, out, sizeof(out)) == 0) {
		check(out[0] == '/');
		/* no query item is the token, literally named */
		for (char *q = strchr(out, '?'); q; q = strchr(q + 1, '&')) {
			size_t n = strcspn(q + 1, "=&");
			check(n != strlen(PORT_TOKEN_PARAM) ||
			      memcmp(q + 1, PORT_TOKEN_PARAM, n) != 0);
		}
	}
	port_header_hop(s, s);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 0x80)
		target(data + 1, size - 1);
	else
		answer(data + 1, size - 1);
	return 0;
}
