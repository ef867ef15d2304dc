/*
 * utf8.c - UTF-8 validation and U+FFFD substitution (see utf8.h).
 */
#include "common/utf8.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int utf8_seq_len(const void *buf, size_t n)
{
	const uint8_t *s = buf;
	uint8_t c = s[0];
	if (c < 0x80)
		return 1;
	int need;
	uint8_t lo = 0x80, hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf) {
		need = 1;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 2;
		if (c == 0xe0)
			lo = 0xa0; /* no overlong forms */
		else if (c == 0xed)
			hi = 0x9f; /* no surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 3;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f; /* <= U+10FFFF */
	} else {
		return -1;
	}
	for (int i = 1; i <= need; i++) {
		if ((size_t)i >= n)
			return 0;
		uint8_t b = s[i];
		uint8_t l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xbf;
		if (b < l || b > h)
			return -i;
	}
	return need + 1;
}

int utf8_valid(const void *s, size_t len)
{
	const uint8_t *p = s;
	size_t i = 0;
	while (i < len) {
		int l = utf8_seq_len(p + i, len - i);
		if (l <= 0)
			return 0;
		i += (size_t)l;
	}
	return 1;
}

int utf8_is_control(const void *buf, size_t l)
{
	const uint8_t *s = buf;
	if (l == 1)
		return s[0] < 0x20 || s[0] == 0x7f;
	if (l == 2)
		return (s[0] == 0xc2 && s[1] < 0xa0) || (s[0] == 0xd8 && s[1] == 0x9c);
	if (l == 3 && s[0] == 0xe2 && s[1] == 0x80)
		return s[2] == 0x8e || s[2] == 0x8f || (s[2] >= 0xa8 && s[2] <= 0xae);
	if (l == 3 && s[0] == 0xe2 && s[1] == 0x81)
		return s[2] >= 0xa6 && s[2] <= 0xa9;
	return 0;
}

int utf8_printable(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	for (size_t i = 0; i < len;) {
		int l = utf8_seq_len(p + i, len - i);
		if (l <= 0 || utf8_is_control(p + i, (size_t)l))
			return 0;
		i += (size_t)l;
	}
	return 1;
}

size_t utf8_incomplete_tail(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t stop = len > 4 ? len - 4 : 0;
	for (size_t i = len; i > stop; i--) {
		if ((p[i - 1] & 0xc0) == 0x80)
			continue; /* continuation byte: look further back for its lead */
		return utf8_seq_len(p + i - 1, len - (i - 1)) == 0 ? len - (i - 1) : 0;
	}
	return 0;
}

int utf8_sanitize(const void *in, size_t len, char **out, size_t *outlen)
{
	const uint8_t *p = in;
	if (len > (SIZE_MAX - 1) / 3)
		return -EOVERFLOW;
	char *o = malloc(len * 3 + 1);
	if (!o)
		return -ENOMEM;
	size_t i = 0, w = 0;
	while (i < len) {
		int l = utf8_seq_len(p + i, len - i);
		if (l > 0) {
			memcpy(o + w, p + i, (size_t)l);
			w += (size_t)l;
			i += (size_t)l;
			continue;
		}
		/* invalid subpart (l < 0) or a sequence cut by the end (l == 0) */
		size_t skip = l < 0 ? (size_t)-l : len - i;
		memcpy(o + w, "\xef\xbf\xbd", 3);
		w += 3;
		i += skip;
	}
	o[w] = '\0';
	*out = o;
	if (outlen)
		*outlen = w;
	return 0;
}

size_t utf8_cut(const void *s, size_t len, size_t max)
{
	const uint8_t *p = s;
	if (max >= len)
		return len;
	size_t n = max;
	while (n > 0 && (p[n] & 0xc0) == 0x80)
		n--;
	return n;
}

json_t *utf8_json_lossy(const void *buf, size_t len)
{
	if (utf8_valid(buf, len))
		return json_stringn_nocheck(buf, len);
	char *s;
	size_t n;
	if (utf8_sanitize(buf, len, &s, &n) < 0)
		return NULL;
	json_t *j = json_stringn_nocheck(s, n);
	free(s);
	return j;
}
