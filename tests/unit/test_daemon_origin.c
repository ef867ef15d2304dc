/*
 * test_daemon_origin.c - web origins (origin.c): normal forms, lists, and
 * what matches what.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/http/origin.h"

static void normal_forms(void **state)
{
	(void)state;
	static const char *const pairs[][2] = {
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"HTTP://Example.COM:80", "http://example.com"},
		{"https://example.com:443/", "https://example.com"},
		{"https://example.com:8443", "https://example.com:8443"},
		{"http://[::1]:8080", "http://[::1]:8080"},
		{"http://[2001:DB8::1]", "http://[2001:db8::1]"},
		{"http://localhost:80", "http://localhost"},
		{"http://a_b.example", "http://a_b.example"},
	};
	char out[ORIGIN_MAX];
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		assert_int_equal(origin_normalize(pairs[i][0], out), 0);
		assert_string_equal(out, pairs[i][1]);
	}
	static const char *const bad[] = {
		"", "null", "example.com", "ftp://example.com", "http://", "http://:80",
		"http://example.com/path", "http://example.com//", "http://user@example.com",
		"http://example.com:0", "http://example.com:65536", "http://example.com:8o",
		"http://example.com:", "http://exa mple.com", "http://[::1", "http://[]",
		"http://[::g]", "http://.example.com", "http://-x", "http://example.com?x",
		"http://example.com#x", "http://ex\xc3\xa4mple.com", "http://example.com:1234567",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(origin_normalize(bad[i], out), -EINVAL);
		assert_string_equal(out, "");
	}
	assert_int_equal(origin_normalize(NULL, out), -EINVAL);
	char longest[ORIGIN_MAX + 8];
	memset(longest, 'a', sizeof(longest));
	memcpy(longest, "http://", 7);
	longest[sizeof(longest) - 1] = '\0';
	assert_int_equal(origin_normalize(longest, out), -EINVAL);
}

static void lists(void **state)
{
	(void)state;
	char why[160];
	assert_int_equal(origin_list_check("", why, sizeof(why)), 0);
	assert_int_equal(origin_list_check("https://a.example, http://b.example:8080", why,
					   sizeof(why)),
			 0);
	assert_int_equal(origin_list_check("https://a.example,null", why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "'null'"));
	assert_int_equal(origin_list_check("https://a.example,,", why, sizeof(why)), -EINVAL);
	const char *list = "https://dash.example, HTTP://Other.Example:8080/";
	char o[ORIGIN_MAX];
	/* positive control: a listed origin matches, in any spelling */
	assert_int_equal(origin_normalize("https://DASH.example:443", o), 0);
	assert_true(origin_in_list(o, list));
	assert_int_equal(origin_normalize("http://other.example:8080", o), 0);
	assert_true(origin_in_list(o, list));
	/* others do not: scheme, port, name */
	static const char *const no[] = {"http://dash.example", "https://dash.example:8443",
					 "https://rebind.example", "http://other.example"};
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		assert_int_equal(origin_normalize(no[i], o), 0);
		assert_false(origin_in_list(o, list));
	}
	assert_false(origin_in_list("", list));
	assert_false(origin_in_list(NULL, list));
	assert_false(origin_in_list("https://dash.example", ""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(normal_forms),
		cmocka_unit_test(lists),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
