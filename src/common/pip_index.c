/*
 * pip_index.c - checking a pip index URL (see pip_index.h).
 */
#include "common/pip_index.h"

#include <errno.h>
#include <string.h>

static int fail(const char **why, const char *reason)
{
	if (why)
		*why = reason;
	return -EINVAL;
}

static int is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '-';
}

static int is_v6_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
	       c == ':' || c == '.';
}

/* host[:port] of n bytes at s: 0 or -EINVAL. */
static int check_hostport(const char *s, size_t n, const char **why)
{
	size_t i = 0;
	if (n > 0 && s[0] == '[') {
		for (i = 1; i < n && s[i] != ']'; i++)
			if (!is_v6_char(s[i]))
				return fail(why, "the IPv6 host has a character other than hex digits, ':' and '.'");
		if (i == n || i == 1)
			return fail(why, "the IPv6 host is empty or has no closing ']'");
		i++;
	} else {
		while (i < n && is_name_char(s[i]))
			i++;
		if (i == 0)
			return fail(why, "the URL has no host");
	}
	if (i == n)
		return 0;
	if (s[i] != ':')
		return fail(why, "the host has a character other than letters, digits, '.' and '-'");
	unsigned long port = 0;
	size_t digits = 0;
	for (i++; i < n; i++, digits++) {
		if (s[i] < '0' || s[i] > '9' || digits >= 5)
			return fail(why, "the port is not a number from 1 to 65535");
		port = port * 10 + (unsigned long)(s[i] - '0');
	}
	if (digits == 0 || port == 0 || port > 65535)
		return fail(why, "the port is not a number from 1 to 65535");
	return 0;
}

int pip_index_check(const char *url, char *host, size_t hostlen, int *is_http,
		    const char **why)
{
	size_t n = strlen(url);
	if (n > PIP_INDEX_URL_MAX) {
		if (why)
			*why = "the URL is too long";
		return -E2BIG;
	}
	for (size_t i = 0; i < n; i++)
		if (url[i] < 0x21 || url[i] > 0x7e)
			return fail(why, "the URL has a space, a control or a non-ASCII character "
					 "(percent-encode it)");
	size_t skip;
	int http;
	if (!strncmp(url, "http://", 7))
		skip = 7, http = 1;
	else if (!strncmp(url, "https://", 8))
		skip = 8, http = 0;
	else
		return fail(why, "the URL must start with http:// or https://");
	const char *auth = url + skip;
	size_t alen = strcspn(auth, "/?#");
	const char *at = NULL;
	for (size_t i = 0; i < alen; i++)
		if (auth[i] == '@')
			at = auth + i;
	const char *hp = at ? at + 1 : auth;
	size_t hplen = alen - (size_t)(hp - auth);
	int r = check_hostport(hp, hplen, why);
	if (r < 0)
		return r;
	if (host) {
		if (hostlen <= hplen)
			return -ENOSPC;
		memcpy(host, hp, hplen);
		host[hplen] = '\0';
	}
	if (is_http)
		*is_http = http;
	return 0;
}
