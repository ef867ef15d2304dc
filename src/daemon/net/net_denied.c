/*
 * net_denied.c - the fixed, host and operator ranges no sandbox reaches
 * (see net_denied.h).
 */
#include "daemon/net/net_denied.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

struct net_denied {
	struct net_cidr extra[NET_DENIED_EXTRA_MAX];
	size_t n_extra;
	struct net_cidr host[NET_DENIED_HOST_MAX]; /* the host's networks */
	size_t n_host;
	int64_t host_read_ms;  /* when host[] was read; -1: never */
	int host_fixed;        /* set by a test: never re-read */
};

int net_denied_parse_list(const char *s, struct net_cidr *out, size_t cap, char *err,
			  size_t errlen)
{
	size_t n = 0;
	if (!s)
		return 0;
	while (*s) {
		while (*s == ' ' || *s == ',')
			s++;
		if (!*s)
			break;
		size_t len = strcspn(s, ", ");
		char item[NET_CIDR_TEXT_MAX + 1];
		if (n == cap) {
			snprintf(err, errlen, "more than %zu ranges", cap);
			return -EINVAL;
		}
		if (len >= sizeof(item)) {
			snprintf(err, errlen, "'%.40s' is not a CIDR", s);
			return -EINVAL;
		}
		memcpy(item, s, len);
		item[len] = '\0';
		if (net_addr_parse_cidr(item, &out[n]) < 0) {
			snprintf(err, errlen, "'%s' is not an IPv4 CIDR with zero host bits", item);
			return -EINVAL;
		}
		n++;
		s += len;
	}
	return (int)n;
}

void net_denied_host_net(uint32_t addr, uint32_t netmask, struct net_cidr *out)
{
	unsigned prefix = 0;
	while (prefix < 32 && (netmask & (UINT32_C(1) << (31 - prefix))))
		prefix++;
	/* a mask that is not a prefix, or a network wider than a /8: only the
	 * address itself */
	if (prefix < NET_DENIED_HOST_PREFIX_MIN ||
	    netmask != (prefix ? UINT32_MAX << (32 - prefix) : 0))
		prefix = 32;
	out->prefix = prefix;
	out->mask = prefix ? UINT32_MAX << (32 - prefix) : 0;
	out->addr = addr & out->mask;
}

/* Read the host's IPv4 networks (every interface, up or not). */
static void read_host(struct net_denied *d, int64_t now_ms)
{
	d->host_read_ms = now_ms;
	struct ifaddrs *ifa;
	if (getifaddrs(&ifa) < 0) {
		log_kv(LOG_WARN, "net.host_addrs_failed", "err=%d", -errno);
		return; /* keep the last list */
	}
	size_t n = 0;
	for (struct ifaddrs *i = ifa; i && n < NET_DENIED_HOST_MAX; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		uint32_t a = ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
		uint32_t m = i->ifa_netmask && i->ifa_netmask->sa_family == AF_INET
				     ? ntohl(((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr)
				     : UINT32_MAX;
		net_denied_host_net(a, m, &d->host[n++]);
	}
	d->n_host = n;
	freeifaddrs(ifa);
}

int net_denied_new(const char *extra, struct net_denied **out)
{
	struct net_denied *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	char err[128];
	int n = net_denied_parse_list(extra, d->extra, NET_DENIED_EXTRA_MAX, err, sizeof(err));
	if (n < 0) {
		free(d);
		return n;
	}
	d->n_extra = (size_t)n;
	d->host_read_ms = -1;
	*out = d;
	return 0;
}

void net_denied_free(struct net_denied *d)
{
	free(d);
}

void net_denied_set_host(struct net_denied *d, const struct net_cidr *nets, size_t n)
{
	if (n > NET_DENIED_HOST_MAX)
		n = NET_DENIED_HOST_MAX;
	memcpy(d->host, nets, n * sizeof(*nets));
	d->n_host = n;
	d->host_fixed = 1;
}

int net_denied_has(struct net_denied *d, uint32_t ip, int64_t now_ms)
{
	if (net_addr_always_denied(ip))
		return 1;
	for (size_t i = 0; i < d->n_extra; i++)
		if (net_addr_in_cidr(ip, &d->extra[i]))
			return 1;
	if (!d->host_fixed &&
	    (d->host_read_ms < 0 || now_ms - d->host_read_ms >= NET_DENIED_REFRESH_MS))
		read_host(d, now_ms);
	for (size_t i = 0; i < d->n_host; i++)
		if (net_addr_in_cidr(ip, &d->host[i]))
			return 1;
	return 0;
}
