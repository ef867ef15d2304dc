/*
 * output.h - how the CLI prints: API errors and usage errors on stderr,
 * the API's JSON as is (--json), and human-readable tables and "key: value"
 * lines.  Every text that came from the server (names, messages, guest
 * file names) goes through out_sanitize before it reaches a terminal, so a
 * hostile name cannot send escape sequences.  Command output proper (exec's
 * stdout and stderr) is written raw, as the command produced it.
 *
 * Threads: the main thread (stdio).
 */
#ifndef PANDASTACK_CLI_OUTPUT_H
#define PANDASTACK_CLI_OUTPUT_H

#include <stddef.h>

#include <jansson.h>

#include "client/client.h"

#define OUT_CELL_MAX 512 /* bytes of one table cell or value shown */

/* One table column: its header and the row field it shows. */
struct out_col {
	const char *header; /* "ID" */
	const char *field;  /* "id" */
};

/*
 * out_sanitize - len bytes of s with control characters (C0, DEL, and C1
 * as UTF-8) replaced by '?', and every byte of invalid UTF-8 (common/utf8.h)
 * by '?', into out (cap bytes with the NUL, cut to fit, never in the middle
 * of a UTF-8 sequence).  Returns out.  Pure.
 */
char *out_sanitize(const char *s, size_t len, char *out, size_t cap);

/* out_error - "pandastack: <message>" on stderr (fmt's text is printed as
 * given: pass server text through out_sanitize first). */
void out_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* out_usage - "pandastack <path>: <message>" and a pointer to --help on
 * stderr, for exit code 2. */
void out_usage(const char *path, const char *message);

/*
 * out_client_error - "pandastack: error: <code> (HTTP <status>): <message>"
 * (without the HTTP part when no answer came) on stderr, sanitised.
 */
void out_client_error(const struct client_error *e);

/*
 * out_raw - the answer's body exactly as the server sent it, with a newline
 * added when it does not end in one; nothing for an empty body.  Returns 0
 * or -EIO (stdout failed).
 */
int out_raw(const struct client_response *r);

/*
 * out_value - a JSON value as one line of text into buf (cap bytes):
 * strings as is, numbers, true/false, "-" for null or NULL, objects and
 * arrays as compact JSON; a field named "*_at", "*_at_ms" or "*time_ms" holding
 * milliseconds since the epoch is shown as UTC "2026-11-30 02:18:52".
 * Sanitised and cut to fit.  Returns buf.
 */
char *out_value(const char *field, const json_t *v, char *buf, size_t cap);

/*
 * out_list_items - the array of a list answer: root itself when it is an
 * array, else root's member key when that is an array, else NULL.
 * Borrowed.
 */
json_t *out_list_items(json_t *root, const char *key);

/*
 * out_table - rows (an array of objects) as a table with a header line,
 * columns padded to their widest cell.  Rows that are not objects are
 * skipped.  Returns 0, -ENOMEM, -EIO (stdout failed).
 */
int out_table(const json_t *rows, const struct out_col *cols, size_t ncols);

/* out_fields - each member of obj as "key: value" (out_value) on stdout.
 * Returns 0 or -EIO. */
int out_fields(const json_t *obj);

#endif
