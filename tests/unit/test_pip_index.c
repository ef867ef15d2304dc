/*
 * test_pip_index.c - the pip index URL check shared by the daemon's
 * --pip-index-url and the guest agent (common/pip_index.h): accepted forms,
 * the host[:port] pip's trusted-host gets, and every refusal, in particular
 * anything that could break a line of the INI file it is written into.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/pip_index.h"

static void expect_ok(const char *url, const char *want_host, int want_http)
{
	char host[PIP_INDEX_URL_MAX + 1];
	int http = -1;
	const char *why = NULL;
	int r = pip_index_check(url, host, sizeof(host), &http, &why);
	if (r != 0)
		fail_msg("%s refused: %d %s", url, r, why ? why : "");
	assert_string_equal(host, want_host);
	assert_int_equal(http, want_http);
	/* the out-parameters are optional */
	assert_int_equal(pip_index_check(url, NULL, 0, NULL, NULL), 0);
}

static void expect_bad(const char *url)
{
	const char *why = NULL;
	int r = pip_index_check(url, NULL, 0, NULL, &why);
	if (r != -EINVAL)
		fail_msg("'%s' gave %d, want -EINVAL", url, r);
	assert_non_null(why);
	assert_int_not_equal(why[0], '\0');
}

static void test_accepted(void **state)
{
	(void)state;
	expect_ok("https://pypi.org/simple", "pypi.org", 0);
	expect_ok("https://pypi.org/simple/", "pypi.org", 0);
	expect_ok("http://10.1.2.3:8080/simple/", "10.1.2.3:8080", 1);
	expect_ok("http://mirror.internal", "mirror.internal", 1);
	expect_ok("https://user:p%40ss@pkgs.example.com/pypi/simple", "pkgs.example.com", 0);
	expect_ok("http://[fd00::1]:3141/root/pypi/+simple/", "[fd00::1]:3141", 1);
	expect_ok("https://idx.example?x=1", "idx.example", 0);
	expect_ok("https://idx.example#frag", "idx.example", 0);
	expect_ok("http://a:65535", "a:65535", 1);
}

static void test_refused(void **state)
{
	(void)state;
	expect_bad("");
	expect_bad("pypi.org/simple");
	expect_bad("ftp://pypi.org/simple");
	expect_bad("HTTPS://pypi.org/simple");
	expect_bad("file:///srv/simple");
	expect_bad("https://");
	expect_bad("https:///simple");
	expect_bad("https://user@/simple");
	expect_bad("https://:8080/simple");
	expect_bad("http://host:/simple");
	expect_bad("http://host:0/simple");
	expect_bad("http://host:65536/simple");
	expect_bad("http://host:123456/simple");
	expect_bad("http://host:80x/simple");
	expect_bad("http://ho_st/simple");
	expect_bad("http://[]/simple");
	expect_bad("http://[fd00::1/simple");
	expect_bad("http://[fd00::g]/simple");
	expect_bad("http://[fd00::1]x/simple");
	/* what would break the INI line it is written into */
	expect_bad("https://pypi.org/simple\nindex-url = http://evil/");
	expect_bad("https://pypi.org/simple\r");
	expect_bad("https://pypi.org/sim ple");
	expect_bad("https://pypi.org/\tsimple");
	expect_bad("https://pypi.org/simple\x7f");
	expect_bad("https://pypi.org/s\xc3\xa9");
}

static void test_length(void **state)
{
	(void)state;
	char url[PIP_INDEX_URL_MAX + 2];
	memset(url, 'a', sizeof(url));
	memcpy(url, "https://x/", 10);
	url[PIP_INDEX_URL_MAX] = '\0'; /* exactly the cap */
	assert_int_equal(pip_index_check(url, NULL, 0, NULL, NULL), 0);
	url[PIP_INDEX_URL_MAX] = 'a';
	url[PIP_INDEX_URL_MAX + 1] = '\0'; /* one over */
	const char *why = NULL;
	assert_int_equal(pip_index_check(url, NULL, 0, NULL, &why), -E2BIG);
	assert_non_null(why);
	/* a host buffer too small for the host */
	char small[4];
	assert_int_equal(pip_index_check("https://pypi.org/", small, sizeof(small), NULL, NULL),
			 -ENOSPC);
	char exact[9];
	assert_int_equal(pip_index_check("https://pypi.org/", exact, sizeof(exact), NULL, NULL), 0);
	assert_string_equal(exact, "pypi.org");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accepted),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_length),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
