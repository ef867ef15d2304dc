/*
 * net_resolve.h - the daemon's own lookups of A records, upstream, with
 * c-ares (https://c-ares.org; Debian libc-ares-dev) driven by the network
 * service's loop, and a small cache.  The sandbox resolver (net_dns.c)
 * answers guests with it, and the proxy (net_proxy.c) uses it to dial a
 * name an allow_out domain rule let through.
 *
 * Upstream servers: --dns-upstream "IP[:PORT],..." or, by default, the
 * nameservers of the host's /etc/resolv.conf.  Never the host's /etc/hosts
 * and never its search domains: a sandbox's name is looked up as given.
 *
 * Cache: up to NET_RESOLVE_CACHE names, each kept for its answer's smallest
 * TTL (at most NET_DNS_TTL_MAX seconds); NXDOMAIN kept for
 * NET_RESOLVE_NEGATIVE_S seconds; failures not kept.
 *
 * Threads: the loop's (net_loop.h); net_resolve_check_servers is pure.
 */
#ifndef PANDASTACK_DAEMON_NET_RESOLVE_H
#define PANDASTACK_DAEMON_NET_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/net/net_loop.h"

#define NET_RESOLVE_ADDRS_MAX 16   /* addresses kept per name */
#define NET_RESOLVE_CACHE 1024     /* names cached */
#define NET_RESOLVE_NEGATIVE_S 5
#define NET_RESOLVE_SERVERS_MAX 8
#define NET_RESOLVE_TIMEOUT_MS 2000 /* per try; 2 tries per server */

struct net_resolver;
struct net_lookup;

/*
 * The outcome of a lookup: rcode is a DNS answer code (net_dnsmsg.h:
 * NET_DNS_NOERROR with n >= 0 addresses in host order, NET_DNS_NXDOMAIN,
 * NET_DNS_SERVFAIL for any failure to get an answer); ttl in seconds.
 * addrs is valid during the call only.
 */
typedef void (*net_resolve_cb)(void *arg, unsigned rcode, const uint32_t *addrs, size_t n,
			       uint32_t ttl);

/*
 * net_resolve_check_servers - is s a server list "IP[:PORT][,...]" (IPv4,
 * or IPv6 in brackets with a port: "[2001:db8::1]:53"), at most
 * NET_RESOLVE_SERVERS_MAX?  0, or -EINVAL with err (errlen bytes).
 */
int net_resolve_check_servers(const char *s, char *err, size_t errlen);

/*
 * net_resolve_new - a resolver on loop l using servers (NULL or "": the
 * host's /etc/resolv.conf).  Returns 0 with *out, or -errno with err.
 */
int net_resolve_new(struct net_loop *l, const char *servers, struct net_resolver **out,
		    char *err, size_t errlen);

/* net_resolve_free - cancel every lookup (their callbacks do not run) and
 * release r.  NULL is a no-op. */
void net_resolve_free(struct net_resolver *r);

/*
 * net_resolve_a - look name (a host name, lowercase) up.  cb runs once, on
 * the loop's thread, possibly before this returns (a cached answer).
 * Returns 0 with *lookup set when cb has not run yet (a handle for
 * net_resolve_cancel, valid until cb runs) or NULL when it already ran;
 * -ENOMEM (cb does not run).
 */
int net_resolve_a(struct net_resolver *r, const char *name, net_resolve_cb cb, void *arg,
		  struct net_lookup **lookup);

/* net_resolve_cancel - cb of lookup will not run.  NULL is a no-op. */
void net_resolve_cancel(struct net_lookup *lookup);

#endif
