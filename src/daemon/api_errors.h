/*
 * api_errors.h - the REST API's error table: every (HTTP status, code) the
 * daemon answers with, and what it means.  The rows are in api_errors.def
 * (the one source: docs/api.md "Errors" and the SDKs' tables are checked
 * against it); this header names each row API_ERR_<NAME>.
 *
 * Handlers never write a status or a code: they name a row, e.g.
 *   http_reply_error(r, API_ERR_SANDBOX_NOT_FOUND, "no sandbox '%.64s'", id);
 * and http_reply_error (http_reply.h) or sse_error (sse.h) sends its status
 * and code.
 *
 * Threads: the table is immutable; every function is pure and any thread
 * may call it.
 */
#ifndef PANDASTACK_DAEMON_API_ERRORS_H
#define PANDASTACK_DAEMON_API_ERRORS_H

#include <stdio.h>

enum api_err {
#define API_ERROR(name, status, code, meaning) API_ERR_##name,
#include "daemon/api_errors.def"
#undef API_ERROR
	API_ERR_COUNT /* not a row: the number of rows */
};

/* One row of the table. */
struct api_error_row {
	unsigned status;     /* HTTP status, 400..599 */
	const char *code;    /* "sandbox_not_found" */
	const char *meaning; /* when it is sent (docs/api.md's wording) */
};

/*
 * api_errors_row - the row of e (static).  A value outside the table (a
 * cast integer) gives the row of API_ERR_INTERNAL: an answer is always a
 * documented one.
 */
const struct api_error_row *api_errors_row(enum api_err e);

/* api_errors_status / api_errors_code - the row's status and code (static). */
unsigned api_errors_status(enum api_err e);
const char *api_errors_code(enum api_err e);

/* api_errors_print - one "STATUS CODE" line per row, in table order, to f
 * (pandastackd --print-errors). */
void api_errors_print(FILE *f);

#endif
