/*
 * test_daemon_ports.c - the pure parts of exposed ports: which port a
 * request is for and what target the guest gets (port_target.c), the
 * guest's answer through the response parser with its caps (port_resp.c),
 * access tokens (auth.c) and --proxy-domain (config.c).
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

#include "daemon/config.h"
#include "daemon/http/auth.h"
#include "daemon/http/port_target.h"
#include "daemon/ports/port_resp.h"

#define ID "sbx_0123456789abcdef0123"

static void host_form(void **state)
{
	(void)state;
	unsigned port = 0;
	char id[PORT_ID_MAX];
	assert_int_equal(port_target_from_host("8000-" ID ".sbx.test", "sbx.test", &port, id), 1);
	assert_int_equal(port, 8000);
	assert_string_equal(id, ID);
	/* the DNS-label spelling, upper case, a port, a trailing dot */
	assert_int_equal(port_target_from_host("443-SBX-0123456789ABCDEF0123.Sbx.Test.:8080",
					       "sbx.test", &port, id), 1);
	assert_int_equal(port, 443);
	assert_string_equal(id, ID);
	assert_int_equal(port_target_from_host("1-" ID ".a.b.c", "a.b.c.", &port, id), 1);
	assert_int_equal(port, 1);
	assert_int_equal(port_target_from_host("65535-" ID ".d", "d", &port, id), 1);
	/* not this form */
	static const char *const no[] = {
		"8000-" ID ".sbx.test.evil.com",  /* another domain under it */
		"8000-" ID "sbx.test",            /* no dot before the domain */
		"8000-" ID ".xsbx.test",          /* a longer label */
		"8000." ID ".sbx.test",           /* no dash */
		"0-" ID ".sbx.test",              /* port 0 */
		"65536-" ID ".sbx.test",          /* past the last port */
		"08000-" ID ".sbx.test",          /* a leading zero */
		"80a0-" ID ".sbx.test",
		"8000-sbx_0123.sbx.test",         /* short id */
		"8000-sbx_0123456789abcdef012g.sbx.test",
		"8000-box_0123456789abcdef0123.sbx.test",
		"8000-" ID ".x.sbx.test",         /* two labels before the domain */
		"8000-" ID ".sbx.test:80x",       /* a bad port after the name */
		"sbx.test", ".sbx.test", "", "-.sbx.test",
	};
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		assert_int_equal(port_target_from_host(no[i], "sbx.test", &port, id), 0);
	assert_int_equal(port_target_from_host(NULL, "sbx.test", &port, id), 0);
	assert_int_equal(port_target_from_host("8000-" ID ".sbx.test", "", &port, id), 0);
	assert_int_equal(port_target_from_host("8000-" ID ".sbx.test", NULL, &port, id), 0);
}

static void path_form(void **state)
{
	(void)state;
	unsigned port = 0;
	char id[PORT_ID_MAX];
	const char *rest = NULL;
	assert_int_equal(port_target_from_path("/v1/sandboxes/" ID "/ports/8000/a/b?c=d", &port, id,
					       &rest), 1);
	assert_int_equal(port, 8000);
	assert_string_equal(id, ID);
	assert_string_equal(rest, "/a/b?c=d");
	assert_int_equal(port_target_from_path("/v1/sandboxes/" ID "/ports/80", &port, id, &rest),
			 1);
	assert_string_equal(rest, "");
	assert_int_equal(port_target_from_path("/v1/sandboxes/" ID "/ports/80?x", &port, id, &rest),
			 1);
	assert_string_equal(rest, "?x");
	/* under the form but not a port of a sandbox */
	assert_int_equal(port_target_from_path("/v1/sandboxes/" ID "/ports/0/", &port, id, &rest),
			 -EINVAL);
	assert_int_equal(port_target_from_path("/v1/sandboxes/" ID "/ports/70000", &port, id,
					       &rest), -EINVAL);
	assert_int_equal(port_target_from_path("/v1/sandboxes/" ID "/ports//x", &port, id, &rest),
			 -EINVAL);
	assert_int_equal(port_target_from_path("/v1/sandboxes/sbx_1/ports/80/", &port, id, &rest),
			 -EINVAL);
	assert_int_equal(port_target_from_path("/v1/sandboxes/%73bx_0123456789abcdef0123/ports/80",
					       &port, id, &rest), -EINVAL);
	/* other routes */
	assert_int_equal(port_target_from_path("/v1/sandboxes/" ID "/portsx/80", &port, id, &rest),
			 0);
	assert_int_equal(port_target_from_path("/v1/sandboxes/" ID "/ports/", &port, id, &rest), 0);
	assert_int_equal(port_target_from_path("/v1/sandboxes/" ID, &port, id, &rest), 0);
	assert_int_equal(port_target_from_path("/v1/sandboxes/" ID "/fs?path=/ports/1", &port, id,
					       &rest), 0);
	assert_int_equal(port_target_from_path("/healthz", &port, id, &rest), 0);
	assert_int_equal(port_target_from_path(NULL, &port, id, &rest), 0);
}

static void forwarded_target(void **state)
{
	(void)state;
	char out[64];
	struct {
		const char *in, *want;
	} cases[] = {
		{"", "/"},
		{"/", "/"},
		{"?a=1", "/?a=1"},
		{"/x/y?a=1&b=2", "/x/y?a=1&b=2"},
		{"/x?access_token=pdt_1", "/x"},
		{"/x?a=1&access_token=pdt_1&b=2", "/x?a=1&b=2"},
		{"/x?access_token=1&access_token=2", "/x"},
		{"/x?access%5Ftoken=1&%61ccess_token&c", "/x?c"},
		{"/x?access_token2=1&xaccess_token=1", "/x?access_token2=1&xaccess_token=1"},
		{"/x?&&a&&", "/x?a"},
		{"/x?%zz=1&%", "/x?%zz=1&%"},
		{"/%2F/%41", "/%2F/%41"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(port_target_forward(cases[i].in, out, sizeof(out)), 0);
		assert_string_equal(out, cases[i].want);
	}
	assert_int_equal(port_target_forward("/a b", out, sizeof(out)), -EINVAL);
	assert_int_equal(port_target_forward("/a\r\nX: y", out, sizeof(out)), -EINVAL);
	assert_int_equal(port_target_forward("/a\x7f", out, sizeof(out)), -EINVAL);
	char big[100];
	memset(big, 'a', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(port_target_forward(big, out, sizeof(out)), -ENAMETOOLONG);
	assert_int_equal(port_target_forward("/", out, 1), -ENAMETOOLONG);
}

static void hop_by_hop(void **state)
{
	(void)state;
	assert_int_equal(port_header_hop("connection", NULL), 1);
	assert_int_equal(port_header_hop("Transfer-Encoding", NULL), 1);
	assert_int_equal(port_header_hop("Keep-Alive", NULL), 1);
	assert_int_equal(port_header_hop("upgrade", NULL), 1);
	assert_int_equal(port_header_hop("Content-Type", NULL), 0);
	assert_int_equal(port_header_hop("X-Secret", "keep-alive, X-Secret"), 1);
	assert_int_equal(port_header_hop("X-Secret", "keep-alive,x-secret "), 1);
	assert_int_equal(port_header_hop("X-Secre", "keep-alive, X-Secret"), 0);
	assert_int_equal(port_header_has_token("Upgrade", "upgrade"), 1);
	assert_int_equal(port_header_has_token(" keep-alive ,\tUpgrade\t", "upgrade"), 1);
	assert_int_equal(port_header_has_token("upgrades", "upgrade"), 0);
	assert_int_equal(port_header_has_token(NULL, "upgrade"), 0);
	assert_int_equal(port_header_has_token("", "upgrade"), 0);
	/* the path form's origin-bound headers, either direction */
	assert_int_equal(port_header_origin_bound("cookie"), 1);
	assert_int_equal(port_header_origin_bound("Set-Cookie"), 1);
	assert_int_equal(port_header_origin_bound("SET-COOKIE2"), 1);
	assert_int_equal(port_header_origin_bound("Clear-Site-Data"), 1);
	assert_int_equal(port_header_origin_bound("x-content-type-options"), 1);
	assert_int_equal(port_header_origin_bound("Set-Cookies"), 0);
	assert_int_equal(port_header_origin_bound("X-Cookie"), 0);
	assert_int_equal(port_header_origin_bound("Content-Type"), 0);
}

/* Feed s to a parser in pieces of step bytes (0: all at once); the body
 * collected into body (cap bytes).  Returns the last feed's result. */
static long feed(struct port_resp *r, const char *s, size_t len, size_t step, char *body,
		 size_t cap, size_t *body_len, int eof)
{
	*body_len = 0;
	long k = 0;
	size_t off = 0;
	while (off < len) {
		size_t n = step && len - off > step ? step : len - off;
		size_t out = 0;
		k = port_resp_feed(r, s + off, n, body + *body_len, cap - *body_len, &out);
		*body_len += out;
		if (k < 0)
			return k;
		off += n;
		if ((size_t)k < n)
			return (long)off - (long)n + k; /* stopped early: where */
	}
	if (eof) {
		size_t out = 0;
		k = port_resp_feed(r, NULL, 0, body + *body_len, cap - *body_len, &out);
		*body_len += out;
	}
	return k;
}

static void answers(void **state)
{
	(void)state;
	static const char cl[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Empty:\r\n"
				 "Set-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 5\r\n\r\nhello";
	char body[256];
	size_t blen;
	for (size_t step = 0; step < 8; step++) {
		struct port_resp r;
		port_resp_init(&r, 0);
		assert_true(feed(&r, cl, sizeof(cl) - 1, step, body, sizeof(body), &blen, 0) >= 0);
		assert_true(r.head_done && r.complete);
		assert_int_equal(r.status, 200);
		assert_int_equal(r.content_length, 5);
		assert_int_equal(blen, 5);
		assert_memory_equal(body, "hello", 5);
		assert_int_equal(r.nheaders, 5);
		assert_string_equal(port_resp_header(&r, "content-type"), "text/plain");
		assert_string_equal(port_resp_header(&r, "X-Empty"), "");
		assert_string_equal(port_resp_header_name(&r, 3), "Set-Cookie");
		assert_string_equal(port_resp_header_value(&r, 3), "b=2");
		assert_null(port_resp_header(&r, "X-None"));
	}
	/* chunked, after an interim 100 */
	static const char ch[] = "HTTP/1.1 100 Continue\r\n\r\n"
				 "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
				 "3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nTrailer: x\r\n\r\nJUNK";
	for (size_t step = 0; step < 5; step++) {
		struct port_resp r;
		port_resp_init(&r, 0);
		assert_true(feed(&r, ch, sizeof(ch) - 1, step, body, sizeof(body), &blen, 0) >= 0);
		assert_int_equal(r.status, 201);
		assert_true(r.complete);
		assert_int_equal(r.content_length, -1);
		assert_int_equal(blen, 5);
		assert_memory_equal(body, "abcde", 5);
		/* the trailer is dropped; the head's headers stay whole */
		assert_int_equal(r.nheaders, 1);
		assert_string_equal(port_resp_header(&r, "Transfer-Encoding"), "chunked");
	}
	/* to the end of the connection */
	static const char eof[] = "HTTP/1.0 200 OK\r\n\r\nall of it";
	struct port_resp r;
	port_resp_init(&r, 0);
	assert_true(feed(&r, eof, sizeof(eof) - 1, 3, body, sizeof(body), &blen, 0) >= 0);
	assert_true(r.head_done && !r.complete);
	assert_true(feed(&r, "", 0, 0, body + blen, sizeof(body) - blen, &blen, 1) >= 0);
	assert_true(r.complete);
	/* HEAD: the announced length, no body; 204 and 304 have none */
	static const char head[] = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
	port_resp_init(&r, 1);
	assert_true(feed(&r, head, sizeof(head) - 1, 0, body, sizeof(body), &blen, 0) >= 0);
	assert_true(r.complete);
	assert_int_equal(r.content_length, 1000);
	assert_int_equal(blen, 0);
	static const char nc[] = "HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\nabc";
	port_resp_init(&r, 0);
	assert_true(feed(&r, nc, sizeof(nc) - 1, 0, body, sizeof(body), &blen, 0) >= 0);
	assert_true(r.complete);
	assert_int_equal(blen, 0);
	assert_int_equal(r.content_length, -1);
}

static void upgrade(void **state)
{
	(void)state;
	static const char up[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
				 "Connection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n\x81\x02hi";
	char body[64];
	size_t blen;
	struct port_resp r;
	port_resp_init(&r, 0);
	long k = feed(&r, up, sizeof(up) - 1, 0, body, sizeof(body), &blen, 0);
	assert_int_equal(k, sizeof(up) - 1 - 4); /* the frame is the new protocol's */
	assert_true(r.head_done && r.upgrade);
	assert_int_equal(r.status, 101);
	assert_int_equal(blen, 0);
	/* 101 without the upgrade headers is not an answer */
	static const char bad[] = "HTTP/1.1 101 Switching Protocols\r\n\r\n";
	port_resp_init(&r, 0);
	assert_int_equal(feed(&r, bad, sizeof(bad) - 1, 0, body, sizeof(body), &blen, 0), -EPROTO);
}

static void refusals(void **state)
{
	(void)state;
	char body[64];
	size_t blen;
	struct port_resp r;
	static const char *const proto[] = {
		"SSH-2.0-OpenSSH\r\n\r\n",
		"HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nBad Header: x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nBad T: 1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: \x01\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(proto) / sizeof(proto[0]); i++) {
		port_resp_init(&r, 0);
		assert_int_equal(feed(&r, proto[i], strlen(proto[i]), 0, body, sizeof(body), &blen, 0),
				 -EPROTO);
	}
	/* the connection ends before the head, or mid-body */
	port_resp_init(&r, 0);
	assert_int_equal(feed(&r, "HTTP/1.1 200", 12, 0, body, sizeof(body), &blen, 1), -EPROTO);
	port_resp_init(&r, 0);
	assert_int_equal(feed(&r, "", 0, 0, body, sizeof(body), &blen, 1), -EPROTO);
	static const char shortb[] = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
	port_resp_init(&r, 0);
	assert_int_equal(feed(&r, shortb, sizeof(shortb) - 1, 0, body, sizeof(body), &blen, 1),
			 -EPROTO);
	/* a body piece larger than the room given */
	static const char big[] = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789";
	port_resp_init(&r, 0);
	assert_int_equal(feed(&r, big, sizeof(big) - 1, 0, body, 4, &blen, 0), -ENOSPC);
	/* caps: the head's size, the number of headers, interim answers */
	char *h = malloc(PORT_RESP_HEAD_MAX + 200);
	assert_non_null(h);
	size_t n = (size_t)sprintf(h, "HTTP/1.1 200 OK\r\nX: ");
	memset(h + n, 'a', PORT_RESP_HEAD_MAX);
	n += PORT_RESP_HEAD_MAX;
	n += (size_t)sprintf(h + n, "\r\n\r\n");
	for (size_t step = 0; step < 2; step++) {
		port_resp_init(&r, 0);
		assert_int_equal(feed(&r, h, n, step ? 1000 : 0, body, sizeof(body), &blen, 0),
				 -E2BIG);
	}
	/* trailers count with the head */
	n = (size_t)sprintf(h, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: ");
	memset(h + n, 'a', PORT_RESP_HEAD_MAX);
	n += PORT_RESP_HEAD_MAX;
	n += (size_t)sprintf(h + n, "\r\n\r\n");
	port_resp_init(&r, 0);
	assert_int_equal(feed(&r, h, n, 1000, body, sizeof(body), &blen, 0), -E2BIG);
	n = (size_t)sprintf(h, "HTTP/1.1 200 OK\r\n");
	for (int i = 0; i <= PORT_RESP_HEADERS_MAX; i++)
		n += (size_t)sprintf(h + n, "X%d: %d\r\n", i, i);
	n += (size_t)sprintf(h + n, "\r\n");
	port_resp_init(&r, 0);
	assert_int_equal(feed(&r, h, n, 0, body, sizeof(body), &blen, 0), -E2BIG);
	/* exactly the cap of headers passes: the control */
	n = (size_t)sprintf(h, "HTTP/1.1 200 OK\r\n");
	for (int i = 0; i < PORT_RESP_HEADERS_MAX - 1; i++)
		n += (size_t)sprintf(h + n, "X%d: %d\r\n", i, i);
	n += (size_t)sprintf(h + n, "Content-Length: 0\r\n\r\n");
	port_resp_init(&r, 0);
	assert_true(feed(&r, h, n, 0, body, sizeof(body), &blen, 0) >= 0);
	assert_true(r.complete);
	assert_int_equal(r.nheaders, PORT_RESP_HEADERS_MAX);
	n = 0;
	for (int i = 0; i < 20; i++)
		n += (size_t)sprintf(h + n, "HTTP/1.1 100 Continue\r\n\r\n");
	port_resp_init(&r, 0);
	assert_int_equal(feed(&r, h, n, 0, body, sizeof(body), &blen, 0), -EPROTO);
	free(h);
	/* a failed parser stays failed */
	assert_int_equal(port_resp_feed(&r, "HTTP/1.1 200 OK\r\n\r\n", 19, body, sizeof(body),
					&blen), -EPROTO);
}

static void tokens(void **state)
{
	(void)state;
	char a[AUTH_TOKEN_LEN + 1], b[AUTH_TOKEN_LEN + 1];
	assert_int_equal(auth_make_token(a), 0);
	assert_int_equal(auth_make_token(b), 0);
	assert_int_equal(strlen(a), AUTH_TOKEN_LEN);
	assert_memory_equal(a, AUTH_TOKEN_PREFIX, 4);
	assert_string_not_equal(a, b);
	assert_int_equal(auth_token_equal(a, a), 1);
	assert_int_equal(auth_token_equal(a, b), 0);
	char c[AUTH_TOKEN_LEN + 2];
	snprintf(c, sizeof(c), "%sx", a);
	assert_int_equal(auth_token_equal(a, c), 0);
	c[AUTH_TOKEN_LEN - 1] = '\0';
	assert_int_equal(auth_token_equal(a, c), 0);
	assert_int_equal(auth_token_equal(a, NULL), 0);
	assert_int_equal(auth_token_equal("", ""), 0);
	assert_int_equal(auth_token_equal(NULL, a), 0);
}

static void proxy_domain_flag(void **state)
{
	(void)state;
	struct daemon_cfg cfg;
	char err[256];
	char *ok[] = {"pandastackd", "--proxy-domain", "Sandboxes.Example.COM."};
	assert_int_equal(config_load(&cfg, 3, ok, err, sizeof(err)), 0);
	assert_string_equal(cfg.proxy_domain, "sandboxes.example.com");
	char *one[] = {"pandastackd", "--proxy-domain=localhost"};
	assert_int_equal(config_load(&cfg, 2, one, err, sizeof(err)), 0);
	assert_string_equal(cfg.proxy_domain, "localhost");
	char *none[] = {"pandastackd"};
	assert_int_equal(config_load(&cfg, 1, none, err, sizeof(err)), 0);
	assert_string_equal(cfg.proxy_domain, "");
	static const char *const bad[] = {"", ".", "a..b", "-a.b", "a-.b", "a_b.c", "a b", "*.a",
					  "a.b:80", "x.-"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = {"pandastackd", "--proxy-domain", (char *)bad[i]};
		assert_int_equal(config_load(&cfg, 3, argv, err, sizeof(err)), -EINVAL);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(host_form),         cmocka_unit_test(path_form),
		cmocka_unit_test(forwarded_target),  cmocka_unit_test(hop_by_hop),
		cmocka_unit_test(answers),           cmocka_unit_test(upgrade),
		cmocka_unit_test(refusals),          cmocka_unit_test(tokens),
		cmocka_unit_test(proxy_domain_flag),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
