/*
 * origin.c - web origins: normal forms and allowed lists (see origin.h).
 */
#include "daemon/http/origin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
	       c == '_';
}

int origin_normalize(const char *s, char out[ORIGIN_MAX])
{
	out[0] = '\0';
	if (!s)
		return -EINVAL;
	size_t n = strlen(s);
	if (n >= ORIGIN_MAX)
		return -EINVAL;
	if (n > 0 && s[n - 1] == '/')
		n--;
	const char *scheme;
	const char *p;
	unsigned def;
	if (n > 7 && !strncasecmp(s, "http://", 7)) {
		scheme = "http", p = s + 7, def = 80;
	} else if (n > 8 && !strncasecmp(s, "https://", 8)) {
		scheme = "https", p = s + 8, def = 443;
	} else {
		return -EINVAL;
	}
	const char *end = s + n;
	char host[ORIGIN_MAX];
	size_t h = 0;
	if (*p == '[') { /* an IPv6 literal: hex digits, ':' and '.' */
		const char *close = memchr(p, ']', (size_t)(end - p));
		if (!close || close == p + 1)
			return -EINVAL;
		host[h++] = '[';
		for (const char *q = p + 1; q < close; q++) {
			char c = (char)(*q >= 'A' && *q <= 'Z' ? *q - 'A' + 'a' : *q);
			if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == ':' ||
			      c == '.'))
				return -EINVAL;
			host[h++] = c;
		}
		host[h++] = ']';
		p = close + 1;
	} else {
		for (; p < end && *p != ':'; p++) {
			char c = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
			if (!host_char(c))
				return -EINVAL;
			host[h++] = c;
		}
		if (h == 0 || host[0] == '.' || host[0] == '-')
			return -EINVAL;
	}
	host[h] = '\0';
	unsigned port = def;
	if (p < end) {
		if (*p != ':' || p + 1 == end || end - p > 6)
			return -EINVAL;
		port = 0;
		for (const char *q = p + 1; q < end; q++) {
			if (*q < '0' || *q > '9')
				return -EINVAL;
			port = port * 10 + (unsigned)(*q - '0');
		}
		if (port == 0 || port > 65535)
			return -EINVAL;
	}
	int k = port == def ? snprintf(out, ORIGIN_MAX, "%s://%s", scheme, host)
			    : snprintf(out, ORIGIN_MAX, "%s://%s:%u", scheme, host, port);
	if (k < 0 || k >= ORIGIN_MAX) {
		out[0] = '\0';
		return -EINVAL;
	}
	return 0;
}

/* Call fn on each item of list (trimmed, NUL-terminated); stops at the
 * first non-zero result and returns it. */
static int each_item(const char *list, int (*fn)(const char *item, void *arg), void *arg)
{
	const char *p = list;
	while (p && *p) {
		size_t len = strcspn(p, ",");
		const char *a = p, *b = p + len;
		while (a < b && (*a == ' ' || *a == '\t'))
			a++;
		while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
			b--;
		char item[ORIGIN_MAX];
		int r;
		if ((size_t)(b - a) >= sizeof(item)) {
			r = fn("", arg); /* too long: no origin */
		} else {
			memcpy(item, a, (size_t)(b - a));
			item[b - a] = '\0';
			r = fn(item, arg);
		}
		if (r)
			return r;
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}

struct check {
	char *why;
	size_t whylen;
};

static int check_item(const char *item, void *arg)
{
	struct check *c = arg;
	char norm[ORIGIN_MAX];
	if (origin_normalize(item, norm) == 0)
		return 0;
	snprintf(c->why, c->whylen, "'%.100s' is not an origin (http(s)://HOST[:PORT])", item);
	return -EINVAL;
}

int origin_list_check(const char *list, char *why, size_t whylen)
{
	struct check c = {why, whylen};
	if (whylen)
		why[0] = '\0';
	return each_item(list, check_item, &c);
}

static int match_item(const char *item, void *arg)
{
	char norm[ORIGIN_MAX];
	return origin_normalize(item, norm) == 0 && strcmp(norm, (const char *)arg) == 0;
}

int origin_in_list(const char *norm, const char *list)
{
	return norm && norm[0] && each_item(list, match_item, (void *)norm) == 1;
}
