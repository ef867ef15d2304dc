/*
 * test_dynbuf.c - the capped growable buffer (common/dynbuf.c): adds within
 * and past the cap, a cap of 0, growth, printf, reading in place, consuming
 * from the front, and handing the contents over.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/dynbuf.h"

static void test_add_within_cap(void **state)
{
	(void)state;
	struct dynbuf b;
	dynbuf_init(&b, 16);
	assert_null(b.p);
	assert_string_equal(dynbuf_str(&b), "");
	assert_int_equal(dynbuf_add(&b, "abc", 3), 0);
	assert_int_equal(dynbuf_add(&b, "", 0), 0);
	assert_int_equal(dynbuf_add_str(&b, "def"), 0);
	assert_int_equal(b.len, 6);
	assert_string_equal(b.p, "abcdef");
	assert_false(b.truncated);
	/* exactly the cap is fine */
	assert_int_equal(dynbuf_add(&b, "0123456789", 10), 0);
	assert_int_equal(b.len, 16);
	assert_false(b.truncated);
	assert_true(b.alloc <= 17);
	dynbuf_free(&b);
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 16);
}

static void test_add_past_cap_keeps_what_fit(void **state)
{
	(void)state;
	struct dynbuf b;
	dynbuf_init(&b, 5);
	assert_int_equal(dynbuf_add(&b, "abc", 3), 0);
	assert_false(b.truncated); /* positive control */
	assert_int_equal(dynbuf_add(&b, "defg", 4), -EFBIG);
	assert_true(b.truncated);
	assert_int_equal(b.len, 5);
	assert_string_equal(b.p, "abcde");
	/* full: nothing more fits, the contents stay */
	assert_int_equal(dynbuf_add(&b, "x", 1), -EFBIG);
	assert_string_equal(b.p, "abcde");
	dynbuf_reset(&b);
	assert_false(b.truncated);
	assert_int_equal(b.len, 0);
	assert_string_equal(dynbuf_str(&b), "");
	assert_int_equal(dynbuf_add(&b, "xy", 2), 0);
	assert_string_equal(b.p, "xy");
	dynbuf_free(&b);
}

static void test_cap_zero(void **state)
{
	(void)state;
	struct dynbuf b;
	dynbuf_init(&b, 0);
	assert_int_equal(dynbuf_add(&b, "", 0), 0);
	assert_false(b.truncated);
	assert_int_equal(dynbuf_add(&b, "x", 1), -EFBIG);
	assert_true(b.truncated);
	assert_int_equal(b.len, 0);
	assert_string_equal(dynbuf_str(&b), "");
	assert_int_equal(dynbuf_addf(&b, "%d", 7), -EFBIG);
	assert_int_equal(dynbuf_reserve(&b, 1), -EFBIG);
	assert_int_equal(dynbuf_reserve(&b, 0), 0);
	size_t n = 99;
	char *s = dynbuf_take(&b, &n);
	assert_non_null(s);
	assert_string_equal(s, "");
	assert_int_equal(n, 0);
	free(s);
	dynbuf_free(&b);
}

static void test_growth(void **state)
{
	(void)state;
	struct dynbuf b;
	dynbuf_init(&b, 1000);
	size_t last_alloc = 0;
	int grew = 0;
	for (size_t i = 0; i < 1000; i++) {
		char c = (char)('a' + i % 26);
		assert_int_equal(dynbuf_add(&b, &c, 1), 0);
		assert_true(b.alloc >= b.len + 1);
		assert_true(b.alloc <= 1001); /* never beyond the cap and its NUL */
		if (b.alloc != last_alloc)
			grew++;
		last_alloc = b.alloc;
	}
	assert_true(grew > 1 && grew < 12); /* doubling, not one byte at a time */
	for (size_t i = 0; i < 1000; i++)
		assert_int_equal(b.p[i], 'a' + i % 26);
	assert_int_equal(b.p[1000], '\0');
	assert_int_equal(dynbuf_add(&b, "z", 1), -EFBIG);
	dynbuf_free(&b);

	/* a large cap does not allocate it up front */
	dynbuf_init(&b, SIZE_MAX);
	assert_int_equal(dynbuf_add(&b, "hi", 2), 0);
	assert_true(b.alloc < 4096);
	dynbuf_free(&b);
}

static void test_printf(void **state)
{
	(void)state;
	struct dynbuf b;
	dynbuf_init(&b, 8);
	assert_int_equal(dynbuf_addf(&b, "%s=%d", "n", 42), 0);
	assert_string_equal(b.p, "n=42");
	assert_int_equal(dynbuf_addf(&b, "%s", ""), 0);
	assert_int_equal(dynbuf_addf(&b, " %s", "world"), -EFBIG);
	assert_true(b.truncated);
	assert_int_equal(b.len, 8);
	assert_string_equal(b.p, "n=42 wor");
	dynbuf_free(&b);

	dynbuf_init(&b, 100000);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(dynbuf_addf(&b, "%04d,", i), 0);
	assert_int_equal(b.len, 5000);
	assert_memory_equal(b.p + 4995, "0999,", 5);
	dynbuf_free(&b);
}

static void test_reserve_commit_consume(void **state)
{
	(void)state;
	struct dynbuf b;
	dynbuf_init(&b, 10);
	assert_int_equal(dynbuf_reserve(&b, 4), 0);
	memcpy(b.p + b.len, "line", 4);
	dynbuf_commit(&b, 4);
	assert_string_equal(b.p, "line");
	assert_int_equal(dynbuf_reserve(&b, 7), -EFBIG); /* 4 + 7 > 10 */
	assert_string_equal(b.p, "line");
	assert_int_equal(dynbuf_reserve(&b, 6), 0);
	memcpy(b.p + b.len, "\nrest", 5);
	dynbuf_commit(&b, 5);
	assert_string_equal(b.p, "line\nrest");
	dynbuf_consume(&b, 5);
	assert_int_equal(b.len, 4);
	assert_string_equal(b.p, "rest");
	dynbuf_consume(&b, 100);
	assert_int_equal(b.len, 0);
	assert_string_equal(b.p, "");
	dynbuf_consume(&b, 0);
	assert_int_equal(b.len, 0);
	dynbuf_free(&b);
}

static void test_take_transfers_ownership(void **state)
{
	(void)state;
	struct dynbuf b;
	dynbuf_init(&b, 64);
	assert_int_equal(dynbuf_add(&b, "a\0b", 3), 0);
	char *p = b.p;
	size_t n = 0;
	char *s = dynbuf_take(&b, &n);
	assert_ptr_equal(s, p);
	assert_int_equal(n, 3);
	assert_memory_equal(s, "a\0b", 4);
	/* the buffer is empty, keeps its cap, and no longer owns s */
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 64);
	assert_int_equal(dynbuf_add(&b, "next", 4), 0);
	assert_ptr_not_equal(b.p, s);
	assert_string_equal(s, "a");
	free(s);
	s = dynbuf_take(&b, NULL);
	assert_string_equal(s, "next");
	free(s);
	dynbuf_free(&b); /* nothing left: a no-op */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_within_cap),
		cmocka_unit_test(test_add_past_cap_keeps_what_fit),
		cmocka_unit_test(test_cap_zero),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_printf),
		cmocka_unit_test(test_reserve_commit_consume),
		cmocka_unit_test(test_take_transfers_ownership),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
