/*
 * net_int.h - the network service's shared structures (net.c, net_proxy.c,
 * net_dns.c).  Private: callers use net.h.
 *
 * Everything here is used on the service's loop thread only, except the
 * box list (net.lock) and the counters (atomics), which GET /metrics
 * reads.  A box is made by net_attach and freed by net_detach, both on the
 * loop thread: the proxy and the resolver close everything of a box that
 * they hold (connections, queries, lookups) when told to stop it, so
 * nothing outlives it.
 */
#ifndef PANDASTACK_DAEMON_NET_INT_H
#define PANDASTACK_DAEMON_NET_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/net/net.h"
#include "daemon/net/net_denied.h"
#include "daemon/net/net_loop.h"
#include "daemon/net/net_names.h"
#include "daemon/net/net_policy.h"
#include "daemon/net/net_resolve.h"
#include "daemon/store/store.h"

/* The struct holding member `field` at pointer p. */
#define NET_CONTAINER(p, type, field) ((type *)((char *)(p) - offsetof(type, field)))

struct net_pconn;   /* a proxied connection (net_proxy.c) */
struct net_dconn;   /* a DNS-over-TCP connection (net_dns.c) */
struct net_dquery;  /* a DNS query being resolved (net_dns.c) */

/* One sandbox's counters (GET /metrics). */
struct net_stats {
	atomic_uint_fast64_t bytes_out;   /* guest -> internet, bytes */
	atomic_uint_fast64_t bytes_in;    /* internet -> guest, bytes */
	atomic_uint_fast64_t conns;       /* connections relayed (dialled) */
	atomic_uint_fast64_t refused;     /* connections refused or closed by policy */
	atomic_uint_fast64_t dns_queries; /* queries answered */
	atomic_uint open;                 /* proxied connections open now */
};

struct net_box {
	char id[STORE_ID_MAX];
	struct net *net;
	struct net_policy *policy;     /* loop thread; replaced by net_set_policy */
	struct net_names names;        /* the resolver's recent answers */
	int fd_proxy, fd_dns_udp, fd_dns_tcp;          /* our copies of the listeners */
	struct net_watch w_proxy, w_dns_udp, w_dns_tcp; /* their registrations */
	struct net_pconn *conns;       /* the proxy's connections */
	unsigned n_conns;
	struct net_dconn *dconns;      /* the resolver's TCP connections */
	unsigned n_dconns;
	struct net_dquery *queries;    /* queries waiting for a lookup */
	unsigned n_queries;
	struct net_stats st;
	struct net_box *prev, *next;   /* net.lock */
};

struct net {
	struct net_loop *loop;
	struct net_resolver *resolver;
	struct net_denied *denied;
	unsigned max_conns, max_conns_sandbox;
	unsigned n_conns;              /* loop thread: proxied connections open */
	pthread_mutex_t lock;          /* boxes */
	struct net_box *boxes;
};

/* ---- the proxy (net_proxy.c) -------------------------------------------- */

/* net_proxy_start - accept on b->fd_proxy.  0 or -errno. */
int net_proxy_start(struct net_box *b);

/* net_proxy_stop - close b's connections and stop accepting (the
 * listener's fd is closed by the caller). */
void net_proxy_stop(struct net_box *b);

/* net_proxy_recheck - close b's connections that b->policy no longer
 * allows (counted as refused: policy_changed). */
void net_proxy_recheck(struct net_box *b);

/* net_proxy_metrics_write - the host-wide series of connections the proxy
 * refused (or closed), by reason (pandastack_net_refused_total of GET
 * /metrics), to f.  Any thread. */
void net_proxy_metrics_write(FILE *f);

/* ---- the resolver (net_dns.c) ------------------------------------------- */

/* net_dns_start - answer on b->fd_dns_udp and b->fd_dns_tcp.  0 or -errno. */
int net_dns_start(struct net_box *b);

/* net_dns_stop - drop b's queries and TCP connections and stop listening
 * (the listeners' fds are closed by the caller). */
void net_dns_stop(struct net_box *b);

#endif
