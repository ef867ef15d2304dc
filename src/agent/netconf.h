/*
 * netconf.h - the guest's network configuration, done by the agent at boot
 * with rtnetlink (rtnetlink(7), netlink(7)): `lo` up; IPv6 off
 * (net.ipv6.conf.{all,default}.disable_ipv6 = 1); the sandbox's NIC `eth0`
 * with its address, up, permanent neighbour entries for the gateway and the
 * resolver, and the default route through the gateway.  The NIC's MAC
 * stays what the device has.
 *
 * Every sandbox has the same addresses (each is alone in its own network
 * namespace on the host; docs/agent.md, "What PID 1 does"): guest
 * 10.0.2.15/24, gateway 10.0.2.2 and resolver 10.0.2.3 (/etc/resolv.conf,
 * written by the image build), both at 52:54:00:12:35:02.  The agent configures them before it first answers
 * the host, so a template's snapshot holds them and a restored clone is
 * online at once: no DHCP, no ARP round trip.  A guest without the NIC
 * (no `eth0`) gets `lo` and the sysctls only.
 *
 * The requests are built here (the agent is static and Debian ships no
 * static netlink library); each carries NLM_F_ACK and the kernel's answer
 * is checked.  The builders and the answer checker are pure (no I/O) so
 * the unit tests check their bytes; netconf_apply does the I/O.
 *
 * Addresses are IPv4 in host byte order (0x0a00020f is 10.0.2.15); lengths
 * are bytes.  Request buffers must be aligned for struct nlmsghdr (4
 * bytes).  Threads: any thread; netconf_apply changes the network of the
 * calling thread's network namespace.
 */
#ifndef PANDASTACK_AGENT_NETCONF_H
#define PANDASTACK_AGENT_NETCONF_H

#include <stddef.h>
#include <stdint.h>

/* NETCONF_IPV4(10, 0, 2, 15) - an IPv4 address in host byte order. */
#define NETCONF_IPV4(a, b, c, d) \
	(((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) | (uint32_t)(d))

/* One interface's configuration. */
struct netconf_cfg {
	const char *ifname;     /* the NIC, e.g. "eth0" */
	uint32_t addr;          /* its address */
	unsigned prefix;        /* prefix length, 1..32 */
	uint32_t gateway;       /* next hop of the default route, inside addr/prefix */
	uint32_t dns;           /* the resolver, inside addr/prefix; 0: none */
	uint8_t gateway_mac[6]; /* link-layer address of the gateway and the
	                         * resolver (permanent neighbour entries) */
};

/* The sandbox's network: eth0 10.0.2.15/24 via 10.0.2.2, resolver 10.0.2.3,
 * both at 52:54:00:12:35:02 (the host's tap in the sandbox's namespace). */
extern const struct netconf_cfg netconf_sandbox;

/* Largest request the builders write, bytes. */
#define NETCONF_MSG_MAX 128u

/*
 * Builders: write one rtnetlink request with sequence number seq into buf
 * (cap bytes) and return its length in bytes (the nlmsghdr's nlmsg_len), or
 * -ENOSPC when cap is too small (nothing useful written), -EINVAL for an
 * ifindex <= 0 or a prefix outside 1..32.  Every request has NLM_F_REQUEST
 * and NLM_F_ACK.
 *
 * netconf_msg_link_up - RTM_NEWLINK: set IFF_UP on ifindex (ifi_change
 *   IFF_UP: no other flag is touched).
 * netconf_msg_addr - RTM_NEWADDR (NLM_F_CREATE | NLM_F_REPLACE): addr/prefix
 *   on ifindex, IFA_LOCAL and IFA_ADDRESS = addr, IFA_BROADCAST the
 *   prefix's last address (none for /31 and /32), scope universe.
 * netconf_msg_route - RTM_NEWROUTE (NLM_F_CREATE | NLM_F_REPLACE): the
 *   default route (0.0.0.0/0) of the main table through gateway on ifindex,
 *   protocol boot, scope universe, type unicast.
 * netconf_msg_neigh - RTM_NEWNEIGH (NLM_F_CREATE | NLM_F_REPLACE): ip ->
 *   mac (6 bytes) on ifindex, NUD_PERMANENT.
 */
int netconf_msg_link_up(void *buf, size_t cap, uint32_t seq, int ifindex);
int netconf_msg_addr(void *buf, size_t cap, uint32_t seq, int ifindex, uint32_t addr,
		     unsigned prefix);
int netconf_msg_route(void *buf, size_t cap, uint32_t seq, int ifindex, uint32_t gateway);
int netconf_msg_neigh(void *buf, size_t cap, uint32_t seq, int ifindex, uint32_t ip,
		      const uint8_t mac[6]);

/*
 * netconf_reply_check - look through one datagram the kernel sent (len
 * bytes) for the answer to request seq.  Returns 0 (NLMSG_ERROR with error
 * 0: done), the kernel's -errno (NLMSG_ERROR with an error), -EAGAIN (no
 * answer to seq in it: read on), -EBADMSG (a header or an NLMSG_ERROR
 * shorter than it must be, or a length past the datagram).  Pure.
 */
int netconf_reply_check(const void *buf, size_t len, uint32_t seq);

/* What netconf_apply did. */
struct netconf_report {
	int lo_up;              /* 1: lo is up */
	int ipv6_off;           /* 1: disable_ipv6 written (or no IPv6 in the kernel) */
	int nic_found;          /* 1: cfg->ifname exists */
	int nic_up;             /* 1: cfg->ifname configured completely */
	char error[96];         /* first failed step and its errno name, "" if none */
};

/*
 * netconf_apply - configure the calling thread's network namespace: IPv6
 * off, lo up, then cfg's interface (address, up, neighbours, default route;
 * in that order).  Each netlink answer is awaited at most 1 s.  Goes on
 * after a failed step where it can (lo and IPv6 do not depend on each
 * other; the interface's steps stop at the first failure).
 * Returns 0, -ENODEV (no interface cfg->ifname: lo and IPv6 done, nothing
 * else to do), or the first -errno (rep->error says which step).
 * Needs CAP_NET_ADMIN in the namespace (-EPERM otherwise).
 */
int netconf_apply(const struct netconf_cfg *cfg, struct netconf_report *rep);

#endif
