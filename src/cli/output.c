/*
 * output.c - errors, raw JSON, tables and fields on stdout/stderr (see
 * output.h).
 */
#include "cli/output.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/utf8.h"

char *out_sanitize(const char *s, size_t len, char *out, size_t cap)
{
	size_t o = 0;
	const unsigned char *u = (const unsigned char *)s;
	if (cap == 0)
		return out;
	for (size_t i = 0; s && i < len;) {
		int n = utf8_seq_len(u + i, len - i);
		size_t l = n > 0 ? (size_t)n : 0; /* 0: invalid or cut, one '?' per byte */
		int bad = l == 0 || utf8_is_control(u + i, l);
		size_t w = bad ? 1 : l;
		if (o + w >= cap)
			break;
		if (bad) {
			out[o++] = '?';
			i += l ? l : 1;
		} else {
			memcpy(out + o, s + i, l);
			o += l;
			i += l;
		}
	}
	out[o] = '\0';
	return out;
}

void out_error(const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fflush(stdout);
	fprintf(stderr, "pandastack: %s\n", msg);
}

void out_usage(const char *path, const char *message)
{
	fflush(stdout);
	fprintf(stderr, "pandastack%s%s: %s\nRun 'pandastack%s%s --help' for usage.\n",
		path && *path ? " " : "", path ? path : "", message, path && *path ? " " : "",
		path ? path : "");
}

void out_client_error(const struct client_error *e)
{
	char code[sizeof(e->code)], msg[sizeof(e->message)];
	out_sanitize(e->code, strnlen(e->code, sizeof(e->code)), code, sizeof(code));
	out_sanitize(e->message, strnlen(e->message, sizeof(e->message)), msg, sizeof(msg));
	if (e->status > 0)
		out_error("error: %s (HTTP %ld): %s", code[0] ? code : "error", e->status, msg);
	else
		out_error("error: %s: %s", code[0] ? code : "error", msg);
}

int out_raw(const struct client_response *r)
{
	if (!r->raw || r->raw_len == 0)
		return 0;
	if (fwrite(r->raw, 1, r->raw_len, stdout) != r->raw_len)
		return -EIO;
	if (r->raw[r->raw_len - 1] != '\n' && fputc('\n', stdout) == EOF)
		return -EIO;
	return fflush(stdout) == 0 ? 0 : -EIO;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* A wall-clock time field: ms (or s) since the epoch as UTC text. */
static int format_time(const char *field, json_int_t v, char *buf, size_t cap)
{
	if (!field || !(ends_with(field, "_at") || ends_with(field, "_at_ms") ||
			ends_with(field, "time_ms")))
		return 0;
	time_t secs;
	if (v >= 100000000000LL && v < 100000000000000LL)
		secs = (time_t)(v / 1000);
	else if (v >= 1000000000LL && v < 100000000000LL)
		secs = (time_t)v;
	else
		return 0;
	struct tm tm;
	if (!gmtime_r(&secs, &tm))
		return 0;
	return strftime(buf, cap, "%Y-%m-%d %H:%M:%S", &tm) > 0;
}

char *out_value(const char *field, const json_t *v, char *buf, size_t cap)
{
	char tmp[OUT_CELL_MAX];
	if (cap == 0)
		return buf;
	buf[0] = '\0';
	if (!v || json_is_null(v)) {
		snprintf(buf, cap, "-");
	} else if (json_is_string(v)) {
		out_sanitize(json_string_value(v), json_string_length(v), buf, cap);
	} else if (json_is_integer(v)) {
		if (!format_time(field, json_integer_value(v), buf, cap))
			snprintf(buf, cap, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	} else if (json_is_real(v)) {
		snprintf(buf, cap, "%g", json_real_value(v));
	} else if (json_is_boolean(v)) {
		snprintf(buf, cap, "%s", json_is_true(v) ? "true" : "false");
	} else {
		char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		if (s) {
			snprintf(tmp, sizeof(tmp), "%s", s);
			out_sanitize(tmp, strlen(tmp), buf, cap);
			free(s);
		}
	}
	return buf;
}

json_t *out_list_items(json_t *root, const char *key)
{
	if (json_is_array(root))
		return root;
	json_t *a = json_object_get(root, key);
	return json_is_array(a) ? a : NULL;
}

/* Characters (not bytes) in a UTF-8 string. */
static size_t text_width(const char *s)
{
	size_t w = 0;
	for (; *s; s++) {
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	}
	return w;
}

/* One table row's cells: widen width[] to fit them, or print them padded
 * to width[] (nothing after the last).  Rows that are not objects are
 * skipped. */
static void table_row(const json_t *row, const struct out_col *cols, size_t ncols,
		      size_t *width, int print)
{
	char cell[OUT_CELL_MAX];
	if (!json_is_object(row))
		return;
	for (size_t c = 0; c < ncols; c++) {
		out_value(cols[c].field, json_object_get(row, cols[c].field), cell, sizeof(cell));
		size_t w = text_width(cell);
		if (!print) {
			if (w > width[c])
				width[c] = w;
			continue;
		}
		int pad = c + 1 < ncols ? (int)(width[c] - w) + 2 : 0;
		printf("%s%*s", cell, pad, "");
	}
	if (print)
		putchar('\n');
}

int out_table(const json_t *rows, const struct out_col *cols, size_t ncols)
{
	size_t *width = calloc(ncols ? ncols : 1, sizeof(*width));
	if (!width)
		return -ENOMEM;
	for (size_t c = 0; c < ncols; c++)
		width[c] = text_width(cols[c].header);
	size_t i;
	const json_t *row;
	json_array_foreach(rows, i, row)
		table_row(row, cols, ncols, width, 0);
	for (size_t c = 0; c < ncols; c++) {
		int pad = c + 1 < ncols ? (int)(width[c] - text_width(cols[c].header)) + 2 : 0;
		printf("%s%*s", cols[c].header, pad, "");
	}
	putchar('\n');
	json_array_foreach(rows, i, row)
		table_row(row, cols, ncols, width, 1);
	free(width);
	return fflush(stdout) == 0 ? 0 : -EIO;
}

int out_fields(const json_t *obj)
{
	char key[128], val[OUT_CELL_MAX];
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)obj, k, v) {
		out_sanitize(k, strlen(k), key, sizeof(key));
		printf("%s: %s\n", key, out_value(k, v, val, sizeof(val)));
	}
	return fflush(stdout) == 0 ? 0 : -EIO;
}
