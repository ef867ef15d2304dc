/*
 * fuzz_net_wire.c - libFuzzer target for what guests send the sandbox
 * network service: the first bytes of a connection (daemon/net/net_sniff.c:
 * TLS ClientHello, HTTP/1 request head) and DNS queries
 * (daemon/net/net_dnsmsg.c).
 *
 * The first byte picks the parser.  Checks beyond "no crash, no leak, no
 * UB": a name found is a lowercase host name; a parsed query's name is one
 * too (or empty), and the answer to it fits in 512 bytes and is not read
 * back as a query.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/net/net_dnsmsg.h"
#include "daemon/net/net_policy.h"
#include "daemon/net/net_sniff.h"

static void check(int ok)
{
	if (!ok)
		abort();
}

static void check_name(const char *name)
{
	size_t n = strlen(name);
	check(n > 0 && net_policy_check_name(name, n) == n);
	for (size_t i = 0; i < n; i++)
		check(name[i] < 'A' || name[i] > 'Z');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	if (data[0] & 1) {
		char name[NET_NAME_MAX + 1];
		enum net_sniff r = net_sniff(p, n, name);
		check(r >= NET_SNIFF_MORE && r <= NET_SNIFF_CONFLICT);
		if (r == NET_SNIFF_NAME)
			check_name(name);
		return 0;
	}
	struct net_dns_query q;
	int r = net_dnsmsg_parse(p, n, &q);
	if (r == 0) {
		check(q.qlen >= 5 && q.qlen <= NET_DNS_QUESTION_MAX);
		if (q.name[0])
			check_name(q.name);
	}
	if (r == 0 || r == -EBADMSG || r == -ENOTSUP) {
		uint8_t a[NET_DNS_MSG_MAX];
		uint32_t addrs[16];
		memset(addrs, 0x5a, sizeof(addrs));
		size_t al = net_dnsmsg_answer(&q, r ? NET_DNS_FORMERR : NET_DNS_NOERROR, addrs, 16,
					      3600, a, sizeof(a));
		check(al >= 12 && al <= NET_DNS_MSG_MAX);
		struct net_dns_query back;
		check(net_dnsmsg_parse(a, al, &back) == -EINVAL);
	}
	return 0;
}
