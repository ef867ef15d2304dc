/*
 * net_addr.h - IPv4 addresses for the sandbox network service: CIDR text,
 * and the ranges no sandbox may ever reach (docs/network.md, "Always
 * denied").  Addresses are uint32_t in host byte order throughout the
 * net_* modules.
 *
 * The always-denied ranges: 0.0.0.0/8 (this network), 10.0.0.0/8,
 * 100.64.0.0/10 (CGNAT), 127.0.0.0/8 (loopback), 169.254.0.0/16
 * (link-local: cloud metadata), 172.16.0.0/12, 192.168.0.0/16 (RFC 1918),
 * 192.0.0.0/24 (IETF protocol assignments), 198.18.0.0/15 (benchmarking,
 * used inside some data centres), 224.0.0.0/4 (multicast), 240.0.0.0/4
 * (reserved, with 255.255.255.255).  The host's own networks are added at
 * run time (net_denied.h).
 *
 * Pure functions; any thread.
 */
#ifndef PANDASTACK_DAEMON_NET_ADDR_H
#define PANDASTACK_DAEMON_NET_ADDR_H

#include <stddef.h>
#include <stdint.h>

/* Longest CIDR text with its NUL: "255.255.255.255/32". */
#define NET_CIDR_TEXT_MAX 19

struct net_cidr {
	uint32_t addr;   /* host byte order, host bits zero */
	uint32_t mask;   /* host byte order: prefix ones, then zeros */
	unsigned prefix; /* 0..32 */
};

/*
 * net_addr_parse_ipv4 - a dotted quad of exactly four decimal parts 0..255
 * without leading zeros ("010.1.1.1" is refused: some parsers read it as
 * octal).  Returns 0 with *out (host order) or -EINVAL.
 */
int net_addr_parse_ipv4(const char *s, uint32_t *out);

/*
 * net_addr_parse_cidr - "A.B.C.D/N" (N 0..32) or "A.B.C.D" (a /32).
 * Returns 0 with *out, -EINVAL when it is not that form, -EDOM when the
 * address has bits set beyond the prefix ("10.0.0.1/8"; *out then holds
 * the network it names, 10.0.0.0/8, for a message).
 */
int net_addr_parse_cidr(const char *s, struct net_cidr *out);

/* net_addr_cidr_text - c as "A.B.C.D/N" into out (NET_CIDR_TEXT_MAX bytes). */
void net_addr_cidr_text(const struct net_cidr *c, char out[NET_CIDR_TEXT_MAX]);

/* net_addr_text - ip as "A.B.C.D" into out (16 bytes).  Returns out. */
const char *net_addr_text(uint32_t ip, char out[16]);

/* net_addr_in_cidr - 1 if ip lies in c. */
int net_addr_in_cidr(uint32_t ip, const struct net_cidr *c);

/* net_addr_always_denied - 1 if ip is in one of the fixed ranges above. */
int net_addr_always_denied(uint32_t ip);

/* net_addr_cidr_all_denied - 1 if every address of c is in the fixed
 * ranges (a rule that could never let anything through). */
int net_addr_cidr_all_denied(const struct net_cidr *c);

/* net_addr_denied_inside - the fixed ranges that lie inside c (which an
 * allow rule c does not open), in address order, up to max into out.
 * Returns how many there are (may be more than max). */
size_t net_addr_denied_inside(const struct net_cidr *c, struct net_cidr *out, size_t max);

#endif
