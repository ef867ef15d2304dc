/*
 * store_int.h - what the store's files (store.c, store_keys.c,
 * store_sandboxes.c) share: the connection and small statement helpers.
 * Private to the store; callers use store.h.
 */
#ifndef PANDASTACK_DAEMON_STORE_INT_H
#define PANDASTACK_DAEMON_STORE_INT_H

#include <pthread.h>
#include <stddef.h>

#include <sqlite3.h>

struct store {
	sqlite3 *db;
	pthread_mutex_t lock; /* held around every use of db */
	int version;          /* applied migration */
};

/*
 * store__prepare - compile sql on s->db (lock held).  Returns the statement
 * or NULL (logged with where).
 */
sqlite3_stmt *store__prepare(struct store *s, const char *sql, const char *where);

/* store__fail - log SQLite's message for rc at where; returns -EIO, or
 * -EEXIST for a constraint violation. */
int store__fail(struct store *s, int rc, const char *where);

/*
 * store__copy_text - copy column col of st into out (outlen bytes with the
 * NUL).  A NULL column gives "".  Returns 0, or -EIO when the stored text
 * does not fit (a corrupt or foreign row).
 */
int store__copy_text(sqlite3_stmt *st, int col, char *out, size_t outlen);

/* store__dup_text - new NUL-terminated copy of column col (free()), at most
 * cap bytes; NULL column gives dflt.  Returns 0, -EIO (too long), -ENOMEM. */
int store__dup_text(sqlite3_stmt *st, int col, size_t cap, const char *dflt, char **out);

#endif
