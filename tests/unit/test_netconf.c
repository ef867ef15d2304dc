/*
 * test_netconf.c - the agent's network configuration (src/agent/netconf.h).
 *
 * Without root: the rtnetlink requests the builders write (checked field by
 * field and attribute by attribute, against a canary past the buffer's end)
 * and the answer checker on good, foreign and broken datagrams.
 *
 * As root: netconf_apply in a network namespace each test makes in a child
 * process (unshare(CLONE_NEWNET)), with a tap device named eth0 standing in
 * for the guest's NIC; the result is read back through /proc and ioctls,
 * which first show it absent (the probes can see a failure).  Skipped,
 * saying why, when the namespace or the tap cannot be made.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/netconf.h"
#include "common/util.h"

#define CANARY 0xa5

/* A request buffer: cap usable bytes, then canaries. */
union msgbuf {
	struct nlmsghdr h;
	uint8_t b[NETCONF_MSG_MAX + 64];
};

static void fill_canary(union msgbuf *m)
{
	memset(m->b, CANARY, sizeof(m->b));
}

static void assert_canary_from(const union msgbuf *m, size_t from)
{
	for (size_t i = from; i < sizeof(m->b); i++)
		assert_int_equal(m->b[i], CANARY);
}

/* The attribute of type in the request (after a fixed part of hdrlen
 * bytes), checking that the attributes tile the message exactly. */
static const struct rtattr *find_attr(const union msgbuf *m, size_t hdrlen, uint16_t type)
{
	size_t off = NLMSG_LENGTH(hdrlen), end = m->h.nlmsg_len;
	const struct rtattr *found = NULL;
	assert_true(off <= end);
	while (off < end) {
		const struct rtattr *a = (const struct rtattr *)(m->b + off);
		assert_true(a->rta_len >= RTA_LENGTH(0));
		assert_true(off + RTA_ALIGN(a->rta_len) <= end);
		if (a->rta_type == type) {
			assert_null(found); /* each attribute once */
			found = a;
		}
		off += RTA_ALIGN(a->rta_len);
	}
	assert_int_equal(off, end);
	return found;
}

static uint32_t attr_ip(const union msgbuf *m, size_t hdrlen, uint16_t type)
{
	const struct rtattr *a = find_attr(m, hdrlen, type);
	assert_non_null(a);
	assert_int_equal(RTA_PAYLOAD(a), 4);
	uint32_t be;
	memcpy(&be, RTA_DATA(a), 4);
	return ntohl(be);
}

static void check_header(const union msgbuf *m, int len, uint16_t type, uint16_t flags,
			 uint32_t seq)
{
	assert_true(len > 0);
	assert_int_equal(m->h.nlmsg_len, (uint32_t)len);
	assert_int_equal(m->h.nlmsg_type, type);
	assert_int_equal(m->h.nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK | flags);
	assert_int_equal(m->h.nlmsg_seq, seq);
	assert_int_equal(m->h.nlmsg_pid, 0);
	assert_canary_from(m, (size_t)len);
}

static void test_link_up(void **state)
{
	(void)state;
	union msgbuf m;
	fill_canary(&m);
	int len = netconf_msg_link_up(m.b, NETCONF_MSG_MAX, 7, 3);
	check_header(&m, len, RTM_NEWLINK, 0, 7);
	assert_int_equal(len, NLMSG_LENGTH(sizeof(struct ifinfomsg)));
	const struct ifinfomsg *i = NLMSG_DATA(&m.h);
	assert_int_equal(i->ifi_family, AF_UNSPEC);
	assert_int_equal(i->ifi_index, 3);
	assert_int_equal(i->ifi_flags, IFF_UP);
	assert_int_equal(i->ifi_change, IFF_UP); /* no other flag touched */
	assert_int_equal(netconf_msg_link_up(m.b, NETCONF_MSG_MAX, 7, 0), -EINVAL);
}

static void test_addr(void **state)
{
	(void)state;
	union msgbuf m;
	fill_canary(&m);
	const size_t hl = sizeof(struct ifaddrmsg);
	int len = netconf_msg_addr(m.b, NETCONF_MSG_MAX, 9, 2, NETCONF_IPV4(10, 0, 2, 15), 24);
	check_header(&m, len, RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE, 9);
	const struct ifaddrmsg *a = NLMSG_DATA(&m.h);
	assert_int_equal(a->ifa_family, AF_INET);
	assert_int_equal(a->ifa_prefixlen, 24);
	assert_int_equal(a->ifa_scope, RT_SCOPE_UNIVERSE);
	assert_int_equal(a->ifa_index, 2);
	assert_int_equal(attr_ip(&m, hl, IFA_LOCAL), NETCONF_IPV4(10, 0, 2, 15));
	assert_int_equal(attr_ip(&m, hl, IFA_ADDRESS), NETCONF_IPV4(10, 0, 2, 15));
	assert_int_equal(attr_ip(&m, hl, IFA_BROADCAST), NETCONF_IPV4(10, 0, 2, 255));
	/* the byte order on the wire: 10.0.2.15 is 0a 00 02 0f */
	const struct rtattr *local = find_attr(&m, hl, IFA_LOCAL);
	assert_memory_equal(RTA_DATA(local), "\x0a\x00\x02\x0f", 4);

	fill_canary(&m);
	len = netconf_msg_addr(m.b, NETCONF_MSG_MAX, 9, 2, NETCONF_IPV4(192, 168, 7, 1), 30);
	check_header(&m, len, RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE, 9);
	assert_int_equal(attr_ip(&m, hl, IFA_BROADCAST), NETCONF_IPV4(192, 168, 7, 3));
	/* /31 and /32 have no broadcast address */
	for (unsigned p = 31; p <= 32; p++) {
		fill_canary(&m);
		len = netconf_msg_addr(m.b, NETCONF_MSG_MAX, 9, 2, NETCONF_IPV4(10, 1, 1, 1), p);
		check_header(&m, len, RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE, 9);
		assert_null(find_attr(&m, hl, IFA_BROADCAST));
		assert_int_equal(attr_ip(&m, hl, IFA_LOCAL), NETCONF_IPV4(10, 1, 1, 1));
	}
	assert_int_equal(netconf_msg_addr(m.b, NETCONF_MSG_MAX, 9, 2, 1, 0), -EINVAL);
	assert_int_equal(netconf_msg_addr(m.b, NETCONF_MSG_MAX, 9, 2, 1, 33), -EINVAL);
	assert_int_equal(netconf_msg_addr(m.b, NETCONF_MSG_MAX, 9, -1, 1, 24), -EINVAL);
}

static void test_route(void **state)
{
	(void)state;
	union msgbuf m;
	fill_canary(&m);
	const size_t hl = sizeof(struct rtmsg);
	int len = netconf_msg_route(m.b, NETCONF_MSG_MAX, 11, 2, NETCONF_IPV4(10, 0, 2, 2));
	check_header(&m, len, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, 11);
	const struct rtmsg *r = NLMSG_DATA(&m.h);
	assert_int_equal(r->rtm_family, AF_INET);
	assert_int_equal(r->rtm_dst_len, 0);
	assert_int_equal(r->rtm_src_len, 0);
	assert_int_equal(r->rtm_table, RT_TABLE_MAIN);
	assert_int_equal(r->rtm_protocol, RTPROT_BOOT);
	assert_int_equal(r->rtm_scope, RT_SCOPE_UNIVERSE);
	assert_int_equal(r->rtm_type, RTN_UNICAST);
	assert_null(find_attr(&m, hl, RTA_DST));
	assert_int_equal(attr_ip(&m, hl, RTA_GATEWAY), NETCONF_IPV4(10, 0, 2, 2));
	const struct rtattr *oif = find_attr(&m, hl, RTA_OIF);
	assert_non_null(oif);
	assert_int_equal(RTA_PAYLOAD(oif), 4);
	uint32_t ix;
	memcpy(&ix, RTA_DATA(oif), 4);
	assert_int_equal(ix, 2);
	assert_int_equal(netconf_msg_route(m.b, NETCONF_MSG_MAX, 11, 0, 1), -EINVAL);
}

static void test_neigh(void **state)
{
	(void)state;
	union msgbuf m;
	fill_canary(&m);
	const size_t hl = sizeof(struct ndmsg);
	const uint8_t mac[6] = {0x52, 0x54, 0x00, 0x12, 0x35, 0x02};
	int len = netconf_msg_neigh(m.b, NETCONF_MSG_MAX, 13, 4, NETCONF_IPV4(10, 0, 2, 2), mac);
	check_header(&m, len, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, 13);
	const struct ndmsg *n = NLMSG_DATA(&m.h);
	assert_int_equal(n->ndm_family, AF_INET);
	assert_int_equal(n->ndm_ifindex, 4);
	assert_int_equal(n->ndm_state, NUD_PERMANENT);
	assert_int_equal(attr_ip(&m, hl, NDA_DST), NETCONF_IPV4(10, 0, 2, 2));
	const struct rtattr *ll = find_attr(&m, hl, NDA_LLADDR);
	assert_non_null(ll);
	assert_int_equal(RTA_PAYLOAD(ll), 6);
	assert_memory_equal(RTA_DATA(ll), mac, 6);
	/* 6 bytes of payload, padded to 8: the padding is zero */
	assert_int_equal(((const uint8_t *)RTA_DATA(ll))[6], 0);
	assert_int_equal(((const uint8_t *)RTA_DATA(ll))[7], 0);
	assert_int_equal(netconf_msg_neigh(m.b, NETCONF_MSG_MAX, 13, 0, 1, mac), -EINVAL);
}

/* Every builder: a cap one byte short of the message is refused without a
 * byte written past it; the exact cap works. */
static void test_caps(void **state)
{
	(void)state;
	const uint8_t mac[6] = {1, 2, 3, 4, 5, 6};
	for (int which = 0; which < 4; which++) {
		union msgbuf m;
		int full = 0;
		for (size_t cap = 0; cap <= NETCONF_MSG_MAX; cap++) {
			fill_canary(&m);
			int len = which == 0   ? netconf_msg_link_up(m.b, cap, 1, 1)
				  : which == 1 ? netconf_msg_addr(m.b, cap, 1, 1, 0x0a00020f, 24)
				  : which == 2 ? netconf_msg_route(m.b, cap, 1, 1, 0x0a000202)
					       : netconf_msg_neigh(m.b, cap, 1, 1, 0x0a000202, mac);
			assert_canary_from(&m, cap);
			if (len == -ENOSPC)
				continue;
			assert_true(len > 0);
			assert_true((size_t)len <= cap);
			if (!full) {
				full = len;
				assert_int_equal((size_t)len, cap); /* the first cap that works is exact */
			}
			assert_int_equal(len, full);
		}
		assert_true(full > 0);
	}
}

/* --- answers ------------------------------------------------------------------ */

/* An NLMSG_ERROR answer for seq with error err, quoting a 16-byte header,
 * written at buf; returns its length. */
static size_t put_error(uint8_t *buf, uint32_t seq, int err)
{
	struct nlmsghdr h = {
		.nlmsg_len = NLMSG_LENGTH(sizeof(struct nlmsgerr)),
		.nlmsg_type = NLMSG_ERROR,
		.nlmsg_seq = seq,
	};
	struct nlmsgerr e = {.error = err};
	e.msg.nlmsg_seq = seq;
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + NLMSG_HDRLEN, &e, sizeof(e));
	return h.nlmsg_len;
}

static void test_reply_check(void **state)
{
	(void)state;
	uint8_t buf[512];
	size_t n = put_error(buf, 5, 0);
	assert_int_equal(netconf_reply_check(buf, n, 5), 0);
	n = put_error(buf, 5, -EEXIST);
	assert_int_equal(netconf_reply_check(buf, n, 5), -EEXIST);
	/* another request's answer: read on */
	assert_int_equal(netconf_reply_check(buf, n, 6), -EAGAIN);
	assert_int_equal(netconf_reply_check(buf, 0, 5), -EAGAIN);
	/* a non-error message first, then ours */
	struct nlmsghdr other = {.nlmsg_len = NLMSG_LENGTH(4), .nlmsg_type = RTM_NEWLINK, .nlmsg_seq = 5};
	memset(buf, 0, sizeof(buf));
	memcpy(buf, &other, sizeof(other));
	size_t off = NLMSG_ALIGN(other.nlmsg_len);
	n = off + put_error(buf + off, 5, -ENODEV);
	assert_int_equal(netconf_reply_check(buf, n, 5), -ENODEV);
	/* unaligned datagram */
	uint8_t *odd = buf + 101;
	n = put_error(odd, 8, -EPERM);
	assert_int_equal(netconf_reply_check(odd, n, 8), -EPERM);
	/* broken: shorter than a header, length past the end, too short for
	 * nlmsgerr, nonsense error numbers */
	n = put_error(buf, 5, 0);
	assert_int_equal(netconf_reply_check(buf, 10, 5), -EBADMSG);
	assert_int_equal(netconf_reply_check(buf, n - 1, 5), -EBADMSG);
	struct nlmsghdr h;
	memcpy(&h, buf, sizeof(h));
	h.nlmsg_len = NLMSG_HDRLEN + 2;
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(netconf_reply_check(buf, n, 5), -EBADMSG);
	h.nlmsg_len = 3; /* below a header */
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(netconf_reply_check(buf, n, 5), -EBADMSG);
	n = put_error(buf, 5, 1);
	assert_int_equal(netconf_reply_check(buf, n, 5), -EBADMSG);
	n = put_error(buf, 5, -100000);
	assert_int_equal(netconf_reply_check(buf, n, 5), -EBADMSG);
	/* a message followed by a few stray bytes (less than a header) */
	n = put_error(buf, 9, 0);
	assert_int_equal(netconf_reply_check(buf, n + 4, 5), -EBADMSG);
}

/* --- in a network namespace (root) -------------------------------------------- */

/* Run fn in a child in a new network namespace; fn returns NULL on
 * success or what failed.  Skips when the namespace cannot be made. */
static void in_netns(const char *(*fn)(void))
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		const char *why;
		char msg[256];
		if (unshare(CLONE_NEWNET) < 0) {
			snprintf(msg, sizeof(msg), "skip: unshare(CLONE_NEWNET): %s", strerror(errno));
			why = msg;
		} else {
			why = fn();
		}
		if (why)
			(void)!write(p[1], why, strlen(why));
		_exit(0);
	}
	close(p[1]);
	char out[512] = "";
	ssize_t n = util_read_full(p[0], out, sizeof(out) - 1);
	close(p[0]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	out[n > 0 ? n : 0] = '\0';
	if (!strncmp(out, "skip: ", 6)) {
		fprintf(stderr, "      %s\n", out);
		skip();
	}
	if (out[0])
		fail_msg("%s", out);
}

static char fail_buf[256];

static const char *failed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *failed(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(fail_buf, sizeof(fail_buf), fmt, ap);
	va_end(ap);
	return fail_buf;
}

/* A tap device called name in this namespace; its fd (the device lives
 * while it is open), or -1. */
static int make_tap(const char *name)
{
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Flags and IPv4 address of an interface (ioctl). 0 or -errno. */
static int if_state(const char *name, short *flags, uint32_t *addr)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	int r = 0;
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
		r = -errno;
	} else {
		*flags = ifr.ifr_flags;
		*addr = 0;
		if (ioctl(s, SIOCGIFADDR, &ifr) == 0)
			*addr = ntohl(((struct sockaddr_in *)&ifr.ifr_addr)->sin_addr.s_addr);
	}
	close(s);
	return r;
}

/* 1 if path's text contains needle. */
static int file_has(const char *path, const char *needle)
{
	char *txt = NULL;
	if (util_read_file(path, 1 << 20, &txt, NULL) < 0)
		return 0;
	int has = strstr(txt, needle) != NULL;
	free(txt);
	return has;
}

/* /proc/net/route: eth0, destination 0, gateway 10.0.2.2 (little-endian hex). */
#define ROUTE_LINE "eth0\t00000000\t0202000A"
/* /proc/net/arp: 10.0.2.2, flags ATF_COM | ATF_PERM, the gateway's MAC. */
#define ARP_GW "10.0.2.2         0x1         0x6         52:54:00:12:35:02"
#define ARP_DNS "10.0.2.3         0x1         0x6         52:54:00:12:35:02"

static const char *nic_checks(void)
{
	short flags = 0;
	uint32_t addr = 0;
	if (if_state("eth0", &flags, &addr) < 0)
		return "eth0 is gone";
	if (!(flags & IFF_UP))
		return "eth0 is not up";
	if (addr != NETCONF_IPV4(10, 0, 2, 15))
		return failed("eth0 has address %08x", addr);
	if (if_state("lo", &flags, &addr) < 0 || !(flags & IFF_UP))
		return "lo is not up";
	if (!file_has("/proc/net/route", ROUTE_LINE))
		return "no default route via 10.0.2.2 on eth0 in /proc/net/route";
	if (!file_has("/proc/net/arp", ARP_GW) || !file_has("/proc/net/arp", ARP_DNS))
		return "no permanent neighbour entries for 10.0.2.2 and 10.0.2.3";
	if (!file_has("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1") ||
	    !file_has("/proc/sys/net/ipv6/conf/eth0/disable_ipv6", "1"))
		return "IPv6 is still on";
	return NULL;
}

static const char *apply_with_nic(void)
{
	int tap = make_tap("eth0");
	if (tap < 0)
		return failed("skip: cannot make a tap device: %s", strerror(errno));
	/* positive control: the probes see a namespace not yet configured */
	short flags = 0;
	uint32_t addr = 0;
	if (if_state("eth0", &flags, &addr) < 0 || (flags & IFF_UP) || addr)
		return "a fresh eth0 is already up or addressed";
	if (if_state("lo", &flags, &addr) < 0 || (flags & IFF_UP))
		return "a fresh lo is already up";
	if (file_has("/proc/net/route", ROUTE_LINE) || file_has("/proc/net/arp", ARP_GW))
		return "a fresh namespace has the route or the neighbour";
	if (!nic_checks() || !file_has("/proc/sys/net/ipv6/conf/all/disable_ipv6", "0"))
		return "the checks pass before anything was configured";

	struct netconf_report rep;
	int r = netconf_apply(&netconf_sandbox, &rep);
	if (r != 0)
		return failed("netconf_apply: %d (%s)", r, rep.error);
	if (!rep.lo_up || !rep.ipv6_off || !rep.nic_found || !rep.nic_up || rep.error[0])
		return failed("report lo=%d ipv6=%d found=%d up=%d error=%s", rep.lo_up,
			      rep.ipv6_off, rep.nic_found, rep.nic_up, rep.error);
	const char *why = nic_checks();
	if (why)
		return why;
	/* a second run replaces what is there: same result, no EEXIST */
	if ((r = netconf_apply(&netconf_sandbox, &rep)) != 0)
		return failed("second netconf_apply: %d (%s)", r, rep.error);
	why = nic_checks();
	close(tap);
	return why;
}

static const char *apply_without_nic(void)
{
	short flags = 0;
	uint32_t addr = 0;
	if (if_state("lo", &flags, &addr) < 0 || (flags & IFF_UP))
		return "a fresh lo is already up";
	struct netconf_report rep;
	int r = netconf_apply(&netconf_sandbox, &rep);
	if (r != -ENODEV)
		return failed("netconf_apply without eth0: %d, want -ENODEV (%s)", r, rep.error);
	if (!rep.lo_up || !rep.ipv6_off || rep.nic_found || rep.nic_up || rep.error[0])
		return failed("report lo=%d ipv6=%d found=%d up=%d error=%s", rep.lo_up,
			      rep.ipv6_off, rep.nic_found, rep.nic_up, rep.error);
	if (if_state("lo", &flags, &addr) < 0 || !(flags & IFF_UP))
		return "lo is not up";
	return NULL;
}

/* The kernel's refusal comes back as the step's error: a gateway outside
 * the interface's network cannot be routed through. */
static const char *apply_refused(void)
{
	int tap = make_tap("eth0");
	if (tap < 0)
		return failed("skip: cannot make a tap device: %s", strerror(errno));
	struct netconf_cfg bad = netconf_sandbox;
	bad.gateway = NETCONF_IPV4(192, 0, 2, 1);
	struct netconf_report rep;
	int r = netconf_apply(&bad, &rep);
	close(tap);
	if (r != -ENETUNREACH)
		return failed("want -ENETUNREACH, got %d (%s)", r, rep.error);
	if (strcmp(rep.error, "default route: ENETUNREACH") != 0)
		return failed("error says '%s'", rep.error);
	if (!rep.nic_found || rep.nic_up || !rep.lo_up)
		return "report does not say the NIC failed";
	return NULL;
}

static void test_apply_with_nic(void **state)
{
	(void)state;
	in_netns(apply_with_nic);
}

static void test_apply_without_nic(void **state)
{
	(void)state;
	in_netns(apply_without_nic);
}

static void test_apply_refused(void **state)
{
	(void)state;
	in_netns(apply_refused);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_link_up),
		cmocka_unit_test(test_addr),
		cmocka_unit_test(test_route),
		cmocka_unit_test(test_neigh),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_reply_check),
		cmocka_unit_test(test_apply_with_nic),
		cmocka_unit_test(test_apply_without_nic),
		cmocka_unit_test(test_apply_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
