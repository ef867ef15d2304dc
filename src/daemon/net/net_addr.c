/*
 * net_addr.c - IPv4 text and the fixed always-denied ranges (see
 * net_addr.h).  Ranges from RFC 6890's special-purpose registry.
 */
#include "daemon/net/net_addr.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define IP4(a, b, c, d) \
	(((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) | (uint32_t)(d))
#define MASK(n) ((n) == 0 ? 0u : 0xffffffffu << (32 - (n)))

static const struct net_cidr fixed[] = {
	{IP4(0, 0, 0, 0), MASK(8), 8},       {IP4(10, 0, 0, 0), MASK(8), 8},
	{IP4(100, 64, 0, 0), MASK(10), 10},  {IP4(127, 0, 0, 0), MASK(8), 8},
	{IP4(169, 254, 0, 0), MASK(16), 16}, {IP4(172, 16, 0, 0), MASK(12), 12},
	{IP4(192, 168, 0, 0), MASK(16), 16}, {IP4(224, 0, 0, 0), MASK(4), 4},
	{IP4(192, 0, 0, 0), MASK(24), 24},   {IP4(198, 18, 0, 0), MASK(15), 15},
	{IP4(240, 0, 0, 0), MASK(4), 4}, /* holds 255.255.255.255 */
};
#define N_FIXED (sizeof(fixed) / sizeof(fixed[0]))

/* One decimal part 0..255 at *s, no leading zero; advances *s. */
static int part(const char **s, unsigned *out)
{
	const char *p = *s;
	unsigned v = 0;
	size_t n = 0;
	while (p[n] >= '0' && p[n] <= '9') {
		if (n == 3)
			return -EINVAL;
		v = v * 10 + (unsigned)(p[n] - '0');
		n++;
	}
	if (n == 0 || v > 255 || (n > 1 && p[0] == '0'))
		return -EINVAL;
	*s = p + n;
	*out = v;
	return 0;
}

/* A dotted quad at the start of s; *end gets where it stopped. */
static int quad(const char *s, uint32_t *out, const char **end)
{
	uint32_t a = 0;
	for (int i = 0; i < 4; i++) {
		unsigned v;
		if (i > 0 && *s++ != '.')
			return -EINVAL;
		if (part(&s, &v) < 0)
			return -EINVAL;
		a = (a << 8) | v;
	}
	*out = a;
	*end = s;
	return 0;
}

int net_addr_parse_ipv4(const char *s, uint32_t *out)
{
	const char *end;
	if (!s || quad(s, out, &end) < 0 || *end)
		return -EINVAL;
	return 0;
}

int net_addr_parse_cidr(const char *s, struct net_cidr *out)
{
	const char *end;
	uint32_t a;
	if (!s || quad(s, &a, &end) < 0)
		return -EINVAL;
	unsigned prefix = 32;
	if (*end == '/') {
		const char *p = end + 1;
		size_t n = 0;
		prefix = 0;
		while (p[n] >= '0' && p[n] <= '9' && n < 3)
			prefix = prefix * 10 + (unsigned)(p[n++] - '0');
		if (n == 0 || p[n] || prefix > 32 || (n > 1 && p[0] == '0'))
			return -EINVAL;
	} else if (*end) {
		return -EINVAL;
	}
	uint32_t m = MASK(prefix);
	out->addr = a & m;
	out->mask = m;
	out->prefix = prefix;
	return a & ~m ? -EDOM : 0;
}

const char *net_addr_text(uint32_t ip, char out[16])
{
	snprintf(out, 16, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
	return out;
}

void net_addr_cidr_text(const struct net_cidr *c, char out[NET_CIDR_TEXT_MAX])
{
	char a[16];
	snprintf(out, NET_CIDR_TEXT_MAX, "%s/%u", net_addr_text(c->addr, a), c->prefix);
}

int net_addr_in_cidr(uint32_t ip, const struct net_cidr *c)
{
	return (ip & c->mask) == c->addr;
}

int net_addr_always_denied(uint32_t ip)
{
	for (size_t i = 0; i < N_FIXED; i++)
		if (net_addr_in_cidr(ip, &fixed[i]))
			return 1;
	return 0;
}

int net_addr_cidr_all_denied(const struct net_cidr *c)
{
	/* The fixed ranges do not overlap, so c is covered only if one of
	 * them holds it whole. */
	for (size_t i = 0; i < N_FIXED; i++)
		if (fixed[i].prefix <= c->prefix && net_addr_in_cidr(c->addr, &fixed[i]))
			return 1;
	return 0;
}

size_t net_addr_denied_inside(const struct net_cidr *c, struct net_cidr *out, size_t max)
{
	/* in address order: fixed[] is not */
	size_t n = 0;
	uint32_t last = 0;
	int any = 0;
	for (;;) {
		const struct net_cidr *next = NULL;
		for (size_t i = 0; i < N_FIXED; i++) {
			const struct net_cidr *f = &fixed[i];
			if (f->prefix < c->prefix || !net_addr_in_cidr(f->addr, c))
				continue;
			if (any && f->addr <= last)
				continue;
			if (!next || f->addr < next->addr)
				next = f;
		}
		if (!next)
			return n;
		if (n < max)
			out[n] = *next;
		n++;
		last = next->addr;
		any = 1;
	}
}
