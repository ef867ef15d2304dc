/*
 * body_error.c - request validation errors (see body_error.h).
 */
#include "daemon/body_error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

int body_error_set(struct body_error *err, enum api_err code, const char *fmt, ...)
{
	err->code = code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	/* Field names echoed from the request are valid UTF-8 (jansson checked
	 * them) but vsnprintf may have cut one mid-character; jansson's own
	 * error text may quote a raw byte of a bad body. */
	size_t n = strlen(err->message);
	char *clean = NULL;
	size_t cl;
	if (!utf8_valid(err->message, n) && utf8_sanitize(err->message, n, &clean, &cl) == 0) {
		n = cl < sizeof(err->message) - 1 ? cl : sizeof(err->message) - 1;
		memcpy(err->message, clean, n);
		free(clean);
	}
	n -= utf8_incomplete_tail(err->message, n);
	err->message[n] = '\0';
	return -EINVAL;
}
