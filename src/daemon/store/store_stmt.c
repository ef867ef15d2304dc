/*
 * store_stmt.c - running one statement of the registry: compile, bind the
 * parameters, step, read the rows, finalize, all under the store's lock
 * (see store_int.h).  The store's row files say what to run; this file is
 * the one place that says how.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "daemon/store/store_int.h"

sqlite3_stmt *store__prepare(struct store *s, const char *sql, const char *where)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		store__fail(s, rc, where);
		return NULL;
	}
	return st;
}

int store__fail(struct store *s, int rc, const char *where)
{
	char q[300];
	log_kv(LOG_ERROR, "store.error", "where=%s rc=%d msg=%s", where, rc,
	       log_quote(sqlite3_errmsg(s->db), q, sizeof(q)));
	if ((rc & 0xff) == SQLITE_CONSTRAINT)
		return -EEXIST;
	if ((rc & 0xff) == SQLITE_NOMEM)
		return -ENOMEM;
	if ((rc & 0xff) == SQLITE_FULL)
		return -ENOSPC;
	return -EIO;
}

int store__copy_text(sqlite3_stmt *st, int col, char *out, size_t outlen)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	size_t n = (size_t)sqlite3_column_bytes(st, col);
	if (!t) {
		out[0] = '\0';
		return 0;
	}
	if (n >= outlen)
		return -EIO;
	memcpy(out, t, n);
	out[n] = '\0';
	return 0;
}

int store__dup_text(sqlite3_stmt *st, int col, size_t cap, const char *dflt, char **out)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	size_t n = (size_t)sqlite3_column_bytes(st, col);
	const char *src = t ? (const char *)t : dflt;
	if (!t)
		n = strlen(dflt);
	if (n > cap)
		return -EIO;
	char *c = malloc(n + 1);
	if (!c)
		return -ENOMEM;
	memcpy(c, src, n);
	c[n] = '\0';
	*out = c;
	return 0;
}

/* Lock, compile sql and bind args to ?1, ?2, ...  Returns the statement with
 * the lock held, or NULL with the lock released (the failure is logged). */
static sqlite3_stmt *begin(struct store *s, const char *where, const char *sql,
			   const struct store_arg *args, size_t nargs)
{
	pthread_mutex_lock(&s->lock);
	sqlite3_stmt *st = store__prepare(s, sql, where);
	if (!st) {
		pthread_mutex_unlock(&s->lock);
		return NULL;
	}
	for (size_t i = 0; i < nargs; i++) {
		int col = (int)i + 1;
		if (args[i].kind == STORE_ARG_INT)
			sqlite3_bind_int64(st, col, args[i].i);
		else if (args[i].text)
			sqlite3_bind_text(st, col, args[i].text, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, col);
	}
	return st;
}

/* Finalize st and release the lock begin took; returns r. */
static int end(struct store *s, sqlite3_stmt *st, int r)
{
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->lock);
	return r;
}

int store__change(struct store *s, const char *where, const char *sql,
		  const struct store_arg *args, size_t nargs)
{
	sqlite3_stmt *st = begin(s, where, sql, args, nargs);
	if (!st)
		return -EIO;
	int rc = sqlite3_step(st);
	return end(s, st, rc == SQLITE_DONE ? sqlite3_changes(s->db) : store__fail(s, rc, where));
}

int store__change_one(struct store *s, const char *where, const char *sql,
		      const struct store_arg *args, size_t nargs)
{
	int n = store__change(s, where, sql, args, nargs);
	return n < 0 ? n : n > 0 ? 0 : -ENOENT;
}

int store__int64(struct store *s, const char *where, const char *sql,
		 const struct store_arg *args, size_t nargs, int64_t *out)
{
	sqlite3_stmt *st = begin(s, where, sql, args, nargs);
	if (!st)
		return -EIO;
	int rc = sqlite3_step(st);
	if (rc != SQLITE_ROW)
		return end(s, st, store__fail(s, rc, where));
	*out = sqlite3_column_int64(st, 0);
	return end(s, st, 0);
}

int store__select_one(struct store *s, const char *where, const char *sql,
		      const struct store_arg *args, size_t nargs, store_read_fn read, void *row)
{
	sqlite3_stmt *st = begin(s, where, sql, args, nargs);
	if (!st)
		return -EIO;
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		return end(s, st, read(st, row));
	return end(s, st, rc == SQLITE_DONE ? -ENOENT : store__fail(s, rc, where));
}

int store__select(struct store *s, const char *where, const char *sql,
		  const struct store_arg *args, size_t nargs, const struct store_rows *how,
		  void **rows, size_t *n)
{
	*rows = NULL;
	*n = 0;
	sqlite3_stmt *st = begin(s, where, sql, args, nargs);
	if (!st)
		return -EIO;
	char *a = NULL;
	size_t len = 0, cap = 0;
	int r = 0, rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && len < how->max) {
		if (len == cap) {
			size_t nc = cap ? cap * 2 : 16;
			if (nc > how->max)
				nc = how->max;
			char *na = realloc(a, nc * how->size);
			if (!na) {
				r = -ENOMEM;
				break;
			}
			a = na;
			cap = nc;
		}
		if ((r = how->read(st, a + len * how->size)) < 0)
			break;
		len++;
	}
	if (!r && rc != SQLITE_ROW && rc != SQLITE_DONE)
		r = store__fail(s, rc, where);
	if (r < 0) {
		for (size_t i = 0; how->clear && i < len; i++)
			how->clear(a + i * how->size);
		free(a);
		return end(s, st, r);
	}
	*rows = a;
	*n = len;
	return end(s, st, 0);
}
