/*
 * test_ring.c - the offset-numbered byte ring (common/ring.c): reads from
 * any offset, growth, wrapping, a write longer than the cap, offsets before
 * the kept window and past the end, against a model that keeps every byte.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/ring.h"

static void test_small(void **state)
{
	(void)state;
	struct ring r;
	ring_init(&r, 8);
	uint8_t out[16];
	uint64_t at = 99;
	assert_int_equal(ring_read(&r, 0, out, sizeof(out), &at), 0);
	assert_int_equal(at, 0);
	assert_int_equal(ring_write(&r, "abcde", 5), 0);
	assert_int_equal(ring_start(&r), 0);
	assert_int_equal(ring_read(&r, 1, out, 3, &at), 3);
	assert_int_equal(at, 1);
	assert_memory_equal(out, "bcd", 3);
	/* wraps: keeps the last 8 of "abcdefghij" */
	assert_int_equal(ring_write(&r, "fghij", 5), 0);
	assert_int_equal(r.end, 10);
	assert_int_equal(ring_start(&r), 2);
	assert_int_equal(ring_read(&r, 0, out, sizeof(out), &at), 8);
	assert_int_equal(at, 2); /* 0 and 1 were dropped */
	assert_memory_equal(out, "cdefghij", 8);
	/* past the end: nothing, at the end */
	assert_int_equal(ring_read(&r, 50, out, sizeof(out), &at), 0);
	assert_int_equal(at, 10);
	/* a write longer than the cap keeps its tail */
	assert_int_equal(ring_write(&r, "0123456789AB", 12), 0);
	assert_int_equal(r.end, 22);
	assert_int_equal(ring_read(&r, 0, out, sizeof(out), &at), 8);
	assert_int_equal(at, 14);
	assert_memory_equal(out, "456789AB", 8);
	ring_free(&r);
	assert_int_equal(ring_start(&r), 22); /* offsets go on */
	assert_int_equal(ring_write(&r, "x", 1), 0);
	assert_int_equal(ring_read(&r, 0, out, sizeof(out), &at), 1);
	assert_int_equal(at, 22);
	ring_free(&r);
}

/* Random writes and reads against a model holding every byte. */
static void test_against_model(void **state)
{
	(void)state;
	enum { CAP = 10007, TOTAL = 300000 };
	uint8_t *model = malloc(TOTAL + 70000);
	uint8_t *buf = malloc(70000), *out = malloc(70000);
	assert_non_null(model);
	assert_non_null(buf);
	assert_non_null(out);
	struct ring r;
	ring_init(&r, CAP);
	uint64_t seed = 88172645463325252ull, end = 0;
	while (end < TOTAL) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		size_t n = (size_t)(seed % 3 == 0 ? seed % 20000 : seed % 300);
		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)(end + i * 7);
		memcpy(model + end, buf, n);
		assert_int_equal(ring_write(&r, buf, n), 0);
		end += n;
		assert_int_equal(r.end, end);
		assert_true(r.alloc <= CAP);
		uint64_t start = end > CAP ? end - CAP : 0;
		assert_int_equal(ring_start(&r), start);
		uint64_t from = end ? (seed >> 20) % (end + 5) : 0;
		size_t max = (size_t)((seed >> 40) % 12000);
		uint64_t at;
		size_t got = ring_read(&r, from, out, max, &at);
		uint64_t want_at = from < start ? start : (from > end ? end : from);
		size_t want = end - want_at < max ? (size_t)(end - want_at) : max;
		assert_int_equal(at, want_at);
		assert_int_equal(got, want);
		if (got)
			assert_memory_equal(out, model + want_at, got);
	}
	assert_int_equal(r.alloc, CAP);
	ring_free(&r);
	free(model);
	free(buf);
	free(out);
}

/* Memory follows what was written, not the cap. */
static void test_grows_lazily(void **state)
{
	(void)state;
	struct ring r;
	ring_init(&r, 1 << 20);
	assert_null(r.p);
	assert_int_equal(ring_write(&r, "hello", 5), 0);
	assert_true(r.alloc < 8192);
	uint8_t big[20000] = {0};
	assert_int_equal(ring_write(&r, big, sizeof(big)), 0);
	assert_true(r.alloc >= 20005);
	assert_true(r.alloc <= 65536);
	uint8_t out[5];
	uint64_t at;
	assert_int_equal(ring_read(&r, 0, out, 5, &at), 5);
	assert_memory_equal(out, "hello", 5);
	ring_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small),
		cmocka_unit_test(test_against_model),
		cmocka_unit_test(test_grows_lazily),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
