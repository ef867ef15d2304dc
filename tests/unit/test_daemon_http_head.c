/*
 * test_daemon_http_head.c - the daemon's own check of a request head
 * (http_head.c) and the front's error pages (http_front.c): heads taken
 * whole and byte by byte, each refusal with its code, the cap, and an
 * error page that parses back as the API's JSON.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "daemon/http/http_front.h"
#include "daemon/http/http_head.h"

static enum http_head_result check(const char *s, size_t n, size_t *hl, enum api_err *err)
{
	char msg[200];
	enum http_head_result r = http_head_check(s, n, hl, err, msg, sizeof(msg));
	if (r == HTTP_HEAD_BAD)
		assert_true(msg[0] != '\0'); /* every refusal says why */
	return r;
}

static void good_heads(void **state)
{
	(void)state;
	static const char *const ok[] = {
		"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.0\r\n\r\n",
		"\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", /* empty lines first */
		"POST /v1/keys HTTP/1.1\nHost: x\nContent-Length: 12\n\n",  /* bare LF */
		"GET /a?b=%00&c=d HTTP/1.1\r\nX-Tab:\tv\tw \r\nX-Empty:\r\n\r\n",
		"PUT /f HTTP/1.1\r\nContent-Length:  9223372036854775807 \r\n\r\n",
		"GET /\xc3\xa9 HTTP/1.1\r\nX-Utf8: \xc3\xa9t\xc3\xa9\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		size_t n = strlen(ok[i]), hl = 0;
		enum api_err err;
		assert_int_equal(check(ok[i], n, &hl, &err), HTTP_HEAD_OK);
		assert_int_equal(hl, n);
		/* every shorter prefix is "more", never a refusal */
		for (size_t k = 0; k < n; k++)
			assert_int_equal(check(ok[i], k, &hl, &err), HTTP_HEAD_MORE);
	}
	/* the body after the head is not the head's */
	const char *s = "POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc";
	size_t hl = 0;
	enum api_err err;
	assert_int_equal(check(s, strlen(s), &hl, &err), HTTP_HEAD_OK);
	assert_int_equal(hl, strlen(s) - 3);
}

struct bad {
	const char *head;
	size_t len; /* 0: strlen */
	enum api_err err;
};

static void bad_heads(void **state)
{
	(void)state;
	static const struct bad bad[] = {
		{"POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n", 0, API_ERR_INVALID_HEADER},
		{"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 0, API_ERR_INVALID_HEADER},
		{"POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n", 0, API_ERR_INVALID_HEADER},
		{"POST / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n", 0, API_ERR_INVALID_HEADER},
		{"POST / HTTP/1.1\r\ncontent-length:\r\n\r\n", 0, API_ERR_INVALID_HEADER},
		{"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 0,
		 API_ERR_BODY_TOO_LARGE},
		{"POST / HTTP/1.1\r\nContent-Length: 9223372036854775808\r\n\r\n", 0,
		 API_ERR_BODY_TOO_LARGE},
		{"GET / HTTP/1.1\r\nX-A: a\0b\r\n\r\n", 28, API_ERR_INVALID_HEADER},
		{"GET / HTTP/1.1\r\nX-A: a\rb\r\n\r\n", 0, API_ERR_INVALID_HEADER},
		{"GET / HTTP/1.1\r\nX-A: a\x01\r\n\r\n", 0, API_ERR_INVALID_HEADER},
		{"GET / HTTP/1.1\r\nX-A: a\x7f\r\n\r\n", 0, API_ERR_INVALID_HEADER},
		{"GET / HTTP/1.1\r\nX-A : a\r\n\r\n", 0, API_ERR_INVALID_HEADER},
		{"GET / HTTP/1.1\r\nX-A: a\r\n folded\r\n\r\n", 0, API_ERR_INVALID_HEADER},
		{"GET / HTTP/1.1\r\nNoColon\r\n\r\n", 0, API_ERR_INVALID_HEADER},
		{"GET / HTTP/1.1\r\n: novalue\r\n\r\n", 0, API_ERR_INVALID_HEADER},
		{"GET / HTTP/1.1\r\nX(A): a\r\n\r\n", 0, API_ERR_INVALID_HEADER},
		{"GET / HTTP/2.0\r\n\r\n", 0, API_ERR_INVALID_REQUEST},
		{"GET / HTTP/1.1 \r\n\r\n", 0, API_ERR_INVALID_REQUEST},
		{"GET /  HTTP/1.1\r\n\r\n", 0, API_ERR_INVALID_REQUEST},
		{"GET  / HTTP/1.1\r\n\r\n", 0, API_ERR_INVALID_REQUEST},
		{"GET /\tx HTTP/1.1\r\n\r\n", 0, API_ERR_INVALID_REQUEST},
		{"GET / http/1.1\r\n\r\n", 0, API_ERR_INVALID_REQUEST},
		{"G(T / HTTP/1.1\r\n\r\n", 0, API_ERR_INVALID_REQUEST},
		{"GET\r\n\r\n", 0, API_ERR_INVALID_REQUEST},
		{"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11, API_ERR_INVALID_REQUEST},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n = bad[i].len ? bad[i].len : strlen(bad[i].head), hl = 0;
		enum api_err err = API_ERR_COUNT;
		print_message("case %zu\n", i);
		assert_int_equal(check(bad[i].head, n, &hl, &err), HTTP_HEAD_BAD);
		assert_int_equal(err, bad[i].err);
	}
}

/* An error already visible is reported before the head ends: a NUL or a
 * TLS handshake is refused at once, not after the deadline. */
static void refused_early(void **state)
{
	(void)state;
	size_t hl;
	enum api_err err;
	assert_int_equal(check("GET / HTTP/1.1\r\nX-A: a\0", 23, &hl, &err), HTTP_HEAD_BAD);
	assert_int_equal(check("\x16\x03\x01", 3, &hl, &err), HTTP_HEAD_BAD);
	assert_int_equal(err, API_ERR_INVALID_REQUEST);
	/* a CR at the end of what came so far may be followed by its LF */
	assert_int_equal(check("GET / HTTP/1.1\r", 15, &hl, &err), HTTP_HEAD_MORE);
}

static void size_cap(void **state)
{
	(void)state;
	size_t n = HTTP_HEAD_MAX + 100;
	char *s = malloc(n);
	assert_non_null(s);
	const char *start = "GET / HTTP/1.1\r\nX-Big: ";
	memcpy(s, start, strlen(start));
	memset(s + strlen(start), 'a', n - strlen(start));
	size_t hl;
	enum api_err err;
	/* below the cap: more; at it: too large */
	assert_int_equal(check(s, HTTP_HEAD_MAX - 1, &hl, &err), HTTP_HEAD_MORE);
	assert_int_equal(check(s, HTTP_HEAD_MAX, &hl, &err), HTTP_HEAD_BAD);
	assert_int_equal(err, API_ERR_HEADERS_TOO_LARGE);
	assert_int_equal(check(s, n, &hl, &err), HTTP_HEAD_BAD);
	/* a head that ends exactly at the cap is taken */
	memcpy(s + HTTP_HEAD_MAX - 4, "\r\n\r\n", 4);
	assert_int_equal(check(s, n, &hl, &err), HTTP_HEAD_OK);
	assert_int_equal(hl, HTTP_HEAD_MAX);
	free(s);
}

static void error_page(void **state)
{
	(void)state;
	char page[1024];
	size_t n = http_front_error_page(API_ERR_INVALID_HEADER, "bad \"x\"\n\xff", page,
					 sizeof(page));
	assert_true(n > 0 && n < sizeof(page));
	page[n] = '\0';
	assert_memory_equal(page, "HTTP/1.1 400 Bad Request\r\n", 26);
	assert_non_null(strstr(page, "\r\nConnection: close\r\n"));
	assert_non_null(strstr(page, "\r\nX-Content-Type-Options: nosniff\r\n"));
	assert_non_null(strstr(page, "\r\nContent-Type: application/json\r\n"));
	const char *body = strstr(page, "\r\n\r\n");
	assert_non_null(body);
	body += 4;
	unsigned long cl = strtoul(strstr(page, "Content-Length: ") + 16, NULL, 10);
	assert_int_equal(cl, strlen(body));
	json_error_t je;
	json_t *j = json_loads(body, 0, &je);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "code")),
			    "invalid_header");
	json_decref(j);
	/* too small a buffer: nothing, never a cut page */
	assert_int_equal(http_front_error_page(API_ERR_INVALID_HEADER, "x", page, 40), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(good_heads),   cmocka_unit_test(bad_heads),
		cmocka_unit_test(refused_early), cmocka_unit_test(size_cap),
		cmocka_unit_test(error_page),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
