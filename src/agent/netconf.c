/*
 * netconf.c - the guest's network at boot (see netconf.h): rtnetlink
 * requests built by hand, sent one at a time on a NETLINK_ROUTE socket,
 * each answer (NLMSG_ERROR, error 0 = done) awaited before the next.
 *
 * Messages follow rtnetlink(7): a struct nlmsghdr, the type's fixed header
 * (ifinfomsg, ifaddrmsg, rtmsg, ndmsg), then struct rtattr attributes, each
 * padded to 4 bytes (RTA_ALIGN), nlmsg_len counting the padding, as
 * iproute2 builds them.  Answers come from the kernel (nl_pid 0) only.
 * Threads: any; no global state.
 */
#include "agent/netconf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"

const struct netconf_cfg netconf_sandbox = {
	.ifname = "eth0",
	.addr = NETCONF_IPV4(10, 0, 2, 15),
	.prefix = 24,
	.gateway = NETCONF_IPV4(10, 0, 2, 2),
	.dns = NETCONF_IPV4(10, 0, 2, 3),
	.gateway_mac = {0x52, 0x54, 0x00, 0x12, 0x35, 0x02},
};

/* How long one answer may take, ms. */
#define REPLY_WAIT_MS 1000
/* An answer: an NLMSG_ERROR quoting our request (< NETCONF_MSG_MAX). */
#define REPLY_BUF 4096u

/* --- building requests ------------------------------------------------------ */

/* Start a request: header + a zeroed fixed part of hdrlen bytes.  Returns
 * the fixed part, or NULL when cap is too small. */
static void *msg_start(void *buf, size_t cap, uint16_t type, uint16_t flags, uint32_t seq,
		       size_t hdrlen)
{
	size_t len = NLMSG_LENGTH(hdrlen);
	if (!buf || cap < NLMSG_ALIGN(len))
		return NULL;
	memset(buf, 0, NLMSG_ALIGN(len));
	struct nlmsghdr *h = buf;
	h->nlmsg_len = (uint32_t)len;
	h->nlmsg_type = type;
	h->nlmsg_flags = (uint16_t)(NLM_F_REQUEST | NLM_F_ACK | flags);
	h->nlmsg_seq = seq;
	return NLMSG_DATA(h);
}

/* Append attribute type with n bytes of data.  0 or -ENOSPC. */
static int msg_attr(void *buf, size_t cap, uint16_t type, const void *data, size_t n)
{
	struct nlmsghdr *h = buf;
	size_t off = NLMSG_ALIGN(h->nlmsg_len), alen = RTA_LENGTH(n);
	if (off > cap || RTA_ALIGN(alen) > cap - off)
		return -ENOSPC;
	struct rtattr *a = (struct rtattr *)((uint8_t *)buf + off);
	memset(a, 0, RTA_ALIGN(alen));
	a->rta_len = (unsigned short)alen;
	a->rta_type = type;
	memcpy(RTA_DATA(a), data, n);
	h->nlmsg_len = (uint32_t)(off + RTA_ALIGN(alen));
	return 0;
}

static int msg_attr_ip(void *buf, size_t cap, uint16_t type, uint32_t ip)
{
	uint32_t be = htonl(ip);
	return msg_attr(buf, cap, type, &be, sizeof(be));
}

static int msg_len(const void *buf)
{
	return (int)((const struct nlmsghdr *)buf)->nlmsg_len;
}

int netconf_msg_link_up(void *buf, size_t cap, uint32_t seq, int ifindex)
{
	if (ifindex <= 0)
		return -EINVAL;
	struct ifinfomsg *m = msg_start(buf, cap, RTM_NEWLINK, 0, seq, sizeof(*m));
	if (!m)
		return -ENOSPC;
	m->ifi_family = AF_UNSPEC;
	m->ifi_index = ifindex;
	m->ifi_flags = IFF_UP;
	m->ifi_change = IFF_UP;
	return msg_len(buf);
}

int netconf_msg_addr(void *buf, size_t cap, uint32_t seq, int ifindex, uint32_t addr,
		     unsigned prefix)
{
	if (ifindex <= 0 || prefix < 1 || prefix > 32)
		return -EINVAL;
	struct ifaddrmsg *m =
		msg_start(buf, cap, RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE, seq, sizeof(*m));
	if (!m)
		return -ENOSPC;
	m->ifa_family = AF_INET;
	m->ifa_prefixlen = (unsigned char)prefix;
	m->ifa_scope = RT_SCOPE_UNIVERSE;
	m->ifa_index = (unsigned)ifindex;
	uint32_t host_bits = prefix == 32 ? 0 : 0xffffffffu >> prefix;
	if (msg_attr_ip(buf, cap, IFA_LOCAL, addr) < 0 ||
	    msg_attr_ip(buf, cap, IFA_ADDRESS, addr) < 0 ||
	    (prefix < 31 && msg_attr_ip(buf, cap, IFA_BROADCAST, addr | host_bits) < 0))
		return -ENOSPC;
	return msg_len(buf);
}

int netconf_msg_route(void *buf, size_t cap, uint32_t seq, int ifindex, uint32_t gateway)
{
	if (ifindex <= 0)
		return -EINVAL;
	struct rtmsg *m =
		msg_start(buf, cap, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, seq, sizeof(*m));
	if (!m)
		return -ENOSPC;
	m->rtm_family = AF_INET;
	m->rtm_dst_len = 0; /* 0.0.0.0/0: no RTA_DST */
	m->rtm_table = RT_TABLE_MAIN;
	m->rtm_protocol = RTPROT_BOOT;
	m->rtm_scope = RT_SCOPE_UNIVERSE;
	m->rtm_type = RTN_UNICAST;
	uint32_t oif = (uint32_t)ifindex;
	if (msg_attr_ip(buf, cap, RTA_GATEWAY, gateway) < 0 ||
	    msg_attr(buf, cap, RTA_OIF, &oif, sizeof(oif)) < 0)
		return -ENOSPC;
	return msg_len(buf);
}

int netconf_msg_neigh(void *buf, size_t cap, uint32_t seq, int ifindex, uint32_t ip,
		      const uint8_t mac[6])
{
	if (ifindex <= 0)
		return -EINVAL;
	struct ndmsg *m =
		msg_start(buf, cap, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, seq, sizeof(*m));
	if (!m)
		return -ENOSPC;
	m->ndm_family = AF_INET;
	m->ndm_ifindex = ifindex;
	m->ndm_state = NUD_PERMANENT;
	if (msg_attr_ip(buf, cap, NDA_DST, ip) < 0 || msg_attr(buf, cap, NDA_LLADDR, mac, 6) < 0)
		return -ENOSPC;
	return msg_len(buf);
}

/* --- answers ---------------------------------------------------------------- */

int netconf_reply_check(const void *buf, size_t len, uint32_t seq)
{
	const uint8_t *p = buf;
	size_t off = 0;
	while (len - off >= sizeof(struct nlmsghdr)) {
		struct nlmsghdr h;
		memcpy(&h, p + off, sizeof(h)); /* the datagram need not be aligned */
		if (h.nlmsg_len < sizeof(h) || h.nlmsg_len > len - off)
			return -EBADMSG;
		if (h.nlmsg_type == NLMSG_ERROR && h.nlmsg_seq == seq) {
			struct nlmsgerr e;
			if (h.nlmsg_len < NLMSG_LENGTH(sizeof(e)))
				return -EBADMSG;
			memcpy(&e, p + off + NLMSG_HDRLEN, sizeof(e));
			if (e.error > 0 || e.error < -4095)
				return -EBADMSG;
			return e.error;
		}
		size_t step = NLMSG_ALIGN(h.nlmsg_len);
		if (step >= len - off)
			return -EAGAIN; /* the last one (its padding may be cut) */
		off += step;
	}
	return off == len ? -EAGAIN : -EBADMSG;
}

/* --- doing it ------------------------------------------------------------------ */

struct nl {
	int fd;
	uint32_t seq;
};

/* Send the request in buf (len bytes, from a builder) and wait for its
 * answer.  0, the kernel's -errno, -ETIMEDOUT, or a socket error. */
static int nl_call(struct nl *n, const void *buf, int len)
{
	if (len < 0)
		return len;
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	uint32_t seq = ((const struct nlmsghdr *)buf)->nlmsg_seq;
	ssize_t w = sendto(n->fd, buf, (size_t)len, 0, (struct sockaddr *)&kernel, sizeof(kernel));
	if (w < 0)
		return -errno;
	if (w != len)
		return -EIO;
	int64_t end = util_now_ms() + REPLY_WAIT_MS;
	for (;;) {
		int left = (int)(end - util_now_ms());
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd pfd = {.fd = n->fd, .events = POLLIN};
		int pr = poll(&pfd, 1, left);
		if (pr < 0 && errno != EINTR)
			return -errno;
		if (pr <= 0)
			continue;
		uint8_t rb[REPLY_BUF];
		struct sockaddr_nl from;
		socklen_t fl = sizeof(from);
		ssize_t r = recvfrom(n->fd, rb, sizeof(rb), MSG_DONTWAIT, (struct sockaddr *)&from,
				     &fl);
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (fl != sizeof(from) || from.nl_pid != 0)
			continue; /* only the kernel answers */
		int c = netconf_reply_check(rb, (size_t)r, seq);
		if (c != -EAGAIN)
			return c;
	}
}

/* Request storage aligned for struct nlmsghdr. */
union nl_msg {
	struct nlmsghdr h;
	uint8_t b[NETCONF_MSG_MAX];
};

static int link_up(struct nl *n, int ifindex)
{
	union nl_msg m;
	return nl_call(n, m.b, netconf_msg_link_up(m.b, sizeof(m.b), ++n->seq, ifindex));
}

/* Write "1" into a sysctl file; a kernel without IPv6 has none (ENOENT). */
static int write_one(const char *path)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	int r = util_write_all(fd, "1\n", 2);
	close(fd);
	return r;
}

static void note(struct netconf_report *rep, int *first, const char *step, int err)
{
	if (*first)
		return;
	*first = err;
	const char *name = strerrorname_np(-err);
	snprintf(rep->error, sizeof(rep->error), "%s: %s", step, name ? name : "?");
}

/* The interface's steps, stopping at the first failure. */
static int configure_nic(struct nl *n, const struct netconf_cfg *cfg, int ix,
			 struct netconf_report *rep, int *first)
{
	union nl_msg m;
	int r = nl_call(n, m.b,
			netconf_msg_addr(m.b, sizeof(m.b), ++n->seq, ix, cfg->addr, cfg->prefix));
	if (r < 0) {
		note(rep, first, "address", r);
		return r;
	}
	if ((r = link_up(n, ix)) < 0) {
		note(rep, first, "link up", r);
		return r;
	}
	r = nl_call(n, m.b,
		    netconf_msg_neigh(m.b, sizeof(m.b), ++n->seq, ix, cfg->gateway, cfg->gateway_mac));
	if (r == 0 && cfg->dns)
		r = nl_call(n, m.b,
			    netconf_msg_neigh(m.b, sizeof(m.b), ++n->seq, ix, cfg->dns,
					      cfg->gateway_mac));
	if (r < 0) {
		note(rep, first, "neighbour", r);
		return r;
	}
	if ((r = nl_call(n, m.b, netconf_msg_route(m.b, sizeof(m.b), ++n->seq, ix,
						    cfg->gateway))) < 0) {
		note(rep, first, "default route", r);
		return r;
	}
	rep->nic_up = 1;
	return 0;
}

int netconf_apply(const struct netconf_cfg *cfg, struct netconf_report *rep)
{
	memset(rep, 0, sizeof(*rep));
	int first = 0, r;
	/* IPv6 off before any link comes up: no link-local address, no router
	 * solicitation */
	if ((r = write_one("/proc/sys/net/ipv6/conf/all/disable_ipv6")) < 0 ||
	    (r = write_one("/proc/sys/net/ipv6/conf/default/disable_ipv6")) < 0)
		note(rep, &first, "disable_ipv6", r);
	else
		rep->ipv6_off = 1;
	struct nl n = {.fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)};
	if (n.fd < 0) {
		note(rep, &first, "netlink socket", -errno);
		return first;
	}
	unsigned lo = if_nametoindex("lo");
	r = lo ? link_up(&n, (int)lo) : -ENODEV;
	if (r < 0)
		note(rep, &first, "lo up", r);
	else
		rep->lo_up = 1;
	unsigned ix = if_nametoindex(cfg->ifname);
	if (ix) {
		rep->nic_found = 1;
		configure_nic(&n, cfg, (int)ix, rep, &first);
	}
	close(n.fd);
	if (first)
		return first;
	return ix ? 0 : -ENODEV;
}
