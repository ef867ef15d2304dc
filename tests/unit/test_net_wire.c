/*
 * test_net_wire.c - what the sandbox proxy and resolver read from guests:
 * the name in a TLS ClientHello or an HTTP/1 request (daemon/net/net_sniff.h),
 * and DNS queries and answers (daemon/net/net_dnsmsg.h).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/net/net_dnsmsg.h"
#include "daemon/net/net_sniff.h"

/* ---- a ClientHello builder (RFC 8446 4.1.2) ---------------------------------- */

struct bytes {
	uint8_t d[4096];
	size_t n;
};

static void put(struct bytes *b, const void *p, size_t n)
{
	assert_true(b->n + n <= sizeof(b->d));
	memcpy(b->d + b->n, p, n);
	b->n += n;
}

static void put8(struct bytes *b, unsigned v)
{
	uint8_t x = (uint8_t)v;
	put(b, &x, 1);
}

static void put16(struct bytes *b, unsigned v)
{
	put8(b, v >> 8);
	put8(b, v);
}

static void put24(struct bytes *b, size_t v)
{
	put8(b, (unsigned)(v >> 16));
	put16(b, (unsigned)(v & 0xffff));
}

/* The handshake message: a ClientHello naming sni (NULL: no server_name),
 * with an extension before it and padding after it (pad bytes). */
static void client_hello(struct bytes *hs, const char *sni, size_t pad)
{
	struct bytes body = {0}, ext = {0};
	put16(&body, 0x0303);
	uint8_t random[32] = {1, 2, 3};
	put(&body, random, 32);
	put8(&body, 32);
	put(&body, random, 32);                   /* legacy_session_id */
	put16(&body, 4);
	put16(&body, 0x1301);
	put16(&body, 0x1302);                     /* cipher_suites */
	put8(&body, 1);
	put8(&body, 0);                           /* compression: null */
	put16(&ext, 0x000b);                      /* ec_point_formats */
	put16(&ext, 2);
	put8(&ext, 1);
	put8(&ext, 0);
	if (sni) {
		size_t n = strlen(sni);
		put16(&ext, 0x0000);
		put16(&ext, (unsigned)(n + 5));
		put16(&ext, (unsigned)(n + 3));
		put8(&ext, 0);                    /* host_name */
		put16(&ext, (unsigned)n);
		put(&ext, sni, n);
	}
	if (pad) {
		put16(&ext, 0x0015);              /* padding */
		put16(&ext, (unsigned)pad);
		uint8_t zero[2048] = {0};
		put(&ext, zero, pad);
	}
	put16(&body, (unsigned)ext.n);
	put(&body, ext.d, ext.n);
	hs->n = 0;
	put8(hs, 1);
	put24(hs, body.n);
	put(hs, body.d, body.n);
}

/* hs cut into TLS records of at most rec bytes. */
static void records(struct bytes *out, const struct bytes *hs, size_t rec)
{
	out->n = 0;
	for (size_t at = 0; at < hs->n; at += rec) {
		size_t n = hs->n - at < rec ? hs->n - at : rec;
		put8(out, 22);
		put16(out, 0x0301);
		put16(out, (unsigned)n);
		put(out, hs->d + at, n);
	}
}

static enum net_sniff sniff(const void *p, size_t n, char *name)
{
	return net_sniff(p, n, name);
}

static void tls_sni(void **state)
{
	(void)state;
	struct bytes hs, wire;
	char name[NET_NAME_MAX + 1];
	client_hello(&hs, "Files.PythonHosted.ORG", 300);
	records(&wire, &hs, 16384);
	assert_int_equal(sniff(wire.d, wire.n, name), NET_SNIFF_NAME);
	assert_string_equal(name, "files.pythonhosted.org");
	/* Every prefix: more wanted, or the name once its bytes are in. */
	for (size_t n = 0; n < wire.n; n++) {
		enum net_sniff r = sniff(wire.d, n, name);
		if (r == NET_SNIFF_NAME)
			assert_string_equal(name, "files.pythonhosted.org");
		else if (r != NET_SNIFF_MORE)
			fail_msg("prefix %zu: %d", n, r);
	}
	/* The hello over several records (as big post-quantum hellos are). */
	records(&wire, &hs, 50);
	assert_int_equal(sniff(wire.d, wire.n, name), NET_SNIFF_NAME);
	assert_string_equal(name, "files.pythonhosted.org");
	/* Records after the hello (0-RTT data) are not read. */
	records(&wire, &hs, 16384);
	put8(&wire, 23);
	put16(&wire, 0x0303);
	put16(&wire, 1);
	put8(&wire, 0);
	assert_int_equal(sniff(wire.d, wire.n, name), NET_SNIFF_NAME);
	/* No server_name: no name, once the hello is whole. */
	client_hello(&hs, NULL, 10);
	records(&wire, &hs, 16384);
	assert_int_equal(sniff(wire.d, wire.n, name), NET_SNIFF_NONE);
	assert_int_equal(sniff(wire.d, wire.n - 1, name), NET_SNIFF_MORE);
	/* Names that are not host names. */
	static const char *const bad[] = {"203.0.113.7", "under_score.example", "a..b", "-a.b"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		client_hello(&hs, bad[i], 0);
		records(&wire, &hs, 16384);
		assert_int_equal(sniff(wire.d, wire.n, name), NET_SNIFF_NONE);
	}
	/* Not a handshake record, not a ClientHello, a lying length. */
	client_hello(&hs, "a.example", 0);
	records(&wire, &hs, 16384);
	wire.d[0] = 23;
	assert_int_equal(sniff(wire.d, wire.n, name), NET_SNIFF_NONE);
	wire.d[0] = 22;
	wire.d[5] = 2; /* ServerHello */
	assert_int_equal(sniff(wire.d, wire.n, name), NET_SNIFF_NONE);
	records(&wire, &hs, 16384);
	wire.d[3] = 0x50; /* record length past 16384 */
	assert_int_equal(sniff(wire.d, wire.n, name), NET_SNIFF_NONE);
	records(&wire, &hs, 16384);
	wire.d[6] = 0xff; /* a handshake length past the bytes: read what is there */
	assert_int_equal(sniff(wire.d, wire.n, name), NET_SNIFF_NAME);
	client_hello(&hs, NULL, 0);
	records(&wire, &hs, 16384);
	wire.d[6] = 0xff; /* ... and wait for more when the name is not in it */
	assert_int_equal(sniff(wire.d, wire.n, name), NET_SNIFF_MORE);
}

static void http_host(void **state)
{
	(void)state;
	static const struct {
		const char *req;
		enum net_sniff want;
		const char *name;
	} cases[] = {
		{"GET / HTTP/1.1\r\nHost: Example.COM\r\nAccept: */*\r\n\r\n", NET_SNIFF_NAME,
		 "example.com"},
		{"GET /simple/ HTTP/1.1\r\nUser-Agent: pip\r\nhost:pypi.org:8080\r\n\r\n",
		 NET_SNIFF_NAME, "pypi.org"},
		{"POST /x HTTP/1.0\r\nHOST: \t a.example. \t\r\n\r\nbody", NET_SNIFF_NAME, "a.example"},
		{"GET http://b.example/x HTTP/1.1\r\nHost: b.example\r\n\r\n", NET_SNIFF_NAME,
		 "b.example"},
		{"GET http://b.example:80/x HTTP/1.1\r\n\r\n", NET_SNIFF_NAME, "b.example"},
		{"GET http://b.example/x HTTP/1.1\r\nHost: c.example\r\n\r\n", NET_SNIFF_CONFLICT, ""},
		{"GET / HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n", NET_SNIFF_CONFLICT, ""},
		{"GET / HTTP/1.1\r\nHost: a.example\r\nHost: a.example\r\n\r\n", NET_SNIFF_CONFLICT, ""},
		{"GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", NET_SNIFF_NONE, ""},
		{"GET / HTTP/1.1\r\nHost: 203.0.113.5\r\n\r\n", NET_SNIFF_NONE, ""},
		{"GET / HTTP/1.1\r\nHost: [2001:db8::1]:80\r\n\r\n", NET_SNIFF_NONE, ""},
		{"GET / HTTP/1.1\r\nHost: user@a.example\r\n\r\n", NET_SNIFF_NONE, ""},
		{"GET / HTTP/1.1\r\nHost: a.example:x\r\n\r\n", NET_SNIFF_NONE, ""},
		{"GET / HTTP/1.1\r\nX-Host: a.example\r\n\r\n", NET_SNIFF_NONE, ""},
		{"CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n", NET_SNIFF_NONE, ""},
		{"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", NET_SNIFF_NONE, ""},
		{"GET / HTTP/1.1\r\nHost: a.example\r\n", NET_SNIFF_MORE, ""},
		{"GET", NET_SNIFF_MORE, ""},
		{"GET / HTTP/9.9\r\nHost: a.example\r\n\r\n", NET_SNIFF_NONE, ""},
		{"get / HTTP/1.1\r\nHost: a.example\r\n\r\n", NET_SNIFF_NONE, ""},
		{"SSH-2.0-OpenSSH_9.2\r\n", NET_SNIFF_NONE, ""},
		{"\x01\x02\x03", NET_SNIFF_NONE, ""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char name[NET_NAME_MAX + 1];
		enum net_sniff r = sniff(cases[i].req, strlen(cases[i].req), name);
		if (r != cases[i].want || (r == NET_SNIFF_NAME && strcmp(name, cases[i].name)))
			fail_msg("case %zu: %d '%s'", i, r, name);
	}
	/* A head that never ends: still MORE past the cap, which the proxy
	 * refuses (a Host may follow what it read). */
	static char big[NET_SNIFF_MAX + 10];
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
	char name[NET_NAME_MAX + 1];
	assert_int_equal(sniff(big, sizeof(big), name), NET_SNIFF_MORE);
	assert_int_equal(sniff(big, 4000, name), NET_SNIFF_MORE);
	assert_int_equal(sniff("", 0, name), NET_SNIFF_MORE);
}

/* ---- DNS ------------------------------------------------------------------------ */

/* A query: id, flags, one question for name (dotted; labels as given). */
static size_t query(uint8_t *out, unsigned id, unsigned flags, const char *name, unsigned type)
{
	size_t n = 0;
	out[n++] = (uint8_t)(id >> 8);
	out[n++] = (uint8_t)id;
	out[n++] = (uint8_t)(flags >> 8);
	out[n++] = (uint8_t)flags;
	memcpy(out + n, "\0\1\0\0\0\0\0\1", 8); /* qd 1, an 0, ns 0, ar 1 (EDNS) */
	n += 8;
	const char *p = name;
	while (*p) {
		size_t l = strcspn(p, ".");
		out[n++] = (uint8_t)l;
		memcpy(out + n, p, l);
		n += l;
		p += l;
		if (*p == '.')
			p++;
	}
	out[n++] = 0;
	out[n++] = (uint8_t)(type >> 8);
	out[n++] = (uint8_t)type;
	out[n++] = 0;
	out[n++] = 1;
	/* the OPT record, which the parser does not need */
	memcpy(out + n, "\0\0\x29\x04\xd0\0\0\0\0\0\0", 11);
	return n + 11;
}

static unsigned be16(const uint8_t *p)
{
	return ((unsigned)p[0] << 8) | p[1];
}

static void dns_queries(void **state)
{
	(void)state;
	uint8_t m[600];
	struct net_dns_query q;
	size_t n = query(m, 0x1234, 0x0100, "Files.PythonHosted.org", NET_DNS_TYPE_A);
	assert_int_equal(net_dnsmsg_parse(m, n, &q), 0);
	assert_int_equal(q.id, 0x1234);
	assert_int_equal(q.qtype, NET_DNS_TYPE_A);
	assert_int_equal(q.qclass, NET_DNS_CLASS_IN);
	assert_string_equal(q.name, "files.pythonhosted.org");
	assert_int_equal(q.qlen, 1 + 5 + 1 + 12 + 1 + 3 + 1 + 4);

	uint8_t a[NET_DNS_MSG_MAX];
	uint32_t addrs[] = {0xcb007105, 0xcb007106};
	size_t al = net_dnsmsg_answer(&q, NET_DNS_NOERROR, addrs, 2, 999, a, sizeof(a));
	assert_int_equal(al, 12 + q.qlen + 2 * 16);
	assert_int_equal(be16(a), 0x1234);
	assert_int_equal(be16(a + 2), 0x8180); /* QR, RD echoed, RA, NOERROR */
	assert_int_equal(be16(a + 4), 1);
	assert_int_equal(be16(a + 6), 2);
	assert_memory_equal(a + 12, m + 12, q.qlen); /* the question, case kept */
	const uint8_t *rr = a + 12 + q.qlen;
	assert_int_equal(be16(rr), 0xc00c);
	assert_int_equal(be16(rr + 2), NET_DNS_TYPE_A);
	assert_int_equal(be16(rr + 8), NET_DNS_TTL_MAX); /* ttl capped: low half */
	assert_int_equal(be16(rr + 10), 4);
	assert_memory_equal(rr + 12, "\xcb\x00\x71\x05", 4);

	al = net_dnsmsg_answer(&q, NET_DNS_NXDOMAIN, addrs, 2, 60, a, sizeof(a));
	assert_int_equal(al, 12 + q.qlen);
	assert_int_equal(be16(a + 2) & 15, NET_DNS_NXDOMAIN);
	assert_int_equal(be16(a + 6), 0);
	assert_int_equal(net_dnsmsg_answer(&q, 0, addrs, 2, 60, a, 100), 0);

	/* the answer never passes 512 bytes */
	char longname[256];
	snprintf(longname, sizeof(longname), "%.63s.%.63s.%.63s.%.61s",
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
		 "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc",
		 "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd");
	n = query(m, 1, 0, longname, NET_DNS_TYPE_A);
	assert_int_equal(net_dnsmsg_parse(m, n, &q), 0);
	assert_int_equal(strlen(q.name), 253);
	uint32_t many[16] = {0};
	al = net_dnsmsg_answer(&q, NET_DNS_NOERROR, many, 16, 1, a, sizeof(a));
	assert_true(al <= NET_DNS_MSG_MAX && al > 12 + q.qlen);

	/* not host names: parsed, no name */
	n = query(m, 2, 0, "_dmarc.example.com", 16);
	assert_int_equal(net_dnsmsg_parse(m, n, &q), 0);
	assert_string_equal(q.name, "");
	assert_int_equal(q.qtype, 16);
	n = query(m, 2, 0, "", NET_DNS_TYPE_A); /* the root */
	assert_int_equal(net_dnsmsg_parse(m, n, &q), 0);
	assert_string_equal(q.name, "");

	/* what is ignored, what gets FORMERR or NOTIMP */
	n = query(m, 3, 0x8000, "a.example", NET_DNS_TYPE_A); /* a response */
	assert_int_equal(net_dnsmsg_parse(m, n, &q), -EINVAL);
	assert_int_equal(net_dnsmsg_parse(m, 11, &q), -EINVAL);
	n = query(m, 4, 2u << 11, "a.example", NET_DNS_TYPE_A); /* STATUS */
	assert_int_equal(net_dnsmsg_parse(m, n, &q), -ENOTSUP);
	assert_int_equal(q.id, 4);
	n = query(m, 5, 0, "a.example", NET_DNS_TYPE_A);
	m[5] = 2; /* two questions */
	assert_int_equal(net_dnsmsg_parse(m, n, &q), -EBADMSG);
	assert_int_equal(q.id, 5);
	al = net_dnsmsg_answer(&q, NET_DNS_FORMERR, NULL, 0, 0, a, sizeof(a));
	assert_int_equal(al, 12);
	assert_int_equal(be16(a + 4), 0);
	n = query(m, 6, 0, "a.example", NET_DNS_TYPE_A);
	m[12] = 0xc0; /* a pointer in the question */
	m[13] = 12;
	assert_int_equal(net_dnsmsg_parse(m, n, &q), -EBADMSG);
	n = query(m, 7, 0, "a.example", NET_DNS_TYPE_A);
	assert_int_equal(net_dnsmsg_parse(m, 12 + 11, &q), -EBADMSG); /* type cut off */
	m[12] = 60; /* a label past the end */
	assert_int_equal(net_dnsmsg_parse(m, 12 + 11, &q), -EBADMSG);
	/* a name of more than 255 bytes on the wire */
	size_t at = 12;
	for (int l = 0; l < 5; l++) {
		m[at++] = 60;
		memset(m + at, 'a', 60);
		at += 60;
	}
	m[at++] = 0;
	memcpy(m + at, "\0\1\0\1", 4);
	assert_int_equal(net_dnsmsg_parse(m, at + 4, &q), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tls_sni),
		cmocka_unit_test(http_host),
		cmocka_unit_test(dns_queries),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
