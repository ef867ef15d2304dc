/*
 * net_proxy.c - the sandbox proxy: every TCP connection a guest opens
 * arrives at the daemon's listener inside the sandbox's namespace (the
 * namespace's firewall redirects it there; SO_ORIGINAL_DST gives where it
 * was going).  For each one:
 *
 *   SNIFF    read the first bytes, for at most NET_PROXY_SNIFF_MS, until
 *            they name a host (net_sniff.h), when the policy has domain
 *            rules and the destination alone does not settle it.  A
 *            connection decided at that deadline without a name (a slow
 *            client, or a server that speaks first) is still held to the
 *            name its first bytes carry when they come: they are checked
 *            before they are passed on (late_check), so waiting out the
 *            deadline cannot take an allowed address to another name;
 *   decide   net_policy_decide with that name, or with the name the
 *            sandbox's resolver gave for the address (net_names.h);
 *   RESOLVE  for an allow_out domain rule: look the name up (the guest's
 *            address is kept when it is one of the answers; any address
 *            dialled is re-checked against the always-denied ranges);
 *   DIAL     a non-blocking connect from the daemon's namespace, for at
 *            most NET_PROXY_DIAL_MS;
 *   OPEN     bytes both ways through two bounded buffers, half-closes
 *            passed on, counted per sandbox.
 *
 * A refused connection is reset, or answered "403 Forbidden" when it is an
 * HTTP request.  Caps: net.max_conns open connections in all, and
 * net.max_conns_sandbox per sandbox (more are reset, counted as refused:
 * limit).  A side that has nothing to be waited for is taken off epoll, so
 * a peer's hang-up never spins the loop.  Open connections have no idle
 * limit; TCP keepalive finds a destination that vanished (in about two
 * minutes).
 *
 * Runs on the network loop's thread (net_int.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "daemon/net/net_dnsmsg.h"
#include "daemon/net/net_int.h"
#include "daemon/net/net_sniff.h"

/* Connections refused, by reason, over all sandboxes of the host. */
static atomic_uint_fast64_t refused_by_reason[NET_REFUSAL_COUNT];

static void count_refused(enum net_refusal r)
{
	if ((unsigned)r < NET_REFUSAL_COUNT)
		atomic_fetch_add(&refused_by_reason[r], 1);
}

void net_proxy_metrics_write(FILE *f)
{
	fprintf(f, "# HELP pandastack_net_refused_total Sandbox connections refused, by reason.\n"
		   "# TYPE pandastack_net_refused_total counter\n");
	for (unsigned i = 0; i < NET_REFUSAL_COUNT; i++)
		fprintf(f, "pandastack_net_refused_total{reason=\"%s\"} %llu\n",
			net_refusal_name((enum net_refusal)i),
			(unsigned long long)atomic_load(&refused_by_reason[i]));
}

#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80 /* linux/netfilter_ipv4.h */
#endif

#define NET_PROXY_SNIFF_MS 1000
#define NET_PROXY_DIAL_MS 10000
#define PBUF 16400 /* bytes per direction: holds NET_SNIFF_MAX */
#define KEEPALIVE_IDLE_S 60 /* then a probe every 10 s, 6 unanswered: gone */
#define KEEPALIVE_INTVL_S 10
#define KEEPALIVE_COUNT 6
#define ACCEPT_BATCH 16

enum pstate { P_SNIFF = 0, P_RESOLVE, P_DIAL, P_OPEN };

struct pbuf {
	uint8_t d[PBUF];
	size_t off, len;  /* data at d[off .. off+len) */
};

struct net_pconn {
	struct net_box *b;
	enum pstate st;
	int gfd, rfd;                 /* guest side, remote side (-1 before the dial) */
	struct net_watch g, r;        /* their registrations (fd -1: not watched) */
	struct net_timer timer;       /* SNIFF and DIAL deadlines */
	struct net_lookup *lookup;    /* RESOLVE */
	uint32_t dst;                 /* where the guest connected, host order */
	uint16_t port;
	uint32_t dialed;              /* the address dialled */
	char name[NET_NAME_MAX + 1];  /* "" when none */
	int name_from_dns;            /* name came from net_names, not the bytes */
	int late;                     /* decided at the sniff deadline: the first
				       * bytes are still to be checked (late_check) */
	int http;                     /* the first bytes are an HTTP request */
	int g_eof, r_eof;             /* that side sent FIN */
	int g_shut, r_shut;           /* we sent FIN to that side */
	struct net_pconn *prev, *next;
	struct pbuf up, down;         /* guest -> remote, remote -> guest; last: not zeroed */
};

static void pconn_free(void *p)
{
	free(p);
}

/* Watch fd with w for events, or not at all when events is 0.  0, or
 * -errno when epoll could not take it. */
static int watch(struct net_pconn *c, struct net_watch *w, int fd, uint32_t events)
{
	struct net_loop *l = c->b->net->loop;
	if (fd < 0)
		return 0;
	if (!events) {
		net_loop_del(l, w);
		return 0;
	}
	if (w->fd < 0)
		return net_loop_add(l, w, fd, events);
	return net_loop_set(l, w, events);
}

static void set_rst(int fd)
{
	struct linger lg = {1, 0};
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

/* Close c; rst resets both sides instead of closing them gracefully. */
static void conn_close(struct net_pconn *c, int rst)
{
	struct net_box *b = c->b;
	struct net *net = b->net;
	net_resolve_cancel(c->lookup);
	c->lookup = NULL;
	net_loop_timer_clear(net->loop, &c->timer);
	net_loop_del(net->loop, &c->g);
	net_loop_del(net->loop, &c->r);
	if (rst)
		set_rst(c->gfd);
	close(c->gfd);
	if (c->rfd >= 0) {
		if (rst)
			set_rst(c->rfd);
		close(c->rfd);
	}
	if (c->prev)
		c->prev->next = c->next;
	else
		b->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	b->n_conns--;
	net->n_conns--;
	atomic_fetch_sub(&b->st.open, 1);
	net_loop_defer_free(net->loop, pconn_free, c);
}

static void log_refusal(const struct net_pconn *c, enum net_refusal why)
{
	char a[16];
	log_kv(LOG_DEBUG, "net.refused", "id=%s dst=%s port=%u name=%s reason=%s", c->b->id,
	       net_addr_text(c->dst, a), c->port, c->name[0] ? c->name : "-",
	       net_refusal_name(why));
}

/* Do the first bytes (at p->d, off 0) start an HTTP/1 request line? */
static int looks_http(const struct pbuf *p)
{
	size_t i = 0;
	while (i < p->len && i < 21 && p->d[i] >= 'A' && p->d[i] <= 'Z')
		i++;
	return i > 0 && i < p->len && p->d[i] == ' ';
}

static void refuse(struct net_pconn *c, enum net_refusal why)
{
	count_refused(why);
	atomic_fetch_add(&c->b->st.refused, 1);
	log_refusal(c, why);
	if (c->http) {
		char body[96], all[256];
		snprintf(body, sizeof(body), "blocked by the sandbox's network policy (%s)\n",
			 net_refusal_name(why));
		int n = snprintf(all, sizeof(all),
				 "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
				 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
				 strlen(body), body);
		if (n > 0 && send(c->gfd, all, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) == n) {
			shutdown(c->gfd, SHUT_WR);
			conn_close(c, 0);
			return;
		}
	}
	conn_close(c, 1);
}

/* ---- relaying ----------------------------------------------------------------- */

static void update(struct net_pconn *c);

/* Read from fd into p; 1 at EOF, -1 on error, 0 otherwise. */
static int fill(int fd, struct pbuf *p)
{
	if (p->off + p->len == PBUF && p->off > 0) {
		memmove(p->d, p->d + p->off, p->len);
		p->off = 0;
	}
	size_t room = PBUF - p->off - p->len;
	if (room == 0)
		return 0;
	ssize_t n = recv(fd, p->d + p->off + p->len, room, MSG_DONTWAIT);
	if (n == 0)
		return 1;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	p->len += (size_t)n;
	return 0;
}

/* Write p to fd; bytes written, or -1 on error. */
static ssize_t drain(int fd, struct pbuf *p)
{
	if (p->len == 0)
		return 0;
	ssize_t n = send(fd, p->d + p->off, p->len, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	p->off += (size_t)n;
	p->len -= (size_t)n;
	if (p->len == 0)
		p->off = 0;
	return n;
}

/*
 * A connection decided at the sniff deadline with no name in its bytes: now
 * that more of them came, the name they carry (if any) must not change the
 * decision.  The same policy is asked with that name; and when the address
 * alone would be refused (the connection passed for the name the resolver
 * gave its address), the bytes must name that same host.  0 to go on (c->late
 * cleared once settled; the bytes are held until then), -1 when c was
 * refused (closed).
 */
static int late_check(struct net_pconn *c)
{
	struct net_box *b = c->b;
	char name[NET_NAME_MAX + 1];
	switch (net_sniff(c->up.d + c->up.off, c->up.len, name)) {
	case NET_SNIFF_MORE:
		if (!c->g_eof && c->up.off + c->up.len < PBUF)
			return 0;
		/* its name never fits, or the stream ended before it: as in
		 * sniff(), refused rather than passed unnamed */
		c->http = looks_http(&c->up);
		refuse(c, NET_REFUSAL_AMBIGUOUS);
		return -1;
	case NET_SNIFF_NONE:
		c->late = 0;
		return 0;
	case NET_SNIFF_CONFLICT:
		c->http = looks_http(&c->up);
		refuse(c, NET_REFUSAL_AMBIGUOUS);
		return -1;
	case NET_SNIFF_NAME:
		break;
	}
	c->late = 0;
	c->http = looks_http(&c->up);
	int64_t now = net_loop_now(b->net->loop);
	struct net_decision d = net_policy_decide(b->policy, b->net->denied, c->dst, name, now);
	if (d.verdict == NET_REFUSE) {
		refuse(c, d.why);
		return -1;
	}
	if (c->name[0] && strcmp(c->name, name) != 0 &&
	    net_policy_decide(b->policy, b->net->denied, c->dst, NULL, now).verdict == NET_REFUSE) {
		refuse(c, NET_REFUSAL_AMBIGUOUS);
		return -1;
	}
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->name_from_dns = 0;
	return 0;
}

/* One turn of relaying both ways; 0, or -1 when c was closed. */
static int relay(struct net_pconn *c)
{
	struct net_box *b = c->b;
	int e;
	if (!c->g_eof && (e = fill(c->gfd, &c->up)) != 0) {
		if (e < 0)
			goto reset;
		c->g_eof = 1;
	}
	if (c->late && late_check(c) < 0)
		return -1;
	ssize_t n = c->late ? 0 : drain(c->rfd, &c->up);
	if (n < 0)
		goto reset;
	atomic_fetch_add(&b->st.bytes_out, (uint64_t)n);
	if (!c->r_eof && (e = fill(c->rfd, &c->down)) != 0) {
		if (e < 0)
			goto reset;
		c->r_eof = 1;
	}
	n = drain(c->gfd, &c->down);
	if (n < 0)
		goto reset;
	atomic_fetch_add(&b->st.bytes_in, (uint64_t)n);
	/* Pass a half-close on once what came before it is delivered. */
	if (c->g_eof && !c->up.len && !c->r_shut) {
		shutdown(c->rfd, SHUT_WR);
		c->r_shut = 1;
	}
	if (c->r_eof && !c->down.len && !c->g_shut) {
		shutdown(c->gfd, SHUT_WR);
		c->g_shut = 1;
	}
	if (c->g_shut && c->r_shut) {
		conn_close(c, 0);
		return -1;
	}
	return 0;
reset:
	conn_close(c, 1);
	return -1;
}


/* ---- dialling ------------------------------------------------------------------ */

static void opened(struct net_pconn *c)
{
	int one = 1, idle = KEEPALIVE_IDLE_S, intvl = KEEPALIVE_INTVL_S, cnt = KEEPALIVE_COUNT;
	setsockopt(c->rfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(c->gfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* A destination that vanishes without a word frees its slot in the end. */
	setsockopt(c->rfd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(c->rfd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(c->rfd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(c->rfd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	net_loop_timer_clear(c->b->net->loop, &c->timer);
	c->st = P_OPEN;
	atomic_fetch_add(&c->b->st.conns, 1);
	if (relay(c) == 0)
		update(c);
}

static void dial_failed(struct net_pconn *c, int err)
{
	char a[16];
	log_kv(LOG_DEBUG, "net.dial_failed", "id=%s dst=%s port=%u err=%d", c->b->id,
	       net_addr_text(c->dialed, a), c->port, err);
	conn_close(c, 1);
}

static void dial(struct net_pconn *c, uint32_t ip)
{
	c->dialed = ip;
	c->rfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->rfd < 0) {
		dial_failed(c, -errno);
		return;
	}
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(c->port)};
	a.sin_addr.s_addr = htonl(ip);
	if (connect(c->rfd, (struct sockaddr *)&a, sizeof(a)) == 0) {
		opened(c);
		return;
	}
	if (errno != EINPROGRESS) {
		dial_failed(c, -errno);
		return;
	}
	c->st = P_DIAL;
	net_loop_timer_set(c->b->net->loop, &c->timer,
			   net_loop_now(c->b->net->loop) + NET_PROXY_DIAL_MS);
	update(c);
}

static void on_dial(struct net_pconn *c)
{
	int err = 0;
	socklen_t len = sizeof(err);
	if (getsockopt(c->rfd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err == EINPROGRESS || err == EALREADY)
		return;
	if (err) {
		dial_failed(c, -err);
		return;
	}
	opened(c);
}

/* The daemon's answer for an allowed name: the guest's address if it is one
 * of them, else the first the sandbox may reach. */
static void name_resolved(void *arg, unsigned rcode, const uint32_t *addrs, size_t n,
			  uint32_t ttl)
{
	(void)ttl;
	struct net_pconn *c = arg;
	struct net *net = c->b->net;
	int64_t now = net_loop_now(net->loop);
	c->lookup = NULL;
	size_t pick = n;
	for (size_t i = 0; rcode == NET_DNS_NOERROR && i < n; i++) {
		if (net_denied_has(net->denied, addrs[i], now))
			continue;
		if (pick == n)
			pick = i;
		if (addrs[i] == c->dst) {
			pick = i;
			break;
		}
	}
	if (pick == n) {
		refuse(c, NET_REFUSAL_NO_ADDRESS);
		return;
	}
	dial(c, addrs[pick]);
}

/* ---- deciding ------------------------------------------------------------------- */

/* The name is known (or known to be absent): decide and go on. */
static void decide(struct net_pconn *c)
{
	struct net_box *b = c->b;
	struct net *net = b->net;
	int64_t now = net_loop_now(net->loop);
	net_loop_timer_clear(net->loop, &c->timer);
	if (!c->name[0]) {
		const char *n = net_names_get(&b->names, c->dst, now);
		if (n) {
			snprintf(c->name, sizeof(c->name), "%s", n);
			c->name_from_dns = 1;
		}
	}
	struct net_decision d = net_policy_decide(b->policy, net->denied, c->dst, c->name, now);
	if (d.verdict == NET_REFUSE) {
		refuse(c, d.why);
		return;
	}
	if (d.verdict == NET_ALLOW_ADDR || c->name_from_dns) {
		/* an address the resolver gave for this name is the name's */
		dial(c, c->dst);
		return;
	}
	c->st = P_RESOLVE;
	update(c);
	struct net_lookup *lk = NULL;
	if (net_resolve_a(net->resolver, c->name, name_resolved, c, &lk) < 0) {
		conn_close(c, 1);
		return;
	}
	if (lk)
		c->lookup = lk;
}

/* Read more of the first bytes; decide once they name a host or cannot. */
static void sniff(struct net_pconn *c, int deadline)
{
	int e = deadline ? 0 : fill(c->gfd, &c->up);
	if (e < 0) {
		conn_close(c, 1);
		return;
	}
	if (e > 0)
		c->g_eof = 1;
	c->http = looks_http(&c->up);
	switch (net_sniff(c->up.d, c->up.len, c->name)) {
	case NET_SNIFF_MORE:
		if (!deadline && !c->g_eof && c->up.len < PBUF) {
			update(c);
			return;
		}
		if (c->g_eof || c->up.len >= PBUF) {
			/* a TLS or HTTP start whose name is past what is read
			 * (a 16 KiB header block before Host) or cut by the end
			 * of the stream: passing it unnamed would let the name
			 * that follows escape a domain rule */
			refuse(c, NET_REFUSAL_AMBIGUOUS);
			return;
		}
		c->name[0] = '\0';
		/* at the deadline, before a whole name came: decided without
		 * one, the bytes still checked when they come */
		c->late = deadline && !c->g_eof && c->up.len < PBUF;
		break;
	case NET_SNIFF_CONFLICT:
		refuse(c, NET_REFUSAL_AMBIGUOUS);
		return;
	case NET_SNIFF_NONE:
		c->name[0] = '\0';
		break;
	case NET_SNIFF_NAME:
		break;
	}
	decide(c);
}

static void on_timer(struct net_timer *t, int64_t now)
{
	(void)now;
	struct net_pconn *c = NET_CONTAINER(t, struct net_pconn, timer);
	if (c->st == P_SNIFF)
		sniff(c, 1);
	else
		dial_failed(c, -ETIMEDOUT);
}

/* ---- events and interest --------------------------------------------------------- */

/* What each side waits for in c's state.  A side epoll cannot watch (out
 * of memory) would stall the connection: it is reset instead (c is then
 * closed; freed after the batch). */
static void update(struct net_pconn *c)
{
	uint32_t g = 0, r = 0;
	switch (c->st) {
	case P_SNIFF:
		g = EPOLLIN;
		break;
	case P_RESOLVE:
		break;
	case P_DIAL:
		r = EPOLLOUT;
		break;
	case P_OPEN:
		g = (!c->g_eof && c->up.off + c->up.len < PBUF ? EPOLLIN : 0) |
		    (c->down.len ? EPOLLOUT : 0);
		r = (!c->r_eof && c->down.off + c->down.len < PBUF ? EPOLLIN : 0) |
		    (c->up.len && !c->late ? EPOLLOUT : 0);
		break;
	}
	if (watch(c, &c->g, c->gfd, g) < 0 || watch(c, &c->r, c->rfd, r) < 0)
		conn_close(c, 1);
}

static void on_guest(struct net_watch *w, uint32_t events)
{
	struct net_pconn *c = NET_CONTAINER(w, struct net_pconn, g);
	(void)events; /* watched only in SNIFF and OPEN, where reading tells all */
	if (c->st == P_SNIFF)
		sniff(c, 0);
	else if (c->st == P_OPEN && relay(c) == 0)
		update(c);
}

static void on_remote(struct net_watch *w, uint32_t events)
{
	struct net_pconn *c = NET_CONTAINER(w, struct net_pconn, r);
	(void)events;
	if (c->st == P_DIAL)
		on_dial(c);
	else if (c->st == P_OPEN && relay(c) == 0)
		update(c);
}

/* ---- accepting -------------------------------------------------------------------- */

static void accept_one(struct net_box *b, int fd)
{
	struct net *net = b->net;
	struct sockaddr_in dst;
	socklen_t len = sizeof(dst);
	if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &dst, &len) < 0 || dst.sin_family != AF_INET) {
		set_rst(fd);
		close(fd);
		return;
	}
	if (net->n_conns >= net->max_conns || b->n_conns >= net->max_conns_sandbox) {
		count_refused(NET_REFUSAL_LIMIT);
		atomic_fetch_add(&b->st.refused, 1);
		set_rst(fd);
		close(fd);
		return;
	}
	struct net_pconn *c = malloc(sizeof(*c));
	if (!c) {
		set_rst(fd);
		close(fd);
		return;
	}
	memset(c, 0, offsetof(struct net_pconn, up)); /* the buffers need no zeroing */
	c->up.off = c->up.len = c->down.off = c->down.len = 0;
	c->b = b;
	c->gfd = fd;
	c->rfd = -1;
	c->g.fn = on_guest;
	c->r.fn = on_remote;
	c->g.fd = c->r.fd = -1;
	c->timer.fn = on_timer;
	c->dst = ntohl(dst.sin_addr.s_addr);
	c->port = ntohs(dst.sin_port);
	c->next = b->conns;
	if (b->conns)
		b->conns->prev = c;
	b->conns = c;
	b->n_conns++;
	net->n_conns++;
	atomic_fetch_add(&b->st.open, 1);
	/* Does a name matter?  Not when the address alone settles it. */
	int64_t now = net_loop_now(net->loop);
	struct net_decision d = net_policy_decide(b->policy, net->denied, c->dst, NULL, now);
	int settled = (d.verdict == NET_REFUSE && d.why == NET_REFUSAL_DENIED_RANGE) ||
		      d.by_allow_cidr || !b->policy->has_names;
	if (settled) {
		decide(c);
		return;
	}
	c->st = P_SNIFF;
	net_loop_timer_set(net->loop, &c->timer, now + NET_PROXY_SNIFF_MS);
	update(c);
}

static void on_listener(struct net_watch *w, uint32_t events)
{
	(void)events;
	struct net_box *b = NET_CONTAINER(w, struct net_box, w_proxy);
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		int fd = accept4(b->fd_proxy, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		accept_one(b, fd);
	}
}

/* ---- the box's life ------------------------------------------------------------------ */

int net_proxy_start(struct net_box *b)
{
	b->w_proxy.fn = on_listener;
	return net_loop_add(b->net->loop, &b->w_proxy, b->fd_proxy, EPOLLIN);
}

void net_proxy_stop(struct net_box *b)
{
	net_loop_del(b->net->loop, &b->w_proxy);
	while (b->conns)
		conn_close(b->conns, 1);
}

void net_proxy_recheck(struct net_box *b)
{
	struct net *net = b->net;
	int64_t now = net_loop_now(net->loop);
	for (struct net_pconn *c = b->conns, *next; c; c = next) {
		next = c->next;
		if (c->st == P_SNIFF)
			continue; /* it will be decided under the new policy */
		struct net_decision d =
			net_policy_decide(b->policy, net->denied, c->dst, c->name, now);
		int ok = d.verdict != NET_REFUSE;
		if (ok && c->st != P_RESOLVE && c->dialed != c->dst)
			ok = net_policy_decide(b->policy, net->denied, c->dialed, c->name, now)
				     .verdict != NET_REFUSE;
		if (!ok) {
			count_refused(NET_REFUSAL_POLICY_CHANGED);
			atomic_fetch_add(&b->st.refused, 1);
			log_refusal(c, NET_REFUSAL_POLICY_CHANGED);
			conn_close(c, 1);
		}
	}
}
