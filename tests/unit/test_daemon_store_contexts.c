/*
 * test_daemon_store_contexts.c - code-context rows in the daemon's SQLite
 * registry (src/daemon/store_contexts.c and migration 2 in store.c):
 * insert, list per sandbox in creation order, delete, and the triggers that
 * drop a sandbox's contexts when it stops or its row is deleted.  Runs on a
 * database in a fresh temporary folder.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/util.h"
#include "daemon/store.h"

struct fixture {
	char dir[64];
	struct store *s;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/pandastack-store-test-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	char path[128], err[256];
	snprintf(path, sizeof(path), "%s/pandastack.db", f->dir);
	assert_int_equal(store_open(path, &f->s, err, sizeof(err)), 0);
	assert_true(store_schema_version(f->s) >= 2);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	store_close(f->s);
	util_rm_rf(f->dir);
	free(f);
	return 0;
}

static void add_sandbox(struct store *s, const char *id)
{
	struct sandbox_row r = {0};
	snprintf(r.id, sizeof(r.id), "%s", id);
	snprintf(r.team, sizeof(r.team), "t");
	snprintf(r.template_name, sizeof(r.template_name), "base");
	snprintf(r.status, sizeof(r.status), "running");
	r.created_at_ms = 1;
	r.expires_at_ms = 2;
	r.metadata_json = "{}";
	r.env_json = "{}";
	assert_int_equal(store_sandbox_insert(s, &r), 0);
}

static void add_context(struct store *s, const char *sbx, const char *id, int64_t at)
{
	struct context_row c = {0};
	snprintf(c.id, sizeof(c.id), "%s", id);
	snprintf(c.sandbox_id, sizeof(c.sandbox_id), "%s", sbx);
	snprintf(c.language, sizeof(c.language), "python");
	snprintf(c.cwd, sizeof(c.cwd), "/workspace");
	c.created_at_ms = at;
	assert_int_equal(store_context_insert(s, &c), 0);
}

static size_t count(struct store *s, const char *sbx)
{
	struct context_row *rows;
	size_t n;
	assert_int_equal(store_context_list(s, sbx, &rows, &n), 0);
	free(rows);
	return n;
}

static void test_insert_list_delete(void **state)
{
	struct fixture *f = *state;
	add_sandbox(f->s, "sbx_a");
	add_sandbox(f->s, "sbx_b");
	add_context(f->s, "sbx_a", "ctx_2", 200);
	add_context(f->s, "sbx_a", "ctx_1", 100);
	add_context(f->s, "sbx_b", "ctx_3", 50);
	struct context_row *rows;
	size_t n;
	assert_int_equal(store_context_list(f->s, "sbx_a", &rows, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(rows[0].id, "ctx_1"); /* oldest first */
	assert_string_equal(rows[1].id, "ctx_2");
	assert_string_equal(rows[1].cwd, "/workspace");
	assert_int_equal(rows[1].created_at_ms, 200);
	free(rows);
	/* ids are unique across sandboxes */
	struct context_row dup = {0};
	snprintf(dup.id, sizeof(dup.id), "ctx_1");
	snprintf(dup.sandbox_id, sizeof(dup.sandbox_id), "sbx_b");
	snprintf(dup.language, sizeof(dup.language), "python");
	assert_int_equal(store_context_insert(f->s, &dup), -EEXIST);
	/* a delete names its sandbox */
	assert_int_equal(store_context_delete(f->s, "sbx_b", "ctx_1"), -ENOENT);
	assert_int_equal(store_context_delete(f->s, "sbx_a", "ctx_1"), 0);
	assert_int_equal(store_context_delete(f->s, "sbx_a", "ctx_1"), -ENOENT);
	assert_int_equal(count(f->s, "sbx_a"), 1);
	assert_int_equal(count(f->s, "sbx_b"), 1);
	assert_int_equal(count(f->s, "sbx_none"), 0);
}

static void test_contexts_go_with_their_sandbox(void **state)
{
	struct fixture *f = *state;
	add_sandbox(f->s, "sbx_a");
	add_sandbox(f->s, "sbx_b");
	add_context(f->s, "sbx_a", "ctx_1", 1);
	add_context(f->s, "sbx_b", "ctx_2", 1);
	/* a sandbox that stops takes its contexts (their kernels died with it) */
	assert_int_equal(store_sandbox_set_status(f->s, "sbx_a", "stopped", "ttl expired", 5), 0);
	assert_int_equal(count(f->s, "sbx_a"), 0);
	assert_int_equal(count(f->s, "sbx_b"), 1);
	/* and so does a deleted row */
	assert_int_equal(store_sandbox_delete(f->s, "sbx_b"), 0);
	assert_int_equal(count(f->s, "sbx_b"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_insert_list_delete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_contexts_go_with_their_sandbox, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
