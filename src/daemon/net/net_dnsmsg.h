/*
 * net_dnsmsg.h - the DNS messages the sandbox resolver reads and writes
 * (RFC 1035 4.1): a query of one question in, an answer of A records out.
 *
 * Queries are the guest's: hostile.  The parser reads at most len bytes,
 * allocates nothing and never fails on any input; tests/fuzz/
 * fuzz_net_dnsmsg.c feeds it.  Pure; any thread.
 */
#ifndef PANDASTACK_DAEMON_NET_DNSMSG_H
#define PANDASTACK_DAEMON_NET_DNSMSG_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/net/net_policy.h"

#define NET_DNS_MSG_MAX 512       /* a query or answer, bytes (RFC 1035 4.2.1) */
#define NET_DNS_QUESTION_MAX 259  /* a name (255) + type + class */
#define NET_DNS_TTL_MAX 300       /* seconds an answer may be cached */

/* Types, classes and answer codes used here (RFC 1035 3.2, 4.1.1; RFC 3596). */
#define NET_DNS_TYPE_A 1
#define NET_DNS_TYPE_AAAA 28
#define NET_DNS_CLASS_IN 1
#define NET_DNS_NOERROR 0
#define NET_DNS_FORMERR 1
#define NET_DNS_SERVFAIL 2
#define NET_DNS_NXDOMAIN 3
#define NET_DNS_NOTIMP 4
#define NET_DNS_REFUSED 5

struct net_dns_query {
	uint16_t id;
	uint16_t flags;          /* the query's header flags (RD is echoed) */
	uint16_t qtype, qclass;
	size_t qlen;             /* bytes of question[]; 0 when there is none */
	uint8_t question[NET_DNS_QUESTION_MAX]; /* the question as sent, echoed */
	char name[NET_NAME_MAX + 1]; /* lowercase text without the root dot when
				      * the name is a host name (net_policy.h's
				      * rule), else "" */
};

/*
 * net_dnsmsg_parse - read a query of len bytes.
 * Returns 0: a standard query of one question (q filled; q->name "" when
 *            the name is not a host name);
 *   -EINVAL: shorter than a header, or a response (QR set): ignore it;
 *   -EBADMSG: a header but no well-formed single question: answer
 *            FORMERR (q->id, q->flags set, q->qlen 0);
 *   -ENOTSUP: an opcode other than QUERY: answer NOTIMP (as -EBADMSG).
 * Name compression in the question is refused (-EBADMSG): there is nothing
 * before it to point to.
 */
int net_dnsmsg_parse(const uint8_t *msg, size_t len, struct net_dns_query *q);

/*
 * net_dnsmsg_answer - the answer to q with rcode and, for NOERROR, up to n
 * A records (addrs in host order) with ttl seconds (capped at
 * NET_DNS_TTL_MAX), as many as fit in NET_DNS_MSG_MAX bytes.  Writes into
 * out (cap bytes, at least NET_DNS_MSG_MAX) and returns the length, or 0
 * if cap is too small.
 */
size_t net_dnsmsg_answer(const struct net_dns_query *q, unsigned rcode, const uint32_t *addrs,
			 size_t n, uint32_t ttl, uint8_t *out, size_t cap);

#endif
