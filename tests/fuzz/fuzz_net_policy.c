/*
 * fuzz_net_policy.c - libFuzzer target for sandbox network policies
 * (daemon/net/net_policy.c): the "network" object of a create or of
 * PUT /v1/sandboxes/{id}/network, parsed as the daemon parses it.
 *
 * Checks beyond "no crash, no leak, no UB": a failed parse names a 400 row
 * of the error table with a UTF-8 message; an accepted policy's canonical
 * JSON parses again to the same JSON; no policy lets a connection reach an
 * always-denied address; a copy decides like the original.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "daemon/api_errors.h"
#include "daemon/http/request_body.h"
#include "daemon/net/net_denied.h"
#include "daemon/net/net_policy.h"

static void check(int ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct net_denied *denied;
	if (!denied) {
		check(net_denied_new("198.51.100.0/24", &denied) == 0);
		struct net_cidr host;
		net_denied_host_net(0xcb007101, UINT32_MAX, &host); /* 203.0.113.1 */
		net_denied_set_host(denied, &host, 1);
	}
	struct net_policy *p = NULL;
	struct body_error e = {.code = API_ERR_COUNT};
	int pp;
	if (body_parse_network((const char *)data, size, NULL, &p, &pp, &e) < 0) {
		check(!p && (unsigned)e.code < API_ERR_COUNT && api_errors_status(e.code) == 400);
		check(utf8_valid(e.message, strlen(e.message)));
		return 0;
	}
	check(pp >= -1 && pp <= 1);
	json_t *j = net_policy_json(p);
	check(j != NULL);
	struct net_policy *again = NULL;
	check(net_policy_parse(j, "", &again, &e) == 0);
	json_t *j2 = net_policy_json(again);
	check(json_equal(j, j2));
	struct net_policy *copy = net_policy_dup(p);
	check(copy != NULL);
	static const uint32_t dst[] = {0x7f000001, 0x0a000202, 0xa9fea9fe, 0xc0a80101, 0x64400001,
				       0xe0000001, 0xcb007101, 0xc6336405, 0x08080808, 0x5db8d822};
	static const char *const names[] = {NULL, "pypi.org", "a.example.com", "example.com"};
	for (size_t i = 0; i < sizeof(dst) / sizeof(dst[0]); i++)
		for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
			struct net_decision a = net_policy_decide(p, denied, dst[i], names[k], 0);
			struct net_decision b = net_policy_decide(copy, denied, dst[i], names[k], 0);
			check(a.verdict == b.verdict);
			if (net_denied_has(denied, dst[i], 0))
				check(a.verdict == NET_REFUSE && a.why == NET_REFUSAL_DENIED_RANGE);
			if (names[k])
				(void)net_policy_may_resolve(p, names[k]);
		}
	json_decref(j);
	json_decref(j2);
	net_policy_free(again);
	net_policy_free(copy);
	net_policy_free(p);
	return 0;
}
