/*
 * net_resolve.c - A lookups with c-ares on the network loop, and their
 * cache (see net_resolve.h).  c-ares tells us which sockets it wants
 * watched (ARES_OPT_SOCK_STATE_CB); we hand it their events
 * (ares_process_fd) and wake it at its next timeout (ares_timeout).
 */
#include "daemon/net/net_resolve.h"

#include <arpa/inet.h>
#include <ares.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/time.h>

#include "common/log.h"
#include "daemon/net/net_addr.h"
#include "daemon/net/net_dnsmsg.h"
#include "daemon/net/net_policy.h"

struct cache_entry {
	char name[NET_NAME_MAX + 1];  /* "" when empty */
	unsigned rcode;
	uint32_t addrs[NET_RESOLVE_ADDRS_MAX];
	size_t n;
	uint32_t ttl;
	int64_t expires_ms;
};

struct sock {
	struct net_watch w;
	struct net_resolver *r;
};

struct net_lookup {
	struct net_resolver *r;
	net_resolve_cb cb;   /* NULL once cancelled */
	void *arg;
	int submitting, done; /* an answer that came inside ares_query */
	char name[NET_NAME_MAX + 1];
};

struct net_resolver {
	struct net_loop *loop;
	ares_channel ch;
	int have_ch;
	struct net_timer timer;
	struct sock *socks[2 * NET_RESOLVE_SERVERS_MAX + 4]; /* UDP and TCP per server */
	struct cache_entry *cache;  /* NET_RESOLVE_CACHE */
};

/* ---- server lists ----------------------------------------------------------- */

/* One "IP[:PORT]" or "[IPv6]:PORT" of n bytes. */
static int check_server(const char *s, size_t n)
{
	char host[64];
	const char *port = NULL;
	size_t hl;
	if (n > 0 && s[0] == '[') {
		const char *close = memchr(s, ']', n);
		if (!close || (size_t)(close - s) + 1 >= n || close[1] != ':')
			return -EINVAL;
		hl = (size_t)(close - s) - 1;
		if (hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, hl);
		port = close + 2;
	} else {
		const char *colon = memchr(s, ':', n);
		hl = colon ? (size_t)(colon - s) : n;
		if (hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, s, hl);
		port = colon ? colon + 1 : NULL;
	}
	host[hl] = '\0';
	struct in6_addr a6;
	uint32_t a4;
	if (s[0] == '[' ? inet_pton(AF_INET6, host, &a6) != 1 : net_addr_parse_ipv4(host, &a4) < 0)
		return -EINVAL;
	if (port) {
		size_t pl = (size_t)(s + n - port);
		unsigned v = 0;
		if (pl == 0 || pl > 5)
			return -EINVAL;
		for (size_t i = 0; i < pl; i++) {
			if (port[i] < '0' || port[i] > '9')
				return -EINVAL;
			v = v * 10 + (unsigned)(port[i] - '0');
		}
		if (v == 0 || v > 65535)
			return -EINVAL;
	}
	return 0;
}

int net_resolve_check_servers(const char *s, char *err, size_t errlen)
{
	size_t count = 0;
	const char *p = s;
	while (p && *p) {
		size_t n = strcspn(p, ",");
		if (n == 0 || check_server(p, n) < 0) {
			snprintf(err, errlen, "'%.*s' is not IP[:PORT] (IPv6 as [ADDR]:PORT)",
				 (int)(n > 60 ? 60 : n), p);
			return -EINVAL;
		}
		if (++count > NET_RESOLVE_SERVERS_MAX) {
			snprintf(err, errlen, "more than %d servers", NET_RESOLVE_SERVERS_MAX);
			return -EINVAL;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	if (count == 0) {
		snprintf(err, errlen, "no server");
		return -EINVAL;
	}
	return 0;
}

/* ---- c-ares on the loop ---------------------------------------------------------- */

static void rearm(struct net_resolver *r)
{
	struct timeval tv, *t = ares_timeout(r->ch, NULL, &tv);
	if (!t) {
		net_loop_timer_clear(r->loop, &r->timer);
		return;
	}
	int64_t ms = (int64_t)t->tv_sec * 1000 + t->tv_usec / 1000 + 1;
	net_loop_timer_set(r->loop, &r->timer, net_loop_now(r->loop) + ms);
}

static void on_timer(struct net_timer *t, int64_t now)
{
	(void)now;
	struct net_resolver *r = (struct net_resolver *)((char *)t - offsetof(struct net_resolver, timer));
	ares_process_fd(r->ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	rearm(r);
}

static void on_sock(struct net_watch *w, uint32_t events)
{
	struct sock *s = (struct sock *)w;
	struct net_resolver *r = s->r;
	int fd = w->fd;
	ares_process_fd(r->ch, events & (EPOLLIN | EPOLLERR | EPOLLHUP) ? fd : ARES_SOCKET_BAD,
			events & EPOLLOUT ? fd : ARES_SOCKET_BAD);
	rearm(r);
}

static void sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
	struct net_resolver *r = data;
	uint32_t ev = (readable ? EPOLLIN : 0) | (writable ? EPOLLOUT : 0);
	size_t n = sizeof(r->socks) / sizeof(r->socks[0]), free_slot = n;
	for (size_t i = 0; i < n; i++) {
		struct sock *s = r->socks[i];
		if (!s) {
			free_slot = free_slot < n ? free_slot : i;
			continue;
		}
		if (s->w.fd != fd)
			continue;
		if (ev) {
			net_loop_set(r->loop, &s->w, ev);
		} else {
			net_loop_del(r->loop, &s->w);
			r->socks[i] = NULL;
			net_loop_defer_free(r->loop, free, s);
		}
		return;
	}
	if (!ev)
		return;
	struct sock *s = free_slot < n ? calloc(1, sizeof(*s)) : NULL;
	if (!s || net_loop_add(r->loop, &s->w, fd, ev) < 0) {
		/* c-ares then times the query out: it fails, nothing hangs */
		log_kv(LOG_WARN, "net.resolver_socket", "fd=%d", (int)fd);
		free(s);
		return;
	}
	s->w.fn = on_sock;
	s->r = r;
	r->socks[free_slot] = s;
}

int net_resolve_new(struct net_loop *l, const char *servers, struct net_resolver **out,
		    char *err, size_t errlen)
{
	static int lib_ready;
	if (!lib_ready && ares_library_init(ARES_LIB_INIT_ALL) == ARES_SUCCESS)
		lib_ready = 1;
	struct net_resolver *r = calloc(1, sizeof(*r));
	if (r)
		r->cache = calloc(NET_RESOLVE_CACHE, sizeof(*r->cache));
	if (!r || !r->cache) {
		if (r)
			free(r);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r->loop = l;
	r->timer.fn = on_timer;
	struct ares_options o;
	memset(&o, 0, sizeof(o));
	o.flags = ARES_FLAG_NOSEARCH | ARES_FLAG_NOALIASES;
	o.timeout = NET_RESOLVE_TIMEOUT_MS;
	o.tries = 2;
	o.lookups = (char *)"b"; /* DNS only: never the host's /etc/hosts */
	o.sock_state_cb = sock_state;
	o.sock_state_cb_data = r;
	int optmask = ARES_OPT_FLAGS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_LOOKUPS |
		      ARES_OPT_SOCK_STATE_CB;
	int st = ares_init_options(&r->ch, &o, optmask);
	if (st == ARES_SUCCESS) {
		r->have_ch = 1;
		if (servers && *servers)
			st = ares_set_servers_ports_csv(r->ch, servers);
	}
	if (st != ARES_SUCCESS) {
		snprintf(err, errlen, "c-ares: %s", ares_strerror(st));
		net_resolve_free(r);
		return st == ARES_ENOMEM ? -ENOMEM : -EINVAL;
	}
	*out = r;
	return 0;
}

void net_resolve_free(struct net_resolver *r)
{
	if (!r)
		return;
	if (r->have_ch)
		ares_destroy(r->ch); /* lookups end with ARES_EDESTRUCTION: freed, no callback */
	net_loop_timer_clear(r->loop, &r->timer);
	for (size_t i = 0; i < sizeof(r->socks) / sizeof(r->socks[0]); i++)
		if (r->socks[i]) {
			net_loop_del(r->loop, &r->socks[i]->w);
			free(r->socks[i]);
		}
	free(r->cache);
	free(r);
}

/* ---- lookups and the cache --------------------------------------------------------- */

static struct cache_entry *slot_of(struct net_resolver *r, const char *name)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (const char *p = name; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	return &r->cache[h % NET_RESOLVE_CACHE];
}

static void remember(struct net_resolver *r, const char *name, unsigned rcode,
		     const uint32_t *addrs, size_t n, uint32_t ttl)
{
	if (rcode != NET_DNS_NOERROR && rcode != NET_DNS_NXDOMAIN)
		return;
	if (rcode == NET_DNS_NXDOMAIN)
		ttl = NET_RESOLVE_NEGATIVE_S;
	struct cache_entry *e = slot_of(r, name);
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->rcode = rcode;
	e->n = n;
	memcpy(e->addrs, addrs, n * sizeof(*addrs));
	e->ttl = ttl;
	e->expires_ms = net_loop_now(r->loop) + (int64_t)ttl * 1000;
}

static void answered(void *arg, int status, int timeouts, unsigned char *abuf, int alen)
{
	(void)timeouts;
	struct net_lookup *lk = arg;
	if (status == ARES_EDESTRUCTION) {
		free(lk);
		return;
	}
	unsigned rcode = NET_DNS_SERVFAIL;
	uint32_t addrs[NET_RESOLVE_ADDRS_MAX];
	size_t n = 0;
	uint32_t ttl = NET_DNS_TTL_MAX;
	if (status == ARES_SUCCESS) {
		struct ares_addrttl at[NET_RESOLVE_ADDRS_MAX];
		int na = NET_RESOLVE_ADDRS_MAX;
		int ps = ares_parse_a_reply(abuf, alen, NULL, at, &na);
		if (ps == ARES_SUCCESS || ps == ARES_ENODATA) {
			rcode = NET_DNS_NOERROR;
			for (int i = 0; ps == ARES_SUCCESS && i < na; i++) {
				addrs[n++] = ntohl(at[i].ipaddr.s_addr);
				if (at[i].ttl >= 0 && (uint32_t)at[i].ttl < ttl)
					ttl = (uint32_t)at[i].ttl;
			}
		}
	} else if (status == ARES_ENODATA) {
		rcode = NET_DNS_NOERROR;
	} else if (status == ARES_ENOTFOUND) {
		rcode = NET_DNS_NXDOMAIN;
	}
	remember(lk->r, lk->name, rcode, addrs, n, ttl);
	if (lk->cb)
		lk->cb(lk->arg, rcode, addrs, n, ttl);
	if (lk->submitting)
		lk->done = 1;
	else
		free(lk);
}

int net_resolve_a(struct net_resolver *r, const char *name, net_resolve_cb cb, void *arg,
		  struct net_lookup **lookup)
{
	*lookup = NULL;
	struct cache_entry *e = slot_of(r, name);
	int64_t now = net_loop_now(r->loop);
	if (e->name[0] && !strcmp(e->name, name) && e->expires_ms > now) {
		uint32_t left = (uint32_t)((e->expires_ms - now + 999) / 1000);
		cb(arg, e->rcode, e->addrs, e->n, left < e->ttl ? left : e->ttl);
		return 0;
	}
	struct net_lookup *lk = calloc(1, sizeof(*lk));
	if (!lk)
		return -ENOMEM;
	lk->r = r;
	lk->cb = cb;
	lk->arg = arg;
	snprintf(lk->name, sizeof(lk->name), "%s", name);
	lk->submitting = 1;
	ares_query(r->ch, name, 1 /* C_IN */, 1 /* T_A */, answered, lk);
	lk->submitting = 0;
	if (lk->done) {
		free(lk);
		return 0;
	}
	*lookup = lk;
	rearm(r);
	return 0;
}

void net_resolve_cancel(struct net_lookup *lookup)
{
	if (lookup)
		lookup->cb = NULL;
}
