/*
 * store_keys.c - API key rows (see store.h).  Secrets are never stored:
 * only their SHA-256 (auth.c computes it).
 */
#include <errno.h>
#include <string.h>

#include "daemon/store/store.h"
#include "daemon/store/store_int.h"

#define KEY_COLS "id, name, team, admin, created_at, last_used_at"

static int read_key(sqlite3_stmt *st, void *row)
{
	struct key_row *k = row;
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
	int r = store__change(s, "key_insert",
			      "INSERT INTO api_keys (id, name, team, hash, admin, created_at) "
			      "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
			      STORE_ARGS(STORE_TEXT(k->id), STORE_TEXT(k->name), STORE_TEXT(k->team),
					 STORE_TEXT(hash_hex), STORE_INT(k->admin ? 1 : 0),
					 STORE_INT(k->created_at_ms)));
	return r < 0 ? r : 0;
}

int store_key_by_hash(struct store *s, const char *hash_hex, struct key_row *out)
{
	return store__select_one(s, "key_by_hash",
				 "SELECT " KEY_COLS " FROM api_keys WHERE hash = ?1",
				 STORE_ARGS(STORE_TEXT(hash_hex)), read_key, out);
}

static int read_hash(sqlite3_stmt *st, void *out)
{
	return store__copy_text(st, 0, out, 65);
}

int store_key_hash(struct store *s, const char *id, char hash_hex[65])
{
	return store__select_one(s, "key_hash", "SELECT hash FROM api_keys WHERE id = ?1",
				 STORE_ARGS(STORE_TEXT(id)), read_hash, hash_hex);
}

int store_key_get(struct store *s, const char *id, struct key_row *out)
{
	return store__select_one(s, "key_get", "SELECT " KEY_COLS " FROM api_keys WHERE id = ?1",
				 STORE_ARGS(STORE_TEXT(id)), read_key, out);
}

int store_key_list(struct store *s, const char *team, struct key_row **rows, size_t *n)
{
	static const struct store_rows how = {sizeof(struct key_row), STORE_LIST_MAX, read_key,
					      NULL};
	void *a;
	int r = store__select(s, "key_list",
			      "SELECT " KEY_COLS " FROM api_keys WHERE (?1 IS NULL OR team = ?1) "
			      "ORDER BY created_at, id LIMIT 10000",
			      STORE_ARGS(STORE_TEXT(team)), &how, &a, n);
	*rows = a;
	return r;
}

int store_key_delete(struct store *s, const char *id)
{
	return store__change_one(s, "key_delete", "DELETE FROM api_keys WHERE id = ?1",
				 STORE_ARGS(STORE_TEXT(id)));
}

int store_key_touch(struct store *s, const char *id, int64_t now_ms)
{
	return store__change_one(s, "key_touch",
				 "UPDATE api_keys SET last_used_at = ?2 WHERE id = ?1",
				 STORE_ARGS(STORE_TEXT(id), STORE_INT(now_ms)));
}

int store_key_count_admin(struct store *s, int *n)
{
	int64_t c = 0;
	int r = store__int64(s, "key_count_admin", "SELECT count(*) FROM api_keys WHERE admin = 1",
			     STORE_NO_ARGS, &c);
	*n = (int)c;
	return r;
}
