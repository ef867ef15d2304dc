/*
 * store_sandboxes.c - sandbox rows (see store.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/store.h"
#include "daemon/store_int.h"

#define SBX_COLS                                                                   \
	"id, team, template, status, reason, created_at, expires_at, ended_at, vcpus, " \
	"memory_mib, metadata, env"

/* JSON columns are written by the daemon from validated bodies; a cap still
 * guards against a foreign or corrupt database. */
#define JSON_COL_CAP (4u * 1024 * 1024)

void sandbox_row_clear(struct sandbox_row *r)
{
	free(r->metadata_json);
	free(r->env_json);
	r->metadata_json = NULL;
	r->env_json = NULL;
}

void sandbox_rows_free(struct sandbox_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sandbox_row_clear(&rows[i]);
	free(rows);
}

static int read_row(sqlite3_stmt *st, struct sandbox_row *r)
{
	memset(r, 0, sizeof(*r));
	if (store__copy_text(st, 0, r->id, sizeof(r->id)) < 0 ||
	    store__copy_text(st, 1, r->team, sizeof(r->team)) < 0 ||
	    store__copy_text(st, 2, r->template_name, sizeof(r->template_name)) < 0 ||
	    store__copy_text(st, 3, r->status, sizeof(r->status)) < 0 ||
	    store__copy_text(st, 4, r->reason, sizeof(r->reason)) < 0)
		return -EIO;
	r->created_at_ms = sqlite3_column_int64(st, 5);
	r->expires_at_ms = sqlite3_column_int64(st, 6);
	r->ended_at_ms = sqlite3_column_int64(st, 7);
	sqlite3_int64 v = sqlite3_column_int64(st, 8), m = sqlite3_column_int64(st, 9);
	r->vcpus = v > 0 && v < 4096 ? (unsigned)v : 0;
	r->memory_mib = m > 0 && m < (1 << 24) ? (unsigned)m : 0;
	int e = store__dup_text(st, 10, JSON_COL_CAP, "{}", &r->metadata_json);
	if (!e)
		e = store__dup_text(st, 11, JSON_COL_CAP, "{}", &r->env_json);
	if (e)
		sandbox_row_clear(r);
	return e;
}

int store_sandbox_insert(struct store *s, const struct sandbox_row *r)
{
	pthread_mutex_lock(&s->lock);
	int ret = -EIO;
	sqlite3_stmt *st = store__prepare(
		s, "INSERT INTO sandboxes (" SBX_COLS ") "
		   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
		"sandbox_insert");
	if (st) {
		sqlite3_bind_text(st, 1, r->id, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, r->team, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, r->template_name, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, r->status, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, r->reason, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 6, r->created_at_ms);
		sqlite3_bind_int64(st, 7, r->expires_at_ms);
		sqlite3_bind_int64(st, 8, r->ended_at_ms);
		sqlite3_bind_int64(st, 9, r->vcpus);
		sqlite3_bind_int64(st, 10, r->memory_mib);
		sqlite3_bind_text(st, 11, r->metadata_json ? r->metadata_json : "{}", -1,
				  SQLITE_STATIC);
		sqlite3_bind_text(st, 12, r->env_json ? r->env_json : "{}", -1, SQLITE_STATIC);
		int rc = sqlite3_step(st);
		ret = rc == SQLITE_DONE ? 0 : store__fail(s, rc, "sandbox_insert");
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int store_sandbox_get(struct store *s, const char *id, struct sandbox_row *out)
{
	pthread_mutex_lock(&s->lock);
	int r = -EIO;
	sqlite3_stmt *st = store__prepare(s, "SELECT " SBX_COLS " FROM sandboxes WHERE id = ?1",
					  "sandbox_get");
	if (st) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		int rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			r = read_row(st, out);
		else if (rc == SQLITE_DONE)
			r = -ENOENT;
		else
			r = store__fail(s, rc, "sandbox_get");
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

int store_sandbox_list(struct store *s, const char *team, const char *status,
		       struct sandbox_row **rows, size_t *n)
{
	*rows = NULL;
	*n = 0;
	pthread_mutex_lock(&s->lock);
	int r = -EIO;
	struct sandbox_row *a = NULL;
	size_t len = 0, cap = 0;
	sqlite3_stmt *st = store__prepare(
		s, "SELECT " SBX_COLS " FROM sandboxes WHERE (?1 IS NULL OR team = ?1) "
		   "AND (?2 IS NULL OR status = ?2) ORDER BY created_at, id LIMIT 10000",
		"sandbox_list");
	if (!st)
		goto out;
	if (team)
		sqlite3_bind_text(st, 1, team, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 1);
	if (status)
		sqlite3_bind_text(st, 2, status, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 2);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && len < STORE_LIST_MAX) {
		if (len == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct sandbox_row *na = realloc(a, nc * sizeof(*a));
			if (!na) {
				r = -ENOMEM;
				goto out;
			}
			a = na;
			cap = nc;
		}
		if ((r = read_row(st, &a[len])) < 0)
			goto out;
		len++;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		r = store__fail(s, rc, "sandbox_list");
		goto out;
	}
	*rows = a;
	*n = len;
	a = NULL;
	len = 0;
	r = 0;
out:
	sandbox_rows_free(a, len);
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* Step a prepared UPDATE/DELETE (lock held), finalize it.  -ENOENT when no
 * row changed. */
static int finish_change(struct store *s, sqlite3_stmt *st, const char *where)
{
	int r;
	int rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		r = sqlite3_changes(s->db) > 0 ? 0 : -ENOENT;
	else
		r = store__fail(s, rc, where);
	sqlite3_finalize(st);
	return r;
}

int store_sandbox_set_status(struct store *s, const char *id, const char *status,
			     const char *reason, int64_t ended_at_ms)
{
	pthread_mutex_lock(&s->lock);
	int r = -EIO;
	sqlite3_stmt *st = store__prepare(
		s, "UPDATE sandboxes SET status = ?2, reason = ?3, ended_at = ?4 WHERE id = ?1",
		"sandbox_set_status");
	if (st) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, status, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, reason ? reason : "", -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, ended_at_ms);
		r = finish_change(s, st, "sandbox_set_status");
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

int store_sandbox_set_expiry(struct store *s, const char *id, int64_t expires_at_ms)
{
	pthread_mutex_lock(&s->lock);
	int r = -EIO;
	sqlite3_stmt *st = store__prepare(s, "UPDATE sandboxes SET expires_at = ?2 WHERE id = ?1",
					  "sandbox_set_expiry");
	if (st) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, expires_at_ms);
		r = finish_change(s, st, "sandbox_set_expiry");
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

int store_sandbox_delete(struct store *s, const char *id)
{
	pthread_mutex_lock(&s->lock);
	int r = -EIO;
	sqlite3_stmt *st = store__prepare(s, "DELETE FROM sandboxes WHERE id = ?1",
					  "sandbox_delete");
	if (st) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		r = finish_change(s, st, "sandbox_delete");
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

int store_sandbox_purge_ended(struct store *s, int64_t before_ms, int *n)
{
	pthread_mutex_lock(&s->lock);
	int r = -EIO;
	sqlite3_stmt *st = store__prepare(
		s, "DELETE FROM sandboxes WHERE status IN ('stopped','error') AND ended_at < ?1",
		"sandbox_purge");
	if (st) {
		sqlite3_bind_int64(st, 1, before_ms);
		int rc = sqlite3_step(st);
		if (rc == SQLITE_DONE) {
			*n = sqlite3_changes(s->db);
			r = 0;
		} else {
			r = store__fail(s, rc, "sandbox_purge");
		}
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

int store_sandbox_count(struct store *s, const char *status, int64_t *n)
{
	pthread_mutex_lock(&s->lock);
	int r = -EIO;
	sqlite3_stmt *st = store__prepare(s, "SELECT count(*) FROM sandboxes WHERE status = ?1",
					  "sandbox_count");
	if (st) {
		sqlite3_bind_text(st, 1, status, -1, SQLITE_STATIC);
		int rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			*n = sqlite3_column_int64(st, 0);
			r = 0;
		} else {
			r = store__fail(s, rc, "sandbox_count");
		}
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}
