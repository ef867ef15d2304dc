/*
 * store_int.h - what the store's files (store.c, store_keys.c,
 * store_sandboxes.c, store_contexts.c) share: the connection and the
 * statement helpers of store_stmt.c.  Private to the store; callers use
 * store.h.
 *
 * The helpers named store__<verb> with a where take the lock themselves and
 * run one statement: where names it in the log when SQLite fails; args bind
 * ?1, ?2, ... in order.  Errors as store.h: -EEXIST (a constraint), -ENOMEM,
 * -EIO (anything else SQLite reports, logged).
 */
#ifndef PANDASTACK_DAEMON_STORE_INT_H
#define PANDASTACK_DAEMON_STORE_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

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
 * -EEXIST for a constraint violation, -ENOMEM, -ENOSPC (the disk is full). */
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

/* One parameter of a statement: text (NULL binds SQL NULL) or an integer. */
enum store_arg_kind { STORE_ARG_TEXT, STORE_ARG_INT };
struct store_arg {
	enum store_arg_kind kind;
	const char *text; /* borrowed until the call returns */
	int64_t i;
};
#define STORE_TEXT(s) ((struct store_arg){.kind = STORE_ARG_TEXT, .text = (s)})
#define STORE_INT(v) ((struct store_arg){.kind = STORE_ARG_INT, .i = (int64_t)(v)})
/* STORE_ARGS(a, b, ...) - the args and nargs parameters of the helpers below. */
#define STORE_ARGS(...)                                                             \
	(const struct store_arg[]){__VA_ARGS__},                                    \
		sizeof((const struct store_arg[]){__VA_ARGS__}) / sizeof(struct store_arg)
#define STORE_NO_ARGS NULL, 0

/* store_read_fn - fill row from the current row of st; 0 or -errno (-EIO for
 * a value that does not fit).  On failure row holds nothing to free. */
typedef int (*store_read_fn)(sqlite3_stmt *st, void *row);

/* How store__select reads rows into an array. */
struct store_rows {
	size_t size;             /* bytes of one element */
	size_t max;              /* rows read at most; the rest are ignored */
	store_read_fn read;
	void (*clear)(void *row); /* frees what read put in a row, or NULL */
};

/* store__change - run an INSERT, UPDATE or DELETE.  Returns the number of
 * rows it changed (>= 0), or -errno. */
int store__change(struct store *s, const char *where, const char *sql,
		  const struct store_arg *args, size_t nargs);

/* store__change_one - the same for a statement meant to change a row:
 * 0, or -ENOENT when it changed none, or -errno. */
int store__change_one(struct store *s, const char *where, const char *sql,
		      const struct store_arg *args, size_t nargs);

/* store__int64 - run a SELECT of one integer (count(*)): 0 with *out, or
 * -errno. */
int store__int64(struct store *s, const char *where, const char *sql,
		 const struct store_arg *args, size_t nargs, int64_t *out);

/* store__select_one - run a SELECT and read its first row into row with
 * read: read's result, or -ENOENT when there is no row, or -errno. */
int store__select_one(struct store *s, const char *where, const char *sql,
		      const struct store_arg *args, size_t nargs, store_read_fn read, void *row);

/*
 * store__select - run a SELECT and read at most how->max rows into a new
 * array of how->size elements.  Returns 0 with *rows (owned by the caller;
 * NULL when there is no row) and *n, or -errno (read's failure included)
 * with *rows NULL, every row read so far cleared with how->clear.
 */
int store__select(struct store *s, const char *where, const char *sql,
		  const struct store_arg *args, size_t nargs, const struct store_rows *how,
		  void **rows, size_t *n);

#endif
