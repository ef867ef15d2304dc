/*
 * test_netslot.c - a sandbox's network namespace (engine/qemu/netslot.h): the
 * tap has the gateway's address and MAC inside the namespace and does not
 * exist outside it; the nftables ruleset is loaded; the daemon's listeners
 * accept connections made inside the namespace; listeners can be made anew
 * for an existing namespace (adoption); a socket towards the guest is made
 * inside it; all of it still works while the process holds more than
 * FD_SETSIZE descriptors.  Needs root (CAP_NET_ADMIN); skipped otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <nftables/libnftables.h>

#include "engine/qemu/netslot.h"

#define NEED_ROOT()                                                                \
	do {                                                                       \
		if (geteuid() != 0)                                                \
			skip();                                                    \
	} while (0)

/* What a thread inside the namespace finds. */
struct probe {
	int netns;
	char addr[32];
	unsigned char mac[6];
	int rules_loaded;
	int connected;     /* a TCP connect to 10.0.2.2:3128 made inside */
	int fd;
};

static void *probe_main(void *arg)
{
	struct probe *p = arg;
	if (setns(p->netns, CLONE_NEWNET) < 0)
		return NULL;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), NETSLOT_TAP);
	if (ioctl(s, SIOCGIFADDR, &ifr) == 0)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ifr.ifr_addr)->sin_addr, p->addr,
			  sizeof(p->addr));
	if (ioctl(s, SIOCGIFHWADDR, &ifr) == 0)
		memcpy(p->mac, ifr.ifr_hwaddr.sa_data, 6);
	close(s);
	struct nft_ctx *nft = nft_ctx_new(NFT_CTX_DEFAULT);
	nft_ctx_buffer_output(nft);
	if (nft_run_cmd_from_buffer(nft, "list table inet pandastack") == 0) {
		const char *out = nft_ctx_get_output_buffer(nft);
		p->rules_loaded = out && strstr(out, "redirect to :3128") && strstr(out, "policy drop");
	}
	nft_ctx_free(nft);
	p->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(NETSLOT_PROXY_PORT)};
	inet_pton(AF_INET, NETSLOT_GW_IP, &a.sin_addr);
	p->connected = connect(p->fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	return NULL;
}

static void probe(struct probe *p)
{
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, probe_main, p), 0);
	pthread_join(t, NULL);
}

static void test_slot(void **state)
{
	(void)state;
	NEED_ROOT();
	struct netslot s;
	char err[256];
	int r = netslot_create(&s, err, sizeof(err));
	if (r < 0)
		fail_msg("netslot_create: %d %s", r, err);
	assert_true(s.netns >= 0 && s.tap >= 0 && s.l.proxy >= 0 && s.l.dns_udp >= 0 &&
		    s.l.dns_tcp >= 0);
	/* not in the host's namespace (positive control: lo is there) */
	assert_true(if_nametoindex("lo") > 0);
	assert_int_equal(if_nametoindex(NETSLOT_TAP), 0);
	struct probe p = {.netns = s.netns, .fd = -1};
	probe(&p);
	assert_string_equal(p.addr, NETSLOT_GW_IP);
	static const unsigned char gw[6] = {0x52, 0x54, 0x00, 0x12, 0x35, 0x02};
	assert_memory_equal(p.mac, gw, 6);
	assert_true(p.rules_loaded);
	assert_true(p.connected);
	/* the daemon's listener, served from the host, got that connection */
	struct pollfd pf = {.fd = s.l.proxy, .events = POLLIN};
	assert_int_equal(poll(&pf, 1, 5000), 1);
	int c = accept(s.l.proxy, NULL, NULL);
	assert_true(c >= 0);
	close(c);
	close(p.fd);

	/* adoption: new listeners in the same namespace */
	netslot_close_listeners(&s.l);
	struct netslot_listeners l;
	assert_int_equal(netslot_listen(s.netns, &l), 0);
	struct probe p2 = {.netns = s.netns, .fd = -1};
	probe(&p2);
	assert_true(p2.connected);
	close(p2.fd);
	netslot_close_listeners(&l);

	/* a socket towards the guest, made inside */
	int g = netslot_connect_guest(s.netns, 8000);
	assert_true(g >= 0);
	close(g);
	assert_int_equal(netslot_connect_guest(s.netns, 0), -EINVAL);
	netslot_close(&s);
}

/* A daemon with a hundred sandboxes holds more than FD_SETSIZE (1024)
 * descriptors; libnftables' select(2) on a socket numbered that high
 * aborted the process.  A slot is still made, its rules loaded. */
static void test_slot_with_many_descriptors(void **state)
{
	(void)state;
	NEED_ROOT();
	enum { HOLD = 1100 };
	struct rlimit rl;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max < HOLD + 64)
		skip();
	struct rlimit old = rl;
	if (rl.rlim_cur < HOLD + 64) {
		rl.rlim_cur = HOLD + 64;
		assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	}
	static int held[HOLD];
	int n = 0;
	int dn = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(dn >= 0);
	while (n < HOLD) {
		int fd = fcntl(dn, F_DUPFD_CLOEXEC, 0);
		assert_true(fd >= 0);
		held[n++] = fd;
		if (fd >= 1100)
			break;
	}
	/* positive control: the next descriptor is past FD_SETSIZE */
	int next = fcntl(dn, F_DUPFD_CLOEXEC, 0);
	assert_true(next >= 1024);
	close(next);
	struct netslot s;
	char err[256];
	int r = netslot_create(&s, err, sizeof(err));
	for (int i = 0; i < n; i++)
		close(held[i]);
	close(dn);
	if (r < 0)
		fail_msg("netslot_create: %d %s", r, err);
	struct probe p = {.netns = s.netns, .fd = -1};
	probe(&p);
	assert_true(p.rules_loaded);
	close(p.fd);
	netslot_close(&s);
	setrlimit(RLIMIT_NOFILE, &old);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slot),
		cmocka_unit_test(test_slot_with_many_descriptors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
