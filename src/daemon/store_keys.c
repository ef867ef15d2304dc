/*
 * store_keys.c - API key rows (see store.h).  Secrets are never stored:
 * only their SHA-256 (auth.c computes it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/store.h"
#include "daemon/store_int.h"

#define KEY_COLS "id, name, team, admin, created_at, last_used_at"

static int read_key(sqlite3_stmt *st, struct key_row *k)
{
	memset(k, 0, sizeof(*k));
	if (store__copy_text(st, 0, k->id, sizeof(k->id)) < 0 ||
	    store__copy_text(st, 1, k->name, sizeof(k->name)) < 0 ||
	    store__copy_text(st, 2, k->team, sizeof(k->team)) < 0)
		return -EIO;
	k->admin = sqlite3_column_int(st, 3) != 0;
	k->created_at_ms = sqlite3_column_int64(st, 4);
	k->last_used_at_ms = sqlite3_column_int64(st, 5);
	return 0;
}

int store_key_insert(struct store *s, const struct key_row *k, const char *hash_hex)
{
	pthread_mutex_lock(&s->lock);
	int r = -EIO;
	sqlite3_stmt *st = store__prepare(
		s, "INSERT INTO api_keys (id, name, team, hash, admin, created_at) "
		   "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
		"key_insert");
	if (st) {
		sqlite3_bind_text(st, 1, k->id, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, k->name, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, k->team, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, hash_hex, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 5, k->admin ? 1 : 0);
		sqlite3_bind_int64(st, 6, k->created_at_ms);
		int rc = sqlite3_step(st);
		r = rc == SQLITE_DONE ? 0 : store__fail(s, rc, "key_insert");
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* One key row selected by a text parameter. */
static int key_one(struct store *s, const char *sql, const char *arg, struct key_row *out,
		   const char *where)
{
	pthread_mutex_lock(&s->lock);
	int r = -EIO;
	sqlite3_stmt *st = store__prepare(s, sql, where);
	if (st) {
		sqlite3_bind_text(st, 1, arg, -1, SQLITE_STATIC);
		int rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			r = read_key(st, out);
		else if (rc == SQLITE_DONE)
			r = -ENOENT;
		else
			r = store__fail(s, rc, where);
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

int store_key_by_hash(struct store *s, const char *hash_hex, struct key_row *out)
{
	return key_one(s, "SELECT " KEY_COLS " FROM api_keys WHERE hash = ?1", hash_hex, out,
		       "key_by_hash");
}

int store_key_get(struct store *s, const char *id, struct key_row *out)
{
	return key_one(s, "SELECT " KEY_COLS " FROM api_keys WHERE id = ?1", id, out, "key_get");
}

int store_key_list(struct store *s, const char *team, struct key_row **rows, size_t *n)
{
	*rows = NULL;
	*n = 0;
	pthread_mutex_lock(&s->lock);
	int r = -EIO;
	sqlite3_stmt *st = store__prepare(
		s, "SELECT " KEY_COLS " FROM api_keys WHERE (?1 IS NULL OR team = ?1) "
		   "ORDER BY created_at, id LIMIT 10000",
		"key_list");
	struct key_row *a = NULL;
	size_t len = 0, cap = 0;
	if (!st)
		goto out;
	if (team)
		sqlite3_bind_text(st, 1, team, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 1);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && len < STORE_LIST_MAX) {
		if (len == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct key_row *na = realloc(a, nc * sizeof(*a));
			if (!na) {
				r = -ENOMEM;
				goto out;
			}
			a = na;
			cap = nc;
		}
		if (read_key(st, &a[len]) < 0) {
			r = -EIO;
			goto out;
		}
		len++;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		r = store__fail(s, rc, "key_list");
		goto out;
	}
	*rows = a;
	*n = len;
	a = NULL;
	r = 0;
out:
	free(a);
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->lock);
	return r;
}

int store_key_delete(struct store *s, const char *id)
{
	pthread_mutex_lock(&s->lock);
	int r = -EIO;
	sqlite3_stmt *st = store__prepare(s, "DELETE FROM api_keys WHERE id = ?1", "key_delete");
	if (st) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		int rc = sqlite3_step(st);
		if (rc == SQLITE_DONE)
			r = sqlite3_changes(s->db) > 0 ? 0 : -ENOENT;
		else
			r = store__fail(s, rc, "key_delete");
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

int store_key_touch(struct store *s, const char *id, int64_t now_ms)
{
	pthread_mutex_lock(&s->lock);
	int r = -EIO;
	sqlite3_stmt *st =
		store__prepare(s, "UPDATE api_keys SET last_used_at = ?2 WHERE id = ?1", "key_touch");
	if (st) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, now_ms);
		int rc = sqlite3_step(st);
		if (rc == SQLITE_DONE)
			r = sqlite3_changes(s->db) > 0 ? 0 : -ENOENT;
		else
			r = store__fail(s, rc, "key_touch");
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

int store_key_count_admin(struct store *s, int *n)
{
	pthread_mutex_lock(&s->lock);
	int r = -EIO;
	sqlite3_stmt *st = store__prepare(s, "SELECT count(*) FROM api_keys WHERE admin = 1",
					  "key_count_admin");
	if (st) {
		int rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			*n = sqlite3_column_int(st, 0);
			r = 0;
		} else {
			r = store__fail(s, rc, "key_count_admin");
		}
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}
