/*
 * jupyter_map.c - MIME bundles and errors to the product's shapes (see
 * jupyter_map.h).  Pure; any thread.
 */
#include "agent/jupyter/jupyter_map.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"

/* How a named mime maps to a result field. */
enum conv { CONV_TEXT, CONV_PLAIN, CONV_BASE64, CONV_JSON };

static const struct {
	const char *mime, *field;
	enum conv conv;
} fields[] = {
	{ "text/plain", "text", CONV_PLAIN },
	{ "text/html", "html", CONV_TEXT },
	{ "text/markdown", "markdown", CONV_TEXT },
	{ "image/svg+xml", "svg", CONV_TEXT },
	{ "image/png", "png", CONV_BASE64 },
	{ "image/jpeg", "jpeg", CONV_BASE64 },
	{ "application/json", "json", CONV_JSON },
	{ "text/latex", "latex", CONV_TEXT },
	{ "application/javascript", "javascript", CONV_TEXT },
};

size_t jupyter_text_unquote(const char *s, size_t len, size_t *off)
{
	*off = 0;
	if (len >= 2 && s[0] == '\'' && s[len - 1] == '\'') {
		*off = 1;
		return len - 2;
	}
	return len;
}

char *jupyter_strip_ansi(const char *s, size_t len, size_t *outlen)
{
	char *o = malloc(len + 1);
	size_t n = 0, i = 0;
	if (!o)
		return NULL;
	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		if (c != 0x1b) {
			o[n++] = (char)c;
			i++;
			continue;
		}
		i++;
		if (i >= len)
			break;
		if (s[i] == '[') {
			/* CSI: parameters and intermediates, then a final byte. */
			i++;
			while (i < len && ((unsigned char)s[i] < 0x40 || (unsigned char)s[i] > 0x7e))
				i++;
			if (i < len)
				i++;
		} else if (s[i] == ']') {
			/* OSC: until BEL or ESC \. */
			i++;
			while (i < len && s[i] != '\a' && !(s[i] == 0x1b && i + 1 < len && s[i + 1] == '\\'))
				i++;
			i += (i < len && s[i] == '\a') ? 1 : (i < len ? 2 : 0);
		} else {
			/* nF: intermediates 0x20-0x2F then a final byte; Fp/Fe/Fs: one
			 * byte.  Only ASCII is eaten, never part of a UTF-8 character. */
			while (i < len && (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] <= 0x2f)
				i++;
			if (i < len && (unsigned char)s[i] >= 0x30 && (unsigned char)s[i] < 0x7f)
				i++;
		}
	}
	o[n] = '\0';
	*outlen = n;
	return o;
}

/* The text of a string, or of an array of strings joined, as a new
 * NUL-terminated buffer (caller frees) and its length; NULL for any other
 * value (*wrong set) or when memory ran out (*wrong clear). */
static char *text_of(const json_t *v, size_t *len, int *wrong)
{
	*wrong = 0;
	if (json_is_string(v)) {
		*len = json_string_length(v);
		char *s = malloc(*len + 1);
		if (s) {
			memcpy(s, json_string_value(v), *len);
			s[*len] = '\0';
		}
		return s;
	}
	*wrong = 1;
	if (!json_is_array(v))
		return NULL;
	size_t total = 0, i;
	json_t *e;
	json_array_foreach(v, i, e) {
		if (!json_is_string(e))
			return NULL;
		total += json_string_length(e);
	}
	*wrong = 0;
	char *s = malloc(total + 1);
	if (!s)
		return NULL;
	size_t off = 0;
	json_array_foreach(v, i, e) {
		memcpy(s + off, json_string_value(e), json_string_length(e));
		off += json_string_length(e);
	}
	s[total] = '\0';
	*len = total;
	return s;
}

/* Set obj[field] to the converted value; 1 if set, 0 if the value has the
 * wrong type (or is not base64 where it must be: a client decodes it),
 * -1 on memory. */
static int convert(json_t *obj, const char *field, enum conv conv, const json_t *v)
{
	json_t *out = NULL;
	if (conv == CONV_JSON) {
		out = json_deep_copy(v);
		if (!out)
			return -1;
		return json_object_set_new(obj, field, out) == 0 ? 1 : -1;
	}
	size_t len = 0;
	int wrong;
	char *s = text_of(v, &len, &wrong);
	if (!s)
		return wrong ? 0 : -1;
	if (conv == CONV_PLAIN) {
		size_t off;
		size_t n = jupyter_text_unquote(s, len, &off);
		out = json_stringn(s + off, n);
	} else if (conv == CONV_BASE64) {
		size_t n = 0;
		for (size_t i = 0; i < len; i++)
			if (s[i] != ' ' && (s[i] < '\t' || s[i] > '\r'))
				s[n++] = s[i];
		if (!base64_valid(s, n)) {
			free(s);
			return 0;
		}
		out = json_stringn(s, n);
	} else {
		out = json_stringn(s, len);
	}
	free(s);
	if (!out)
		return -1;
	return json_object_set_new(obj, field, out) == 0 ? 1 : -1;
}

json_t *jupyter_map_result(const json_t *data, int is_main_result)
{
	if (!json_is_object(data))
		return NULL;
	json_t *r = json_pack("{s:s, s:b}", "type", "result", "is_main_result", is_main_result);
	json_t *extra = json_object();
	if (!r || !extra)
		goto fail;
	for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]); k++) {
		json_t *v = json_object_get(data, fields[k].mime);
		if (!v)
			continue;
		int c = convert(r, fields[k].field, fields[k].conv, v);
		if (c < 0)
			goto fail;
		if (c == 0 && json_object_set_new(extra, fields[k].mime, json_deep_copy(v)) < 0)
			goto fail;
	}
	const char *mime;
	json_t *v;
	json_object_foreach((json_t *)data, mime, v) {
		int named = 0;
		for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]) && !named; k++)
			named = strcmp(mime, fields[k].mime) == 0;
		if (!named && json_object_set_new(extra, mime, json_deep_copy(v)) < 0)
			goto fail;
	}
	if (json_object_size(extra) > 0) {
		if (json_object_set_new(r, "extra", extra) < 0) {
			extra = NULL;
			goto fail;
		}
	} else {
		json_decref(extra);
	}
	return r;
fail:
	json_decref(extra);
	json_decref(r);
	return NULL;
}

/* A new string without ANSI codes from a C string of len bytes. */
static json_t *clean_string(const char *s, size_t len)
{
	size_t n;
	char *c = jupyter_strip_ansi(s, len, &n);
	if (!c)
		return NULL;
	json_t *v = json_stringn(c, n);
	free(c);
	return v;
}

json_t *jupyter_make_error(const char *name, const char *value, const char *traceback)
{
	name = name ? name : "";
	value = value ? value : "";
	traceback = traceback ? traceback : "";
	json_t *e = json_object();
	if (!e)
		return NULL;
	if (json_object_set_new(e, "name", clean_string(name, strlen(name))) < 0 ||
	    json_object_set_new(e, "value", clean_string(value, strlen(value))) < 0 ||
	    json_object_set_new(e, "traceback", clean_string(traceback, strlen(traceback))) < 0) {
		json_decref(e);
		return NULL;
	}
	return e;
}

json_t *jupyter_map_error(const json_t *content)
{
	const json_t *tb = json_object_get(content, "traceback");
	size_t total = 0, i;
	json_t *line;
	json_array_foreach(tb, i, line)
		if (json_is_string(line))
			total += json_string_length(line) + 1;
	char *joined = malloc(total + 1);
	if (!joined)
		return NULL;
	size_t off = 0;
	json_array_foreach(tb, i, line) {
		if (!json_is_string(line))
			continue;
		if (off)
			joined[off++] = '\n';
		memcpy(joined + off, json_string_value(line), json_string_length(line));
		off += json_string_length(line);
	}
	joined[off] = '\0';
	json_t *e = json_object();
	const json_t *name = json_object_get(content, "ename");
	const json_t *value = json_object_get(content, "evalue");
	int bad = !e;
	if (!bad)
		bad = json_object_set_new(e, "name", json_is_string(name)
				? clean_string(json_string_value(name), json_string_length(name))
				: json_string("")) < 0;
	if (!bad)
		bad = json_object_set_new(e, "value", json_is_string(value)
				? clean_string(json_string_value(value), json_string_length(value))
				: json_string("")) < 0;
	if (!bad)
		bad = json_object_set_new(e, "traceback", clean_string(joined, off)) < 0;
	free(joined);
	if (bad) {
		json_decref(e);
		return NULL;
	}
	return e;
}
