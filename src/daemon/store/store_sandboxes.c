/*
 * store_sandboxes.c - sandbox rows (see store.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/store/store.h"
#include "daemon/store/store_int.h"

#define SBX_COLS                                                                   \
	"id, team, template, status, reason, created_at, expires_at, ended_at, vcpus, " \
	"memory_mib, metadata, env, access_token, public_ports, network, snapshot, "     \
	"on_timeout, ttl_left"

/* JSON columns are written by the daemon from validated bodies; a cap still
 * guards against a foreign or corrupt database. */
#define JSON_COL_CAP (4u * 1024 * 1024)

void sandbox_row_clear(struct sandbox_row *r)
{
	free(r->metadata_json);
	free(r->env_json);
	free(r->network_json);
	r->metadata_json = NULL;
	r->env_json = NULL;
	r->network_json = NULL;
}

void sandbox_rows_free(struct sandbox_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sandbox_row_clear(&rows[i]);
	free(rows);
}

static int read_row(sqlite3_stmt *st, void *row)
{
	struct sandbox_row *r = row;
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
	if (store__copy_text(st, 12, r->access_token, sizeof(r->access_token)) < 0)
		return -EIO;
	r->public_ports = sqlite3_column_int64(st, 13) != 0;
	if (store__copy_text(st, 15, r->snapshot, sizeof(r->snapshot)) < 0 ||
	    store__copy_text(st, 16, r->on_timeout, sizeof(r->on_timeout)) < 0)
		return -EIO;
	r->ttl_left_ms = sqlite3_column_int64(st, 17);
	int e = store__dup_text(st, 10, JSON_COL_CAP, "{}", &r->metadata_json);
	if (!e)
		e = store__dup_text(st, 11, JSON_COL_CAP, "{}", &r->env_json);
	if (!e)
		e = store__dup_text(st, 14, JSON_COL_CAP, "{}", &r->network_json);
	if (e)
		sandbox_row_clear(r);
	return e;
}

static void clear_row(void *row)
{
	sandbox_row_clear(row);
}

int store_sandbox_insert(struct store *s, const struct sandbox_row *r)
{
	int n = store__change(
		s, "sandbox_insert",
		"INSERT INTO sandboxes (" SBX_COLS ") "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, "
		"?18)",
		STORE_ARGS(STORE_TEXT(r->id), STORE_TEXT(r->team), STORE_TEXT(r->template_name),
			   STORE_TEXT(r->status), STORE_TEXT(r->reason),
			   STORE_INT(r->created_at_ms), STORE_INT(r->expires_at_ms),
			   STORE_INT(r->ended_at_ms), STORE_INT(r->vcpus), STORE_INT(r->memory_mib),
			   STORE_TEXT(r->metadata_json ? r->metadata_json : "{}"),
			   STORE_TEXT(r->env_json ? r->env_json : "{}"),
			   STORE_TEXT(r->access_token), STORE_INT(r->public_ports),
			   STORE_TEXT(r->network_json ? r->network_json : "{}"),
			   STORE_TEXT(r->snapshot), STORE_TEXT(r->on_timeout[0] ? r->on_timeout : "stop"),
			   STORE_INT(r->ttl_left_ms)));
	return n < 0 ? n : 0;
}

int store_sandbox_get(struct store *s, const char *id, struct sandbox_row *out)
{
	return store__select_one(s, "sandbox_get",
				 "SELECT " SBX_COLS " FROM sandboxes WHERE id = ?1",
				 STORE_ARGS(STORE_TEXT(id)), read_row, out);
}

int store_sandbox_list(struct store *s, const char *team, const char *status,
		       struct sandbox_row **rows, size_t *n)
{
	static const struct store_rows how = {sizeof(struct sandbox_row), STORE_LIST_MAX,
					      read_row, clear_row};
	void *a;
	int r = store__select(s, "sandbox_list",
			      "SELECT " SBX_COLS " FROM sandboxes WHERE (?1 IS NULL OR team = ?1) "
			      "AND (?2 IS NULL OR status = ?2) ORDER BY created_at, id LIMIT 10000",
			      STORE_ARGS(STORE_TEXT(team), STORE_TEXT(status)), &how, &a, n);
	*rows = a;
	return r;
}

int store_sandbox_set_status(struct store *s, const char *id, const char *status,
			     const char *reason, int64_t ended_at_ms)
{
	return store__change_one(
		s, "sandbox_set_status",
		"UPDATE sandboxes SET status = ?2, reason = ?3, ended_at = ?4 WHERE id = ?1",
		STORE_ARGS(STORE_TEXT(id), STORE_TEXT(status), STORE_TEXT(reason ? reason : ""),
			   STORE_INT(ended_at_ms)));
}

int store_sandbox_set_network(struct store *s, const char *id, const char *network_json)
{
	return store__change_one(s, "sandbox_set_network",
				 "UPDATE sandboxes SET network = ?2 WHERE id = ?1",
				 STORE_ARGS(STORE_TEXT(id), STORE_TEXT(network_json)));
}

int store_sandbox_set_expiry(struct store *s, const char *id, int64_t expires_at_ms)
{
	return store__change_one(s, "sandbox_set_expiry",
				 "UPDATE sandboxes SET expires_at = ?2 WHERE id = ?1",
				 STORE_ARGS(STORE_TEXT(id), STORE_INT(expires_at_ms)));
}

int store_sandbox_set_public_ports(struct store *s, const char *id, int public_ports)
{
	return store__change_one(s, "sandbox_set_public_ports",
				 "UPDATE sandboxes SET public_ports = ?2 WHERE id = ?1",
				 STORE_ARGS(STORE_TEXT(id), STORE_INT(public_ports ? 1 : 0)));
}

int store_sandbox_set_snapshot(struct store *s, const char *id, const char *snapshot)
{
	return store__change_one(s, "sandbox_set_snapshot",
				 "UPDATE sandboxes SET snapshot = ?2 WHERE id = ?1",
				 STORE_ARGS(STORE_TEXT(id), STORE_TEXT(snapshot)));
}

int store_sandbox_set_paused(struct store *s, const char *id, const char *snapshot,
			     int64_t ttl_left_ms, int64_t expires_at_ms)
{
	return store__change_one(s, "sandbox_set_paused",
				 "UPDATE sandboxes SET status = 'paused', reason = '', snapshot = ?2, "
				 "ttl_left = ?3, expires_at = ?4 WHERE id = ?1",
				 STORE_ARGS(STORE_TEXT(id), STORE_TEXT(snapshot),
					    STORE_INT(ttl_left_ms), STORE_INT(expires_at_ms)));
}

int store_sandbox_set_resumed(struct store *s, const char *id, int64_t expires_at_ms)
{
	return store__change_one(s, "sandbox_set_resumed",
				 "UPDATE sandboxes SET status = 'running', ttl_left = 0, "
				 "expires_at = ?2 WHERE id = ?1 AND status = 'paused'",
				 STORE_ARGS(STORE_TEXT(id), STORE_INT(expires_at_ms)));
}

int store_sandbox_delete(struct store *s, const char *id)
{
	return store__change_one(s, "sandbox_delete", "DELETE FROM sandboxes WHERE id = ?1",
				 STORE_ARGS(STORE_TEXT(id)));
}

int store_sandbox_purge_ended(struct store *s, int64_t before_ms, int *n)
{
	int r = store__change(
		s, "sandbox_purge",
		"DELETE FROM sandboxes WHERE status IN ('stopped','error') AND ended_at < ?1",
		STORE_ARGS(STORE_INT(before_ms)));
	if (r < 0)
		return r;
	*n = r;
	return 0;
}

int store_sandbox_count(struct store *s, const char *status, int64_t *n)
{
	return store__int64(s, "sandbox_count", "SELECT count(*) FROM sandboxes WHERE status = ?1",
			    STORE_ARGS(STORE_TEXT(status)), n);
}
