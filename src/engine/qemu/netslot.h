/*
 * netslot.h - a sandbox's network namespace on the host (docs/network.md):
 *
 *   netns (its own)    lo up
 *                      tap0  IFF_TAP|IFF_NO_PI|IFF_VNET_HDR, MAC
 *                            NETSLOT_GW_MAC, 10.0.2.2/24, up: QEMU's NIC
 *                      nftables table "inet pandastack": every TCP
 *                      connection from tap0 redirected to the proxy
 *                      listener (:NETSLOT_PROXY_PORT), DNS (UDP and TCP
 *                      port 53, to any address) to the resolver (:53),
 *                      anything else from tap0 dropped; no forwarding
 *                      and no route out of the namespace.
 *
 * The daemon's listeners live in the namespace (a socket stays in the
 * namespace it was made in) but are served by the daemon's threads in the
 * host's namespace: what the guest sends is never routed by the host; only
 * the daemon's proxy and resolver carry it, under the sandbox's policy.
 *
 * Every sandbox has the same addresses (guest 10.0.2.15, gateway 10.0.2.2,
 * resolver 10.0.2.3): clones of one snapshot need no reconfiguration.
 *
 * Threads: any.  netslot_create and netslot_listen run their namespace
 * work on a short-lived thread of their own, so the caller's namespace
 * never changes.
 */
#ifndef PANDASTACK_ENGINE_NETSLOT_H
#define PANDASTACK_ENGINE_NETSLOT_H

#include <stddef.h>

/* The addresses every sandbox sees. */
#define NETSLOT_GUEST_IP "10.0.2.15"
#define NETSLOT_GW_IP "10.0.2.2"
#define NETSLOT_DNS_IP "10.0.2.3"
#define NETSLOT_GUEST_MAC "52:54:00:12:34:56"
#define NETSLOT_GW_MAC "52:54:00:12:35:02"
#define NETSLOT_TAP "tap0"
/* Where the redirected connections arrive, inside the namespace. */
#define NETSLOT_PROXY_PORT 3128
#define NETSLOT_DNS_PORT 53

/* The daemon's sockets inside one sandbox's namespace (-1 when absent). */
struct netslot_listeners {
	int proxy;      /* TCP, listening on :NETSLOT_PROXY_PORT, non-blocking */
	int dns_udp;    /* UDP bound to :53, non-blocking */
	int dns_tcp;    /* TCP listening on :53, non-blocking */
};

/* One slot: the namespace and what lives in it. */
struct netslot {
	int netns;      /* O_RDONLY fd of the namespace (/proc/.../ns/net) */
	int tap;        /* the tap device's queue: QEMU's -netdev tap,fd= */
	struct netslot_listeners l;
};

/*
 * netslot_create - make a new namespace configured as above with its tap
 * and the daemon's listeners.  Every descriptor is O_CLOEXEC and owned by
 * the caller (netslot_close).  Returns 0, or -errno with err (errlen bytes)
 * naming the step (-EPERM without CAP_NET_ADMIN, -ENOENT without
 * /dev/net/tun, -EPROTO when nftables refused the ruleset).
 */
int netslot_create(struct netslot *out, char *err, size_t errlen);

/*
 * netslot_listen - make the daemon's listeners anew inside the namespace
 * netns (an fd, e.g. of /proc/<qemu pid>/ns/net): for a daemon that
 * adopted a running sandbox.  Returns 0 with *out (fds owned by the
 * caller) or -errno.
 */
int netslot_listen(int netns, struct netslot_listeners *out);

/* netslot_close_listeners - close what l holds (-1 entries are skipped). */
void netslot_close_listeners(struct netslot_listeners *l);

/* netslot_close - close every descriptor of s; the namespace itself goes
 * when nothing (QEMU, a socket) holds it any more. */
void netslot_close(struct netslot *s);

/*
 * netslot_connect - a non-blocking TCP socket made inside the namespace
 * netns, connecting to the guest's port (exposed ports).  Returns the fd
 * (O_CLOEXEC; the connect may still be in progress: wait for POLLOUT and
 * read SO_ERROR) or -errno.
 */
int netslot_connect_guest(int netns, unsigned port);

#endif
