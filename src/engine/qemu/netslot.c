/*
 * netslot.c - a sandbox's network namespace: tap, addresses, nftables and
 * the daemon's listeners (see netslot.h).  Kernel interfaces: unshare(2)
 * and setns(2) (a network namespace is per thread), netdevice(7) ioctls,
 * Documentation/networking/tuntap.rst; nftables through libnftables.
 */
#include "engine/qemu/netslot.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/if_tun.h>

#include <nftables/libnftables.h>

#include "common/log.h"

/* The namespace's firewall: guest TCP to the proxy, guest DNS to the
 * resolver, nothing else in, nothing forwarded.  After a redirect the
 * destination is the listener's port on 10.0.2.2. */
static const char ruleset[] =
	"table inet pandastack {\n"
	"  chain prerouting {\n"
	"    type nat hook prerouting priority dstnat; policy accept;\n"
	"    iifname \"" NETSLOT_TAP "\" meta l4proto { tcp, udp } th dport 53 redirect to :53\n"
	"    iifname \"" NETSLOT_TAP "\" meta l4proto tcp redirect to :3128\n"
	"  }\n"
	"  chain input {\n"
	"    type filter hook input priority filter; policy drop;\n"
	"    iif \"lo\" accept\n"
	"    ct state established,related accept\n"
	"    iifname \"" NETSLOT_TAP "\" tcp dport { 53, 3128 } accept\n"
	"    iifname \"" NETSLOT_TAP "\" udp dport 53 accept\n"
	"  }\n"
	"  chain forward {\n"
	"    type filter hook forward priority filter; policy drop;\n"
	"  }\n"
	"}\n";

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void netslot_close_listeners(struct netslot_listeners *l)
{
	close_fd(&l->proxy);
	close_fd(&l->dns_udp);
	close_fd(&l->dns_tcp);
}

void netslot_close(struct netslot *s)
{
	close_fd(&s->netns);
	close_fd(&s->tap);
	netslot_close_listeners(&s->l);
}

/* --- steps, run on a worker thread inside the namespace -------------------- */

static int ifreq_ioctl(int sock, unsigned long req, struct ifreq *ifr)
{
	return ioctl(sock, req, ifr) < 0 ? -errno : 0;
}

static int link_up(int sock, const char *name)
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	int r = ifreq_ioctl(sock, SIOCGIFFLAGS, &ifr);
	if (r < 0)
		return r;
	ifr.ifr_flags |= IFF_UP;
	return ifreq_ioctl(sock, SIOCSIFFLAGS, &ifr);
}

static int set_ipv4(int sock, const char *name, unsigned long req, const char *addr)
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
	sin->sin_family = AF_INET;
	if (inet_pton(AF_INET, addr, &sin->sin_addr) != 1)
		return -EINVAL;
	return ifreq_ioctl(sock, req, &ifr);
}

static int set_mac(int sock, const char *name, const char *mac)
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	unsigned b[6];
	if (sscanf(mac, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6)
		return -EINVAL;
	ifr.ifr_hwaddr.sa_family = 1; /* ARPHRD_ETHER */
	for (int i = 0; i < 6; i++)
		ifr.ifr_hwaddr.sa_data[i] = (char)b[i];
	return ifreq_ioctl(sock, SIOCSIFHWADDR, &ifr);
}

/* The tap device, made in the current namespace. */
static int make_tap(int *out)
{
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), NETSLOT_TAP);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	*out = fd;
	return 0;
}

static int write_proc(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, v, strlen(v));
	int e = n < 0 ? -errno : 0;
	close(fd);
	return e;
}

/* libnftables keeps process-wide state (its cache of interfaces, filled
 * over netlink in the namespace of whichever thread asked first): loads
 * from threads in different namespaces at once saw "Interface does not
 * exist" for lo.  One load at a time. */
static pthread_mutex_t nft_lock = PTHREAD_MUTEX_INITIALIZER;

static int load_rules(char *err, size_t errlen)
{
	struct nft_ctx *nft = nft_ctx_new(NFT_CTX_DEFAULT);
	if (!nft)
		return -ENOMEM;
	nft_ctx_buffer_error(nft);
	int r = nft_run_cmd_from_buffer(nft, ruleset) == 0 ? 0 : -EPROTO;
	if (r < 0) {
		const char *msg = nft_ctx_get_error_buffer(nft);
		snprintf(err, errlen, "nftables: %.200s", msg ? msg : "refused the ruleset");
	}
	nft_ctx_free(nft);
	return r;
}

/* How many low descriptor numbers the rules' thread frees for itself. */
#define RULES_LOW_FDS 64

struct rules_job {
	char *err;
	size_t errlen;
	int r;
};

/*
 * libnftables waits on its netlink socket with select(2), and glibc aborts
 * the process when that socket's number is FD_SETSIZE (1024) or more, as it
 * is once the daemon holds the descriptors of a hundred sandboxes.  So the
 * rules load on a thread of their own (it inherits its creator's network
 * namespace) with a private copy of the descriptor table
 * (unshare(CLONE_FILES)) whose low numbers it closes: the socket gets a
 * small number, and the copy goes with the thread.  Closing copies touches
 * nothing of the daemon's: its open files keep their other references, and
 * its POSIX locks belong to its own table.
 */
static void *rules_main(void *arg)
{
	struct rules_job *j = arg;
	if (unshare(CLONE_FILES) < 0) {
		j->r = -errno;
		snprintf(j->err, j->errlen, "nftables: a descriptor table of its own: %s",
			 strerror(errno));
		return NULL;
	}
	close_range(3, RULES_LOW_FDS - 1, 0);
	pthread_mutex_lock(&nft_lock);
	j->r = load_rules(j->err, j->errlen);
	pthread_mutex_unlock(&nft_lock);
	return NULL;
}

static int load_rules_low_fds(char *err, size_t errlen)
{
	struct rules_job j = {.err = err, .errlen = errlen, .r = 0};
	pthread_t t;
	int e = pthread_create(&t, NULL, rules_main, &j);
	if (e)
		return -e;
	pthread_join(t, NULL);
	return j.r;
}

static int listen_on(int type, unsigned port, int *out)
{
	int fd = socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_ANY);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 128) < 0)) {
		int e = -errno;
		close(fd);
		return e;
	}
	*out = fd;
	return 0;
}

static int make_listeners(struct netslot_listeners *l)
{
	l->proxy = l->dns_udp = l->dns_tcp = -1;
	int r = listen_on(SOCK_STREAM, NETSLOT_PROXY_PORT, &l->proxy);
	if (r == 0)
		r = listen_on(SOCK_DGRAM, NETSLOT_DNS_PORT, &l->dns_udp);
	if (r == 0)
		r = listen_on(SOCK_STREAM, NETSLOT_DNS_PORT, &l->dns_tcp);
	if (r < 0)
		netslot_close_listeners(l);
	return r;
}

/* What a worker thread is asked to do, and its outcome. */
enum job_kind { JOB_CREATE, JOB_LISTEN, JOB_CONNECT };

struct job {
	enum job_kind kind;
	int netns;             /* JOB_LISTEN, JOB_CONNECT: where to go */
	unsigned port;         /* JOB_CONNECT */
	struct netslot *slot;  /* JOB_CREATE: filled */
	struct netslot_listeners *l; /* JOB_LISTEN: filled */
	int fd;                /* JOB_CONNECT: the socket */
	int r;
	char err[256];
};

static int do_create(struct job *j)
{
	struct netslot *s = j->slot;
	const char *step = "unshare";
	int r = unshare(CLONE_NEWNET) < 0 ? -errno : 0;
	int sock = -1;
	if (r == 0) {
		step = "open the namespace";
		s->netns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
		r = s->netns < 0 ? -errno : 0;
	}
	if (r == 0) {
		step = "socket";
		sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		r = sock < 0 ? -errno : 0;
	}
	if (r == 0 && (step = "lo up", r = link_up(sock, "lo")) == 0 &&
	    (step = "tap", r = make_tap(&s->tap)) == 0) {
		/* No IPv6 on the tap: no link-local address, no MLD chatter. */
		write_proc("/proc/sys/net/ipv6/conf/" NETSLOT_TAP "/disable_ipv6", "1");
		if ((step = "tap MAC", r = set_mac(sock, NETSLOT_TAP, NETSLOT_GW_MAC)) == 0 &&
		    (step = "tap address", r = set_ipv4(sock, NETSLOT_TAP, SIOCSIFADDR, NETSLOT_GW_IP)) == 0 &&
		    (step = "tap netmask",
		     r = set_ipv4(sock, NETSLOT_TAP, SIOCSIFNETMASK, "255.255.255.0")) == 0 &&
		    (step = "tap up", r = link_up(sock, NETSLOT_TAP)) == 0)
			step = "nftables", r = load_rules_low_fds(j->err, sizeof(j->err));
	}
	if (r == 0)
		step = "listeners", r = make_listeners(&s->l);
	if (sock >= 0)
		close(sock);
	if (r < 0 && !j->err[0])
		snprintf(j->err, sizeof(j->err), "network namespace: %s: %s", step, strerror(-r));
	return r;
}

static int do_connect(struct job *j)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)j->port)};
	inet_pton(AF_INET, NETSLOT_GUEST_IP, &a.sin_addr);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS) {
		int e = -errno;
		close(fd);
		return e;
	}
	j->fd = fd;
	return 0;
}

static void *job_main(void *arg)
{
	struct job *j = arg;
	if (j->kind == JOB_CREATE) {
		j->r = do_create(j);
		return NULL;
	}
	if (setns(j->netns, CLONE_NEWNET) < 0) {
		j->r = -errno;
		return NULL;
	}
	j->r = j->kind == JOB_LISTEN ? make_listeners(j->l) : do_connect(j);
	return NULL;
}

/* Run j on a thread of its own (its namespace changes die with it). */
static int run_job(struct job *j)
{
	pthread_t t;
	int e = pthread_create(&t, NULL, job_main, j);
	if (e)
		return -e;
	pthread_join(t, NULL);
	return j->r;
}

int netslot_create(struct netslot *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	out->netns = out->tap = -1;
	out->l.proxy = out->l.dns_udp = out->l.dns_tcp = -1;
	struct job j = {.kind = JOB_CREATE, .slot = out};
	int r = run_job(&j);
	if (r < 0) {
		snprintf(err, errlen, "%s", j.err[0] ? j.err : strerror(-r));
		log_kv(LOG_WARN, "netslot.create_failed", "err=%s", err);
		netslot_close(out);
	}
	return r;
}

int netslot_listen(int netns, struct netslot_listeners *out)
{
	out->proxy = out->dns_udp = out->dns_tcp = -1;
	struct job j = {.kind = JOB_LISTEN, .netns = netns, .l = out};
	return run_job(&j);
}

int netslot_connect_guest(int netns, unsigned port)
{
	if (port == 0 || port > 65535)
		return -EINVAL;
	struct job j = {.kind = JOB_CONNECT, .netns = netns, .port = port, .fd = -1};
	int r = run_job(&j);
	return r < 0 ? r : j.fd;
}
