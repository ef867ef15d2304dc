/*
 * body_error.h - a request validation error: a row of the error table and
 * a message for the client (request_body.h, net_policy.h fill it).
 *
 * Threads: any.
 */
#ifndef PANDASTACK_DAEMON_BODY_ERROR_H
#define PANDASTACK_DAEMON_BODY_ERROR_H

#include "daemon/api_errors.h"

struct body_error {
	enum api_err code;  /* a row of the error table (a 400 one) */
	char message[256];  /* human-readable, valid UTF-8 */
};

/*
 * body_error_set - fill err with code and the formatted message, made valid
 * UTF-8 (a %.Ns of request text may cut a character: it is replaced) and
 * cut to fit.  Returns -EINVAL, for `return body_error_set(...)`.
 */
int body_error_set(struct body_error *err, enum api_err code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
