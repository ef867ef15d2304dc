/*
 * store_snapshots.c - snapshot rows (see store.h) and the two questions
 * about what still needs a snapshot's files: does a paused sandbox, and
 * which snapshots does nothing need.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/store/store.h"
#include "daemon/store/store_int.h"

#define SNAP_COLS                                                                   \
	"id, team, sandbox_id, template, parent, name, kind, state, created_at, "   \
	"size_bytes, env, metadata"

/* JSON columns are written by the daemon; a cap guards against a foreign
 * or corrupt database. */
#define JSON_COL_CAP (4u * 1024 * 1024)

void snapshot_row_clear(struct snapshot_row *r)
{
	free(r->env_json);
	free(r->metadata_json);
	r->env_json = NULL;
	r->metadata_json = NULL;
}

void snapshot_rows_free(struct snapshot_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		snapshot_row_clear(&rows[i]);
	free(rows);
}

static int read_row(sqlite3_stmt *st, void *row)
{
	struct snapshot_row *r = row;
	memset(r, 0, sizeof(*r));
	if (store__copy_text(st, 0, r->id, sizeof(r->id)) < 0 ||
	    store__copy_text(st, 1, r->team, sizeof(r->team)) < 0 ||
	    store__copy_text(st, 2, r->sandbox_id, sizeof(r->sandbox_id)) < 0 ||
	    store__copy_text(st, 3, r->template_name, sizeof(r->template_name)) < 0 ||
	    store__copy_text(st, 4, r->parent, sizeof(r->parent)) < 0 ||
	    store__copy_text(st, 5, r->name, sizeof(r->name)) < 0 ||
	    store__copy_text(st, 6, r->kind, sizeof(r->kind)) < 0 ||
	    store__copy_text(st, 7, r->state, sizeof(r->state)) < 0)
		return -EIO;
	r->created_at_ms = sqlite3_column_int64(st, 8);
	r->size_bytes = sqlite3_column_int64(st, 9);
	int e = store__dup_text(st, 10, JSON_COL_CAP, "{}", &r->env_json);
	if (!e)
		e = store__dup_text(st, 11, JSON_COL_CAP, "{}", &r->metadata_json);
	if (e)
		snapshot_row_clear(r);
	return e;
}

static void clear_row(void *row)
{
	snapshot_row_clear(row);
}

int store_snapshot_insert(struct store *s, const struct snapshot_row *r)
{
	int n = store__change(
		s, "snapshot_insert",
		"INSERT INTO snapshots (" SNAP_COLS ") "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
		STORE_ARGS(STORE_TEXT(r->id), STORE_TEXT(r->team), STORE_TEXT(r->sandbox_id),
			   STORE_TEXT(r->template_name), STORE_TEXT(r->parent), STORE_TEXT(r->name),
			   STORE_TEXT(r->kind), STORE_TEXT(r->state), STORE_INT(r->created_at_ms),
			   STORE_INT(r->size_bytes),
			   STORE_TEXT(r->env_json ? r->env_json : "{}"),
			   STORE_TEXT(r->metadata_json ? r->metadata_json : "{}")));
	return n < 0 ? n : 0;
}

int store_snapshot_get(struct store *s, const char *id, struct snapshot_row *out)
{
	return store__select_one(s, "snapshot_get",
				 "SELECT " SNAP_COLS " FROM snapshots WHERE id = ?1",
				 STORE_ARGS(STORE_TEXT(id)), read_row, out);
}

int store_snapshot_list(struct store *s, const char *team, const char *kind, const char *state,
			struct snapshot_row **rows, size_t *n)
{
	static const struct store_rows how = {sizeof(struct snapshot_row), STORE_LIST_MAX,
					      read_row, clear_row};
	void *a;
	int r = store__select(s, "snapshot_list",
			      "SELECT " SNAP_COLS " FROM snapshots WHERE (?1 IS NULL OR team = ?1) "
			      "AND (?2 IS NULL OR kind = ?2) AND (?3 IS NULL OR state = ?3) "
			      "ORDER BY created_at, id LIMIT 10000",
			      STORE_ARGS(STORE_TEXT(team), STORE_TEXT(kind), STORE_TEXT(state)), &how,
			      &a, n);
	*rows = a;
	return r;
}

int store_snapshot_set_ready(struct store *s, const char *id, int64_t size_bytes)
{
	return store__change_one(s, "snapshot_set_ready",
				 "UPDATE snapshots SET state = 'ready', size_bytes = ?2 WHERE id = ?1",
				 STORE_ARGS(STORE_TEXT(id), STORE_INT(size_bytes)));
}

int store_snapshot_set_state(struct store *s, const char *id, const char *state)
{
	return store__change_one(s, "snapshot_set_state",
				 "UPDATE snapshots SET state = ?2 WHERE id = ?1",
				 STORE_ARGS(STORE_TEXT(id), STORE_TEXT(state)));
}

int store_snapshot_set_parent(struct store *s, const char *id, const char *parent,
			      int64_t size_bytes)
{
	return store__change_one(s, "snapshot_set_parent",
				 "UPDATE snapshots SET parent = ?2, size_bytes = ?3 WHERE id = ?1",
				 STORE_ARGS(STORE_TEXT(id), STORE_TEXT(parent), STORE_INT(size_bytes)));
}

int store_snapshot_delete(struct store *s, const char *id)
{
	return store__change_one(s, "snapshot_delete", "DELETE FROM snapshots WHERE id = ?1",
				 STORE_ARGS(STORE_TEXT(id)));
}

int store_snapshot_count(struct store *s, const char *team, int64_t *n)
{
	return store__int64(s, "snapshot_count",
			    "SELECT count(*) FROM snapshots WHERE team = ?1 AND kind = 'user' "
			    "AND state IN ('pending','ready')",
			    STORE_ARGS(STORE_TEXT(team)), n);
}

int store_snapshot_bytes(struct store *s, const char *team, int64_t *bytes)
{
	return store__int64(s, "snapshot_bytes",
			    "SELECT COALESCE(SUM(size_bytes), 0) FROM snapshots WHERE team = ?1 "
			    "AND state IN ('pending','ready','deleted')",
			    STORE_ARGS(STORE_TEXT(team)), bytes);
}

int store_snapshot_paused_need(struct store *s, const char *id, int *needed)
{
	int64_t n = 0;
	int r = store__int64(s, "snapshot_paused_need",
			     "WITH RECURSIVE chain(id) AS ("
			     "  SELECT snapshot FROM sandboxes WHERE status = 'paused' AND snapshot != ''"
			     "  UNION SELECT p.parent FROM snapshots p JOIN chain c ON p.id = c.id"
			     "  WHERE p.parent != ''"
			     ") SELECT count(*) FROM chain WHERE id = ?1",
			     STORE_ARGS(STORE_TEXT(id)), &n);
	if (r == 0)
		*needed = n > 0;
	return r;
}

static int read_id(sqlite3_stmt *st, void *row)
{
	return store__copy_text(st, 0, row, STORE_ID_MAX);
}

int store_snapshot_garbage(struct store *s, char (*ids)[STORE_ID_MAX], size_t cap, size_t *n)
{
	const struct store_rows how = {STORE_ID_MAX, cap, read_id, NULL};
	void *a;
	int r = store__select(s, "snapshot_garbage",
			      "SELECT id FROM snapshots p WHERE p.state IN ('ready','deleted') "
			      "AND (p.state = 'deleted' OR p.kind != 'user') "
			      "AND NOT EXISTS (SELECT 1 FROM sandboxes b WHERE b.snapshot = p.id "
			      "  AND b.status IN ('running','paused')) "
			      "AND NOT EXISTS (SELECT 1 FROM snapshots c WHERE c.parent = p.id) "
			      "ORDER BY created_at LIMIT 10000",
			      STORE_NO_ARGS, &how, &a, n);
	if (r == 0 && *n)
		memcpy(ids, a, *n * STORE_ID_MAX);
	free(a);
	return r;
}
