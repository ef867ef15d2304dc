/*
 * net_dns.c - the resolver every sandbox's guest asks (its UDP and TCP
 * listeners on port 53 inside the sandbox's namespace; the namespace's
 * firewall sends every DNS query of the guest there, whatever server it
 * names).  See docs/network.md, "DNS".
 *
 *   A      the name policy first (net_policy_may_resolve: a name the
 *          sandbox may not reach is NXDOMAIN and is never sent upstream),
 *          then an upstream lookup (net_resolve.h); addresses the proxy
 *          would refuse for this name are dropped; none left: NXDOMAIN.
 *   AAAA   NOERROR with no answer (sandboxes have no IPv6), NXDOMAIN for
 *          a name the policy refuses.
 *   other  NOTIMP; malformed: FORMERR; a non-host name: NXDOMAIN.
 *
 * Caps per sandbox: NET_DNS_INFLIGHT_MAX queries waiting for upstream
 * (more are REFUSED), NET_DNS_TCP_MAX TCP connections (more are reset),
 * each idle for at most NET_DNS_TCP_IDLE_MS and with at most
 * NET_DNS_TCP_PENDING queries in flight (then it is not read).
 *
 * Runs on the network loop's thread (net_int.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/metrics.h"
#include "daemon/net/net_dnsmsg.h"
#include "daemon/net/net_int.h"

#define NET_DNS_INFLIGHT_MAX 64
#define NET_DNS_TCP_MAX 8
#define NET_DNS_TCP_IDLE_MS 10000
#define NET_DNS_TCP_PENDING 4
#define UDP_BATCH 32     /* datagrams read per wake-up, for fairness */
#define FRAME (2 + NET_DNS_MSG_MAX)

/* Where a UDP query came from and to: the answer goes back from the
 * address it reached (after the namespace's redirect), so that the
 * firewall's connection tracking matches it and restores the address the
 * guest asked. */
struct udp_peer {
	struct sockaddr_in from;
	struct in_addr to;
};

struct net_dquery {
	struct net_box *b;
	struct net_dconn *tcp;     /* NULL: answer by UDP to peer */
	struct udp_peer peer;
	struct net_dns_query q;
	struct net_lookup *lookup;
	struct net_dquery *prev, *next;
};

struct net_dconn {
	struct net_watch w;
	struct net_box *b;
	struct net_timer idle;
	uint8_t in[FRAME];
	size_t n_in;
	uint8_t out[NET_DNS_TCP_PENDING * FRAME];
	size_t n_out;
	unsigned pending;          /* its queries waiting for upstream */
	int eof;                   /* the guest closed its side */
	struct net_dconn *prev, *next;
};

static void dconn_close(struct net_dconn *c);
static void dconn_update(struct net_dconn *c);

/* ---- answers ------------------------------------------------------------------ */

/* One datagram to p->from, sent from p->to (IP_PKTINFO, ip(7)). */
static void send_udp(int fd, const struct udp_peer *p, const uint8_t *msg, size_t len)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct in_pktinfo))];
		struct cmsghdr align;
	} c;
	memset(&c, 0, sizeof(c));
	struct iovec iov = {(void *)msg, len};
	struct msghdr mh = {.msg_name = (void *)&p->from, .msg_namelen = sizeof(p->from),
			    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
			    .msg_controllen = sizeof(c.buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = IPPROTO_IP;
	cm->cmsg_type = IP_PKTINFO;
	cm->cmsg_len = CMSG_LEN(sizeof(struct in_pktinfo));
	struct in_pktinfo pi = {.ipi_spec_dst = p->to};
	memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
	/* A full socket buffer drops it: the guest asks again. */
	ssize_t w = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)w;
}

static void send_answer(struct net_box *b, struct net_dconn *tcp, const struct udp_peer *peer,
			const struct net_dns_query *q, unsigned rcode, const uint32_t *addrs,
			size_t n, uint32_t ttl)
{
	uint8_t msg[NET_DNS_MSG_MAX];
	size_t len = net_dnsmsg_answer(q, rcode, addrs, n, ttl, msg, sizeof(msg));
	if (len == 0)
		return;
	metrics_dns_answer(rcode);
	atomic_fetch_add(&b->st.dns_queries, 1);
	if (!tcp) {
		send_udp(b->fd_dns_udp, peer, msg, len);
		return;
	}
	if (sizeof(tcp->out) - tcp->n_out < 2 + len)
		return; /* cannot happen: room is kept for every pending answer */
	tcp->out[tcp->n_out] = (uint8_t)(len >> 8);
	tcp->out[tcp->n_out + 1] = (uint8_t)len;
	memcpy(tcp->out + tcp->n_out + 2, msg, len);
	tcp->n_out += 2 + len;
	dconn_update(tcp);
}

static void query_unlink(struct net_dquery *dq)
{
	struct net_box *b = dq->b;
	if (dq->prev)
		dq->prev->next = dq->next;
	else
		b->queries = dq->next;
	if (dq->next)
		dq->next->prev = dq->prev;
	b->n_queries--;
	if (dq->tcp)
		dq->tcp->pending--;
}

/* The upstream answer for dq: keep what the proxy would let through. */
static void resolved(void *arg, unsigned rcode, const uint32_t *addrs, size_t n, uint32_t ttl)
{
	struct net_dquery *dq = arg;
	struct net_box *b = dq->b;
	struct net *net = b->net;
	int64_t now = net_loop_now(net->loop);
	uint32_t keep[NET_RESOLVE_ADDRS_MAX];
	size_t k = 0;
	for (size_t i = 0; i < n && k < NET_RESOLVE_ADDRS_MAX; i++) {
		struct net_decision d = net_policy_decide(b->policy, net->denied, addrs[i],
							  dq->q.name, now);
		if (d.verdict != NET_REFUSE) {
			keep[k++] = addrs[i];
			net_names_put(&b->names, addrs[i], dq->q.name, now);
		}
	}
	if (rcode == NET_DNS_NOERROR && n > 0 && k == 0)
		rcode = NET_DNS_NXDOMAIN; /* every address is one it may not reach */
	query_unlink(dq);
	struct net_dconn *tcp = dq->tcp;
	send_answer(b, tcp, &dq->peer, &dq->q, rcode, keep, k, ttl);
	free(dq);
	if (tcp)
		dconn_update(tcp); /* it may read again, or close */
}

/* One message from the guest. */
static void handle(struct net_box *b, const uint8_t *msg, size_t len, struct net_dconn *tcp,
		   const struct udp_peer *peer)
{
	struct net_dns_query q;
	int r = net_dnsmsg_parse(msg, len, &q);
	if (r == -EINVAL)
		return;
	unsigned rcode = NET_DNS_NOERROR;
	int may = q.name[0] && net_policy_may_resolve(b->policy, q.name);
	if (r == -EBADMSG)
		rcode = NET_DNS_FORMERR;
	else if (r < 0 || q.qclass != NET_DNS_CLASS_IN)
		rcode = NET_DNS_NOTIMP;
	else if (q.qtype == NET_DNS_TYPE_AAAA)
		rcode = may ? NET_DNS_NOERROR : NET_DNS_NXDOMAIN;
	else if (q.qtype != NET_DNS_TYPE_A)
		rcode = NET_DNS_NOTIMP;
	else if (!may)
		rcode = NET_DNS_NXDOMAIN;
	else if (b->n_queries >= NET_DNS_INFLIGHT_MAX)
		rcode = NET_DNS_REFUSED;
	else {
		struct net_dquery *dq = calloc(1, sizeof(*dq));
		if (!dq) {
			send_answer(b, tcp, peer, &q, NET_DNS_SERVFAIL, NULL, 0, 0);
			return;
		}
		dq->b = b;
		dq->tcp = tcp;
		if (peer)
			dq->peer = *peer;
		dq->q = q;
		dq->next = b->queries;
		if (b->queries)
			b->queries->prev = dq;
		b->queries = dq;
		b->n_queries++;
		if (tcp)
			tcp->pending++;
		struct net_lookup *lk = NULL;
		if (net_resolve_a(b->net->resolver, q.name, resolved, dq, &lk) < 0) {
			query_unlink(dq);
			free(dq);
			send_answer(b, tcp, peer, &q, NET_DNS_SERVFAIL, NULL, 0, 0);
			return;
		}
		/* dq is freed already when the answer came from the cache */
		if (lk)
			dq->lookup = lk;
		return;
	}
	send_answer(b, tcp, peer, &q, rcode, NULL, 0, 0);
}

/* ---- UDP --------------------------------------------------------------------------- */

static void on_udp(struct net_watch *w, uint32_t events)
{
	(void)events;
	struct net_box *b = NET_CONTAINER(w, struct net_box, w_dns_udp);
	for (int i = 0; i < UDP_BATCH; i++) {
		uint8_t msg[NET_DNS_MSG_MAX];
		struct udp_peer peer;
		memset(&peer, 0, sizeof(peer));
		union {
			char buf[CMSG_SPACE(sizeof(struct in_pktinfo))];
			struct cmsghdr align;
		} c;
		/* A longer datagram is cut: its question is within the first 512 bytes
		 * or it is malformed anyway. */
		struct iovec iov = {msg, sizeof(msg)};
		struct msghdr mh = {.msg_name = &peer.from, .msg_namelen = sizeof(peer.from),
				    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
				    .msg_controllen = sizeof(c.buf)};
		ssize_t n = recvmsg(b->fd_dns_udp, &mh, MSG_DONTWAIT);
		if (n < 0)
			return;
		int have_to = 0;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
			if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO) {
				struct in_pktinfo pi;
				memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
				peer.to = pi.ipi_addr;
				have_to = 1;
			}
		if (have_to && mh.msg_namelen == sizeof(peer.from) &&
		    peer.from.sin_family == AF_INET)
			handle(b, msg, (size_t)n, NULL, &peer);
	}
}

/* ---- TCP (RFC 1035 4.2.2; RFC 7766) ------------------------------------------------- */

static int dconn_can_take(const struct net_dconn *c)
{
	return !c->eof && c->pending < NET_DNS_TCP_PENDING &&
	       c->n_out + (size_t)(c->pending + 1) * FRAME <= sizeof(c->out);
}

/* Interest and closing after any change; may free c (deferred). */
static void dconn_update(struct net_dconn *c)
{
	if (c->w.fd < 0)
		return;
	if (c->eof && c->pending == 0 && c->n_out == 0) {
		dconn_close(c);
		return;
	}
	uint32_t ev = (dconn_can_take(c) ? EPOLLIN : 0) | (c->n_out ? EPOLLOUT : 0);
	net_loop_set(c->b->net->loop, &c->w, ev);
}

static void on_idle(struct net_timer *t, int64_t now)
{
	(void)now;
	dconn_close(NET_CONTAINER(t, struct net_dconn, idle));
}

static void dconn_free(void *p)
{
	free(p);
}

static void dconn_close(struct net_dconn *c)
{
	struct net_box *b = c->b;
	if (c->w.fd < 0)
		return;
	for (struct net_dquery *q = b->queries, *next; q; q = next) {
		next = q->next;
		if (q->tcp != c)
			continue;
		net_resolve_cancel(q->lookup);
		query_unlink(q);
		free(q);
	}
	int fd = c->w.fd;
	net_loop_del(b->net->loop, &c->w);
	close(fd);
	net_loop_timer_clear(b->net->loop, &c->idle);
	if (c->prev)
		c->prev->next = c->next;
	else
		b->dconns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	b->n_dconns--;
	net_loop_defer_free(b->net->loop, dconn_free, c);
}

static void dconn_write(struct net_dconn *c)
{
	ssize_t n = send(c->w.fd, c->out, c->n_out, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			dconn_close(c);
		return;
	}
	memmove(c->out, c->out + n, c->n_out - (size_t)n);
	c->n_out -= (size_t)n;
}

static void dconn_read(struct net_dconn *c)
{
	ssize_t n = recv(c->w.fd, c->in + c->n_in, sizeof(c->in) - c->n_in, MSG_DONTWAIT);
	if (n == 0) {
		c->eof = 1;
		return;
	}
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			dconn_close(c);
		return;
	}
	c->n_in += (size_t)n;
	net_loop_timer_set(c->b->net->loop, &c->idle,
			   net_loop_now(c->b->net->loop) + NET_DNS_TCP_IDLE_MS);
	while (c->w.fd >= 0 && c->n_in >= 2 && dconn_can_take(c)) {
		size_t len = ((size_t)c->in[0] << 8) | c->in[1];
		if (len < 12 || len > NET_DNS_MSG_MAX) {
			dconn_close(c); /* not DNS, or a query no stub resolver sends */
			return;
		}
		if (c->n_in < 2 + len)
			break;
		handle(c->b, c->in + 2, len, c, NULL);
		memmove(c->in, c->in + 2 + len, c->n_in - 2 - len);
		c->n_in -= 2 + len;
	}
}

static void on_dconn(struct net_watch *w, uint32_t events)
{
	struct net_dconn *c = NET_CONTAINER(w, struct net_dconn, w);
	if (events & EPOLLOUT)
		dconn_write(c);
	if (c->w.fd >= 0 && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		dconn_read(c);
	dconn_update(c);
}

static void on_tcp_listener(struct net_watch *w, uint32_t events)
{
	(void)events;
	struct net_box *b = NET_CONTAINER(w, struct net_box, w_dns_tcp);
	for (int i = 0; i < 16; i++) {
		int fd = accept4(b->fd_dns_tcp, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		struct net_dconn *c = b->n_dconns < NET_DNS_TCP_MAX ? calloc(1, sizeof(*c)) : NULL;
		if (c) {
			c->w.fn = on_dconn;
			c->w.fd = -1;
			c->b = b;
			c->idle.fn = on_idle;
		}
		if (!c || net_loop_add(b->net->loop, &c->w, fd, EPOLLIN) < 0 ||
		    net_loop_timer_set(b->net->loop, &c->idle,
				       net_loop_now(b->net->loop) + NET_DNS_TCP_IDLE_MS) < 0) {
			if (c && c->w.fd >= 0)
				net_loop_del(b->net->loop, &c->w);
			free(c);
			close(fd);
			continue;
		}
		c->next = b->dconns;
		if (b->dconns)
			b->dconns->prev = c;
		b->dconns = c;
		b->n_dconns++;
	}
}

/* ---- start and stop ------------------------------------------------------------------ */

int net_dns_start(struct net_box *b)
{
	struct net_loop *l = b->net->loop;
	b->w_dns_udp.fn = on_udp;
	b->w_dns_tcp.fn = on_tcp_listener;
	int one = 1;
	if (setsockopt(b->fd_dns_udp, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) < 0)
		return -errno;
	int e = net_loop_add(l, &b->w_dns_udp, b->fd_dns_udp, EPOLLIN);
	if (!e && (e = net_loop_add(l, &b->w_dns_tcp, b->fd_dns_tcp, EPOLLIN)) < 0)
		net_loop_del(l, &b->w_dns_udp);
	return e;
}

void net_dns_stop(struct net_box *b)
{
	struct net_loop *l = b->net->loop;
	while (b->dconns)
		dconn_close(b->dconns);
	while (b->queries) {
		struct net_dquery *q = b->queries;
		net_resolve_cancel(q->lookup);
		query_unlink(q);
		free(q);
	}
	net_loop_del(l, &b->w_dns_udp);
	net_loop_del(l, &b->w_dns_tcp);
}
