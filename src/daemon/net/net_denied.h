/*
 * net_denied.h - the addresses no sandbox may reach, whatever its policy
 * says: the fixed ranges (net_addr.h), the networks the host is attached
 * to (each IPv4 address of its interfaces with its prefix, so the host
 * itself, its gateway and its neighbours; read with getifaddrs(3) in the
 * daemon's network namespace, re-read when older than
 * NET_DENIED_REFRESH_MS) and the operator's extra ranges (--net-deny).
 *
 * Threads: one set is used by one thread (the network service's loop);
 * net_denied_parse_list is pure and any thread may call it.
 */
#ifndef PANDASTACK_DAEMON_NET_DENIED_H
#define PANDASTACK_DAEMON_NET_DENIED_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/net/net_addr.h"

#define NET_DENIED_REFRESH_MS 1000
#define NET_DENIED_EXTRA_MAX 64    /* --net-deny ranges */
#define NET_DENIED_HOST_MAX 256    /* host networks kept; more are ignored */
/* A host network wider than this prefix (a /0 .. /7 netmask) is taken as
 * its address alone: denying it whole would deny most of the internet. */
#define NET_DENIED_HOST_PREFIX_MIN 8

struct net_denied;

/*
 * net_denied_parse_list - "CIDR[,CIDR...]" (spaces allowed around commas;
 * "" is an empty list) into out (cap entries).  Returns the count, or
 * -EINVAL (bad entry or more than cap) with err (errlen bytes) naming it.
 */
int net_denied_parse_list(const char *s, struct net_cidr *out, size_t cap, char *err,
			  size_t errlen);

/*
 * net_denied_new - a set with the extra ranges of extra (the --net-deny
 * text; NULL or "" for none) and the host's addresses read now.  Returns 0
 * with *out (net_denied_free), -EINVAL for a bad extra list, -ENOMEM.
 */
int net_denied_new(const char *extra, struct net_denied **out);

/* net_denied_free - release d.  NULL is a no-op. */
void net_denied_free(struct net_denied *d);

/*
 * net_denied_has - 1 if ip (host order) may never be reached: a fixed
 * range, a host network or an extra range.  Re-reads the host's networks
 * first when they are older than NET_DENIED_REFRESH_MS (now_ms is
 * CLOCK_MONOTONIC ms).
 */
int net_denied_has(struct net_denied *d, uint32_t ip, int64_t now_ms);

/*
 * net_denied_host_net - the network of an interface address addr with
 * netmask (host order) into *out: addr/prefix, or addr/32 when the mask is
 * not a prefix or is wider than NET_DENIED_HOST_PREFIX_MIN.
 */
void net_denied_host_net(uint32_t addr, uint32_t netmask, struct net_cidr *out);

/*
 * net_denied_set_host - for tests: use these n host networks from now on
 * and stop reading the real ones.
 */
void net_denied_set_host(struct net_denied *d, const struct net_cidr *nets, size_t n);

#endif
