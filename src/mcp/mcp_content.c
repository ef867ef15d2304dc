/*
 * mcp_content.c - content blocks from API answers (see mcp_content.h).
 */
#include "mcp/mcp_content.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/dynbuf.h"
#include "common/utf8.h"

json_t *mcp_content_text(const char *s, size_t len)
{
	json_t *t = utf8_json_lossy(s, len);
	/* "o" takes t, also when the pack fails */
	return t ? json_pack("{s:s, s:o}", "type", "text", "text", t) : NULL;
}

static json_t *text_of(const json_t *s)
{
	return mcp_content_text(json_string_value(s), json_string_length(s));
}

static json_t *image(const char *b64, size_t len, const char *mime)
{
	return json_pack("{s:s, s:s%, s:s}", "type", "image", "data", b64, len, "mimeType", mime);
}

/* An embedded resource holding text (html, svg, markdown). */
static json_t *resource_text(const char *uri, const json_t *text, const char *mime)
{
	json_t *t = utf8_json_lossy(json_string_value(text), json_string_length(text));
	return t ? json_pack("{s:s, s:{s:s, s:s, s:o}}", "type", "resource", "resource", "uri", uri,
			     "mimeType", mime, "text", t)
		 : NULL;
}

/* Append c (stolen) to a; -ENOMEM when c is NULL or the append fails. */
static int add(json_t *a, json_t *c)
{
	return c && json_array_append_new(a, c) == 0 ? 0 : -ENOMEM;
}

static int add_result(json_t *content, const json_t *res, const char *uri)
{
	static const struct {
		const char *field, *mime;
	} images[] = {{"png", "image/png"}, {"jpeg", "image/jpeg"}};
	static const struct {
		const char *field, *mime;
	} texts[] = {{"html", "text/html"}, {"svg", "image/svg+xml"}, {"markdown", "text/markdown"}};
	int e = 0;
	const json_t *v = json_object_get(res, "text");
	if (json_is_string(v))
		e = add(content, text_of(v));
	for (size_t i = 0; !e && i < sizeof(images) / sizeof(images[0]); i++) {
		v = json_object_get(res, images[i].field);
		if (!json_is_string(v))
			continue;
		if (base64_valid(json_string_value(v), json_string_length(v)))
			e = add(content, image(json_string_value(v), json_string_length(v),
					       images[i].mime));
		else
			e = add(content, json_pack("{s:s, s:s}", "type", "text", "text",
						   "[an image that is not valid base64 was left out]"));
	}
	for (size_t i = 0; !e && i < sizeof(texts) / sizeof(texts[0]); i++) {
		v = json_object_get(res, texts[i].field);
		if (json_is_string(v))
			e = add(content, resource_text(uri, v, texts[i].mime));
	}
	v = json_object_get(res, "json");
	if (!e && v) {
		char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		e = s ? add(content, mcp_content_text(s, strlen(s))) : -ENOMEM;
		free(s);
	}
	v = json_object_get(res, "latex");
	if (!e && json_is_string(v))
		e = add(content, text_of(v));
	return e;
}

/* "Name: value\n" then the traceback's lines. */
static json_t *error_text(const json_t *err)
{
	struct dynbuf b;
	dynbuf_init(&b, 4u << 20);
	const json_t *name = json_object_get(err, "name");
	const json_t *value = json_object_get(err, "value");
	const json_t *tb = json_object_get(err, "traceback");
	dynbuf_add_str(&b, json_is_string(name) ? json_string_value(name) : "Error");
	if (json_is_string(value) && json_string_length(value)) {
		dynbuf_add_str(&b, ": ");
		dynbuf_add(&b, json_string_value(value), json_string_length(value));
	}
	if (json_is_string(tb) && json_string_length(tb)) {
		dynbuf_add_str(&b, "\n");
		dynbuf_add(&b, json_string_value(tb), json_string_length(tb));
	} else if (json_is_array(tb)) {
		size_t i;
		const json_t *line;
		json_array_foreach(tb, i, line)
			if (json_is_string(line)) {
				dynbuf_add_str(&b, "\n");
				dynbuf_add(&b, json_string_value(line), json_string_length(line));
			}
	}
	json_t *c = mcp_content_text(dynbuf_str(&b), b.len);
	dynbuf_free(&b);
	return c;
}

int mcp_content_execution(json_t *content, const json_t *execution, const char *uri_prefix,
			  int *is_error)
{
	*is_error = 0;
	int e = 0;
	const json_t *out = json_object_get(execution, "stdout");
	if (json_is_string(out) && json_string_length(out))
		e = add(content, text_of(out));
	const json_t *errs = json_object_get(execution, "stderr");
	if (!e && json_is_string(errs) && json_string_length(errs))
		e = add(content, text_of(errs));
	const json_t *results = json_object_get(execution, "results");
	size_t i;
	const json_t *res;
	if (json_is_array(results))
		json_array_foreach(results, i, res)
		{
			if (e)
				break;
			if (!json_is_object(res))
				continue;
			char uri[512];
			snprintf(uri, sizeof(uri), "%s/%zu", uri_prefix, i);
			e = add_result(content, res, uri);
		}
	const json_t *err = json_object_get(execution, "error");
	if (!e && json_is_object(err)) {
		*is_error = 1;
		e = add(content, error_text(err));
	}
	if (!e && json_array_size(content) == 0)
		e = add(content, json_pack("{s:s, s:s}", "type", "text", "text", "(no output)"));
	return e;
}

/* The image type of data by its signature, or NULL. */
static const char *image_type(const unsigned char *d, size_t n)
{
	if (n >= 8 && memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0)
		return "image/png";
	if (n >= 3 && memcmp(d, "\xff\xd8\xff", 3) == 0)
		return "image/jpeg";
	if (n >= 6 && (memcmp(d, "GIF87a", 6) == 0 || memcmp(d, "GIF89a", 6) == 0))
		return "image/gif";
	if (n >= 12 && memcmp(d, "RIFF", 4) == 0 && memcmp(d + 8, "WEBP", 4) == 0)
		return "image/webp";
	return NULL;
}

json_t *mcp_content_file(const char *uri, const char *data, size_t len)
{
	if (utf8_valid(data, len) && !memchr(data, '\0', len))
		return mcp_content_text(data, len);
	char *b64;
	size_t n;
	if (base64_encode(data, len, &b64, &n) < 0)
		return NULL;
	const char *img = image_type((const unsigned char *)data, len);
	json_t *c = img ? image(b64, n, img)
			: json_pack("{s:s, s:{s:s, s:s, s:s%}}", "type", "resource", "resource", "uri",
				    uri, "mimeType", "application/octet-stream", "blob", b64, n);
	free(b64);
	return c;
}
