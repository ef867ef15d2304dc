/*
 * test_web_static.c - the dashboard's file names (web_static.c): which
 * names are served, their content types, which are cached for good, the
 * nonce its pages' script tags get, and the two dashboard routes in the
 * route table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/api/api.h"
#include "daemon/http/route.h"
#include "daemon/http/web_static.h"

static void nonce(void **state)
{
	(void)state;
	const char *html = "<head><script src=\"/ui/app.js\" defer></script>\n"
			   "<SCRIPT>x</SCRIPT><scripts><script/></head><p>&lt;script</p><script";
	size_t n = 0;
	char *out = web_static_add_nonce(html, strlen(html), "bm9uY2U=", &n);
	assert_non_null(out);
	assert_int_equal(n, strlen(out));
	assert_string_equal(out, "<head><script nonce=\"bm9uY2U=\" src=\"/ui/app.js\" defer>"
				 "</script>\n<SCRIPT nonce=\"bm9uY2U=\">x</SCRIPT><scripts>"
				 "<script nonce=\"bm9uY2U=\"/></head><p>&lt;script</p>"
				 "<script nonce=\"bm9uY2U=\"");
	free(out);
	/* nothing to add: the page as it is */
	out = web_static_add_nonce("<p>hi</p>", 9, "n", &n);
	assert_string_equal(out, "<p>hi</p>");
	assert_int_equal(n, 9);
	free(out);
	out = web_static_add_nonce("", 0, "n", &n);
	assert_string_equal(out, "");
	free(out);
}

static void names(void **state)
{
	(void)state;
	static const char *const ok[] = {"index.html", "frame.html", "app.K3V2X7QZ.js",
					 "a", "A-b_c.d.css", "9.png"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		assert_true(web_static_name_ok(ok[i]));
	static const char *const bad[] = {"", ".", "..", "...", ".hidden", "-x.js", "_x.js",
					  "a..b", "a/b", "a\\b", "a b", "a%2fb", "x.js\n",
					  "\xc3\xa9.js", "a:b"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(web_static_name_ok(bad[i]));
	char longest[WEB_STATIC_NAME_MAX + 2];
	memset(longest, 'a', sizeof(longest));
	longest[WEB_STATIC_NAME_MAX] = '\0';
	assert_true(web_static_name_ok(longest));
	longest[WEB_STATIC_NAME_MAX] = 'a';
	longest[WEB_STATIC_NAME_MAX + 1] = '\0';
	assert_false(web_static_name_ok(longest));
}

static void types(void **state)
{
	(void)state;
	assert_string_equal(web_static_content_type("index.html"), "text/html; charset=utf-8");
	assert_string_equal(web_static_content_type("a.b.js"), "text/javascript; charset=utf-8");
	assert_string_equal(web_static_content_type("s.css"), "text/css; charset=utf-8");
	assert_string_equal(web_static_content_type("i.svg"), "image/svg+xml");
	assert_null(web_static_content_type("noext"));
	assert_null(web_static_content_type("x.key"));
	assert_null(web_static_content_type("x.html.bak"));
	assert_null(web_static_content_type("x.JS"));
}

static void caching(void **state)
{
	(void)state;
	assert_true(web_static_immutable("app.K3V2X7QZ.js"));
	assert_true(web_static_immutable("a.12345678.css"));
	assert_false(web_static_immutable("index.html"));
	assert_false(web_static_immutable("app.k3v2x7qz.js"));  /* lower case */
	assert_false(web_static_immutable("app.K3V2X7Q.js"));   /* 7 characters */
	assert_false(web_static_immutable("appK3V2X7QZ.js"));    /* no dot before */
	assert_false(web_static_immutable("K3V2X7QZ.js"));
}

static void routes(void **state)
{
	(void)state;
	size_t n;
	const struct route *t = routes_table(&n);
	char params[ROUTE_MAX_PARAMS][ROUTE_PARAM_MAX];
	int known;
	const struct route *r = route_find(t, n, "GET", "/", params, &known);
	assert_non_null(r);
	assert_int_equal(r->auth, ROUTE_AUTH_NONE);
	r = route_find(t, n, "GET", "/ui/app.js", params, &known);
	assert_non_null(r);
	assert_int_equal(r->auth, ROUTE_AUTH_NONE);
	assert_string_equal(params[0], "app.js");
	assert_null(route_find(t, n, "GET", "/ui/a/b.js", params, &known));
	assert_null(route_find(t, n, "GET", "/ui/", params, &known));
	/* nothing else is open */
	size_t open = 0;
	for (size_t i = 0; i < n; i++)
		open += t[i].auth == ROUTE_AUTH_NONE;
	assert_int_equal(open, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names),
		cmocka_unit_test(nonce),
		cmocka_unit_test(types),
		cmocka_unit_test(caching),
		cmocka_unit_test(routes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
