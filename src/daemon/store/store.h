/*
 * store.h - the daemon's registry in SQLite (<data-dir>/pandastack.db, WAL):
 * API keys and sandbox rows.  The schema is created and upgraded by numbered
 * migrations (PRAGMA user_version); see store.c.
 *
 * One connection guarded by a mutex: every function may be called from any
 * thread and holds the lock only for its own statements.  Functions return
 * 0 or -errno: -ENOENT (no such row), -EEXIST (unique key taken), -EIO (an
 * SQLite error, logged), -ENOMEM.  Strings read from the database are
 * checked for size before they are copied.
 */
#ifndef PANDASTACK_DAEMON_STORE_H
#define PANDASTACK_DAEMON_STORE_H

#include <stddef.h>
#include <stdint.h>

#define STORE_ID_MAX 64      /* sandbox and key ids, bytes with the NUL */
#define STORE_NAME_MAX 65    /* names, teams, templates: 64 bytes + NUL */
#define STORE_STATUS_MAX 16
#define STORE_REASON_MAX 256
#define STORE_LIST_MAX 10000 /* rows a list returns at most */
#define STORE_TOKEN_MAX 64   /* a sandbox's access token, bytes with the NUL */

struct store;

/*
 * store_open - open or create the database at path, switch it to WAL and
 * apply pending migrations.  *out is owned by the caller (store_close).
 * Returns 0, or -EIO with err filled (also for a database newer than this
 * program: a downgrade is refused).
 */
int store_open(const char *path, struct store **out, char *err, size_t errlen);

/* store_close - close the connection.  NULL is a no-op. */
void store_close(struct store *s);

/* store_schema_version - the applied migration number (for /healthz). */
int store_schema_version(struct store *s);

/* ---- API keys ------------------------------------------------------------ */

struct key_row {
	char id[STORE_ID_MAX];
	char name[STORE_NAME_MAX];
	char team[STORE_NAME_MAX];
	int admin;
	int64_t created_at_ms; /* wall clock */
	int64_t last_used_at_ms; /* wall clock of the last authenticated request
				  * (to within AUTH_TOUCH_MS); 0: never */
};

/* store_key_insert - add a key; hash_hex is SHA-256 of the secret (64 hex).
 * -EEXIST if the id or hash exists. */
int store_key_insert(struct store *s, const struct key_row *k, const char *hash_hex);

/* store_key_by_hash - the key whose secret hashes to hash_hex; -ENOENT. */
int store_key_by_hash(struct store *s, const char *hash_hex, struct key_row *out);

/* store_key_hash - the stored hash (64 hex + NUL) of key id; -ENOENT. */
int store_key_hash(struct store *s, const char *id, char hash_hex[65]);

/* store_key_get - the key with this id; -ENOENT. */
int store_key_get(struct store *s, const char *id, struct key_row *out);

/*
 * store_key_list - keys of team (NULL: all), oldest first, at most
 * STORE_LIST_MAX.  *rows is owned by the caller (free()); *n its length.
 */
int store_key_list(struct store *s, const char *team, struct key_row **rows, size_t *n);

/* store_key_delete - remove key id; -ENOENT. */
int store_key_delete(struct store *s, const char *id);

/* store_key_touch - set key id's last_used_at to now_ms (wall clock);
 * -ENOENT. */
int store_key_touch(struct store *s, const char *id, int64_t now_ms);

/* store_key_count_admin - number of admin keys into *n. */
int store_key_count_admin(struct store *s, int *n);

/* ---- sandboxes ------------------------------------------------------------- */

struct sandbox_row {
	char id[STORE_ID_MAX];
	char team[STORE_NAME_MAX];
	char template_name[STORE_NAME_MAX];
	char status[STORE_STATUS_MAX]; /* running, paused, stopped, error */
	char reason[STORE_REASON_MAX]; /* why it stopped; "" when running */
	int64_t created_at_ms;         /* wall clock */
	int64_t expires_at_ms;
	int64_t ended_at_ms;           /* 0 while running */
	unsigned vcpus;
	unsigned memory_mib;
	char *metadata_json;           /* owned: a JSON object */
	char *env_json;                /* owned: a JSON object */
	char access_token[STORE_TOKEN_MAX]; /* exposed ports' token; "" when none */
	int public_ports;              /* 1: its ports answer without credentials */
	char *network_json;            /* owned: the network policy object (net_policy.h) */
	char snapshot[STORE_ID_MAX];   /* the snapshot its RAM and disk sit on; "" */
	char on_timeout[STORE_STATUS_MAX]; /* "stop" or "pause" */
	int64_t ttl_left_ms;           /* paused: TTL left when it was paused */
};

/* sandbox_row_clear - free the owned strings of r (not r itself). */
void sandbox_row_clear(struct sandbox_row *r);

/* sandbox_rows_free - clear and free an array from store_sandbox_list. */
void sandbox_rows_free(struct sandbox_row *rows, size_t n);

/* store_sandbox_insert - add a row; -EEXIST if the id exists. */
int store_sandbox_insert(struct store *s, const struct sandbox_row *r);

/* store_sandbox_get - row id (out's strings owned by the caller); -ENOENT. */
int store_sandbox_get(struct store *s, const char *id, struct sandbox_row *out);

/*
 * store_sandbox_list - rows of team (NULL: every team) whose status is
 * status (NULL: any), oldest first, at most STORE_LIST_MAX.  *rows is owned
 * by the caller (sandbox_rows_free).
 */
int store_sandbox_list(struct store *s, const char *team, const char *status,
		       struct sandbox_row **rows, size_t *n);

/* store_sandbox_set_status - set status, reason and ended_at; -ENOENT. */
int store_sandbox_set_status(struct store *s, const char *id, const char *status,
			     const char *reason, int64_t ended_at_ms);

/* store_sandbox_set_network - set the network policy (a JSON object's
 * text); -ENOENT. */
int store_sandbox_set_network(struct store *s, const char *id, const char *network_json);

/* store_sandbox_set_expiry - set expires_at; -ENOENT. */
int store_sandbox_set_expiry(struct store *s, const char *id, int64_t expires_at_ms);

/* store_sandbox_set_public_ports - set public_ports (0 or 1); -ENOENT. */
int store_sandbox_set_public_ports(struct store *s, const char *id, int public_ports);

/* store_sandbox_set_snapshot - set the snapshot a running sandbox's RAM
 * and disk now sit on; -ENOENT. */
int store_sandbox_set_snapshot(struct store *s, const char *id, const char *snapshot);

/*
 * store_sandbox_set_paused - a running sandbox became paused: status
 * "paused", its snapshot, the TTL it had left, expires_at = when the
 * paused retention ends.  -ENOENT.
 */
int store_sandbox_set_paused(struct store *s, const char *id, const char *snapshot,
			     int64_t ttl_left_ms, int64_t expires_at_ms);

/* store_sandbox_set_resumed - a paused sandbox runs again: status
 * "running", expires_at; -ENOENT (also when it was not paused). */
int store_sandbox_set_resumed(struct store *s, const char *id, int64_t expires_at_ms);

/* store_sandbox_delete - remove row id; -ENOENT. */
int store_sandbox_delete(struct store *s, const char *id);

/* store_sandbox_purge_ended - remove stopped/error rows that ended before
 * before_ms; *n gets how many. */
int store_sandbox_purge_ended(struct store *s, int64_t before_ms, int *n);

/* store_sandbox_count - rows with status into *n. */
int store_sandbox_count(struct store *s, const char *status, int64_t *n);

/* ---- snapshots -------------------------------------------------------------- */

#define STORE_SNAP_NAME_MAX 129 /* a snapshot's name: 128 bytes + NUL */

struct snapshot_row {
	char id[STORE_ID_MAX];
	char team[STORE_NAME_MAX];
	char sandbox_id[STORE_ID_MAX];   /* the sandbox it was taken from */
	char template_name[STORE_NAME_MAX];
	char parent[STORE_ID_MAX];       /* the snapshot it sits on; "" */
	char name[STORE_SNAP_NAME_MAX];  /* "" when none */
	char kind[STORE_STATUS_MAX];     /* user, fork, pause */
	char state[STORE_STATUS_MAX];    /* pending, ready, deleted */
	int64_t created_at_ms;           /* wall clock */
	int64_t size_bytes;
	char *env_json;                  /* owned: the source's exec environment */
	char *metadata_json;             /* owned: the source's metadata */
};

/* snapshot_row_clear / snapshot_rows_free - as for sandbox rows. */
void snapshot_row_clear(struct snapshot_row *r);
void snapshot_rows_free(struct snapshot_row *rows, size_t n);

/* store_snapshot_insert - add a row; -EEXIST if the id exists. */
int store_snapshot_insert(struct store *s, const struct snapshot_row *r);

/* store_snapshot_get - row id (strings owned by the caller); -ENOENT. */
int store_snapshot_get(struct store *s, const char *id, struct snapshot_row *out);

/*
 * store_snapshot_list - rows of team (NULL: every team) of kind (NULL:
 * any) in state (NULL: any), oldest first, at most STORE_LIST_MAX.
 */
int store_snapshot_list(struct store *s, const char *team, const char *kind, const char *state,
			struct snapshot_row **rows, size_t *n);

/* store_snapshot_set_ready - a capture finished: state ready, its size.
 * -ENOENT. */
int store_snapshot_set_ready(struct store *s, const char *id, int64_t size_bytes);

/* store_snapshot_set_state - set state (ready or deleted); -ENOENT. */
int store_snapshot_set_state(struct store *s, const char *id, const char *state);

/* store_snapshot_set_parent - after a flatten: parent (""), size.  -ENOENT. */
int store_snapshot_set_parent(struct store *s, const char *id, const char *parent,
			      int64_t size_bytes);

/* store_snapshot_delete - remove row id; -ENOENT. */
int store_snapshot_delete(struct store *s, const char *id);

/* store_snapshot_count - ready user snapshots of team into *n. */
int store_snapshot_count(struct store *s, const char *team, int64_t *n);

/* store_snapshot_bytes - the size_bytes of team's captures of every kind
 * (snapshots, forks' captures, paused sandboxes) whose files are on disk
 * (ready, pending: 0 until ready, and deleted ones that a sandbox still
 * needs: their rows go with their files), summed into *bytes. */
int store_snapshot_bytes(struct store *s, const char *team, int64_t *bytes);

/*
 * store_snapshot_paused_need - 1 in *needed when a paused sandbox's
 * snapshot is id or sits on it (its chain of parents reaches id), else 0.
 */
int store_snapshot_paused_need(struct store *s, const char *id, int *needed);

/*
 * store_snapshot_garbage - ids (at most cap, STORE_ID_MAX bytes each, into
 * ids) of ready or deleted snapshots nothing needs any more: deleted by the
 * team or the daemon's own (fork, pause), no running or paused sandbox
 * sits on them and no other snapshot has them as parent.  *n gets how many.
 */
int store_snapshot_garbage(struct store *s, char (*ids)[STORE_ID_MAX], size_t cap, size_t *n);

/* ---- code contexts -------------------------------------------------------- */

struct context_row {
	char id[STORE_ID_MAX];
	char sandbox_id[STORE_ID_MAX];
	char language[STORE_STATUS_MAX];
	char cwd[4096];                /* "" when the guest's default */
	int64_t created_at_ms;         /* wall clock */
};

/* store_context_insert - add a context row; -EEXIST if the id exists. */
int store_context_insert(struct store *s, const struct context_row *r);

/* store_context_delete - remove context id of sandbox_id; -ENOENT. */
int store_context_delete(struct store *s, const char *sandbox_id, const char *id);

#define STORE_CONTEXTS_MAX 256 /* context rows a list returns at most */

/*
 * store_context_list - the contexts of sandbox_id, oldest first, at most
 * STORE_CONTEXTS_MAX.  *rows is owned by the caller (free()); *n its length.
 */
int store_context_list(struct store *s, const char *sandbox_id, struct context_row **rows,
		       size_t *n);

#endif
