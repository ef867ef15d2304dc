/*
 * test_utf8.c - the UTF-8 module (common/utf8.c): sequence classes per
 * Unicode table 3-7, validation, U+FFFD per maximal invalid subpart,
 * streaming with a carried incomplete tail (the result must not depend on
 * where the stream was split), cutting, and JSON strings.
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

#define S(lit) (lit), (sizeof(lit) - 1)
#define FFFD "\xef\xbf\xbd"

/* Sanitize in[0..len) and compare with want (a C string). */
static void expect_sanitized(const char *in, size_t len, const char *want)
{
	char *out = NULL;
	size_t n = 0;
	assert_int_equal(utf8_sanitize(in, len, &out, &n), 0);
	assert_int_equal(n, strlen(want));
	assert_memory_equal(out, want, n);
	assert_int_equal(out[n], '\0');
	free(out);
}

static void test_seq_len_classes(void **state)
{
	(void)state;
	assert_int_equal(utf8_seq_len(S("A")), 1);
	assert_int_equal(utf8_seq_len(S("\x00")), 1);
	assert_int_equal(utf8_seq_len(S("\xc3\xa9")), 2);
	assert_int_equal(utf8_seq_len(S("\xe2\x82\xac")), 3);
	assert_int_equal(utf8_seq_len(S("\xf0\x9f\x90\xbc")), 4);
	assert_int_equal(utf8_seq_len(S("\xf4\x8f\xbf\xbf")), 4); /* U+10FFFF */
	assert_int_equal(utf8_seq_len(S("\xed\x9f\xbf")), 3);     /* U+D7FF */
	/* bad lead bytes */
	assert_int_equal(utf8_seq_len(S("\x80")), -1);
	assert_int_equal(utf8_seq_len(S("\xc0\xaf")), -1);
	assert_int_equal(utf8_seq_len(S("\xc1\xbf")), -1);
	assert_int_equal(utf8_seq_len(S("\xf5\x80\x80\x80")), -1);
	assert_int_equal(utf8_seq_len(S("\xff")), -1);
	/* overlong, surrogate, above U+10FFFF: the second byte is out of range */
	assert_int_equal(utf8_seq_len(S("\xe0\x80\xaf")), -1);
	assert_int_equal(utf8_seq_len(S("\xf0\x8f\xbf\xbf")), -1);
	assert_int_equal(utf8_seq_len(S("\xed\xa0\x80")), -1);
	assert_int_equal(utf8_seq_len(S("\xf4\x90\x80\x80")), -1);
	/* a later byte is not a continuation: the subpart before it */
	assert_int_equal(utf8_seq_len(S("\xe2\x82" "A")), -2);
	assert_int_equal(utf8_seq_len(S("\xf0\x9f\x90" "A")), -3);
	/* cut by the end while still valid */
	assert_int_equal(utf8_seq_len(S("\xc3")), 0);
	assert_int_equal(utf8_seq_len(S("\xe2\x82")), 0);
	assert_int_equal(utf8_seq_len(S("\xf0\x9f\x90")), 0);
}

static void test_valid(void **state)
{
	(void)state;
	assert_true(utf8_valid("", 0));
	assert_true(utf8_valid(S("plain ascii\n")));
	assert_true(utf8_valid(S("nul \x00 inside")));
	assert_true(utf8_valid(S("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xbc")));
	assert_false(utf8_valid(S("\xc0\xaf")));         /* overlong '/' */
	assert_false(utf8_valid(S("\xe0\x80\xaf")));     /* overlong '/' */
	assert_false(utf8_valid(S("\xed\xa0\x80")));     /* surrogate */
	assert_false(utf8_valid(S("\xf4\x90\x80\x80"))); /* > U+10FFFF */
	assert_false(utf8_valid(S("\xe2\x82")));         /* cut */
	assert_false(utf8_valid(S("ok\xff")));
}

static void test_sanitize_maximal_subparts(void **state)
{
	(void)state;
	/* positive control: valid text passes unchanged */
	expect_sanitized(S("caf\xc3\xa9 \xf0\x9f\x90\xbc"), "caf\xc3\xa9 \xf0\x9f\x90\xbc");
	expect_sanitized("", 0, "");
	expect_sanitized(S("a\xff" "b"), "a" FFFD "b");
	/* a cut 3-byte sequence is one maximal subpart: one U+FFFD */
	expect_sanitized(S("x\xe2\x82"), "x" FFFD);
	expect_sanitized(S("\xe2\x82z"), FFFD "z");
	expect_sanitized(S("\xf0\x9f\x90" "A"), FFFD "A");
	/* overlong, surrogate and out-of-range forms: one per byte */
	expect_sanitized(S("\xc0\xaf"), FFFD FFFD);
	expect_sanitized(S("\xe0\x80\xaf"), FFFD FFFD FFFD);
	expect_sanitized(S("\xed\xa0\x80"), FFFD FFFD FFFD);
	expect_sanitized(S("\xf4\x90\x80\x80"), FFFD FFFD FFFD FFFD);
	/* Unicode 15, table 3-8's example */
	expect_sanitized(S("\x61\xf1\x80\x80\xe1\x80\xc2\x62\x80\x63\x80\xbf\x64"),
			 "a" FFFD FFFD FFFD "b" FFFD "c" FFFD FFFD "d");
	/* NULs are valid and kept */
	char *out;
	size_t n;
	assert_int_equal(utf8_sanitize(S("a\x00\xff"), &out, &n), 0);
	assert_int_equal(n, 5);
	assert_memory_equal(out, "a\x00" FFFD, 5);
	free(out);
	/* too large to triple */
	assert_int_equal(utf8_sanitize("x", SIZE_MAX / 2, &out, &n), -EOVERFLOW);
}

static void test_incomplete_tail(void **state)
{
	(void)state;
	assert_int_equal(utf8_incomplete_tail("", 0), 0);
	assert_int_equal(utf8_incomplete_tail(S("abc")), 0);
	assert_int_equal(utf8_incomplete_tail(S("ab\xe2\x82")), 2);
	assert_int_equal(utf8_incomplete_tail(S("ab\xf0\x9f\x90")), 3);
	assert_int_equal(utf8_incomplete_tail(S("ab\xf0\x9f\x90\xbc")), 0);
	assert_int_equal(utf8_incomplete_tail(S("\xf0\x9f\x90\xbc\xe2")), 1);
	assert_int_equal(utf8_incomplete_tail(S("ab\xff")), 0);     /* invalid, not cut */
	assert_int_equal(utf8_incomplete_tail(S("ab\xe0\x80")), 0); /* overlong already */
	assert_int_equal(utf8_incomplete_tail(S("ab\xed\xa0")), 0); /* surrogate already */
	assert_int_equal(utf8_incomplete_tail(S("\x80\x80\x80\x80\x80")), 0);
	assert_int_equal(utf8_incomplete_tail(S("\xc3")), 1);
}

/*
 * Feed in[0..len) in chunks of k bytes the way a streaming reader does
 * (carry the incomplete tail into the next chunk, sanitize the rest) and
 * return the concatenated output (caller frees).
 */
static char *stream_in_chunks(const char *in, size_t len, size_t k, size_t *outlen)
{
	char carry[8], *all = NULL;
	size_t ncarry = 0, nall = 0;
	for (size_t off = 0; off < len || ncarry;) {
		size_t take = len - off < k ? len - off : k;
		char *chunk = malloc(ncarry + take + 1);
		assert_non_null(chunk);
		memcpy(chunk, carry, ncarry);
		memcpy(chunk + ncarry, in + off, take);
		size_t total = ncarry + take;
		off += take;
		size_t keep = off < len ? utf8_incomplete_tail(chunk, total) : 0;
		assert_true(keep <= 3);
		char *o;
		size_t n;
		assert_int_equal(utf8_sanitize(chunk, total - keep, &o, &n), 0);
		all = realloc(all, nall + n + 1);
		assert_non_null(all);
		memcpy(all + nall, o, n);
		nall += n;
		free(o);
		memcpy(carry, chunk + total - keep, keep);
		ncarry = keep;
		free(chunk);
		if (off == len && !ncarry)
			break;
	}
	*outlen = nall;
	return all;
}

static void test_split_sequences_across_chunks(void **state)
{
	(void)state;
	static const char in[] = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x90\xbc" /* valid */
				 "\xe2\x82" "b\xf0\x9f\x90" "c\xed\xa0\x80" /* cut, surrogate */
				 "\xc0\xaf\xff\x80\xf4\x90\x80\x80"       /* bad forms */
				 "\xf0\x9f\x98\x80";                       /* valid at the end */
	size_t len = sizeof(in) - 1;
	char *whole;
	size_t nwhole;
	assert_int_equal(utf8_sanitize(in, len, &whole, &nwhole), 0);
	assert_true(utf8_valid(whole, nwhole));
	/* positive control: sanitizing each chunk without the carry does split
	 * characters, so the probe below can see a wrong carry */
	char *naive;
	size_t nnaive;
	assert_int_equal(utf8_sanitize(in, 2, &naive, &nnaive), 0);
	assert_memory_equal(naive, "a" FFFD, nnaive);
	free(naive);
	for (size_t k = 1; k <= len; k++) {
		size_t n;
		char *got = stream_in_chunks(in, len, k, &n);
		assert_int_equal(n, nwhole);
		assert_memory_equal(got, whole, n);
		free(got);
	}
	free(whole);
}

static void test_cut(void **state)
{
	(void)state;
	const char *s = "ab\xc3\xa9" "cd"; /* a b é c d: 6 bytes */
	assert_int_equal(utf8_cut(s, 6, 3), 2);
	assert_int_equal(utf8_cut(s, 6, 4), 4);
	assert_int_equal(utf8_cut(s, 6, 100), 6);
	assert_int_equal(utf8_cut(s, 6, 0), 0);
	assert_int_equal(utf8_cut("", 0, 5), 0);
	const char *e = "\xf0\x9f\x90\xbc" "x";
	for (size_t m = 0; m < 4; m++)
		assert_int_equal(utf8_cut(e, 5, m), 0);
	assert_int_equal(utf8_cut(e, 5, 4), 4);
}

static void test_json_lossy(void **state)
{
	(void)state;
	json_t *j = utf8_json_lossy(S("ok\x80"));
	assert_non_null(j);
	assert_string_equal(json_string_value(j), "ok" FFFD);
	json_decref(j);
	j = utf8_json_lossy(S("caf\xc3\xa9"));
	assert_string_equal(json_string_value(j), "caf\xc3\xa9");
	json_decref(j);
	j = utf8_json_lossy(S("a\x00" "b"));
	assert_int_equal(json_string_length(j), 3);
	json_decref(j);
	j = utf8_json_lossy("", 0);
	assert_non_null(j);
	assert_string_equal(json_string_value(j), "");
	json_decref(j);
}

static void test_printable(void **state)
{
	(void)state;
	assert_true(utf8_printable(S("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xbc")));
	assert_true(utf8_printable(S("\xc2\xa0nbsp and \xd8\xa7 arabic alif")));
	assert_true(utf8_printable(S("\xe2\x80\x8d zwj, \xe2\x80\xa7 hyphenation point")));
	assert_false(utf8_printable(S("line \xe2\x80\xa8 sep")));   /* U+2028 */
	assert_false(utf8_printable(S("para \xe2\x80\xa9 sep")));   /* U+2029 */
	assert_false(utf8_printable(S("tab\there")));
	assert_false(utf8_printable(S("del\x7f")));
	assert_false(utf8_printable(S("c1 \xc2\x85 NEL")));
	assert_false(utf8_printable(S("\xe2\x80\xae" "evil")));   /* U+202E RLO */
	assert_false(utf8_printable(S("\xe2\x80\xaa" "lre")));    /* U+202A */
	assert_false(utf8_printable(S("\xe2\x81\xa6" "lri")));    /* U+2066 */
	assert_false(utf8_printable(S("\xe2\x81\xa9" "pdi")));    /* U+2069 */
	assert_false(utf8_printable(S("\xe2\x80\x8f" "rlm")));    /* U+200F */
	assert_false(utf8_printable(S("\xd8\x9c" "alm")));         /* U+061C */
	assert_false(utf8_printable(S("bad \xff")));
	assert_true(utf8_is_control(S("\x1b")));
	assert_false(utf8_is_control(S("a")));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seq_len_classes),
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_sanitize_maximal_subparts),
		cmocka_unit_test(test_incomplete_tail),
		cmocka_unit_test(test_split_sequences_across_chunks),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_json_lossy),
		cmocka_unit_test(test_printable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
