/*
 * store_contexts.c - code-context rows (see store.h).  The kernels live
 * in the guest; a row records a context the daemon created so that it
 * survives a daemon restart.  Rows go with their sandbox (triggers of
 * migration 2 in store.c delete them when the sandbox's row is deleted or
 * it stops).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/store.h"
#include "daemon/store_int.h"

int store_context_insert(struct store *s, const struct context_row *r)
{
	pthread_mutex_lock(&s->lock);
	int rc = -EIO;
	sqlite3_stmt *st = store__prepare(
		s, "INSERT INTO contexts (id, sandbox_id, language, cwd, created_at) "
		   "VALUES (?1, ?2, ?3, ?4, ?5)",
		"context_insert");
	if (st) {
		sqlite3_bind_text(st, 1, r->id, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, r->sandbox_id, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, r->language, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, r->cwd, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 5, r->created_at_ms);
		int k = sqlite3_step(st);
		rc = k == SQLITE_DONE ? 0 : store__fail(s, k, "context_insert");
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int store_context_delete(struct store *s, const char *sandbox_id, const char *id)
{
	pthread_mutex_lock(&s->lock);
	int rc = -EIO;
	sqlite3_stmt *st = store__prepare(
		s, "DELETE FROM contexts WHERE sandbox_id = ?1 AND id = ?2", "context_delete");
	if (st) {
		sqlite3_bind_text(st, 1, sandbox_id, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, id, -1, SQLITE_STATIC);
		int k = sqlite3_step(st);
		if (k != SQLITE_DONE)
			rc = store__fail(s, k, "context_delete");
		else
			rc = sqlite3_changes(s->db) > 0 ? 0 : -ENOENT;
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int store_context_list(struct store *s, const char *sandbox_id, struct context_row **rows,
		       size_t *n)
{
	*rows = NULL;
	*n = 0;
	pthread_mutex_lock(&s->lock);
	int r = -EIO;
	struct context_row *a = NULL;
	size_t len = 0;
	sqlite3_stmt *st = store__prepare(
		s, "SELECT id, sandbox_id, language, cwd, created_at FROM contexts "
		   "WHERE sandbox_id = ?1 ORDER BY created_at, id LIMIT 256",
		"context_list");
	if (!st)
		goto out;
	sqlite3_bind_text(st, 1, sandbox_id, -1, SQLITE_STATIC);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && len < STORE_CONTEXTS_MAX) {
		if (!a && !(a = calloc(STORE_CONTEXTS_MAX, sizeof(*a)))) {
			r = -ENOMEM;
			goto out;
		}
		struct context_row *c = &a[len];
		if (store__copy_text(st, 0, c->id, sizeof(c->id)) < 0 ||
		    store__copy_text(st, 1, c->sandbox_id, sizeof(c->sandbox_id)) < 0 ||
		    store__copy_text(st, 2, c->language, sizeof(c->language)) < 0 ||
		    store__copy_text(st, 3, c->cwd, sizeof(c->cwd)) < 0) {
			r = -EIO;
			goto out;
		}
		c->created_at_ms = sqlite3_column_int64(st, 4);
		len++;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		r = store__fail(s, rc, "context_list");
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
