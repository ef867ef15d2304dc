/*
 * test_daemon_request.c - the daemon's pure request handling: body
 * validation (request_body.c), route matching (route_match.c) and --listen
 * parsing (config.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/utf8.h"
#include "daemon/api/api.h"
#include "daemon/api_errors.h"
#include "daemon/config.h"
#include "daemon/http/request_body.h"
#include "daemon/http/route.h"

static const struct body_limits lim = {.max_ttl_seconds = 86400,
				       .max_exec_timeout_seconds = 3600};

#define S(lit) (lit), (sizeof(lit) - 1)

/* Expect a parse failure with this error code. */
#define EXPECT_CREATE_FAIL(body, want_code)                                                \
	do {                                                                               \
		struct create_sandbox_body b;                                              \
		struct body_error e = {0};                                                 \
		assert_int_equal(body_parse_create_sandbox(S(body), &lim, &b, &e), -EINVAL); \
		assert_string_equal(api_errors_code(e.code), want_code);                                    \
		assert_null(b.root);                                                       \
	} while (0)

static void create_ok(void **state)
{
	(void)state;
	struct create_sandbox_body b;
	struct body_error e = {0};
	assert_int_equal(body_parse_create_sandbox(
				 S("{\"template\": \"code-interpreter\", \"ttl_seconds\": 3600,"
				   " \"env\": {\"A_1\": \"x\"}, \"metadata\": {\"user\": \"alice\"}}"),
				 &lim, &b, &e),
			 0);
	assert_string_equal(b.template_name, "code-interpreter");
	assert_int_equal(b.ttl_seconds, 3600);
	assert_string_equal(json_string_value(json_object_get(b.env, "A_1")), "x");
	assert_string_equal(json_string_value(json_object_get(b.metadata, "user")), "alice");
	create_sandbox_body_clear(&b);

	assert_int_equal(body_parse_create_sandbox(S("{\"template\":\"base\"}"), &lim, &b, &e), 0);
	assert_int_equal(b.ttl_seconds, 0);
	assert_true(json_is_object(b.env) && json_object_size(b.env) == 0);
	assert_true(json_is_object(b.metadata) && json_object_size(b.metadata) == 0);
	create_sandbox_body_clear(&b);
}

static void create_rejects(void **state)
{
	(void)state;
	EXPECT_CREATE_FAIL("", "invalid_json");
	EXPECT_CREATE_FAIL("{", "invalid_json");
	EXPECT_CREATE_FAIL("[]", "invalid_json");
	EXPECT_CREATE_FAIL("\"base\"", "invalid_json");
	EXPECT_CREATE_FAIL("{\"template\":\"a\",\"template\":\"b\"}", "invalid_json");
	EXPECT_CREATE_FAIL("{}", "missing_field");
	EXPECT_CREATE_FAIL("{\"template\": 5}", "invalid_field");
	EXPECT_CREATE_FAIL("{\"template\": \"\"}", "invalid_field");
	EXPECT_CREATE_FAIL("{\"template\": \"../etc\"}", "invalid_field");
	EXPECT_CREATE_FAIL("{\"template\": \"Base\"}", "invalid_field");
	EXPECT_CREATE_FAIL("{\"template\": \"-x\"}", "invalid_field");
	EXPECT_CREATE_FAIL("{\"template\": \"base\", \"cpu\": 2}", "unknown_field");
	EXPECT_CREATE_FAIL("{\"template\": \"base\", \"ttl_seconds\": 0}", "invalid_field");
	EXPECT_CREATE_FAIL("{\"template\": \"base\", \"ttl_seconds\": -5}", "invalid_field");
	EXPECT_CREATE_FAIL("{\"template\": \"base\", \"ttl_seconds\": 86401}", "invalid_field");
	EXPECT_CREATE_FAIL("{\"template\": \"base\", \"ttl_seconds\": 1.5}", "invalid_field");
	EXPECT_CREATE_FAIL("{\"template\": \"base\", \"ttl_seconds\": \"60\"}", "invalid_field");
	EXPECT_CREATE_FAIL("{\"template\": \"base\", \"ttl_seconds\": 99999999999999999999}",
			   "invalid_json");
	EXPECT_CREATE_FAIL("{\"template\": \"base\", \"env\": []}", "invalid_field");
	EXPECT_CREATE_FAIL("{\"template\": \"base\", \"env\": {\"A\": 1}}", "invalid_field");
	EXPECT_CREATE_FAIL("{\"template\": \"base\", \"env\": {\"1A\": \"x\"}}", "invalid_field");
	EXPECT_CREATE_FAIL("{\"template\": \"base\", \"env\": {\"A=B\": \"x\"}}", "invalid_field");
	EXPECT_CREATE_FAIL("{\"template\": \"base\", \"env\": {\"\": \"x\"}}", "invalid_field");
	EXPECT_CREATE_FAIL("{\"template\": \"base\", \"env\": {\"A\": \"x\\u0000y\"}}",
			   "invalid_json");
	EXPECT_CREATE_FAIL("{\"template\": \"base\", \"metadata\": {\"k\": 1}}", "invalid_field");
	EXPECT_CREATE_FAIL("{\"template\": \"base\", \"metadata\": {\"a b\": \"x\"}}",
			   "invalid_field");
	EXPECT_CREATE_FAIL("{\"template\": \"base\", \"metadata\": {\"k\": \"a\\nb\"}}",
			   "invalid_field");
	EXPECT_CREATE_FAIL("{\"template\": \"base\", \"metadata\": null}", "invalid_field");
	/* bidirectional overrides would make the dashboard show another text */
	EXPECT_CREATE_FAIL("{\"template\": \"base\", \"metadata\": {\"y\": \"\\u202eevil\"}}",
			   "invalid_field");
	EXPECT_CREATE_FAIL("{\"template\": \"base\", \"metadata\": {\"y\": \"a\\u0085\"}}",
			   "invalid_field");
}

static void create_from_snapshot_rejects(void **state)
{
	(void)state;
	EXPECT_CREATE_FAIL("{\"snapshot\": \"snap_0123\"}", "invalid_field");
	EXPECT_CREATE_FAIL("{\"snapshot\": \"sbx_0123456789abcdef0123\"}", "invalid_field");
	EXPECT_CREATE_FAIL("{\"snapshot\": \"snap_0123456789ABCDEF0123\"}", "invalid_field");
	EXPECT_CREATE_FAIL("{\"snapshot\": 7}", "invalid_field");
	EXPECT_CREATE_FAIL("{\"template\": \"base\", \"on_timeout\": \"kill\"}", "invalid_field");
	EXPECT_CREATE_FAIL("{\"on_timeout\": \"pause\"}", "missing_field");
}

/* A create from a snapshot: the template may go, on_timeout is checked. */
static void create_from_snapshot(void **state)
{
	(void)state;
	struct create_sandbox_body b;
	struct body_error e = {0};
	assert_int_equal(body_parse_create_sandbox(
				 S("{\"snapshot\": \"snap_0123456789abcdef0123\", \"on_timeout\": \"pause\"}"),
				 &lim, &b, &e),
			 0);
	assert_string_equal(b.snapshot, "snap_0123456789abcdef0123");
	assert_null(b.template_name);
	assert_string_equal(b.on_timeout, "pause");
	create_sandbox_body_clear(&b);
	assert_int_equal(body_parse_create_sandbox(
				 S("{\"template\": \"base\", \"on_timeout\": \"stop\"}"), &lim, &b, &e),
			 0);
	assert_null(b.snapshot);
	assert_string_equal(b.on_timeout, "stop");
	create_sandbox_body_clear(&b);
}

/* Snapshot and fork bodies: both may be empty; count is 1..16. */
static void snapshot_and_fork_bodies(void **state)
{
	(void)state;
	struct snapshot_body sb;
	struct fork_body fb;
	struct body_error e = {0};
	assert_int_equal(body_parse_snapshot(NULL, 0, &sb, &e), 0);
	assert_null(sb.name);
	assert_int_equal(body_parse_snapshot(S("{\"name\": \"before the change\"}"), &sb, &e), 0);
	assert_string_equal(sb.name, "before the change");
	snapshot_body_clear(&sb);
	assert_int_equal(body_parse_snapshot(S("{\"name\": \"\"}"), &sb, &e), -EINVAL);
	assert_string_equal(api_errors_code(e.code), "invalid_field");
	assert_int_equal(body_parse_snapshot(S("{\"name\": \"a\\nb\"}"), &sb, &e), -EINVAL);
	assert_int_equal(body_parse_snapshot(S("{\"label\": \"x\"}"), &sb, &e), -EINVAL);
	assert_string_equal(api_errors_code(e.code), "unknown_field");

	assert_int_equal(body_parse_fork(NULL, 0, &lim, &fb, &e), 0);
	assert_int_equal(fb.count, 1);
	assert_int_equal(fb.ttl_seconds, 0);
	assert_int_equal(body_parse_fork(S("{\"count\": 16, \"ttl_seconds\": 60}"), &lim, &fb, &e), 0);
	assert_int_equal(fb.count, 16);
	assert_int_equal(fb.ttl_seconds, 60);
	static const char *const bad[] = {"{\"count\": 0}", "{\"count\": 17}", "{\"count\": -1}",
					  "{\"count\": 1.5}", "{\"count\": \"2\"}",
					  "{\"ttl_seconds\": 0}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(body_parse_fork(bad[i], strlen(bad[i]), &lim, &fb, &e), -EINVAL);
		assert_string_equal(api_errors_code(e.code), "invalid_field");
	}

	/* resume: nothing, or a TTL as for create */
	struct resume_body rb;
	assert_int_equal(body_parse_resume(NULL, 0, &lim, &rb, &e), 0);
	assert_int_equal(rb.ttl_seconds, 0);
	assert_int_equal(body_parse_resume(S("{}"), &lim, &rb, &e), 0);
	assert_int_equal(rb.ttl_seconds, 0);
	assert_int_equal(body_parse_resume(S("{\"ttl_seconds\": 120}"), &lim, &rb, &e), 0);
	assert_int_equal(rb.ttl_seconds, 120);
	assert_int_equal(body_parse_resume(S("{\"ttl_seconds\": 0}"), &lim, &rb, &e), -EINVAL);
	assert_string_equal(api_errors_code(e.code), "invalid_field");
	assert_int_equal(body_parse_resume(S("{\"count\": 2}"), &lim, &rb, &e), -EINVAL);
	assert_string_equal(api_errors_code(e.code), "unknown_field");
}

static void create_size_caps(void **state)
{
	(void)state;
	/* 33 metadata keys: one over the cap. */
	char buf[4096];
	size_t n = (size_t)snprintf(buf, sizeof(buf), "{\"template\":\"base\",\"metadata\":{");
	for (int i = 0; i < 33; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s\"k%d\":\"v\"", i ? "," : "", i);
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "}}");
	struct create_sandbox_body b;
	struct body_error e = {0};
	assert_int_equal(body_parse_create_sandbox(buf, n, &lim, &b, &e), -EINVAL);
	assert_string_equal(api_errors_code(e.code), "invalid_field");

	/* An env value one byte over 32 KiB. */
	size_t vlen = BODY_ENV_VALUE_MAX + 1;
	char *big = malloc(vlen + 64);
	assert_non_null(big);
	n = (size_t)sprintf(big, "{\"template\":\"base\",\"env\":{\"A\":\"");
	memset(big + n, 'x', vlen);
	n += vlen;
	n += (size_t)sprintf(big + n, "\"}}");
	assert_int_equal(body_parse_create_sandbox(big, n, &lim, &b, &e), -EINVAL);
	assert_string_equal(api_errors_code(e.code), "invalid_field");
	free(big);
}

static void exec_ok(void **state)
{
	(void)state;
	struct exec_body b;
	struct body_error e = {0};
	assert_int_equal(body_parse_exec(S("{\"cmd\": \"python -c \\\"print(2 + 2)\\\"\", "
					   "\"timeout_seconds\": 30}"),
					 &lim, &b, &e),
			 0);
	assert_string_equal(b.cmd, "python -c \"print(2 + 2)\"");
	assert_true(b.has_timeout);
	assert_int_equal(b.timeout_ms, 30000);
	assert_null(b.cwd);
	assert_null(b.stdin_data);
	exec_body_clear(&b);

	assert_int_equal(body_parse_exec(S("{\"cmd\":\"cat\",\"timeout_seconds\":0.25,"
					   "\"cwd\":\"/tmp\",\"stdin\":\"a\\u0000b\","
					   "\"env\":{\"X\":\"1\"}}"),
					 &lim, &b, &e),
			 -EINVAL); /* NUL inside a JSON string is refused by the parser */
	assert_int_equal(body_parse_exec(S("{\"cmd\":\"cat\",\"timeout_seconds\":0.25,"
					   "\"cwd\":\"/tmp\",\"stdin\":\"ab\",\"env\":{\"X\":\"1\"}}"),
					 &lim, &b, &e),
			 0);
	assert_int_equal(b.timeout_ms, 250);
	assert_string_equal(b.cwd, "/tmp");
	assert_int_equal(b.stdin_len, 2);
	assert_memory_equal(b.stdin_data, "ab", 2);
	assert_string_equal(json_string_value(json_object_get(b.env, "X")), "1");
	exec_body_clear(&b);

	assert_int_equal(body_parse_exec(S("{\"cmd\":\"true\",\"timeout_seconds\":0}"), &lim, &b,
					 &e),
			 0);
	assert_true(b.has_timeout);
	assert_int_equal(b.timeout_ms, 0);
	exec_body_clear(&b);
}

static void exec_rejects(void **state)
{
	(void)state;
	static const struct {
		const char *body, *code;
	} cases[] = {
		{"{}", "missing_field"},
		{"{\"cmd\": \"\"}", "invalid_field"},
		{"{\"cmd\": [\"ls\"]}", "invalid_field"},
		{"{\"cmd\": \"ls\", \"timeout_seconds\": -1}", "invalid_field"},
		{"{\"cmd\": \"ls\", \"timeout_seconds\": 3601}", "invalid_field"},
		{"{\"cmd\": \"ls\", \"timeout_seconds\": \"5\"}", "invalid_field"},
		{"{\"cmd\": \"ls\", \"timeout_seconds\": true}", "invalid_field"},
		{"{\"cmd\": \"ls\", \"cwd\": \"tmp\"}", "invalid_field"},
		{"{\"cmd\": \"ls\", \"cwd\": 1}", "invalid_field"},
		{"{\"cmd\": \"ls\", \"stdin\": 5}", "invalid_field"},
		{"{\"cmd\": \"ls\", \"timeout\": 5}", "unknown_field"},
		{"{\"cmd\": \"ls\", \"env\": {\"A\": null}}", "invalid_field"},
		{"{\"cmd\": \"ls\"} trailing", "invalid_json"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct exec_body b;
		struct body_error e = {0};
		assert_int_equal(body_parse_exec(cases[i].body, strlen(cases[i].body), &lim, &b, &e),
				 -EINVAL);
		assert_string_equal(api_errors_code(e.code), cases[i].code);
		assert_true(strlen(e.message) > 0);
	}
}

static void ttl_key_mkdir_build(void **state)
{
	(void)state;
	struct ttl_body t;
	struct body_error e = {0};
	assert_int_equal(body_parse_ttl(S("{\"ttl_seconds\": 7200}"), &lim, &t, &e), 0);
	assert_int_equal(t.ttl_seconds, 7200);
	assert_int_equal(body_parse_ttl(S("{}"), &lim, &t, &e), -EINVAL);
	assert_string_equal(api_errors_code(e.code), "missing_field");
	assert_int_equal(body_parse_ttl(S("{\"ttl_seconds\": 1, \"x\": 1}"), &lim, &t, &e), -EINVAL);
	assert_string_equal(api_errors_code(e.code), "unknown_field");

	struct key_body k;
	assert_int_equal(body_parse_key(S("{\"name\": \"ci runner\", \"team\": \"t-1\"}"), &k, &e), 0);
	assert_string_equal(k.name, "ci runner");
	assert_string_equal(k.team, "t-1");
	key_body_clear(&k);
	assert_int_equal(body_parse_key(S("{\"name\": \"x\"}"), &k, &e), 0);
	assert_null(k.team);
	key_body_clear(&k);
	assert_int_equal(body_parse_key(S("{\"name\": \"\"}"), &k, &e), -EINVAL);
	assert_int_equal(body_parse_key(S("{\"name\": \"a\\tb\"}"), &k, &e), -EINVAL);
	assert_int_equal(body_parse_key(S("{\"name\": \"\\u202eevil\"}"), &k, &e), -EINVAL);
	assert_int_equal(body_parse_key(S("{\"name\": \"x\", \"team\": \"Team\"}"), &k, &e), -EINVAL);
	assert_string_equal(api_errors_code(e.code), "invalid_field");

	struct mkdir_body m;
	assert_int_equal(body_parse_mkdir(S("{\"path\": \"/a/b\"}"), &m, &e), 0);
	assert_string_equal(m.path, "/a/b");
	assert_true(m.parents);
	mkdir_body_clear(&m);
	assert_int_equal(body_parse_mkdir(S("{\"path\": \"/a\", \"parents\": false}"), &m, &e), 0);
	assert_false(m.parents);
	mkdir_body_clear(&m);
	assert_int_equal(body_parse_mkdir(S("{\"path\": \"a\"}"), &m, &e), -EINVAL);
	assert_string_equal(api_errors_code(e.code), "invalid_path");
	assert_int_equal(body_parse_mkdir(S("{\"path\": \"/a\", \"parents\": 1}"), &m, &e), -EINVAL);
	assert_string_equal(api_errors_code(e.code), "invalid_field");

	struct build_body bb;
	assert_int_equal(body_parse_build(NULL, 0, &bb, &e), 0);
	assert_false(bb.force);
	assert_int_equal(body_parse_build(S("{\"force\": true}"), &bb, &e), 0);
	assert_true(bb.force);
	assert_int_equal(body_parse_build(S("{\"force\": \"yes\"}"), &bb, &e), -EINVAL);
}

static void paths_and_queries(void **state)
{
	(void)state;
	struct body_error e = {0};
	assert_int_equal(body_check_path("/workspace/data.csv", &e), 0);
	assert_int_equal(body_check_path("/", &e), 0);
	assert_int_equal(body_check_path(NULL, &e), -EINVAL);
	assert_int_equal(body_check_path("", &e), -EINVAL);
	assert_int_equal(body_check_path("relative", &e), -EINVAL);
	assert_int_equal(body_check_path("/a\nb", &e), -EINVAL);
	assert_int_equal(body_check_path("/bad\xff", &e), -EINVAL);
	assert_string_equal(api_errors_code(e.code), "invalid_path");
	char *longp = malloc(BODY_PATH_MAX + 2);
	memset(longp, 'a', BODY_PATH_MAX + 1);
	longp[0] = '/';
	longp[BODY_PATH_MAX + 1] = '\0';
	assert_int_equal(body_check_path(longp, &e), -EINVAL);
	longp[BODY_PATH_MAX] = '\0';
	assert_int_equal(body_check_path(longp, &e), 0);
	free(longp);

	int v;
	assert_int_equal(body_parse_bool_query("recursive", NULL, 0, &v, &e), 0);
	assert_false(v);
	assert_int_equal(body_parse_bool_query("recursive", "true", 0, &v, &e), 0);
	assert_true(v);
	assert_int_equal(body_parse_bool_query("recursive", "0", 1, &v, &e), 0);
	assert_false(v);
	assert_int_equal(body_parse_bool_query("recursive", "yes", 0, &v, &e), -EINVAL);
	assert_string_equal(api_errors_code(e.code), "invalid_query");
}

static void context_bodies(void **state)
{
	(void)state;
	struct context_body c;
	struct body_error e = {0};
	const char *ok = "{\"language\": \"python\", \"cwd\": \"/tmp\", \"env\": {\"A\": \"b\"}}";
	assert_int_equal(body_parse_context(ok, strlen(ok), &c, &e), 0);
	assert_string_equal(c.cwd, "/tmp");
	assert_string_equal(json_string_value(json_object_get(c.env, "A")), "b");
	context_body_clear(&c);
	assert_int_equal(body_parse_context("{}", 2, &c, &e), 0); /* every field optional */
	assert_null(c.cwd);
	assert_int_equal(json_object_size(c.env), 0);
	context_body_clear(&c);
	static const struct {
		const char *body, *code;
	} bad[] = {
		{"", "invalid_json"},
		{"{\"language\": \"ruby\"}", "invalid_field"},
		{"{\"language\": 3}", "invalid_field"},
		{"{\"cwd\": \"relative\"}", "invalid_field"},
		{"{\"env\": {\"1A\": \"x\"}}", "invalid_field"},
		{"{\"template\": \"base\"}", "unknown_field"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(body_parse_context(bad[i].body, strlen(bad[i].body), &c, &e), -EINVAL);
		assert_string_equal(api_errors_code(e.code), bad[i].code);
	}
	/* jansson's error text quotes the bad escape's byte, half a character:
	 * the message stays valid UTF-8 (found by fuzz_api_body) */
	const char *esc = "{\"cwd\x5c\xdd\xbc\": 1}";
	assert_int_equal(body_parse_context(esc, strlen(esc), &c, &e), -EINVAL);
	assert_string_equal(api_errors_code(e.code), "invalid_json");
	assert_true(utf8_valid(e.message, strlen(e.message)));
	const char *nb = "{\"notebook\": \"/workspace/a.ipynb\"}";
	assert_int_equal(body_parse_context(nb, strlen(nb), &c, &e), 0);
	assert_string_equal(c.notebook, "/workspace/a.ipynb");
	context_body_clear(&c);
	nb = "{\"notebook\": \"\"}";
	assert_int_equal(body_parse_context(nb, strlen(nb), &c, &e), 0);
	assert_string_equal(c.notebook, "");
	context_body_clear(&c);
	nb = "{\"notebook\": \"relative.ipynb\"}";
	assert_int_equal(body_parse_context(nb, strlen(nb), &c, &e), -EINVAL);
	assert_string_equal(api_errors_code(e.code), "invalid_field");
	nb = "{\"notebook\": null}";
	assert_int_equal(body_parse_context(nb, strlen(nb), &c, &e), -EINVAL);
}

static void code_bodies(void **state)
{
	(void)state;
	struct code_body b;
	struct body_error e = {0};
	const char *cell = "{\"code\": \"1 + 1\", \"timeout_seconds\": 2.5}";
	assert_int_equal(body_parse_code(cell, strlen(cell), &lim, 0, &b, &e), 0);
	assert_string_equal(b.code, "1 + 1");
	assert_true(b.has_timeout);
	assert_int_equal(b.timeout_ms, 2500);
	assert_false(b.shell);
	code_body_clear(&b);
	/* an empty cell is fine; an empty shell snippet is not */
	assert_int_equal(body_parse_code("{\"code\": \"\"}", 12, &lim, 0, &b, &e), 0);
	assert_int_equal(b.code_len, 0);
	assert_false(b.has_timeout);
	code_body_clear(&b);
	const char *sh = "{\"code\": \"python --version\", \"language\": \"shell\"}";
	assert_int_equal(body_parse_code(sh, strlen(sh), &lim, 1, &b, &e), 0);
	assert_true(b.shell);
	code_body_clear(&b);
	const char *py = "{\"code\": \"print(1)\", \"language\": \"python\"}";
	assert_int_equal(body_parse_code(py, strlen(py), &lim, 1, &b, &e), 0);
	assert_false(b.shell);
	code_body_clear(&b);
	static const struct {
		const char *body, *code;
		int one_shot;
	} bad[] = {
		{"{}", "missing_field", 0},
		{"{\"code\": 5}", "invalid_field", 0},
		{"{\"code\": \"1\", \"language\": \"python\"}", "unknown_field", 0},
		{"{\"code\": \"1\", \"language\": \"ruby\"}", "invalid_field", 1},
		{"{\"code\": \"\", \"language\": \"shell\"}", "invalid_field", 1},
		{"{\"code\": \"1\", \"timeout_seconds\": -1}", "invalid_field", 0},
		{"{\"code\": \"1\", \"timeout_seconds\": 3601}", "invalid_field", 1},
		{"{\"code\": \"1\", \"cwd\": \"/tmp\"}", "unknown_field", 1},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(body_parse_code(bad[i].body, strlen(bad[i].body), &lim,
						 bad[i].one_shot, &b, &e),
				 -EINVAL);
		assert_string_equal(api_errors_code(e.code), bad[i].code);
	}
	/* code over the caps: 1 MiB for python, 64 KiB for shell */
	size_t big = BODY_CODE_MAX + 1;
	char *body = malloc(big + 64);
	assert_non_null(body);
	int n = snprintf(body, 64, "{\"code\": \"");
	memset(body + n, 'x', big);
	strcpy(body + n + big, "\"}");
	assert_int_equal(body_parse_code(body, strlen(body), &lim, 0, &b, &e), -EINVAL);
	n = snprintf(body, 64, "{\"language\": \"shell\", \"code\": \"");
	memset(body + n, 'x', BODY_CMD_MAX + 1);
	strcpy(body + n + BODY_CMD_MAX + 1, "\"}");
	assert_int_equal(body_parse_code(body, strlen(body), &lim, 1, &b, &e), -EINVAL);
	free(body);
}

static void context_ids(void **state)
{
	(void)state;
	assert_true(api_context_id_valid("ctx_0123456789abcdef0123"));
	assert_false(api_context_id_valid("ctx_0123456789abcdef012"));
	assert_false(api_context_id_valid("ctx_0123456789abcdef01234"));
	assert_false(api_context_id_valid("ctx_0123456789ABCDEF0123"));
	assert_false(api_context_id_valid("sbx_0123456789abcdef0123"));
	assert_false(api_context_id_valid(""));
	json_t *gone = json_pack("{s:{s:s, s:s}}", "error", "code", "ECANCELED", "message", "x");
	json_t *cell = json_pack("{s:{s:s, s:s, s:s}}", "error", "name", "ZeroDivisionError",
				 "value", "division by zero", "traceback", "");
	json_t *frame = json_pack("{s:s, s:s}", "code", "ENOENT", "message", "no context");
	assert_true(api_context_missing(gone));
	assert_true(api_context_missing(frame));
	assert_false(api_context_missing(cell));
	json_decref(gone);
	json_decref(cell);
	json_decref(frame);
}

static void command_bodies_and_ids(void **state)
{
	(void)state;
	struct body_error e = {0};
	struct exec_body x;
	assert_int_equal(body_parse_exec(S("{\"cmd\": \"sleep 9\", \"background\": true}"), &lim,
					 &x, &e),
			 0);
	assert_true(x.background);
	assert_false(x.has_timeout);
	exec_body_clear(&x);
	assert_int_equal(body_parse_exec(S("{\"cmd\": \"cat\", \"background\": true, "
					   "\"stdin\": \"x\"}"),
					 &lim, &x, &e),
			 -EINVAL);
	assert_string_equal(api_errors_code(e.code), "invalid_field");
	assert_int_equal(body_parse_exec(S("{\"cmd\": \"ls\", \"background\": 1}"), &lim, &x,
					 &e),
			 -EINVAL);

	struct command_kill_body k;
	assert_int_equal(body_parse_command_kill(NULL, 0, &k, &e), 0);
	assert_string_equal(k.signal, "SIGKILL");
	assert_int_equal(body_parse_command_kill(S("{\"signal\": \"SIGTERM\"}"), &k, &e), 0);
	assert_string_equal(k.signal, "SIGTERM");
	assert_int_equal(body_parse_command_kill(S("{\"signal\": \"SIGSTOP\"}"), &k, &e), -EINVAL);
	assert_string_equal(api_errors_code(e.code), "invalid_field");
	assert_int_equal(body_parse_command_kill(S("{\"sig\": \"SIGTERM\"}"), &k, &e), -EINVAL);
	assert_string_equal(api_errors_code(e.code), "unknown_field");

	struct command_stdin_body in;
	assert_int_equal(body_parse_command_stdin(S("{\"data\": \"hi\\n\"}"), &in, &e), 0);
	assert_int_equal(in.len, 3);
	assert_false(in.eof);
	command_stdin_body_clear(&in);
	assert_int_equal(body_parse_command_stdin(S("{\"eof\": true}"), &in, &e), 0);
	assert_null(in.data);
	assert_true(in.eof);
	command_stdin_body_clear(&in);
	assert_int_equal(body_parse_command_stdin(S("{}"), &in, &e), -EINVAL);
	assert_string_equal(api_errors_code(e.code), "missing_field");
	assert_int_equal(body_parse_command_stdin(S("{\"data\": 5}"), &in, &e), -EINVAL);

	uint64_t v;
	assert_int_equal(body_parse_uint_query("n", NULL, 7, 10, &v, &e), 0);
	assert_int_equal(v, 7);
	assert_int_equal(body_parse_uint_query("n", "10", 0, 10, &v, &e), 0);
	assert_int_equal(v, 10);
	static const char *const bad[] = {"11", "-1", "", "1.5", "0x1", "99999999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(body_parse_uint_query("n", bad[i], 0, 10, &v, &e), -EINVAL);
		assert_string_equal(api_errors_code(e.code), "invalid_query");
	}
	assert_int_equal(body_parse_uint_query("n", "18446744073709551615", 0, UINT64_MAX, &v, &e),
			 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(body_parse_uint_query("n", "18446744073709551616", 0, UINT64_MAX, &v, &e),
			 -EINVAL);

	assert_true(api_command_id_valid("cmd_0123456789abcdef0123"));
	assert_false(api_command_id_valid("cmd_0123456789abcdef012"));
	assert_false(api_command_id_valid("ctx_0123456789abcdef0123"));
	assert_false(api_command_id_valid("cmd_0123456789ABCDEF0123"));
}

/* api_command_json keeps what is well-formed and nothing else. */
static void command_json_from_guest(void **state)
{
	(void)state;
	json_t *g = json_pack("{s:s, s:i, s:s, s:s, s:I, s:b, s:I, s:i, s:i, s:b, s:i, s:i, s:b, s:s}",
			      "id", "cmd_0123456789abcdef0123", "pid", 42, "cmd", "sleep 1", "cwd",
			      "/tmp", "started_at_ms", (json_int_t)1764612000000LL, "running", 0,
			      "ended_at_ms", (json_int_t)1764612001000LL, "exit_code", 137, "signal",
			      9, "timed_out", 0, "stdout_bytes", 5, "stderr_bytes", 0, "stdin_open",
			      1, "extra", "x");
	json_t *o = api_command_json(g);
	assert_non_null(o);
	assert_int_equal(json_integer_value(json_object_get(o, "pid")), 42);
	assert_int_equal(json_integer_value(json_object_get(o, "exit_code")), 137);
	assert_int_equal(json_integer_value(json_object_get(o, "signal")), 9);
	assert_string_equal(json_string_value(json_object_get(o, "started_at")),
			    "2025-12-01T18:00:00.000Z");
	assert_false(json_is_true(json_object_get(o, "stdin_open"))); /* not while ended */
	assert_null(json_object_get(o, "extra"));
	json_decref(o);
	/* a hostile guest: wrong types, out of range, bad UTF-8, huge cmd */
	char big[10000];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	big[0] = (char)0xff;
	json_object_set_new(g, "pid", json_string("1"));
	json_object_set_new(g, "exit_code", json_integer(100000));
	json_object_set_new(g, "signal", json_integer(-3));
	json_object_set_new(g, "started_at_ms", json_integer(-1));
	json_object_set_new(g, "stdout_bytes", json_real(1.5));
	json_object_set_new(g, "cmd", json_stringn_nocheck(big, sizeof(big) - 1));
	o = api_command_json(g);
	assert_non_null(o);
	assert_true(json_is_null(json_object_get(o, "pid")));
	assert_true(json_is_null(json_object_get(o, "exit_code")));
	assert_true(json_is_null(json_object_get(o, "signal")));
	assert_true(json_is_null(json_object_get(o, "started_at")));
	assert_true(json_is_null(json_object_get(o, "stdout_bytes")));
	const char *cmd = json_string_value(json_object_get(o, "cmd"));
	assert_non_null(cmd);
	assert_true(strlen(cmd) <= API_COMMAND_CMD_SHOWN + 2); /* U+FFFD for the bad byte */
	json_decref(o);
	json_object_set_new(g, "id", json_string("cmd_../../etc"));
	assert_null(api_command_json(g));
	json_decref(g);
	assert_null(api_command_json(NULL));
}

static void routes(void **state)
{
	(void)state;
	char p[ROUTE_MAX_PARAMS][ROUTE_PARAM_MAX];
	assert_true(route_match_pattern("/v1/sandboxes", "/v1/sandboxes", p, ROUTE_MAX_PARAMS));
	assert_false(route_match_pattern("/v1/sandboxes", "/v1/sandboxes/", p, ROUTE_MAX_PARAMS));
	assert_true(route_match_pattern("/v1/sandboxes/{id}/exec", "/v1/sandboxes/sbx_1/exec", p,
					ROUTE_MAX_PARAMS));
	assert_string_equal(p[0], "sbx_1");
	assert_false(route_match_pattern("/v1/sandboxes/{id}/exec", "/v1/sandboxes//exec", p,
					 ROUTE_MAX_PARAMS));
	assert_false(route_match_pattern("/v1/sandboxes/{id}", "/v1/sandboxes/a/b", p,
					 ROUTE_MAX_PARAMS));
	char longseg[300] = "/v1/keys/";
	memset(longseg + 9, 'k', 200);
	assert_false(route_match_pattern("/v1/keys/{id}", longseg, p, ROUTE_MAX_PARAMS));

	size_t n;
	const struct route *t = routes_table(&n);
	int known;
	const struct route *r = route_find(t, n, "POST", "/v1/sandboxes/sbx_x/exec", p, &known);
	assert_non_null(r);
	assert_string_equal(r->pattern, "/v1/sandboxes/{id}/exec");
	assert_null(route_find(t, n, "PATCH", "/v1/sandboxes", p, &known));
	assert_true(known);
	assert_null(route_find(t, n, "GET", "/v2/nothing", p, &known));
	assert_false(known);
	r = route_find(t, n, "POST", "/v1/sandboxes/sbx_x/contexts/ctx_y/run_code", p, &known);
	assert_non_null(r);
	assert_string_equal(r->pattern, "/v1/sandboxes/{id}/contexts/{ctx}/run_code");
	assert_string_equal(p[0], "sbx_x");
	assert_string_equal(p[1], "ctx_y");
	r = route_find(t, n, "DELETE", "/v1/sandboxes/sbx_x/contexts/ctx_y", p, &known);
	assert_non_null(r);
	assert_null(route_find(t, n, "PUT", "/v1/sandboxes/sbx_x/contexts", p, &known));
	assert_true(known);
	r = route_find(t, n, "PUT", "/v1/sandboxes/sbx_x/fs", p, &known);
	assert_non_null(r);
	assert_int_equal(r->body, ROUTE_BODY_STREAM);
	assert_non_null(r->begin);
	assert_non_null(r->chunk);
}

static void listen_parsing(void **state)
{
	(void)state;
	char host[64];
	unsigned port;
	assert_int_equal(config_parse_listen("127.0.0.1:8080", host, sizeof(host), &port), 0);
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(port, 8080);
	assert_int_equal(config_parse_listen("[::1]:0", host, sizeof(host), &port), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(port, 0);
	assert_int_equal(config_parse_listen("127.0.0.1", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(config_parse_listen(":80", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(config_parse_listen("h:65536", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(config_parse_listen("h:8x", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(config_parse_listen("::1:80", host, sizeof(host), &port), -EINVAL);
}

/* --pip-index-url and PANDASTACK_PIP_INDEX_URL: checked with the guest's
 * rules (common/pip_index.h), the flag over the variable, none by default;
 * a refusal names the reason, never the URL (it may hold a password). */
static void pip_index_setting(void **state)
{
	(void)state;
	struct daemon_cfg cfg;
	char err[256];
	char *none[] = {"pandastackd", NULL};
	unsetenv("PANDASTACK_PIP_INDEX_URL");
	assert_int_equal(config_load(&cfg, 1, none, err, sizeof(err)), 0);
	assert_string_equal(cfg.pip_index_url, "");
	setenv("PANDASTACK_PIP_INDEX_URL", "http://10.0.0.5:3141/simple/", 1);
	assert_int_equal(config_load(&cfg, 1, none, err, sizeof(err)), 0);
	assert_string_equal(cfg.pip_index_url, "http://10.0.0.5:3141/simple/");
	char *flag[] = {"pandastackd", "--pip-index-url", "https://mirror.example/simple", NULL};
	assert_int_equal(config_load(&cfg, 3, flag, err, sizeof(err)), 0);
	assert_string_equal(cfg.pip_index_url, "https://mirror.example/simple");
	char *eq[] = {"pandastackd", "--pip-index-url=https://m2.example/simple", NULL};
	assert_int_equal(config_load(&cfg, 2, eq, err, sizeof(err)), 0);
	assert_string_equal(cfg.pip_index_url, "https://m2.example/simple");
	unsetenv("PANDASTACK_PIP_INDEX_URL");
	const char *bad[] = {
		"ftp://mirror.example/simple",
		"https://u:secret@mirror.example/simple\nindex-url = x",
		"https://u:secret@mirror.example/a b",
		"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = {"pandastackd", "--pip-index-url", (char *)bad[i], NULL};
		assert_int_equal(config_load(&cfg, 3, argv, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "--pip-index-url"));
		assert_null(strstr(err, "secret"));
	}
	setenv("PANDASTACK_PIP_INDEX_URL", "mirror.example", 1);
	assert_int_equal(config_load(&cfg, 1, none, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "PANDASTACK_PIP_INDEX_URL"));
	unsetenv("PANDASTACK_PIP_INDEX_URL");
	/* the cap */
	static char long_url[PIP_INDEX_URL_MAX + 2];
	memset(long_url, 'a', sizeof(long_url) - 1);
	memcpy(long_url, "https://x/", 10);
	char *toolong[] = {"pandastackd", "--pip-index-url", long_url, NULL};
	assert_int_equal(config_load(&cfg, 3, toolong, err, sizeof(err)), -EINVAL);
	long_url[PIP_INDEX_URL_MAX] = '\0';
	assert_int_equal(config_load(&cfg, 3, toolong, err, sizeof(err)), 0);
	assert_int_equal(strlen(cfg.pip_index_url), PIP_INDEX_URL_MAX);
}

/* --pool-sizes NAME=N,...: per-template pool sizes over --pool-size; a
 * later pair for a name wins; malformed lists are refused whole. */
static void pool_sizes_setting(void **state)
{
	(void)state;
	struct daemon_cfg cfg;
	char err[256];
	unsetenv("PANDASTACK_POOL_SIZES");
	unsetenv("PANDASTACK_POOL_SIZE");
	char *argv[] = {"pandastackd", "--pool-size", "3", "--pool-sizes",
			"code-interpreter=5,base=0,base=1", NULL};
	assert_int_equal(config_load(&cfg, 5, argv, err, sizeof(err)), 0);
	assert_int_equal(cfg.npool_sizes, 2);
	assert_int_equal(config_pool_size_of(&cfg, "code-interpreter"), 5);
	assert_int_equal(config_pool_size_of(&cfg, "base"), 1);
	assert_int_equal(config_pool_size_of(&cfg, "other"), 3);
	char *none[] = {"pandastackd", NULL};
	assert_int_equal(config_load(&cfg, 1, none, err, sizeof(err)), 0);
	assert_int_equal(cfg.npool_sizes, 0);
	assert_int_equal(config_pool_size_of(&cfg, "base"), cfg.pool_size);
	setenv("PANDASTACK_POOL_SIZES", "base=0", 1);
	assert_int_equal(config_load(&cfg, 1, none, err, sizeof(err)), 0);
	assert_int_equal(config_pool_size_of(&cfg, "base"), 0);
	unsetenv("PANDASTACK_POOL_SIZES");
	const char *bad[] = {"base", "base=", "=2", "base=65", "base=-1", "base=2,", "ba se=1",
			     "base=1,,x=2", "base=1x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(config_parse_pool_sizes(bad[i], &cfg), -EINVAL);
		char *a[] = {"pandastackd", "--pool-sizes", (char *)bad[i], NULL};
		assert_int_equal(config_load(&cfg, 3, a, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "--pool-sizes"));
	}
	/* at most CONFIG_POOL_SIZES_MAX names */
	char many[CONFIG_POOL_SIZES_MAX * 8 + 16] = "";
	for (unsigned i = 0; i <= CONFIG_POOL_SIZES_MAX; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "%st%u=1", i ? "," : "", i);
	assert_int_equal(config_parse_pool_sizes(many, &cfg), -EINVAL);
	*strrchr(many, ',') = '\0';
	assert_int_equal(config_parse_pool_sizes(many, &cfg), 0);
	assert_int_equal(cfg.npool_sizes, CONFIG_POOL_SIZES_MAX);
}

static void agent_errors(void **state)
{
	(void)state;
	static const struct {
		const char *json;
		unsigned status;
		const char *code;
	} cases[] = {
		{"{\"error\": {\"code\": \"ENOENT\", \"message\": \"no\"}}", 404, "file_not_found"},
		{"{\"error\": {\"code\": \"EISDIR\"}}", 409, "is_a_directory"},
		{"{\"error\": {\"code\": \"ENOTDIR\"}}", 409, "not_a_directory"},
		{"{\"error\": {\"code\": \"EACCES\"}}", 403, "permission_denied"},
		{"{\"error\": {\"code\": \"ENOTEMPTY\"}}", 409, "directory_not_empty"},
		{"{\"error\": {\"code\": \"ENOSPC\"}}", 507, "no_space"},
		{"{\"error\": {\"code\": \"EWEIRD\"}}", 500, "agent_error"},
		{"{\"error\": {\"code\": 5}}", 500, "agent_error"},
		{"{\"code\": \"EPROTO\", \"message\": \"x\"}", 500, "agent_error"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *j = json_loads(cases[i].json, 0, NULL);
		assert_non_null(j);
		enum api_err err;
		char msg[400];
		assert_int_equal(api_agent_error_map(j, &err, msg, sizeof(msg)), 1);
		assert_int_equal(api_errors_status(err), cases[i].status);
		assert_string_equal(api_errors_code(err), cases[i].code);
		json_decref(j);
	}
	json_t *ok = json_loads("{\"size\": 4}", 0, NULL);
	enum api_err err;
	char msg[64];
	assert_int_equal(api_agent_error_map(ok, &err, msg, sizeof(msg)), 0);
	assert_int_equal(api_agent_error_map(NULL, &err, msg, sizeof(msg)), 0);
	json_decref(ok);

	/* exit objects from hostile END payloads stay in range */
	json_t *end = json_loads("{\"exit_code\": 99999, \"duration_ms\": -4, \"signal\": 300,"
				 " \"timed_out\": \"yes\"}", 0, NULL);
	json_t *x = api_exit_json(end, 17);
	assert_int_equal(json_integer_value(json_object_get(x, "exit_code")), -1);
	assert_int_equal(json_integer_value(json_object_get(x, "duration_ms")), 17);
	assert_true(json_is_null(json_object_get(x, "signal")));
	assert_true(json_is_false(json_object_get(x, "timed_out")));
	json_decref(x);
	json_decref(end);
}

/* The error table: every row a 4xx/5xx with a snake_case code and a
 * meaning; no (status, code) twice; a value outside it reads as internal. */
static void error_table(void **state)
{
	(void)state;
	for (int i = 0; i < API_ERR_COUNT; i++) {
		const struct api_error_row *row = api_errors_row((enum api_err)i);
		assert_true(row->status >= 400 && row->status <= 599);
		assert_true(strlen(row->code) > 0 && strspn(row->code,
			    "abcdefghijklmnopqrstuvwxyz_") ==
							     strlen(row->code));
		assert_true(strlen(row->meaning) > 0);
		for (int j = 0; j < i; j++) {
			const struct api_error_row *o = api_errors_row((enum api_err)j);
			assert_false(o->status == row->status && !strcmp(o->code, row->code));
		}
	}
	assert_int_equal(api_errors_status(API_ERR_SANDBOX_NOT_FOUND), 404);
	assert_string_equal(api_errors_code(API_ERR_SANDBOX_NOT_FOUND), "sandbox_not_found");
	assert_int_equal(api_errors_status(API_ERR_VM_START_TIMEOUT), 503);
	assert_string_equal(api_errors_code(API_ERR_VM_START_TIMEOUT), "vm_start_failed");
	/* the fallback is reachable (not the row of index 0) and is internal */
	assert_ptr_not_equal(api_errors_row(API_ERR_INTERNAL), api_errors_row((enum api_err)0));
	assert_ptr_equal(api_errors_row((enum api_err)API_ERR_COUNT),
			 api_errors_row(API_ERR_INTERNAL));
	assert_ptr_equal(api_errors_row((enum api_err)-1), api_errors_row(API_ERR_INTERNAL));
	assert_int_equal(api_errors_status((enum api_err)404), 500);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(create_ok),         cmocka_unit_test(create_rejects),
		cmocka_unit_test(create_from_snapshot), cmocka_unit_test(create_from_snapshot_rejects),
		cmocka_unit_test(snapshot_and_fork_bodies),
		cmocka_unit_test(create_size_caps),  cmocka_unit_test(exec_ok),
		cmocka_unit_test(exec_rejects),      cmocka_unit_test(ttl_key_mkdir_build),
		cmocka_unit_test(paths_and_queries),
		cmocka_unit_test(routes),            cmocka_unit_test(listen_parsing),
		cmocka_unit_test(pip_index_setting), cmocka_unit_test(pool_sizes_setting),
		cmocka_unit_test(agent_errors),      cmocka_unit_test(context_bodies),
		cmocka_unit_test(code_bodies),       cmocka_unit_test(context_ids),
		cmocka_unit_test(command_bodies_and_ids),
		cmocka_unit_test(command_json_from_guest),
		cmocka_unit_test(error_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
