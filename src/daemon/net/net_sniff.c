/*
 * net_sniff.c - TLS SNI and HTTP/1 Host from a connection's first bytes
 * (see net_sniff.h).
 */
#include "daemon/net/net_sniff.h"

#include <string.h>

/* A name of n bytes at s, checked and lowercased into name. */
static enum net_sniff take_name(const char *s, size_t n, char name[NET_NAME_MAX + 1])
{
	size_t len = net_policy_check_name(s, n);
	if (len == 0)
		return NET_SNIFF_NONE;
	for (size_t i = 0; i < len; i++)
		name[i] = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] - 'A' + 'a') : s[i];
	name[len] = '\0';
	return NET_SNIFF_NAME;
}

/* ---- TLS ------------------------------------------------------------------ */

#define TLS_RECORD_MAX 16384 /* TLSPlaintext.length (RFC 8446 5.1) */

/* A reader over the handshake bytes; short reads set `out` (ran out). */
struct cur {
	const uint8_t *p;
	size_t n, at;
	int out;
};

static unsigned get(struct cur *c, size_t width)
{
	unsigned v = 0;
	if (c->out || c->n - c->at < width) {
		c->out = 1;
		return 0;
	}
	for (size_t i = 0; i < width; i++)
		v = (v << 8) | c->p[c->at++];
	return v;
}

static void skip(struct cur *c, size_t n)
{
	if (c->out || c->n - c->at < n)
		c->out = 1;
	else
		c->at += n;
}

/* The server_name extension's body (RFC 6066 3): the first host_name. */
static enum net_sniff sni_entry(const uint8_t *p, size_t n, char name[NET_NAME_MAX + 1])
{
	struct cur c = {p, n, 0, 0};
	size_t list = get(&c, 2);
	if (c.out || list != n - 2)
		return NET_SNIFF_NONE;
	while (c.at < n) {
		unsigned type = get(&c, 1);
		size_t len = get(&c, 2);
		if (c.out || n - c.at < len)
			return NET_SNIFF_NONE;
		if (type == 0)
			return take_name((const char *)p + c.at, len, name);
		c.at += len;
	}
	return NET_SNIFF_NONE;
}

static enum net_sniff tls(const uint8_t *buf, size_t len, char name[NET_NAME_MAX + 1])
{
	/* The handshake bytes of the records present, joined (a ClientHello
	 * may span records). */
	static __thread uint8_t hs[NET_SNIFF_MAX];
	size_t have = 0, at = 0;
	while (len - at >= 5) {
		if (have >= 4 && have - 4 >= (((size_t)hs[1] << 16) | ((size_t)hs[2] << 8) | hs[3]))
			break; /* the hello is whole: later records are not ours */
		const uint8_t *h = buf + at;
		size_t rlen = ((size_t)h[3] << 8) | h[4];
		if (h[0] != 22 || h[1] != 3 || rlen == 0 || rlen > TLS_RECORD_MAX)
			return NET_SNIFF_NONE; /* not (only) handshake records */
		size_t take = len - at - 5 < rlen ? len - at - 5 : rlen;
		if (take > sizeof(hs) - have)
			take = sizeof(hs) - have;
		memcpy(hs + have, h + 5, take);
		have += take;
		if (take < rlen)
			break;
		at += 5 + rlen;
	}
	struct cur c = {hs, have, 0, 0};
	unsigned type = get(&c, 1);
	size_t hlen = get(&c, 3);
	if (!c.out && type != 1)
		return NET_SNIFF_NONE; /* not a ClientHello */
	if (!c.out && hlen < have - 4)
		c.n = 4 + hlen; /* what follows the hello is not ours to read */
	int whole = !c.out && have >= 4 + hlen;
	skip(&c, 2 + 32);          /* legacy_version, random */
	skip(&c, get(&c, 1));      /* legacy_session_id */
	skip(&c, get(&c, 2));      /* cipher_suites */
	skip(&c, get(&c, 1));      /* legacy_compression_methods */
	size_t ext_len = get(&c, 2);
	size_t ext_end = c.at + ext_len;
	while (!c.out && c.at < ext_end) {
		unsigned et = get(&c, 2);
		size_t el = get(&c, 2);
		if (c.out || c.n - c.at < el)
			break;
		if (et == 0)
			return sni_entry(hs + c.at, el, name);
		c.at += el;
	}
	/* Ran out: more may come, unless the whole hello is here.  A hello
	 * past the cap stays MORE: its name may be in what is not read, and the
	 * caller refuses it (net_sniff.h). */
	return whole ? NET_SNIFF_NONE : NET_SNIFF_MORE;
}

/* ---- HTTP/1 --------------------------------------------------------------- */

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* The host part of an authority "host[:port]" (RFC 3986 3.2), or NONE for
 * an IP literal or a bad name.  Userinfo ("user@host") is not allowed in
 * HTTP targets (RFC 9110 4.2.4) and makes it NONE. */
static enum net_sniff authority_host(const char *s, size_t n, char name[NET_NAME_MAX + 1])
{
	if (n == 0 || s[0] == '[' || memchr(s, '@', n))
		return NET_SNIFF_NONE;
	const char *colon = memchr(s, ':', n);
	size_t hl = colon ? (size_t)(colon - s) : n;
	if (colon) {
		for (size_t i = hl + 1; i < n; i++)
			if (s[i] < '0' || s[i] > '9')
				return NET_SNIFF_NONE;
	}
	return take_name(s, hl, name);
}

/* Bytes of the request line's method token: 1-20 upper-case letters. */
static size_t method_len(const uint8_t *b, size_t len)
{
	size_t i = 0;
	while (i < len && i < 21 && b[i] >= 'A' && b[i] <= 'Z')
		i++;
	return i;
}

static enum net_sniff http(const uint8_t *buf, size_t len, char name[NET_NAME_MAX + 1])
{
	const char *s = (const char *)buf;
	/* The head ends at the first empty line. */
	const char *end = memmem(s, len, "\r\n\r\n", 4);
	if (!end) /* even past the cap: its Host may be in what is not read */
		return NET_SNIFF_MORE;
	size_t head = (size_t)(end - s) + 2; /* through the last header's CRLF */
	const char *eol = memmem(s, head, "\r\n", 2);
	size_t ml = method_len(buf, head);
	const char *line_end = eol;
	if (!eol || ml == 0 || s[ml] != ' ')
		return NET_SNIFF_NONE;
	const char *target = s + ml + 1;
	const char *sp = memchr(target, ' ', (size_t)(line_end - target));
	if (!sp || (size_t)(line_end - sp) != 9 || memcmp(sp + 1, "HTTP/1.", 7) != 0)
		return NET_SNIFF_NONE; /* not HTTP/1.x (h2's preface is "PRI * HTTP/2.0") */
	if (ml == 7 && !memcmp(s, "CONNECT", 7))
		return NET_SNIFF_NONE; /* a request to a proxy: the address decides */
	char from_target[NET_NAME_MAX + 1] = "";
	size_t tl = (size_t)(sp - target);
	if (tl > 7 && !strncasecmp(target, "http://", 7)) {
		const char *a = target + 7;
		size_t al = strcspn(a, "/?# ");
		if (authority_host(a, al, from_target) != NET_SNIFF_NAME)
			from_target[0] = '\0';
	}
	/* Header fields: "Name: value" lines (RFC 9112 5). */
	int hosts = 0;
	char from_host[NET_NAME_MAX + 1] = "";
	const char *p = line_end + 2;
	while (p < s + head) {
		const char *e = memmem(p, (size_t)(s + head - p), "\r\n", 2);
		if (!e)
			break;
		if (e - p >= 5 && lower(p[0]) == 'h' && lower(p[1]) == 'o' && lower(p[2]) == 's' &&
		    lower(p[3]) == 't' && p[4] == ':') {
			const char *v = p + 5, *ve = e;
			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			hosts++;
			if (authority_host(v, (size_t)(ve - v), from_host) != NET_SNIFF_NAME)
				from_host[0] = '\0';
		}
		p = e + 2;
	}
	if (hosts > 1)
		return NET_SNIFF_CONFLICT;
	if (from_target[0] && hosts == 1 && strcmp(from_target, from_host) != 0)
		return NET_SNIFF_CONFLICT;
	const char *n = from_target[0] ? from_target : from_host;
	if (!n[0])
		return NET_SNIFF_NONE;
	memcpy(name, n, strlen(n) + 1);
	return NET_SNIFF_NAME;
}

enum net_sniff net_sniff(const uint8_t *buf, size_t len, char name[NET_NAME_MAX + 1])
{
	name[0] = '\0';
	if (len == 0)
		return NET_SNIFF_MORE;
	if (buf[0] == 22)
		return tls(buf, len, name);
	size_t ml = method_len(buf, len);
	if (ml == len)
		return ml <= 20 ? NET_SNIFF_MORE : NET_SNIFF_NONE;
	if (ml == 0 || ml > 20 || buf[ml] != ' ')
		return NET_SNIFF_NONE;
	return http(buf, len, name);
}
