/*
 * net_denied.c - the fixed, host and operator ranges no sandbox reaches
 * (see net_denied.h).
 */
#include "daemon/net_denied.h"

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
	uint32_t host[NET_DENIED_HOST_MAX];
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

/* Read the host's IPv4 addresses (every interface, up or not). */
static void read_host(struct net_denied *d, int64_t now_ms)
{
	d->host_read_ms = now_ms;
	struct ifaddrs *ifa;
	if (getifaddrs(&ifa) < 0) {
		log_kv(LOG_WARN, "net.host_addrs_failed", "err=%d", -errno);
		return; /* keep the last list */
	}
	size_t n = 0;
	for (struct ifaddrs *i = ifa; i && n < NET_DENIED_HOST_MAX; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET)
			d->host[n++] = ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
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

void net_denied_set_host(struct net_denied *d, const uint32_t *addrs, size_t n)
{
	if (n > NET_DENIED_HOST_MAX)
		n = NET_DENIED_HOST_MAX;
	memcpy(d->host, addrs, n * sizeof(*addrs));
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
		if (d->host[i] == ip)
			return 1;
	return 0;
}
