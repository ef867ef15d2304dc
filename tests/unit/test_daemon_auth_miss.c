/*
 * test_daemon_auth_miss.c - unknown keys (auth_miss.c): the negative cache
 * and the lookup budgets per client address and overall, on a clock the
 * test moves.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/http/auth_miss.h"

/* A well-formed hash, different for each i. */
static const char *hash(unsigned i)
{
	static char h[65];
	snprintf(h, sizeof(h), "%08x%056d", i * 2654435761u, 0);
	return h;
}

static void negative_cache(void **state)
{
	(void)state;
	struct auth_miss *m = auth_miss_new();
	assert_non_null(m);
	int64_t t = 1000000;
	/* positive control: a key never looked up may be */
	assert_true(auth_miss_may_look_up(m, hash(1), "192.0.2.1", t));
	auth_miss_note_unknown(m, hash(1), t);
	/* then not again, from any address, until its entry is old */
	assert_false(auth_miss_may_look_up(m, hash(1), "192.0.2.1", t + 1));
	assert_false(auth_miss_may_look_up(m, hash(1), "198.51.100.9", t + AUTH_MISS_TTL_MS - 1));
	assert_true(auth_miss_may_look_up(m, hash(1), "198.51.100.9", t + AUTH_MISS_TTL_MS));
	/* a key that turned out to exist is forgotten */
	auth_miss_note_unknown(m, hash(2), t);
	auth_miss_forget(m, hash(2));
	assert_true(auth_miss_may_look_up(m, hash(2), "192.0.2.3", t + 1));
	/* not a hash: never looked up */
	assert_false(auth_miss_may_look_up(m, "xyz", "192.0.2.4", t));
	assert_false(auth_miss_may_look_up(m, NULL, "192.0.2.4", t));
	auth_miss_free(m);
	auth_miss_free(NULL);
}

/* How many of n lookups of new keys from client at t are let through. */
static unsigned allowed(struct auth_miss *m, const char *client, unsigned first, unsigned n,
			int64_t t)
{
	unsigned k = 0;
	for (unsigned i = 0; i < n; i++)
		k += (unsigned)auth_miss_may_look_up(m, hash(first + i), client, t);
	return k;
}

static void budgets(void **state)
{
	(void)state;
	struct auth_miss *m = auth_miss_new();
	int64_t t = 5000000;
	/* 1000 new keys from one address at once: the burst, no more */
	assert_int_equal(allowed(m, "192.0.2.10", 0, 1000, t), AUTH_MISS_BURST);
	/* one second later: what the second refilled */
	assert_int_equal(allowed(m, "192.0.2.10", 1000, 1000, t + 1000), AUTH_MISS_PER_S);
	/* another address has its own budget */
	assert_int_equal(allowed(m, "192.0.2.11", 2000, 1000, t + 1000), AUTH_MISS_BURST);
	/* IPv6: one /64 is one client, another /64 another */
	assert_int_equal(allowed(m, "2001:db8:0:1::1", 3000, 100, t + 1000), AUTH_MISS_BURST);
	assert_int_equal(allowed(m, "2001:db8:0:1::ffff", 4000, 100, t + 1000), 0);
	assert_int_equal(allowed(m, "2001:db8:0:2::1", 5000, 100, t + 1000), AUTH_MISS_BURST);
	/* 1000 requests over 10 s from one address: burst + rate * time */
	struct auth_miss *m2 = auth_miss_new();
	unsigned k = 0;
	for (unsigned i = 0; i < 1000; i++)
		k += (unsigned)auth_miss_may_look_up(m2, hash(10000 + i), "203.0.113.5",
						     t + (int64_t)i * 10);
	assert_true(k <= AUTH_MISS_BURST + AUTH_MISS_PER_S * 10 + 1);
	assert_true(k >= AUTH_MISS_BURST + AUTH_MISS_PER_S * 9);
	auth_miss_free(m2);
	auth_miss_free(m);
}

static void all_addresses(void **state)
{
	(void)state;
	struct auth_miss *m = auth_miss_new();
	int64_t t = 9000000;
	/* many addresses at once: the overall budget holds */
	unsigned k = 0;
	for (unsigned i = 0; i < 200; i++) {
		char a[32];
		snprintf(a, sizeof(a), "10.0.%u.%u", i / 250, i % 250);
		k += allowed(m, a, 100000 + i * 10, 2, t);
	}
	assert_int_equal(k, AUTH_MISS_ALL_BURST);
	/* a refusal by the overall budget did not spend the address's own: a
	 * second later (20 refilled overall) it has its whole burst */
	assert_int_equal(allowed(m, "10.0.0.199", 200000, 20, t + 1000), AUTH_MISS_BURST);
	/* unknown addresses share one client */
	assert_int_equal(allowed(m, "unknown", 300000, 100, t + 60000), AUTH_MISS_BURST);
	assert_int_equal(allowed(m, NULL, 400000, 100, t + 60000), 0);
	/* more addresses than the table holds: each new one still bounded */
	for (unsigned i = 0; i < AUTH_MISS_CLIENTS + 10; i++) {
		char a[32];
		snprintf(a, sizeof(a), "172.16.%u.%u", i / 250, i % 250);
		assert_true(allowed(m, a, 500000 + i * 20, 20, t + 120000 + i * 1000) <=
			    AUTH_MISS_BURST);
	}
	auth_miss_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(negative_cache),
		cmocka_unit_test(budgets),
		cmocka_unit_test(all_addresses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
