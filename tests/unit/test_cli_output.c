/*
 * test_cli_output.c - the CLI's pure output helpers: sanitising server
 * text for the terminal (src/cli/output.c), value formatting, the progress
 * bar's text (src/cli/progress.c), exit codes from the API
 * (src/cli/cmd_sandbox_run.c), where a download lands
 * (src/cli/cmd_fs_transfer.c), and number flags (src/cli/cli_ctx.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/cli.h"
#include "cli/cmd_fs_transfer.h"
#include "cli/cmd_sandbox_run.h"
#include "cli/output.h"
#include "cli/progress.h"

static void test_sanitize_controls(void **state)
{
	(void)state;
	char out[64];
	const char evil[] = "a\033]0;pwned\007b\r\nc\x7f";
	out_sanitize(evil, sizeof(evil) - 1, out, sizeof(out));
	assert_string_equal(out, "a?]0;pwned?b??c?");
	/* C1 controls encoded in UTF-8 (U+009B is a CSI) are replaced whole. */
	out_sanitize("x\xc2\x9b" "1m", 5, out, sizeof(out));
	assert_string_equal(out, "x?1m");
	/* Valid UTF-8 passes; invalid bytes become '?'. */
	out_sanitize("caf\xc3\xa9 \xe2\x9c\x93", 9, out, sizeof(out));
	assert_string_equal(out, "caf\xc3\xa9 \xe2\x9c\x93");
	out_sanitize("a\xff\xc3", 3, out, sizeof(out));
	assert_string_equal(out, "a??");
	/* An embedded NUL does not end the text early. */
	out_sanitize("a\0b", 3, out, sizeof(out));
	assert_string_equal(out, "a?b");
}

static void test_sanitize_cut(void **state)
{
	(void)state;
	char out[5];
	/* "ab" + a 3-byte character does not fit in 4 bytes + NUL: it is left
	 * out whole, never cut in the middle. */
	out_sanitize("ab\xe2\x9c\x93", 5, out, 5);
	assert_string_equal(out, "ab");
	out_sanitize("abcdefgh", 8, out, 5);
	assert_string_equal(out, "abcd");
	char one[1] = {'x'};
	out_sanitize("abc", 3, one, 1);
	assert_int_equal(one[0], '\0');
}

static void test_value(void **state)
{
	(void)state;
	char buf[128];
	json_t *v = json_string("sbx_1\033[2J");
	assert_string_equal(out_value("id", v, buf, sizeof(buf)), "sbx_1?[2J");
	json_decref(v);
	v = json_integer(1764469132123);
	assert_string_equal(out_value("mtime_ms", v, buf, sizeof(buf)), "2025-11-30 02:18:52");
	assert_string_equal(out_value("size", v, buf, sizeof(buf)), "1764469132123");
	json_decref(v);
	assert_string_equal(out_value("x", NULL, buf, sizeof(buf)), "-");
	v = json_null();
	assert_string_equal(out_value("x", v, buf, sizeof(buf)), "-");
	v = json_true();
	assert_string_equal(out_value("admin", v, buf, sizeof(buf)), "true");
	v = json_pack("{s:s}", "user", "alice");
	assert_string_equal(out_value("metadata", v, buf, sizeof(buf)), "{\"user\":\"alice\"}");
	json_decref(v);
	/* A long value is cut to the buffer. */
	char small[4];
	v = json_string("abcdef");
	assert_string_equal(out_value("name", v, small, sizeof(small)), "abc");
	json_decref(v);
}

static void test_list_items(void **state)
{
	(void)state;
	json_t *arr = json_array();
	json_t *obj = json_pack("{s:o}", "sandboxes", json_array());
	json_t *other = json_pack("{s:i}", "sandboxes", 3);
	assert_ptr_equal(out_list_items(arr, "sandboxes"), arr);
	assert_ptr_equal(out_list_items(obj, "sandboxes"), json_object_get(obj, "sandboxes"));
	assert_null(out_list_items(other, "sandboxes"));
	assert_null(out_list_items(NULL, "sandboxes"));
	json_decref(arr);
	json_decref(obj);
	json_decref(other);
}

static void test_progress_text(void **state)
{
	(void)state;
	char buf[128];
	assert_string_equal(progress_human(buf, sizeof(buf), 512), "512 B");
	assert_string_equal(progress_human(buf, sizeof(buf), 5 * 1024 * 1024 + 512 * 1024),
			    "5.5 MiB");
	assert_string_equal(progress_human(buf, sizeof(buf), 3LL << 30), "3.0 GiB");
	assert_string_equal(progress_human(buf, sizeof(buf), -4), "0 B");
	progress_format(buf, sizeof(buf), "data.csv", 26LL << 20, 52LL << 20, 2000);
	assert_string_equal(buf, "data.csv  [##########..........]  50%  26.0 MiB/52.0 MiB  "
				 "13.0 MiB/s");
	/* Done past the total is shown as the total; an unknown total has no bar. */
	progress_format(buf, sizeof(buf), "f", 9, 8, 0);
	assert_non_null(strstr(buf, "100%"));
	progress_format(buf, sizeof(buf), "f", 2048, -1, 1000);
	assert_string_equal(buf, "f  2.0 KiB  2.0 KiB/s");
	/* A short buffer is cut, not overrun. */
	char small[10];
	progress_format(small, sizeof(small), "label", 1, 2, 1);
	assert_int_equal(strlen(small), 9);
}

static void test_progress_not_a_tty(void **state)
{
	(void)state;
	/* A bar on a pipe draws nothing, however large the transfer. */
	int p[2];
	assert_int_equal(pipe(p), 0);
	struct progress bar;
	progress_init(&bar, "x\033y", p[1]);
	assert_string_equal(bar.label, "x?y");
	assert_int_equal(bar.tty, 0);
	progress_update(&bar, 100LL << 20, 200LL << 20);
	progress_finish(&bar);
	assert_int_equal(bar.drawn, 0);
	close(p[1]);
	char c;
	assert_int_equal(read(p[0], &c, 1), 0);
	close(p[0]);
}

static void test_exit_status(void **state)
{
	(void)state;
	json_t *v;
	int cases[][2] = {{0, 0}, {1, 1}, {137, 137}, {255, 255}, {256, 255}, {-1, 255}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v = json_integer(cases[i][0]);
		assert_int_equal(cmd_exit_status(v), cases[i][1]);
		json_decref(v);
	}
	v = json_string("0");
	assert_int_equal(cmd_exit_status(v), 255);
	json_decref(v);
	assert_int_equal(cmd_exit_status(NULL), 255);
}

static void test_download_target(void **state)
{
	(void)state;
	char dir[] = "/tmp/pandastack-cli-test-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char out[256], want[256];
	assert_int_equal(cmd_download_target("./result.csv", "/workspace/r.csv", out, sizeof(out)),
			 0);
	assert_string_equal(out, "./result.csv");
	assert_int_equal(cmd_download_target(dir, "/workspace/r.csv", out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s/r.csv", dir);
	assert_string_equal(out, want);
	char slash[300];
	snprintf(slash, sizeof(slash), "%s/", dir);
	assert_int_equal(cmd_download_target(slash, "/workspace/r.csv", out, sizeof(out)), 0);
	assert_string_equal(out, want);
	assert_int_equal(cmd_download_target(dir, "/workspace/", out, sizeof(out)), -EINVAL);
	assert_int_equal(cmd_download_target(dir, "/workspace/..", out, sizeof(out)), -EINVAL);
	assert_int_equal(cmd_download_target(dir, "/workspace/r.csv", out, 8), -ENAMETOOLONG);
	assert_int_equal(rmdir(dir), 0);
}

static void test_duration_flag(void **state)
{
	(void)state;
	struct cli_ctx ctx = {.path = "sandbox exec"};
	json_t *v;
	assert_int_equal(cli_parse_duration(&ctx, "--timeout", "30", 0, 86400, &v), CLI_EXIT_OK);
	assert_true(json_is_integer(v));
	assert_int_equal(json_integer_value(v), 30);
	json_decref(v);
	assert_int_equal(cli_parse_duration(&ctx, "--timeout", "0.5", 0, 86400, &v), CLI_EXIT_OK);
	assert_true(json_is_real(v));
	assert_true(json_real_value(v) == 0.5);
	json_decref(v);
	const char *bad[] = {"", "-1", "1e3", "0x10", "nan", "inf", "1.2.3", "86401", " 1", "."};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(cli_parse_duration(&ctx, "--timeout", bad[i], 0, 86400, &v),
				 CLI_EXIT_USAGE);
		assert_null(v);
	}
	int64_t s;
	assert_int_equal(cli_parse_seconds(&ctx, "--ttl", "3600", 1, 86400, &s), CLI_EXIT_OK);
	assert_int_equal(s, 3600);
	assert_int_equal(cli_parse_seconds(&ctx, "--ttl", "0", 1, 86400, &s), CLI_EXIT_USAGE);
	assert_int_equal(cli_parse_seconds(&ctx, "--ttl", "1h", 1, 86400, &s), CLI_EXIT_USAGE);
}

static void test_kv_list(void **state)
{
	(void)state;
	struct cli_ctx ctx = {.path = "sandbox exec"};
	json_t *o;
	const char *good[] = {"A=1", "B=x=y", "C="};
	assert_int_equal(cli_parse_kv_list(&ctx, "--env", good, 3, &o), CLI_EXIT_OK);
	assert_string_equal(json_string_value(json_object_get(o, "A")), "1");
	assert_string_equal(json_string_value(json_object_get(o, "B")), "x=y");
	assert_string_equal(json_string_value(json_object_get(o, "C")), "");
	json_decref(o);
	const char *noeq[] = {"A=1", "B"};
	assert_int_equal(cli_parse_kv_list(&ctx, "--env", noeq, 2, &o), CLI_EXIT_USAGE);
	assert_null(o);
	const char *nokey[] = {"=1"};
	assert_int_equal(cli_parse_kv_list(&ctx, "--env", nokey, 1, &o), CLI_EXIT_USAGE);
	const char *notutf8[] = {"A=\xff"};
	assert_int_equal(cli_parse_kv_list(&ctx, "--env", notutf8, 1, &o), CLI_EXIT_USAGE);
	assert_null(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sanitize_controls),
		cmocka_unit_test(test_sanitize_cut),
		cmocka_unit_test(test_value),
		cmocka_unit_test(test_list_items),
		cmocka_unit_test(test_progress_text),
		cmocka_unit_test(test_progress_not_a_tty),
		cmocka_unit_test(test_exit_status),
		cmocka_unit_test(test_download_target),
		cmocka_unit_test(test_duration_flag),
		cmocka_unit_test(test_kv_list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
