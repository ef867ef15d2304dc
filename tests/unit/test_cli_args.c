/*
 * test_cli_args.c - the CLI's argument parsing (src/cli/args.c: both flag
 * forms, "--", trailing command words, required flags and positionals,
 * help, --json and --ca-file, limits, integers) and URL building (src/cli/urlpath.c: percent-
 * encoding of path segments and query values, refused segments, caps).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/args.h"
#include "client/urlpath.h"

/* A spec like `sandbox exec`: ID, value/repeat/bool flags, trailing CMD. */
static const struct arg_flag exec_flags[] = {
	{"timeout", ARG_VALUE, 0, "S", "seconds"},
	{"env", ARG_REPEAT, 0, "K=V", "env"},
	{"stdin", ARG_BOOL, 0, NULL, "stdin"},
	{NULL, 0, 0, NULL, NULL},
};
static const char *const id_pos[] = {"ID", NULL};
static const struct args_spec exec_spec = {
	.path = "sandbox exec",
	.usage = "ID [--] CMD...",
	.summary = "exec",
	.flags = exec_flags,
	.positionals = id_pos,
	.rest = "CMD",
	.rest_required = 1,
};

/* A spec like `sandbox create`: a required flag, no positionals. */
static const struct arg_flag create_flags[] = {
	{"template", ARG_VALUE, 1, "T", "template"},
	{"ttl", ARG_VALUE, 0, "S", "ttl"},
	{NULL, 0, 0, NULL, NULL},
};
static const struct args_spec create_spec = {
	.path = "sandbox create",
	.usage = "--template T",
	.summary = "create",
	.flags = create_flags,
};

/* Two positionals, no trailing words (like `sandbox set-ttl ID S`). */
static const char *const two_pos[] = {"ID", "S", NULL};
static const struct args_spec two_spec = {
	.path = "sandbox set-ttl",
	.usage = "ID S",
	.summary = "ttl",
	.positionals = two_pos,
};

#define ARGV(...) ((char *[]){__VA_ARGS__})
#define ARGC(...) ((int)(sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)))
#define PARSE(spec, res, err, ...) \
	args_parse(&(spec), ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), (res), (err), sizeof(err))

static void test_flag_forms_are_equal(void **state)
{
	(void)state;
	struct args_result a, b;
	char err[256];
	assert_int_equal(PARSE(create_spec, &a, err, "--template", "code-interpreter", "--ttl",
			       "3600"), 0);
	assert_int_equal(PARSE(create_spec, &b, err, "--template=code-interpreter",
			       "--ttl=3600"), 0);
	assert_string_equal(args_value(&a, "template"), "code-interpreter");
	assert_string_equal(args_value(&b, "template"), "code-interpreter");
	assert_string_equal(args_value(&a, "ttl"), "3600");
	assert_string_equal(args_value(&b, "ttl"), "3600");
	assert_null(a.rest);
	assert_int_equal(a.npos, 0);
	args_result_free(&a);
	args_result_free(&b);
	/* A value that holds '=' keeps everything after the first one. */
	assert_int_equal(PARSE(create_spec, &a, err, "--template=a=b"), 0);
	assert_string_equal(args_value(&a, "template"), "a=b");
	args_result_free(&a);
}

static void test_exec_seed_example(void **state)
{
	(void)state;
	struct args_result a;
	char err[256];
	/* pandastack sandbox exec <id> --timeout 30 -- 'python -c "print(2 + 2)"' */
	assert_int_equal(PARSE(exec_spec, &a, err, "sbx_1", "--timeout", "30", "--",
			       "python -c \"print(2 + 2)\""), 0);
	assert_int_equal(a.npos, 1);
	assert_string_equal(a.pos[0], "sbx_1");
	assert_string_equal(args_value(&a, "timeout"), "30");
	assert_string_equal(a.rest, "python -c \"print(2 + 2)\"");
	args_result_free(&a);
}

static void test_rest_words_joined(void **state)
{
	(void)state;
	struct args_result a;
	char err[256];
	/* Several words after "--" are joined with single spaces; flags there
	 * belong to the command. */
	assert_int_equal(PARSE(exec_spec, &a, err, "sbx_1", "--", "ls", "-la", "--timeout", "/tmp"),
			 0);
	assert_string_equal(a.rest, "ls -la --timeout /tmp");
	assert_null(args_value(&a, "timeout"));
	args_result_free(&a);
	/* Without "--" the first extra word starts the command. */
	assert_int_equal(PARSE(exec_spec, &a, err, "--timeout=5", "sbx_1", "echo", "hi", "--json"),
			 0);
	assert_string_equal(a.rest, "echo hi --json");
	assert_string_equal(args_value(&a, "timeout"), "5");
	assert_int_equal(a.json, 0);
	args_result_free(&a);
	/* "-h" after "--" is the command's, not a help request. */
	assert_int_equal(PARSE(exec_spec, &a, err, "sbx_1", "--", "grep", "-h", "x"), 0);
	assert_int_equal(a.help, 0);
	assert_string_equal(a.rest, "grep -h x");
	args_result_free(&a);
}

static void test_missing_pieces_are_usage_errors(void **state)
{
	(void)state;
	struct args_result a;
	char err[256];
	assert_int_equal(PARSE(exec_spec, &a, err, "sbx_1"), -EINVAL);
	assert_non_null(strstr(err, "missing CMD"));
	assert_int_equal(PARSE(exec_spec, &a, err, "sbx_1", "--"), -EINVAL);
	assert_non_null(strstr(err, "missing CMD"));
	assert_int_equal(PARSE(exec_spec, &a, err, "sbx_1", "--", ""), -EINVAL);
	assert_non_null(strstr(err, "CMD is empty"));
	assert_int_equal(PARSE(exec_spec, &a, err, "--timeout", "5"), -EINVAL);
	assert_non_null(strstr(err, "missing ID"));
	assert_int_equal(PARSE(create_spec, &a, err, "--ttl", "5"), -EINVAL);
	assert_string_equal(err, "missing --template T");
	assert_int_equal(PARSE(create_spec, &a, err, "--template"), -EINVAL);
	assert_string_equal(err, "flag --template needs a value (T)");
	assert_int_equal(PARSE(create_spec, &a, err, "--template="), -EINVAL);
	assert_non_null(strstr(err, "non-empty"));
	assert_int_equal(PARSE(two_spec, &a, err, "sbx_1"), -EINVAL);
	assert_string_equal(err, "missing S");
	assert_null(a.rest);
}

static void test_bad_flags(void **state)
{
	(void)state;
	struct args_result a;
	char err[256];
	assert_int_equal(PARSE(create_spec, &a, err, "--template", "t", "--bogus"), -EINVAL);
	assert_string_equal(err, "unknown flag --bogus");
	assert_int_equal(PARSE(create_spec, &a, err, "--template", "t", "-x"), -EINVAL);
	assert_string_equal(err, "unknown flag -x");
	assert_int_equal(PARSE(exec_spec, &a, err, "sbx_1", "--stdin=yes", "--", "cat"), -EINVAL);
	assert_string_equal(err, "flag --stdin takes no value");
	assert_int_equal(PARSE(create_spec, &a, err, "--template", "t", "extra"), -EINVAL);
	assert_string_equal(err, "unexpected argument 'extra'");
	assert_int_equal(PARSE(create_spec, &a, err, "--template", "t", "--json=1"), -EINVAL);
	/* A flag name is matched whole, not as a prefix. */
	assert_int_equal(PARSE(create_spec, &a, err, "--temp", "t"), -EINVAL);
}

static void test_help_and_json(void **state)
{
	(void)state;
	struct args_result a;
	char err[256];
	/* Help wins over an otherwise broken command line. */
	assert_int_equal(PARSE(create_spec, &a, err, "--bogus", "-h"), 0);
	assert_int_equal(a.help, 1);
	args_result_free(&a);
	assert_int_equal(PARSE(exec_spec, &a, err, "--help"), 0);
	assert_int_equal(a.help, 1);
	args_result_free(&a);
	assert_int_equal(PARSE(create_spec, &a, err, "--template", "t", "--help", "--bogus"), 0);
	assert_int_equal(a.help, 1);
	assert_int_equal(a.nocc, 0);
	args_result_free(&a);
	/* Once the command's words began, -h is theirs. */
	assert_int_equal(PARSE(exec_spec, &a, err, "sbx_1", "ls", "-h"), 0);
	assert_int_equal(a.help, 0);
	assert_string_equal(a.rest, "ls -h");
	args_result_free(&a);
	assert_int_equal(PARSE(two_spec, &a, err, "--", "a", "b", "c", "-h"), -EINVAL);
	assert_string_equal(err, "unexpected argument 'c'");
	assert_int_equal(PARSE(create_spec, &a, err, "--json", "--template", "t"), 0);
	assert_int_equal(a.json, 1);
	assert_int_equal(a.help, 0);
	args_result_free(&a);
}

/* --ca-file, like --json, is every command's: both forms, a value needed;
 * inside the command's trailing words it is theirs. */
static void test_ca_file(void **state)
{
	(void)state;
	struct args_result a;
	char err[256];
	assert_int_equal(PARSE(create_spec, &a, err, "--template", "t"), 0);
	assert_null(a.ca_file);
	args_result_free(&a);
	assert_int_equal(PARSE(create_spec, &a, err, "--ca-file", "/c.pem", "--template", "t"), 0);
	assert_string_equal(a.ca_file, "/c.pem");
	assert_int_equal(a.nocc, 1);
	args_result_free(&a);
	assert_int_equal(PARSE(exec_spec, &a, err, "sbx_1", "--ca-file=/a.pem", "--ca-file", "/b.pem",
			       "--", "ls", "--ca-file", "x"),
			 0);
	assert_string_equal(a.ca_file, "/b.pem");
	assert_string_equal(a.rest, "ls --ca-file x");
	args_result_free(&a);
	assert_int_equal(PARSE(create_spec, &a, err, "--template", "t", "--ca-file"), -EINVAL);
	assert_string_equal(err, "flag --ca-file needs a value (FILE)");
	assert_int_equal(PARSE(create_spec, &a, err, "--template", "t", "--ca-file="), -EINVAL);
	assert_string_equal(err, "flag --ca-file needs a non-empty value");
}

static void test_repeat_and_last_value(void **state)
{
	(void)state;
	struct args_result a;
	char err[256];
	assert_int_equal(PARSE(exec_spec, &a, err, "sbx_1", "--env", "A=1", "--timeout", "1",
			       "--env=B=2", "--timeout", "2", "--stdin", "--", "env"), 0);
	const char *v[4];
	assert_int_equal(args_values(&a, "env", v, 4), 2);
	assert_string_equal(v[0], "A=1");
	assert_string_equal(v[1], "B=2");
	/* The count is the real one even when cap is smaller. */
	assert_int_equal(args_values(&a, "env", v, 1), 2);
	assert_string_equal(args_value(&a, "timeout"), "2");
	assert_int_equal(args_has(&a, "stdin"), 1);
	assert_int_equal(args_has(&a, "nope"), 0);
	assert_null(args_value(&a, "nope"));
	args_result_free(&a);
}

static void test_positionals(void **state)
{
	(void)state;
	struct args_result a;
	char err[256];
	/* "-" and negative numbers are values, not flags. */
	assert_int_equal(PARSE(two_spec, &a, err, "-", "-5"), 0);
	assert_string_equal(a.pos[0], "-");
	assert_string_equal(a.pos[1], "-5");
	args_result_free(&a);
	/* After "--" a command without trailing words takes positionals, so an
	 * id may start with a dash. */
	assert_int_equal(PARSE(two_spec, &a, err, "--", "--weird", "7"), 0);
	assert_string_equal(a.pos[0], "--weird");
	assert_string_equal(a.pos[1], "7");
	args_result_free(&a);
	assert_int_equal(PARSE(two_spec, &a, err, "--", "a", "b", "c"), -EINVAL);
	assert_string_equal(err, "unexpected argument 'c'");
}

static void test_limits(void **state)
{
	(void)state;
	struct args_result a;
	char err[256];
	/* The trailing words are capped. */
	size_t big = ARGS_REST_MAX / 2 + 1;
	char *w = malloc(big + 1);
	assert_non_null(w);
	memset(w, 'x', big);
	w[big] = '\0';
	char *argv[] = {"sbx_1", "--", w, w};
	assert_int_equal(args_parse(&exec_spec, 4, argv, &a, err, sizeof(err)), -E2BIG);
	assert_null(a.rest);
	char *argv1[] = {"sbx_1", "--", w};
	assert_int_equal(args_parse(&exec_spec, 3, argv1, &a, err, sizeof(err)), 0);
	assert_int_equal(strlen(a.rest), big);
	args_result_free(&a);
	free(w);
	/* So is the number of flags kept. */
	int n = 2 * (ARGS_MAX_VALUES + 1) + 2;
	char **many = calloc((size_t)n, sizeof(char *));
	assert_non_null(many);
	many[0] = "sbx_1";
	for (int i = 1; i + 1 < n - 1; i += 2) {
		many[i] = "--env";
		many[i + 1] = "A=1";
	}
	many[n - 1] = "--";
	assert_int_equal(args_parse(&exec_spec, n - 1, many, &a, err, sizeof(err)), -E2BIG);
	free(many);
	/* A tiny error buffer is still NUL-terminated. */
	char tiny[8];
	assert_int_equal(PARSE(create_spec, &a, tiny, "--bogus-flag-name"), -EINVAL);
	assert_int_equal(strlen(tiny), 7);
}

static void test_parse_int64(void **state)
{
	(void)state;
	int64_t v;
	assert_int_equal(args_parse_int64("3600", 1, 86400, &v), 0);
	assert_int_equal(v, 3600);
	assert_int_equal(args_parse_int64("-3", -5, 5, &v), 0);
	assert_int_equal(v, -3);
	assert_int_equal(args_parse_int64("+3", 0, 5, &v), 0);
	assert_int_equal(v, 3);
	assert_int_equal(args_parse_int64("0", 1, 5, &v), -ERANGE);
	assert_int_equal(args_parse_int64("6", 1, 5, &v), -ERANGE);
	assert_int_equal(args_parse_int64("99999999999999999999", 0, INT64_MAX, &v), -ERANGE);
	assert_int_equal(args_parse_int64("", 0, 5, &v), -EINVAL);
	assert_int_equal(args_parse_int64("-", 0, 5, &v), -EINVAL);
	assert_int_equal(args_parse_int64(" 5", 0, 5, &v), -EINVAL);
	assert_int_equal(args_parse_int64("5s", 0, 5, &v), -EINVAL);
	assert_int_equal(args_parse_int64("0x10", 0, 100, &v), -EINVAL);
	assert_int_equal(args_parse_int64("1.5", 0, 5, &v), -EINVAL);
	assert_int_equal(args_parse_int64(NULL, 0, 5, &v), -EINVAL);
}

static void test_join(void **state)
{
	(void)state;
	char *s;
	char *w[] = {"a", "", "b c"};
	assert_int_equal(args_join(3, w, 100, &s), 0);
	assert_string_equal(s, "a  b c");
	free(s);
	assert_int_equal(args_join(0, w, 100, &s), 0);
	assert_string_equal(s, "");
	free(s);
	assert_int_equal(args_join(3, w, 6, &s), 0);
	free(s);
	assert_int_equal(args_join(3, w, 5, &s), -E2BIG);
	assert_null(s);
}

/* ---- URLs ----------------------------------------------------------------- */

static void test_escape(void **state)
{
	(void)state;
	char out[64];
	assert_int_equal(url_escape("/workspace/a b.csv", 18, out, sizeof(out)), 24);
	assert_string_equal(out, "%2Fworkspace%2Fa%20b.csv");
	assert_int_equal(url_escape("AZaz09-._~", 10, out, sizeof(out)), 10);
	assert_string_equal(out, "AZaz09-._~");
	assert_true(url_escape("\xc3\xa9?&=#%+", 8, out, sizeof(out)) > 0);
	assert_string_equal(out, "%C3%A9%3F%26%3D%23%25%2B");
	assert_int_equal(url_escape("", 0, out, sizeof(out)), 0);
	assert_string_equal(out, "");
	/* Exactly fitting, then one byte short. */
	assert_int_equal(url_escape("a b", 3, out, 6), 5);
	assert_int_equal(url_escape("a b", 3, out, 5), -ENAMETOOLONG);
	assert_int_equal(url_escape("abc", 3, out, 3), -ENAMETOOLONG);
}

static void test_urlpath_fs(void **state)
{
	(void)state;
	struct urlpath u;
	urlpath_init(&u);
	urlpath_lit(&u, "/v1/sandboxes");
	urlpath_seg(&u, "sbx_0123");
	urlpath_lit(&u, "/fs");
	urlpath_query(&u, "path", "/workspace/data.csv");
	urlpath_query(&u, "recursive", "true");
	assert_int_equal(urlpath_status(&u), 0);
	assert_string_equal(u.s, "/v1/sandboxes/sbx_0123/fs?path=%2Fworkspace%2Fdata.csv"
				 "&recursive=true");
	assert_int_equal(u.len, strlen(u.s));
}

static void test_urlpath_hostile_segments(void **state)
{
	(void)state;
	struct urlpath u;
	/* A slash or a query inside an id stays inside its segment. */
	urlpath_init(&u);
	urlpath_lit(&u, "/v1/sandboxes");
	urlpath_seg(&u, "../keys?x=1");
	assert_int_equal(urlpath_status(&u), 0);
	assert_string_equal(u.s, "/v1/sandboxes/..%2Fkeys%3Fx%3D1");
	/* Segments that would name another resource are refused, and the
	 * error sticks. */
	const char *bad[] = {"", ".", ".."};
	for (size_t i = 0; i < 3; i++) {
		urlpath_init(&u);
		urlpath_lit(&u, "/v1/sandboxes");
		urlpath_seg(&u, bad[i]);
		urlpath_lit(&u, "/exec");
		assert_int_equal(urlpath_status(&u), -EINVAL);
	}
	urlpath_init(&u);
	urlpath_seg(&u, NULL);
	assert_int_equal(urlpath_status(&u), -EINVAL);
	/* Nothing may follow the query but more query. */
	urlpath_init(&u);
	urlpath_lit(&u, "/v1/x");
	urlpath_query(&u, "a", "b");
	urlpath_lit(&u, "/y");
	assert_int_equal(urlpath_status(&u), -EINVAL);
	urlpath_init(&u);
	urlpath_query(&u, "", "b");
	assert_int_equal(urlpath_status(&u), -EINVAL);
}

static void test_urlpath_cap(void **state)
{
	(void)state;
	struct urlpath u;
	/* A 4095-byte guest path of spaces needs 12285 bytes: it fits. */
	char *p = malloc(4096);
	assert_non_null(p);
	memset(p, ' ', 4095);
	p[0] = '/';
	p[4095] = '\0';
	urlpath_init(&u);
	urlpath_lit(&u, "/v1/sandboxes/sbx_1/fs");
	urlpath_query(&u, "path", p);
	assert_int_equal(urlpath_status(&u), 0);
	assert_int_equal(u.len, strlen("/v1/sandboxes/sbx_1/fs?path=%2F") + 3 * 4094);
	/* Two of them do not. */
	urlpath_query(&u, "again", p);
	assert_int_equal(urlpath_status(&u), -ENAMETOOLONG);
	assert_true(u.len < URLPATH_MAX);
	assert_int_equal(strlen(u.s), u.len);
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flag_forms_are_equal),
		cmocka_unit_test(test_exec_seed_example),
		cmocka_unit_test(test_rest_words_joined),
		cmocka_unit_test(test_missing_pieces_are_usage_errors),
		cmocka_unit_test(test_bad_flags),
		cmocka_unit_test(test_help_and_json),
		cmocka_unit_test(test_ca_file),
		cmocka_unit_test(test_repeat_and_last_value),
		cmocka_unit_test(test_positionals),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_parse_int64),
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_urlpath_fs),
		cmocka_unit_test(test_urlpath_hostile_segments),
		cmocka_unit_test(test_urlpath_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
