/*
 * jupyter_json.c - repair of ill-formed UTF-8 and unpaired surrogate
 * escapes, then parsing with jansson (see jupyter_json.h).
 *
 * The scan tracks only whether it is inside a JSON string (quotes and
 * backslash escapes); everything else is jansson's job.  Pure; any thread.
 */
#include "agent/jupyter_json.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A growable output buffer; cap is the worst case, so growth never fails
 * for size reasons, only for memory. */
struct outbuf {
	char *p;
	size_t len, size;
};

static int out_reserve(struct outbuf *o, size_t more)
{
	if (o->len + more + 1 <= o->size)
		return 0;
	size_t nsize = o->size ? o->size : 64;
	while (nsize < o->len + more + 1)
		nsize *= 2;
	char *np = realloc(o->p, nsize);
	if (!np)
		return -ENOMEM;
	o->p = np;
	o->size = nsize;
	return 0;
}

static int out_put(struct outbuf *o, const void *b, size_t n)
{
	int r = out_reserve(o, n);
	if (r < 0)
		return r;
	memcpy(o->p + o->len, b, n);
	o->len += n;
	return 0;
}

static int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The code unit of "\uXXXX" at s (6 bytes available), or -1. */
static long escape_unit(const uint8_t *s, size_t avail)
{
	if (avail < 6 || s[0] != '\\' || s[1] != 'u')
		return -1;
	long v = 0;
	for (int i = 2; i < 6; i++) {
		int h = hexval(s[i]);
		if (h < 0)
			return -1;
		v = v << 4 | h;
	}
	return v;
}

/*
 * The length of the well-formed UTF-8 sequence at s (n >= 1 bytes
 * available), or 0 with *bad set to the length of its maximal ill-formed
 * subpart (>= 1), per Unicode table 3-7.
 */
static size_t utf8_seq(const uint8_t *s, size_t n, size_t *bad)
{
	uint8_t c = s[0], lo = 0x80, hi = 0xBF;
	size_t need;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		need = 1;
	else if (c >= 0xE0 && c <= 0xEF) {
		need = 2;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 3;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else {
		*bad = 1;
		return 0;
	}
	for (size_t k = 1; k <= need; k++) {
		uint8_t b = k < n ? s[k] : 0;
		uint8_t l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
		if (k >= n || b < l || b > h) {
			*bad = k;
			return 0;
		}
	}
	return need + 1;
}

/* Handle a backslash inside a string at b[i]; returns bytes consumed. */
static size_t repair_escape(struct outbuf *o, const uint8_t *b, size_t i,
			    size_t len, int *err)
{
	static const char fffd[] = "\\ufffd";
	size_t avail = len - i;
	if (avail >= 2 && b[i + 1] && strchr("\"\\/bfnrt", b[i + 1])) {
		*err = out_put(o, b + i, 2);
		return 2;
	}
	long u = escape_unit(b + i, avail);
	if (u < 0) {
		/* Not a valid escape: keep the backslash as a literal one. */
		*err = out_put(o, "\\\\", 2);
		return 1;
	}
	if (u >= 0xD800 && u <= 0xDBFF) {
		long lo = escape_unit(b + i + 6, avail - 6);
		if (avail >= 12 && lo >= 0xDC00 && lo <= 0xDFFF) {
			*err = out_put(o, b + i, 12);
			return 12;
		}
		*err = out_put(o, fffd, 6);
		return 6;
	}
	if (u >= 0xDC00 && u <= 0xDFFF) {
		*err = out_put(o, fffd, 6);
		return 6;
	}
	*err = out_put(o, b + i, 6);
	return 6;
}

/* The repair loop; json_mode also fixes escapes and control bytes inside
 * JSON strings, otherwise only UTF-8 is repaired. */
static int repair(const void *buf, size_t len, int json_mode, char **out, size_t *outlen)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *b = buf;
	struct outbuf o = { 0 };
	int in_string = 0, r = 0;
	*out = NULL;
	*outlen = 0;
	if (len > JUPYTER_JSON_MAX)
		return -EFBIG;
	if ((r = out_reserve(&o, len + len / 16 + 16)) < 0)
		return r;
	size_t i = 0;
	while (i < len && r == 0) {
		uint8_t c = b[i];
		if (c >= 0x80) {
			size_t bad = 0, n = utf8_seq(b + i, len - i, &bad);
			if (n) {
				r = out_put(&o, b + i, n);
				i += n;
			} else {
				r = out_put(&o, "\xEF\xBF\xBD", 3);
				i += bad;
			}
		} else if (!json_mode) {
			r = out_put(&o, &c, 1);
			i++;
		} else if (!in_string) {
			if (c == '"')
				in_string = 1;
			r = out_put(&o, &c, 1);
			i++;
		} else if (c == '"') {
			in_string = 0;
			r = out_put(&o, &c, 1);
			i++;
		} else if (c == '\\') {
			i += repair_escape(&o, b, i, len, &r);
		} else if (c < 0x20) {
			char esc[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
			r = out_put(&o, esc, 6);
			i++;
		} else {
			r = out_put(&o, &c, 1);
			i++;
		}
	}
	if (r < 0) {
		free(o.p);
		return r;
	}
	o.p[o.len] = '\0';
	*out = o.p;
	*outlen = o.len;
	return 0;
}

int jupyter_json_repair(const void *buf, size_t len, char **out, size_t *outlen)
{
	return repair(buf, len, 1, out, outlen);
}

int jupyter_utf8_repair(const void *buf, size_t len, char **out, size_t *outlen)
{
	return repair(buf, len, 0, out, outlen);
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

size_t jupyter_utf8_cut(const char *s, size_t len, size_t max)
{
	if (max >= len)
		return len;
	size_t n = max;
	while (n > 0 && ((uint8_t)s[n] & 0xC0) == 0x80)
		n--;
	return n;
}
