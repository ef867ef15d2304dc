/*
 * store.c - opening the registry database and its migrations (see store.h).
 *
 * Migrations are numbered from 1; PRAGMA user_version records the last one
 * applied.  Each runs in its own transaction with the version bump, so a
 * crash mid-migration leaves the previous version intact.  Add new ones at
 * the end of the list; never edit an applied one.
 */
#include "daemon/store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "daemon/store/store_int.h"

static const char *const migrations[] = {
	/* 1: keys and sandboxes */
	"CREATE TABLE api_keys ("
	"  id TEXT PRIMARY KEY,"
	"  name TEXT NOT NULL,"
	"  team TEXT NOT NULL,"
	"  hash TEXT NOT NULL UNIQUE,"
	"  admin INTEGER NOT NULL DEFAULT 0,"
	"  created_at INTEGER NOT NULL"
	");"
	"CREATE INDEX api_keys_team ON api_keys(team);"
	"CREATE TABLE sandboxes ("
	"  id TEXT PRIMARY KEY,"
	"  team TEXT NOT NULL,"
	"  template TEXT NOT NULL,"
	"  status TEXT NOT NULL CHECK (status IN ('running','paused','stopped','error')),"
	"  reason TEXT NOT NULL DEFAULT '',"
	"  created_at INTEGER NOT NULL,"
	"  expires_at INTEGER NOT NULL,"
	"  ended_at INTEGER NOT NULL DEFAULT 0,"
	"  vcpus INTEGER NOT NULL DEFAULT 0,"
	"  memory_mib INTEGER NOT NULL DEFAULT 0,"
	"  metadata TEXT NOT NULL DEFAULT '{}',"
	"  env TEXT NOT NULL DEFAULT '{}'"
	");"
	"CREATE INDEX sandboxes_team ON sandboxes(team, created_at);"
	"CREATE INDEX sandboxes_status ON sandboxes(status);",
	/* 2: code contexts (their kernels live in the guest; a row outlives a
	 * daemon restart and goes with its sandbox's end or row) */
	"CREATE TABLE contexts ("
	"  id TEXT PRIMARY KEY,"
	"  sandbox_id TEXT NOT NULL,"
	"  language TEXT NOT NULL,"
	"  cwd TEXT NOT NULL DEFAULT '',"
	"  created_at INTEGER NOT NULL"
	");"
	"CREATE INDEX contexts_sandbox ON contexts(sandbox_id, created_at);"
	"CREATE TRIGGER sandboxes_delete_contexts AFTER DELETE ON sandboxes BEGIN"
	"  DELETE FROM contexts WHERE sandbox_id = OLD.id;"
	"END;"
	"CREATE TRIGGER sandboxes_end_contexts AFTER UPDATE OF status ON sandboxes"
	"  WHEN NEW.status IN ('stopped', 'error') BEGIN"
	"  DELETE FROM contexts WHERE sandbox_id = NEW.id;"
	"END;",
	/* 3: when a key last authenticated a request (0: never) */
	"ALTER TABLE api_keys ADD COLUMN last_used_at INTEGER NOT NULL DEFAULT 0;",
	/* 4: exposed ports: the sandbox's access token ('' for rows made
	 * before it: their ports answer only to the team's key) and whether
	 * its ports are public */
	("ALTER TABLE sandboxes ADD COLUMN access_token TEXT NOT NULL DEFAULT '';"
	 "ALTER TABLE sandboxes ADD COLUMN public_ports INTEGER NOT NULL DEFAULT 0;"),
	/* 5: a sandbox's network policy (net_policy.h), the default for rows
	 * made before it existed */
	("ALTER TABLE sandboxes ADD COLUMN network TEXT NOT NULL DEFAULT "
	 "'{\"allow_out\":[],\"deny_out\":[],\"egress\":\"allow\"}';"),
	/* 6: snapshots (docs/api.md, "Snapshots"): kind user (the API's),
	 * fork and pause (the daemon's own, never listed); state pending while
	 * a capture runs, deleted when the team deleted it but a sandbox or
	 * another snapshot still needs its files.  A sandbox records the
	 * snapshot its RAM and disk sit on, what it does when its TTL ends,
	 * and, while paused, how much of its TTL was left. */
	("CREATE TABLE snapshots ("
	 "  id TEXT PRIMARY KEY,"
	 "  team TEXT NOT NULL,"
	 "  sandbox_id TEXT NOT NULL,"
	 "  template TEXT NOT NULL,"
	 "  parent TEXT NOT NULL DEFAULT '',"
	 "  name TEXT NOT NULL DEFAULT '',"
	 "  kind TEXT NOT NULL CHECK (kind IN ('user','fork','pause')),"
	 "  state TEXT NOT NULL CHECK (state IN ('pending','ready','deleted')),"
	 "  created_at INTEGER NOT NULL,"
	 "  size_bytes INTEGER NOT NULL DEFAULT 0,"
	 "  env TEXT NOT NULL DEFAULT '{}',"
	 "  metadata TEXT NOT NULL DEFAULT '{}'"
	 ");"
	 "CREATE INDEX snapshots_team ON snapshots(team, created_at);"
	 "CREATE INDEX snapshots_parent ON snapshots(parent);"
	 "ALTER TABLE sandboxes ADD COLUMN snapshot TEXT NOT NULL DEFAULT '';"
	 "ALTER TABLE sandboxes ADD COLUMN on_timeout TEXT NOT NULL DEFAULT 'stop';"
	 "ALTER TABLE sandboxes ADD COLUMN ttl_left INTEGER NOT NULL DEFAULT 0;"
	 "CREATE INDEX sandboxes_snapshot ON sandboxes(snapshot);"),
};

#define N_MIGRATIONS ((int)(sizeof(migrations) / sizeof(migrations[0])))

static int exec_sql(struct store *s, const char *sql, const char *where)
{
	char *msg = NULL;
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);
	if (rc != SQLITE_OK) {
		char q[300];
		log_kv(LOG_ERROR, "store.error", "where=%s rc=%d msg=%s", where, rc,
		       log_quote(msg ? msg : "?", q, sizeof(q)));
		sqlite3_free(msg);
		return -EIO;
	}
	return 0;
}

static int read_version(struct store *s, int *v)
{
	int64_t n = 0;
	int r = store__int64(s, "user_version", "PRAGMA user_version", STORE_NO_ARGS, &n);
	*v = (int)n;
	return r;
}

static int migrate(struct store *s, char *err, size_t errlen)
{
	int v;
	if (read_version(s, &v) < 0) {
		snprintf(err, errlen, "cannot read the schema version");
		return -EIO;
	}
	if (v > N_MIGRATIONS) {
		snprintf(err, errlen,
			 "the database has schema version %d, newer than this program (%d)", v,
			 N_MIGRATIONS);
		return -EIO;
	}
	for (; v < N_MIGRATIONS; v++) {
		char bump[64];
		snprintf(bump, sizeof(bump), "PRAGMA user_version = %d;", v + 1);
		if (exec_sql(s, "BEGIN IMMEDIATE", "migrate.begin") < 0)
			goto fail;
		if (exec_sql(s, migrations[v], "migrate") < 0 ||
		    exec_sql(s, bump, "migrate.version") < 0 ||
		    exec_sql(s, "COMMIT", "migrate.commit") < 0) {
			exec_sql(s, "ROLLBACK", "migrate.rollback");
			goto fail;
		}
		log_kv(LOG_INFO, "store.migrated", "version=%d", v + 1);
	}
	s->version = v;
	return 0;
fail:
	snprintf(err, errlen, "migration %d failed (see the log)", v + 1);
	return -EIO;
}

int store_open(const char *path, struct store **out, char *err, size_t errlen)
{
	struct store *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&s->lock, NULL);
	/* The registry holds key hashes: private.  SQLite gives its -wal and
	 * -shm files the database file's mode, so create that one first. */
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	int rc = sqlite3_open_v2(path, &s->db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
				 NULL);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "cannot open %s: %s", path,
			 s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
		goto fail;
	}
	sqlite3_busy_timeout(s->db, 5000);
	if (exec_sql(s, "PRAGMA journal_mode=WAL", "wal") < 0 ||
	    exec_sql(s, "PRAGMA synchronous=NORMAL", "synchronous") < 0) {
		snprintf(err, errlen, "cannot switch %s to WAL", path);
		goto fail;
	}
	if (migrate(s, err, errlen) < 0)
		goto fail;
	*out = s;
	return 0;
fail:
	sqlite3_close(s->db);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return -EIO;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	sqlite3_close(s->db);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int store_schema_version(struct store *s)
{
	return s->version;
}
