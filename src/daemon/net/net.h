/*
 * net.h - the daemon's network service for sandboxes (docs/network.md):
 * it serves the listeners the engine makes inside every sandbox's network
 * namespace (engine/qemu/netslot.h) from the daemon's own namespace:
 *   - the proxy (net_proxy.c): every TCP connection the guest opens,
 *     checked against the sandbox's egress policy (net_policy.h) and, if
 *     allowed, dialled from the host and relayed;
 *   - the resolver (net_dns.c): the guest's DNS queries, answered under
 *     the same policy from upstream lookups (net_resolve.h).
 * UDP other than DNS, ICMP and QUIC are not forwarded: the namespace's
 * firewall drops them.
 *
 * One thread (net_loop.h) serves every sandbox.  A sandbox is attached
 * with its listeners and policy once it runs, and detached before its VM
 * is stopped or freed.  Its counters appear in GET /metrics while it is
 * attached.
 *
 * Threads: every function may be called from any thread; net_attach,
 * net_detach and net_set_policy return once the loop applied them.
 */
#ifndef PANDASTACK_DAEMON_NET_H
#define PANDASTACK_DAEMON_NET_H

#include <stdio.h>

#include "daemon/net/net_policy.h"
#include "engine/qemu/netslot.h"

struct net;

struct net_config {
	const char *dns_upstream;     /* "IP[:PORT],..."; NULL or "": /etc/resolv.conf */
	const char *deny;             /* extra always-denied CIDRs, "A/N,..."; NULL: none */
	unsigned max_conns;           /* proxied connections open at once, daemon-wide */
	unsigned max_conns_sandbox;   /* ... per sandbox */
};

/*
 * net_start - start the service.  Returns 0 with *out, or -errno with err
 * (errlen bytes): -EINVAL for a bad upstream or deny list.
 */
int net_start(const struct net_config *cfg, struct net **out, char *err, size_t errlen);

/* net_stop - close every proxied connection and listener copy, stop the
 * thread, release n.  NULL is a no-op. */
void net_stop(struct net *n);

/*
 * net_attach - serve sandbox id's listeners l (the service keeps its own
 * copies of the descriptors: the caller keeps and closes its own) under
 * policy p (taken: the service frees it, also on failure).  Returns 0,
 * -EEXIST (already attached), -EBADF (a listener is missing), -ENOMEM.
 */
int net_attach(struct net *n, const char *id, const struct netslot_listeners *l,
	       struct net_policy *p);

/* net_detach - stop serving sandbox id: close its proxied connections and
 * queries and its listener copies.  No-op when not attached. */
void net_detach(struct net *n, const char *id);

/*
 * net_set_policy - replace sandbox id's policy with p (taken): new
 * connections and queries follow it at once, and open connections it no
 * longer allows are closed before this returns.  Returns 0, or -ENOENT
 * (not attached; p is freed).
 */
int net_set_policy(struct net *n, const char *id, struct net_policy *p);

/* net_metrics_write - the per-sandbox series (docs/api.md, GET /metrics)
 * as Prometheus text to f. */
void net_metrics_write(struct net *n, FILE *f);

#endif
