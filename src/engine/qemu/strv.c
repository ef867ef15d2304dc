/*
 * strv.c - growable vector of owned strings (see strv.h).
 */
#include "engine/qemu/strv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void strv_init(struct strv *s)
{
	memset(s, 0, sizeof(*s));
}

void strv_free(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	strv_init(s);
}

/* Append an owned string (taken even on failure). */
static int strv_take(struct strv *s, char *str)
{
	if (s->err) {
		free(str);
		return s->err;
	}
	if (!str) {
		s->err = -ENOMEM;
		return s->err;
	}
	if (strlen(str) > STRV_MAX_LEN || s->n >= STRV_MAX_ITEMS) {
		free(str);
		s->err = -E2BIG;
		return s->err;
	}
	if (s->n + 2 > s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 16;
		char **nv = realloc(s->v, ncap * sizeof(*nv));
		if (!nv) {
			free(str);
			s->err = -ENOMEM;
			return s->err;
		}
		s->v = nv;
		s->cap = ncap;
	}
	s->v[s->n++] = str;
	s->v[s->n] = NULL;
	return 0;
}

int strv_add(struct strv *s, const char *str)
{
	if (!str) {
		if (!s->err)
			s->err = -EINVAL;
		return s->err;
	}
	if (s->err)
		return s->err;
	return strv_take(s, strdup(str));
}

int strv_addf(struct strv *s, const char *fmt, ...)
{
	if (s->err)
		return s->err;
	va_list ap;
	va_start(ap, fmt);
	char *str = NULL;
	int r = vasprintf(&str, fmt, ap);
	va_end(ap);
	if (r < 0)
		str = NULL;
	return strv_take(s, str);
}

int strv_extend(struct strv *s, const struct strv *src)
{
	for (size_t i = 0; i < src->n; i++)
		strv_add(s, src->v[i]);
	return s->err;
}

int strv_equal(const struct strv *a, const struct strv *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i], b->v[i]) != 0)
			return 0;
	return 1;
}

char *strv_join(const struct strv *s, const char *sep)
{
	size_t seplen = strlen(sep), total = 1;
	for (size_t i = 0; i < s->n; i++)
		total += strlen(s->v[i]) + seplen;
	char *out = malloc(total);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (i) {
			memcpy(out + o, sep, seplen);
			o += seplen;
		}
		size_t l = strlen(s->v[i]);
		memcpy(out + o, s->v[i], l);
		o += l;
	}
	out[o] = '\0';
	return out;
}
