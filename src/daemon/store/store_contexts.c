/*
 * store_contexts.c - code-context rows (see store.h).  The kernels live
 * in the guest; a row records a context the daemon created so that it
 * survives a daemon restart.  Rows go with their sandbox (triggers of
 * migration 2 in store.c delete them when the sandbox's row is deleted or
 * it stops).
 */
#include <errno.h>
#include <string.h>

#include "daemon/store/store.h"
#include "daemon/store/store_int.h"

int store_context_insert(struct store *s, const struct context_row *r)
{
	int n = store__change(s, "context_insert",
			      "INSERT INTO contexts (id, sandbox_id, language, cwd, created_at) "
			      "VALUES (?1, ?2, ?3, ?4, ?5)",
			      STORE_ARGS(STORE_TEXT(r->id), STORE_TEXT(r->sandbox_id),
					 STORE_TEXT(r->language), STORE_TEXT(r->cwd),
					 STORE_INT(r->created_at_ms)));
	return n < 0 ? n : 0;
}

int store_context_delete(struct store *s, const char *sandbox_id, const char *id)
{
	return store__change_one(s, "context_delete",
				 "DELETE FROM contexts WHERE sandbox_id = ?1 AND id = ?2",
				 STORE_ARGS(STORE_TEXT(sandbox_id), STORE_TEXT(id)));
}

static int read_context(sqlite3_stmt *st, void *row)
{
	struct context_row *c = row;
	memset(c, 0, sizeof(*c));
	if (store__copy_text(st, 0, c->id, sizeof(c->id)) < 0 ||
	    store__copy_text(st, 1, c->sandbox_id, sizeof(c->sandbox_id)) < 0 ||
	    store__copy_text(st, 2, c->language, sizeof(c->language)) < 0 ||
	    store__copy_text(st, 3, c->cwd, sizeof(c->cwd)) < 0)
		return -EIO;
	c->created_at_ms = sqlite3_column_int64(st, 4);
	return 0;
}

int store_context_list(struct store *s, const char *sandbox_id, struct context_row **rows,
		       size_t *n)
{
	static const struct store_rows how = {sizeof(struct context_row), STORE_CONTEXTS_MAX,
					      read_context, NULL};
	void *a;
	int r = store__select(s, "context_list",
			      "SELECT id, sandbox_id, language, cwd, created_at FROM contexts "
			      "WHERE sandbox_id = ?1 ORDER BY created_at, id LIMIT 256",
			      STORE_ARGS(STORE_TEXT(sandbox_id)), &how, &a, n);
	*rows = a;
	return r;
}
