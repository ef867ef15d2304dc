/*
 * jupyter_json.c - repair of ill-formed UTF-8 and unpaired surrogate
 * escapes, then parsing with jansson (see jupyter_json.h).
 *
 * The scan tracks only whether it is inside a JSON string (quotes and
 * backslash escapes); everything else is jansson's job.  Pure; any thread.
 */
#include "agent/jupyter/jupyter_json.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/dynbuf.h"
#include "common/utf8.h"
#include "common/util.h"

/* The code unit of "\uXXXX" at s (6 bytes available), or -1. */
static long escape_unit(const uint8_t *s, size_t avail)
{
	if (avail < 6 || s[0] != '\\' || s[1] != 'u')
		return -1;
	long v = 0;
	for (int i = 2; i < 6; i++) {
		int h = util_hexval(s[i]);
		if (h < 0)
			return -1;
		v = v << 4 | h;
	}
	return v;
}

/* Handle a backslash inside a string at b[i]; returns bytes consumed. */
static size_t repair_escape(struct dynbuf *o, const uint8_t *b, size_t i,
			    size_t len, int *err)
{
	static const char fffd[] = "\\ufffd";
	size_t avail = len - i;
	if (avail >= 2 && b[i + 1] && strchr("\"\\/bfnrt", b[i + 1])) {
		*err = dynbuf_add(o, b + i, 2);
		return 2;
	}
	long u = escape_unit(b + i, avail);
	if (u < 0) {
		/* Not a valid escape: keep the backslash as a literal one. */
		*err = dynbuf_add(o, "\\\\", 2);
		return 1;
	}
	if (u >= 0xD800 && u <= 0xDBFF) {
		long lo = escape_unit(b + i + 6, avail - 6);
		if (avail >= 12 && lo >= 0xDC00 && lo <= 0xDFFF) {
			*err = dynbuf_add(o, b + i, 12);
			return 12;
		}
		*err = dynbuf_add(o, fffd, 6);
		return 6;
	}
	if (u >= 0xDC00 && u <= 0xDFFF) {
		*err = dynbuf_add(o, fffd, 6);
		return 6;
	}
	*err = dynbuf_add(o, b + i, 6);
	return 6;
}

int jupyter_json_repair(const void *buf, size_t len, char **out, size_t *outlen)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *b = buf;
	struct dynbuf o;
	int in_string = 0, r = 0;
	*out = NULL;
	*outlen = 0;
	if (len > JUPYTER_JSON_MAX)
		return -EFBIG;
	/* the cap is the worst case (a raw control byte becomes six), so only
	 * memory can run out; most input needs little more than its size */
	dynbuf_init(&o, 6 * len);
	size_t guess = len + len / 16 + 16;
	if ((r = dynbuf_reserve(&o, guess < o.cap ? guess : o.cap)) < 0)
		return r;
	size_t i = 0;
	while (i < len && r == 0) {
		uint8_t c = b[i];
		if (c >= 0x80) {
			int n = utf8_seq_len(b + i, len - i);
			if (n > 0) {
				r = dynbuf_add(&o, b + i, (size_t)n);
				i += (size_t)n;
			} else {
				/* an invalid subpart, or a sequence cut by the end */
				r = dynbuf_add(&o, "\xEF\xBF\xBD", 3);
				i += n < 0 ? (size_t)-n : len - i;
			}
		} else if (!in_string) {
			if (c == '"')
				in_string = 1;
			r = dynbuf_add(&o, &c, 1);
			i++;
		} else if (c == '"') {
			in_string = 0;
			r = dynbuf_add(&o, &c, 1);
			i++;
		} else if (c == '\\') {
			i += repair_escape(&o, b, i, len, &r);
		} else if (c < 0x20) {
			char esc[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
			r = dynbuf_add(&o, esc, 6);
			i++;
		} else {
			r = dynbuf_add(&o, &c, 1);
			i++;
		}
	}
	if (r < 0) {
		dynbuf_free(&o);
		return r;
	}
	*out = dynbuf_take(&o, outlen);
	return *out ? 0 : -ENOMEM;
}

json_t *jupyter_json_load(const void *buf, size_t len)
{
	char *fixed;
	size_t flen;
	if (jupyter_json_repair(buf, len, &fixed, &flen) < 0)
		return NULL;
	json_error_t err;
	json_t *v = json_loadb(fixed, flen, JSON_ALLOW_NUL | JSON_DECODE_ANY, &err);
	free(fixed);
	return v;
}
