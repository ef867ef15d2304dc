/*
 * port_target.c - the two forms of an exposed port's address and the
 * request target and headers the guest is sent (see port_target.h).
 */
#include "daemon/http/port_target.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/body_caps.h"
#include "common/util.h"

#define PATH_PREFIX "/v1/sandboxes/"

/* A port number: 1..65535, decimal digits only, no leading zero.  s has
 * len bytes.  Returns the port or 0. */
static unsigned parse_port(const char *s, size_t len)
{
	if (len == 0 || len > 5 || s[0] == '0')
		return 0;
	unsigned v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	return v <= 65535 ? v : 0;
}

/* s (len bytes) as a sandbox id into id, lower case, '-' after "sbx"
 * accepted for '_' when dash_ok.  Returns 1 if it is one, else 0. */
static int take_id(const char *s, size_t len, int dash_ok, char id[PORT_ID_MAX])
{
	if (len != 4 + SBX_ID_HEX)
		return 0;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (i == 3 && c == '-' && dash_ok)
			c = '_';
		id[i] = c;
	}
	id[len] = '\0';
	return sandbox_id_valid(id);
}

int port_target_from_host(const char *host, const char *domain, unsigned *port,
			  char id[PORT_ID_MAX])
{
	if (!host || !domain || !*host || !*domain)
		return 0;
	size_t hlen = strcspn(host, ":"); /* the name; ":PORT" after it */
	if (host[hlen] == ':' && parse_port(host + hlen + 1, strlen(host + hlen + 1)) == 0)
		return 0;
	if (hlen && host[hlen - 1] == '.')
		hlen--;
	size_t dlen = strlen(domain);
	if (dlen && domain[dlen - 1] == '.')
		dlen--;
	/* "P-ID" "." "DOMAIN" */
	if (dlen == 0 || hlen < dlen + 2 || host[hlen - dlen - 1] != '.' ||
	    strncasecmp(host + hlen - dlen, domain, dlen) != 0)
		return 0;
	size_t llen = hlen - dlen - 1; /* the first label(s): "P-ID" */
	const char *dash = memchr(host, '-', llen);
	if (!dash)
		return 0;
	unsigned p = parse_port(host, (size_t)(dash - host));
	if (!p || !take_id(dash + 1, llen - (size_t)(dash - host) - 1, 1, id))
		return 0;
	*port = p;
	return 1;
}

int port_target_from_path(const char *raw, unsigned *port, char id[PORT_ID_MAX],
			  const char **rest)
{
	size_t plen = strlen(PATH_PREFIX);
	if (!raw || strncmp(raw, PATH_PREFIX, plen) != 0)
		return 0;
	const char *s = raw + plen;
	size_t idlen = strcspn(s, "/?");
	if (strncmp(s + idlen, "/ports/", 7) != 0)
		return 0;
	const char *ps = s + idlen + 7;
	size_t portlen = strcspn(ps, "/?");
	if (portlen == 0 && ps[0] != '/' && ps[0] != '?')
		return 0; /* "/ports/" alone: not a port's address */
	unsigned p = parse_port(ps, portlen);
	if (!p || !take_id(s, idlen, 0, id))
		return -EINVAL;
	*port = p;
	*rest = ps + portlen;
	return 1;
}

/* 1 if the query item (len bytes, "name" or "name=value") is the token. */
static int is_token_item(const char *item, size_t len)
{
	char name[sizeof(PORT_TOKEN_PARAM) + 1];
	size_t n = 0, nlen = strcspn(item, "=&");
	if (nlen > len)
		nlen = len;
	/* percent-decode the name; anything longer than the token's name
	 * cannot be it */
	for (size_t i = 0; i < nlen; i++) {
		char c = item[i];
		if (c == '%' && i + 2 < nlen && util_hexval(item[i + 1]) >= 0 &&
		    util_hexval(item[i + 2]) >= 0) {
			c = (char)(util_hexval(item[i + 1]) * 16 + util_hexval(item[i + 2]));
			i += 2;
		} else if (c == '+') {
			c = ' ';
		}
		if (n + 1 >= sizeof(name))
			return 0;
		name[n++] = c;
	}
	name[n] = '\0';
	return strcmp(name, PORT_TOKEN_PARAM) == 0;
}

int port_target_forward(const char *rest, char *out, size_t outlen)
{
	for (const unsigned char *p = (const unsigned char *)rest; *p; p++)
		if (*p <= 0x20 || *p == 0x7f)
			return -EINVAL;
	if (outlen == 0)
		return -ENAMETOOLONG;
	size_t o = 0;
	size_t pathlen = strcspn(rest, "?");
#define PUT(src, n)                                      \
	do {                                             \
		if (o + (n) >= outlen)                   \
			return -ENAMETOOLONG;            \
		memcpy(out + o, (src), (n));             \
		o += (n);                                \
	} while (0)
	if (rest[0] != '/')
		PUT("/", 1);
	PUT(rest, pathlen);
	if (rest[pathlen] == '?') {
		const char *q = rest + pathlen + 1;
		int first = 1;
		while (*q) {
			size_t ilen = strcspn(q, "&");
			if (ilen && !is_token_item(q, ilen)) {
				PUT(first ? "?" : "&", 1);
				PUT(q, ilen);
				first = 0;
			}
			q += ilen;
			if (*q == '&')
				q++;
		}
	}
#undef PUT
	out[o] = '\0';
	return 0;
}

int port_header_has_token(const char *v, const char *token)
{
	if (!v)
		return 0;
	size_t tlen = strlen(token);
	while (*v) {
		v += strspn(v, " \t,");
		size_t n = strcspn(v, ",");
		size_t m = n;
		while (m && (v[m - 1] == ' ' || v[m - 1] == '\t'))
			m--;
		if (m == tlen && strncasecmp(v, token, tlen) == 0)
			return 1;
		v += n;
	}
	return 0;
}

int port_header_origin_bound(const char *name)
{
	static const char *const bound[] = {
		"Cookie", "Set-Cookie", "Set-Cookie2", "Clear-Site-Data", "X-Content-Type-Options",
		NULL,
	};
	for (size_t i = 0; bound[i]; i++)
		if (strcasecmp(name, bound[i]) == 0)
			return 1;
	return 0;
}

int port_header_hop(const char *name, const char *connection)
{
	static const char *const hop[] = {
		"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
		"Proxy-Authorization", "TE", "Trailer", "Transfer-Encoding", "Upgrade", NULL,
	};
	for (size_t i = 0; hop[i]; i++)
		if (strcasecmp(name, hop[i]) == 0)
			return 1;
	return port_header_has_token(connection, name);
}
