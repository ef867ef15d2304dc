/*
 * test_daemon_store.c - the daemon's SQLite registry (src/daemon/store*.c):
 * key, sandbox and code-context rows through every store_* call (insert,
 * unique ids, get, lists with their filters and order, updates and deletes
 * of missing rows, counts, purge), the triggers that drop a sandbox's
 * contexts when it stops or its row is deleted, and rows written by another
 * program that do not fit (the list fails whole and frees what it read).
 * Runs on a database in a fresh temporary folder.
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
#include <sqlite3.h>

#include "common/util.h"
#include "daemon/store/store.h"

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

static struct sandbox_row sandbox(const char *id, const char *team, int64_t created)
{
	struct sandbox_row r = {0};
	snprintf(r.id, sizeof(r.id), "%s", id);
	snprintf(r.team, sizeof(r.team), "%s", team);
	snprintf(r.template_name, sizeof(r.template_name), "base");
	snprintf(r.status, sizeof(r.status), "running");
	r.created_at_ms = created;
	r.expires_at_ms = created + 1000;
	r.vcpus = 2;
	r.memory_mib = 512;
	r.metadata_json = "{\"k\":\"v\"}";
	r.env_json = NULL; /* stored as {} */
	return r;
}

static void add_sandbox(struct store *s, const char *id)
{
	struct sandbox_row r = sandbox(id, "t", 1);
	assert_int_equal(store_sandbox_insert(s, &r), 0);
}

static void add_key(struct store *s, const char *id, const char *team, int admin, int64_t at)
{
	struct key_row k = {0};
	char hash[65];
	snprintf(k.id, sizeof(k.id), "%s", id);
	snprintf(k.name, sizeof(k.name), "name of %s", id);
	snprintf(k.team, sizeof(k.team), "%s", team);
	k.admin = admin;
	k.created_at_ms = at;
	snprintf(hash, sizeof(hash), "hash-%s", id);
	assert_int_equal(store_key_insert(s, &k, hash), 0);
}

/* Run sql on the store's database file through a second connection, as
 * another program would. */
static void raw_sql(struct fixture *f, const char *sql)
{
	char path[128];
	sqlite3 *db;
	snprintf(path, sizeof(path), "%s/pandastack.db", f->dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static void test_keys(void **state)
{
	struct fixture *f = *state;
	add_key(f->s, "key_b", "team1", 0, 20);
	add_key(f->s, "key_a", "team1", 1, 10);
	add_key(f->s, "key_c", "team2", 0, 30);
	struct key_row k = {0};
	snprintf(k.id, sizeof(k.id), "key_a");
	assert_int_equal(store_key_insert(f->s, &k, "another-hash"), -EEXIST); /* id taken */
	snprintf(k.id, sizeof(k.id), "key_d");
	assert_int_equal(store_key_insert(f->s, &k, "hash-key_a"), -EEXIST); /* hash taken */

	assert_int_equal(store_key_by_hash(f->s, "hash-key_b", &k), 0);
	assert_string_equal(k.id, "key_b");
	assert_string_equal(k.name, "name of key_b");
	assert_string_equal(k.team, "team1");
	assert_int_equal(k.admin, 0);
	assert_int_equal(k.created_at_ms, 20);
	assert_int_equal(k.last_used_at_ms, 0);
	assert_int_equal(store_key_by_hash(f->s, "hash-none", &k), -ENOENT);
	assert_int_equal(store_key_get(f->s, "key_a", &k), 0);
	assert_int_equal(k.admin, 1);
	assert_int_equal(store_key_get(f->s, "key_none", &k), -ENOENT);

	struct key_row *rows;
	size_t n;
	assert_int_equal(store_key_list(f->s, "team1", &rows, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(rows[0].id, "key_a"); /* oldest first */
	assert_string_equal(rows[1].id, "key_b");
	free(rows);
	assert_int_equal(store_key_list(f->s, NULL, &rows, &n), 0); /* every team */
	assert_int_equal(n, 3);
	free(rows);
	assert_int_equal(store_key_list(f->s, "team9", &rows, &n), 0);
	assert_int_equal(n, 0);
	free(rows);

	assert_int_equal(store_key_touch(f->s, "key_b", 12345), 0);
	assert_int_equal(store_key_get(f->s, "key_b", &k), 0);
	assert_int_equal(k.last_used_at_ms, 12345);
	assert_int_equal(store_key_touch(f->s, "key_none", 1), -ENOENT);

	int admins = -1;
	assert_int_equal(store_key_count_admin(f->s, &admins), 0);
	assert_int_equal(admins, 1);
	assert_int_equal(store_key_delete(f->s, "key_a"), 0);
	assert_int_equal(store_key_delete(f->s, "key_a"), -ENOENT);
	assert_int_equal(store_key_count_admin(f->s, &admins), 0);
	assert_int_equal(admins, 0);
}

static void test_sandboxes(void **state)
{
	struct fixture *f = *state;
	struct sandbox_row a = sandbox("sbx_a", "team1", 20), b = sandbox("sbx_b", "team1", 10),
			   c = sandbox("sbx_c", "team2", 30);
	assert_int_equal(store_sandbox_insert(f->s, &a), 0);
	assert_int_equal(store_sandbox_insert(f->s, &b), 0);
	assert_int_equal(store_sandbox_insert(f->s, &c), 0);
	assert_int_equal(store_sandbox_insert(f->s, &a), -EEXIST);

	struct sandbox_row r;
	assert_int_equal(store_sandbox_get(f->s, "sbx_a", &r), 0);
	assert_string_equal(r.team, "team1");
	assert_string_equal(r.template_name, "base");
	assert_string_equal(r.status, "running");
	assert_int_equal(r.expires_at_ms, 1020);
	assert_int_equal(r.vcpus, 2);
	assert_int_equal(r.memory_mib, 512);
	assert_string_equal(r.metadata_json, "{\"k\":\"v\"}");
	assert_string_equal(r.env_json, "{}");
	sandbox_row_clear(&r);
	assert_int_equal(store_sandbox_get(f->s, "sbx_none", &r), -ENOENT);

	assert_int_equal(store_sandbox_set_status(f->s, "sbx_b", "stopped", "ttl expired", 50), 0);
	assert_int_equal(store_sandbox_set_status(f->s, "sbx_none", "stopped", NULL, 1), -ENOENT);
	assert_int_equal(store_sandbox_set_expiry(f->s, "sbx_a", 7777), 0);
	assert_int_equal(store_sandbox_set_expiry(f->s, "sbx_none", 1), -ENOENT);
	assert_int_equal(store_sandbox_get(f->s, "sbx_a", &r), 0);
	assert_int_equal(r.expires_at_ms, 7777);
	sandbox_row_clear(&r);

	struct sandbox_row *rows;
	size_t n;
	assert_int_equal(store_sandbox_list(f->s, "team1", NULL, &rows, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(rows[0].id, "sbx_b"); /* oldest first */
	assert_string_equal(rows[0].reason, "ttl expired");
	assert_int_equal(rows[0].ended_at_ms, 50);
	assert_string_equal(rows[1].id, "sbx_a");
	sandbox_rows_free(rows, n);
	assert_int_equal(store_sandbox_list(f->s, NULL, "running", &rows, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(rows[0].id, "sbx_a");
	assert_string_equal(rows[1].id, "sbx_c");
	sandbox_rows_free(rows, n);
	assert_int_equal(store_sandbox_list(f->s, "team2", "stopped", &rows, &n), 0);
	assert_int_equal(n, 0);
	sandbox_rows_free(rows, n);

	int64_t count = -1;
	assert_int_equal(store_sandbox_count(f->s, "running", &count), 0);
	assert_int_equal(count, 2);
	int purged = -1;
	assert_int_equal(store_sandbox_purge_ended(f->s, 50, &purged), 0); /* ended at 50: kept */
	assert_int_equal(purged, 0);
	assert_int_equal(store_sandbox_purge_ended(f->s, 51, &purged), 0);
	assert_int_equal(purged, 1);
	assert_int_equal(store_sandbox_get(f->s, "sbx_b", &r), -ENOENT);
	assert_int_equal(store_sandbox_delete(f->s, "sbx_a"), 0);
	assert_int_equal(store_sandbox_delete(f->s, "sbx_a"), -ENOENT);
}

/* A row that does not fit its struct (written by another program) fails the
 * whole list, and the rows read before it are freed (the sanitizer build
 * sees a leak otherwise). */
static void test_rows_that_do_not_fit(void **state)
{
	struct fixture *f = *state;
	struct sandbox_row *rows = (void *)1;
	size_t n = 99;
	add_sandbox(f->s, "sbx_a");
	/* control: the list reads */
	assert_int_equal(store_sandbox_list(f->s, NULL, NULL, &rows, &n), 0);
	assert_int_equal(n, 1);
	sandbox_rows_free(rows, n);
	/* a second, newer row whose status is longer than STORE_STATUS_MAX */
	raw_sql(f, "INSERT INTO sandboxes (id, team, template, status, created_at, expires_at) "
		   "VALUES ('sbx_b', 't', 'base', 'running', 2, 3);"
		   "PRAGMA ignore_check_constraints = 1;"
		   "UPDATE sandboxes SET status = 'running-running-running' WHERE id = 'sbx_b';");
	assert_int_equal(store_sandbox_list(f->s, NULL, NULL, &rows, &n), -EIO);
	assert_null(rows);
	assert_int_equal(n, 0);
	struct sandbox_row r;
	assert_int_equal(store_sandbox_get(f->s, "sbx_b", &r), -EIO);
	assert_int_equal(store_sandbox_get(f->s, "sbx_a", &r), 0);
	sandbox_row_clear(&r);

	struct key_row *keys;
	add_key(f->s, "key_a", "t", 0, 1);
	raw_sql(f, "UPDATE api_keys SET team = printf('%.100c', 'x') WHERE id = 'key_a';");
	assert_int_equal(store_key_list(f->s, NULL, &keys, &n), -EIO);
	assert_null(keys);
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

static struct snapshot_row snap(const char *id, const char *team, const char *parent,
				const char *kind, const char *state, int64_t created)
{
	struct snapshot_row r = {0};
	snprintf(r.id, sizeof(r.id), "%s", id);
	snprintf(r.team, sizeof(r.team), "%s", team);
	snprintf(r.sandbox_id, sizeof(r.sandbox_id), "sbx_src");
	snprintf(r.template_name, sizeof(r.template_name), "base");
	snprintf(r.parent, sizeof(r.parent), "%s", parent);
	snprintf(r.kind, sizeof(r.kind), "%s", kind);
	snprintf(r.state, sizeof(r.state), "%s", state);
	r.created_at_ms = created;
	r.env_json = "{\"A\":\"1\"}";
	return r;
}

static int is_garbage(struct store *s, const char *id)
{
	char ids[16][STORE_ID_MAX];
	size_t n = 0;
	assert_int_equal(store_snapshot_garbage(s, ids, 16, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(ids[i], id))
			return 1;
	return 0;
}

/* Snapshot rows, and what keeps a snapshot's files: a visible user
 * snapshot, a running or paused sandbox on it, a child; only a paused
 * sandbox's chain blocks a delete. */
static void test_snapshots(void **state)
{
	struct fixture *f = *state;
	struct snapshot_row u1 = snap("snap_u1", "t1", "", "user", "ready", 10),
			    fk = snap("snap_fk", "t1", "snap_u1", "fork", "ready", 20),
			    pa = snap("snap_pa", "t1", "snap_fk", "pause", "pending", 30),
			    u2 = snap("snap_u2", "t2", "", "user", "ready", 40);
	assert_int_equal(store_snapshot_insert(f->s, &u1), 0);
	assert_int_equal(store_snapshot_insert(f->s, &fk), 0);
	assert_int_equal(store_snapshot_insert(f->s, &pa), 0);
	assert_int_equal(store_snapshot_insert(f->s, &u2), 0);
	assert_int_equal(store_snapshot_insert(f->s, &u2), -EEXIST);
	struct snapshot_row r;
	assert_int_equal(store_snapshot_get(f->s, "snap_fk", &r), 0);
	assert_string_equal(r.parent, "snap_u1");
	assert_string_equal(r.kind, "fork");
	assert_string_equal(r.env_json, "{\"A\":\"1\"}");
	assert_string_equal(r.metadata_json, "{}");
	snapshot_row_clear(&r);
	assert_int_equal(store_snapshot_set_ready(f->s, "snap_pa", 4096), 0);
	assert_int_equal(store_snapshot_set_ready(f->s, "snap_none", 1), -ENOENT);

	struct snapshot_row *rows;
	size_t n;
	assert_int_equal(store_snapshot_list(f->s, "t1", "user", "ready", &rows, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].id, "snap_u1");
	snapshot_rows_free(rows, n);
	int64_t count = -1;
	assert_int_equal(store_snapshot_count(f->s, "t1", &count), 0);
	assert_int_equal(count, 1);

	/* No sandbox on the pause snapshot: it, then the fork's, are garbage
	 * (the fork's only once its child is gone); a user snapshot is not. */
	assert_true(is_garbage(f->s, "snap_pa"));
	assert_false(is_garbage(f->s, "snap_fk"));
	assert_false(is_garbage(f->s, "snap_u1"));
	/* A paused sandbox on snap_pa keeps the chain and blocks deletes. */
	struct sandbox_row b = sandbox("sbx_p", "t1", 5);
	snprintf(b.snapshot, sizeof(b.snapshot), "snap_u1");
	assert_int_equal(store_sandbox_insert(f->s, &b), 0);
	assert_int_equal(store_sandbox_set_paused(f->s, "sbx_p", "snap_pa", 1234, 99), 0);
	assert_int_equal(store_sandbox_get(f->s, "sbx_p", &b), 0);
	assert_string_equal(b.status, "paused");
	assert_string_equal(b.snapshot, "snap_pa");
	assert_int_equal(b.ttl_left_ms, 1234);
	assert_int_equal(b.expires_at_ms, 99);
	sandbox_row_clear(&b);
	assert_false(is_garbage(f->s, "snap_pa"));
	int needed = -1;
	assert_int_equal(store_snapshot_paused_need(f->s, "snap_u1", &needed), 0);
	assert_int_equal(needed, 1);
	assert_int_equal(store_snapshot_paused_need(f->s, "snap_u2", &needed), 0);
	assert_int_equal(needed, 0);
	/* Resumed: running keeps it too; stopped lets it go. */
	assert_int_equal(store_sandbox_set_resumed(f->s, "sbx_p", 500), 0);
	assert_int_equal(store_sandbox_set_resumed(f->s, "sbx_p", 500), -ENOENT);
	assert_int_equal(store_snapshot_paused_need(f->s, "snap_u1", &needed), 0);
	assert_int_equal(needed, 0);
	assert_false(is_garbage(f->s, "snap_pa"));
	assert_int_equal(store_sandbox_set_status(f->s, "sbx_p", "stopped", "x", 600), 0);
	assert_true(is_garbage(f->s, "snap_pa"));
	/* Deleted by the team, still needed by a child; a flatten frees it. */
	assert_int_equal(store_snapshot_set_state(f->s, "snap_u1", "deleted"), 0);
	assert_false(is_garbage(f->s, "snap_u1"));
	assert_int_equal(store_snapshot_delete(f->s, "snap_pa"), 0);
	assert_true(is_garbage(f->s, "snap_fk"));
	assert_int_equal(store_snapshot_set_parent(f->s, "snap_fk", "", 77), 0);
	assert_true(is_garbage(f->s, "snap_u1"));
	assert_int_equal(store_snapshot_delete(f->s, "snap_u1"), 0);
	assert_int_equal(store_snapshot_delete(f->s, "snap_u1"), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sandboxes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rows_that_do_not_fit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_insert_list_delete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_contexts_go_with_their_sandbox, setup, teardown),
		cmocka_unit_test_setup_teardown(test_snapshots, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
