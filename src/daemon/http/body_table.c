/*
 * body_table.c - the one parser of the API's request bodies, driven by a
 * route's table of fields (see body_table.h), and the checks of each kind
 * of value.
 */
#include "daemon/http/body_table.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "daemon/http/request_body.h"
#include "daemon/net/net_policy.h"

/* Load buf as a JSON object.  Returns the root (new reference) or NULL. */
json_t *body_load_object(const char *buf, size_t len, struct body_error *err)
{
	json_error_t je;
	if (len == 0) {
		body_error_set(err, API_ERR_INVALID_JSON, "the request body must be a JSON object");
		return NULL;
	}
	json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		/* jansson names its own flag for a \u0000: say what is wrong */
		if (strstr(je.text, "JSON_ALLOW_NUL"))
			body_error_set(err, API_ERR_INVALID_JSON,
			     "invalid JSON at line %d column %d: strings must not contain \\u0000",
			     je.line, je.column);
		else
			body_error_set(err, API_ERR_INVALID_JSON, "invalid JSON at line %d column %d: %.120s",
			     je.line, je.column, je.text);
		return NULL;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		body_error_set(err, API_ERR_INVALID_JSON, "the request body must be a JSON object");
		return NULL;
	}
	return root;
}

/* The first key of obj not in allowed (a NULL-terminated list), or NULL. */
static const char *unknown_key(json_t *obj, const char *const *allowed)
{
	const char *key;
	json_t *val;
	json_object_foreach(obj, key, val) {
		(void)val;
		int ok = 0;
		for (size_t i = 0; allowed[i]; i++)
			if (strcmp(key, allowed[i]) == 0)
				ok = 1;
		if (!ok)
			return key;
	}
	return NULL;
}

/* Load buf as a JSON object whose keys are all in fields (a NULL-terminated
 * list).  Returns the root (new reference) or NULL with err filled. */
static json_t *open_body(const char *buf, size_t len, const char *const *fields,
			 struct body_error *err)
{
	json_t *root = body_load_object(buf, len, err);
	const char *k = root ? unknown_key(root, fields) : NULL;
	if (k) {
		body_error_set(err, API_ERR_UNKNOWN_FIELD, "unknown field '%.64s'", k);
		json_decref(root);
		return NULL;
	}
	return root;
}

/* "snap_" and 20 lowercase hex digits (snapshots.h's form; checked here
 * too so that the parser stays pure). */
static int snapshot_id_form(const char *s)
{
	if (strncmp(s, "snap_", 5) != 0 || strlen(s) != 25)
		return 0;
	for (const char *p = s + 5; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return 0;
	return 1;
}

/* Optional string field: 0 with *out (NULL when absent) or -EINVAL. */
static int get_string(json_t *obj, const char *field, size_t maxlen, int required,
		      const char **out, size_t *outlen, struct body_error *err)
{
	json_t *v = json_object_get(obj, field);
	*out = NULL;
	if (outlen)
		*outlen = 0;
	if (!v) {
		if (required)
			return body_error_set(err, API_ERR_MISSING_FIELD, "field '%s' is required", field);
		return 0;
	}
	if (!json_is_string(v))
		return body_error_set(err, API_ERR_INVALID_FIELD, "field '%s' must be a string", field);
	size_t n = json_string_length(v);
	if (n > maxlen)
		return body_error_set(err, API_ERR_INVALID_FIELD, "field '%s' is longer than %zu bytes",
			    field,
			    maxlen);
	*out = json_string_value(v);
	if (outlen)
		*outlen = n;
	return 0;
}

static int get_bool(json_t *obj, const char *field, int dflt, int *out,
		    struct body_error *err)
{
	json_t *v = json_object_get(obj, field);
	if (!v) {
		*out = dflt;
		return 0;
	}
	if (!json_is_boolean(v))
		return body_error_set(err, API_ERR_INVALID_FIELD, "field '%s' must be true or false", field);
	*out = json_is_true(v);
	return 0;
}

static int check_ttl(json_t *v, const struct body_limits *lim, int64_t *out,
		     struct body_error *err)
{
	if (!json_is_integer(v))
		return body_error_set(err, API_ERR_INVALID_FIELD, "field 'ttl_seconds' must be an integer");
	json_int_t t = json_integer_value(v);
	if (t < 1 || t > lim->max_ttl_seconds)
		return body_error_set(err, API_ERR_INVALID_FIELD,
			    "field 'ttl_seconds' must be between 1 and %lld",
			    (long long)lim->max_ttl_seconds);
	*out = t;
	return 0;
}

static int env_name_ok(const char *k)
{
	size_t n = strlen(k);
	if (n == 0 || n > BODY_ENV_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = k[i];
		int ok = c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			 (i > 0 && c >= '0' && c <= '9');
		if (!ok)
			return 0;
	}
	return 1;
}

/* A new reference to v, or a new empty object when v is NULL; -EINVAL
 * ("out of memory") when there is no memory for it. */
static int ref_or_empty(json_t *v, json_t **out, struct body_error *err)
{
	*out = v ? json_incref(v) : json_object();
	return *out ? 0 : body_error_set(err, API_ERR_INVALID_JSON, "out of memory");
}

/* "env": {NAME: "value"}; *out is a new reference, {} when absent. */
static int get_env(json_t *obj, json_t **out, struct body_error *err)
{
	json_t *v = json_object_get(obj, "env");
	*out = NULL;
	if (!v)
		return ref_or_empty(NULL, out, err);
	if (!json_is_object(v))
		return body_error_set(err, API_ERR_INVALID_FIELD, "field 'env' must be an object of strings");
	if (json_object_size(v) > BODY_ENV_MAX_VARS)
		return body_error_set(err, API_ERR_INVALID_FIELD, "field 'env' has more than %d variables",
			    BODY_ENV_MAX_VARS);
	const char *k;
	json_t *val;
	size_t total = 0;
	json_object_foreach(v, k, val) {
		if (!env_name_ok(k))
			return body_error_set(err, API_ERR_INVALID_FIELD,
				    "env name '%.64s' must match [A-Za-z_][A-Za-z0-9_]*", k);
		if (!json_is_string(val))
			return body_error_set(err, API_ERR_INVALID_FIELD,
				    "env value of '%.64s' must be a string", k);
		if (json_string_length(val) > BODY_ENV_VALUE_MAX)
			return body_error_set(err, API_ERR_INVALID_FIELD,
				    "env value of '%.64s' is longer than %d bytes",
				    k, BODY_ENV_VALUE_MAX);
		total += strlen(k) + json_string_length(val);
		if (total > BODY_ENV_MAX_BYTES)
			return body_error_set(err, API_ERR_INVALID_FIELD,
				    "field 'env' is larger than %d bytes",
				    BODY_ENV_MAX_BYTES);
	}
	return ref_or_empty(v, out, err);
}

int body_meta_key_ok(const char *k)
{
	size_t n = strlen(k);
	if (n == 0 || n > BODY_META_KEY_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = k[i];
		int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			 c == '_' || c == '-' || c == '.';
		if (!ok)
			return 0;
	}
	return 1;
}

/* "metadata": {key: "value"}; *out is a new reference, {} when absent. */
static int get_metadata(json_t *obj, json_t **out, struct body_error *err)
{
	json_t *v = json_object_get(obj, "metadata");
	*out = NULL;
	if (!v)
		return ref_or_empty(NULL, out, err);
	if (!json_is_object(v))
		return body_error_set(err, API_ERR_INVALID_FIELD,
			    "field 'metadata' must be an object of strings");
	if (json_object_size(v) > BODY_META_MAX_KEYS)
		return body_error_set(err, API_ERR_INVALID_FIELD, "field 'metadata' has more than %d keys",
			    BODY_META_MAX_KEYS);
	const char *k;
	json_t *val;
	json_object_foreach(v, k, val) {
		if (!body_meta_key_ok(k))
			return body_error_set(err, API_ERR_INVALID_FIELD,
				    "metadata key '%.64s' must be 1-%d characters of [A-Za-z0-9_.-]", k,
				    BODY_META_KEY_MAX);
		if (!json_is_string(val))
			return body_error_set(err, API_ERR_INVALID_FIELD,
				    "metadata value of '%.64s' must be a string",
				    k);
		size_t n = json_string_length(val);
		if (n > BODY_META_VALUE_MAX || !utf8_printable(json_string_value(val), n))
			return body_error_set(err, API_ERR_INVALID_FIELD,
				    "metadata value of '%.64s' must be printable and at most %d bytes",
				    k, BODY_META_VALUE_MAX);
	}
	return ref_or_empty(v, out, err);
}

/* "timeout_seconds": a number of seconds, 0 (no limit) to the configured
 * maximum, fractions allowed; *has 0 when absent. */
static int get_timeout(json_t *root, const struct body_limits *lim, int *has, int64_t *ms,
		       struct body_error *err)
{
	json_t *t = json_object_get(root, "timeout_seconds");
	*has = 0;
	*ms = 0;
	if (!t)
		return 0;
	if (!json_is_number(t))
		return body_error_set(err, API_ERR_INVALID_FIELD, "field 'timeout_seconds' must be a number");
	double s = json_number_value(t);
	if (!isfinite(s) || s < 0 || s > (double)lim->max_exec_timeout_seconds)
		return body_error_set(err, API_ERR_INVALID_FIELD,
			    "field 'timeout_seconds' must be between 0 (no limit) and %lld",
			    (long long)lim->max_exec_timeout_seconds);
	*has = 1;
	*ms = (int64_t)ceil(s * 1000.0);
	return 0;
}

/* "public_ports" of a network object net (exposed ports, docs/network.md;
 * NULL: absent): *out 1 or 0, or -1 when absent.  field prefixes the name
 * in messages.  The object's other keys are net_policy_parse's. */
int body_public_ports(json_t *net, const char *field, int *out, struct body_error *err)
{
	json_t *pp = json_is_object(net) ? json_object_get(net, "public_ports") : NULL;
	*out = -1;
	if (!pp)
		return 0;
	if (!json_is_boolean(pp))
		return body_error_set(err, API_ERR_INVALID_FIELD,
				      "field '%spublic_ports' must be true or false", field);
	*out = json_is_true(pp);
	return 0;
}

static void *at(void *out, size_t off)
{
	return (char *)out + off;
}

static int string_field(json_t *root, const struct field *f, void *out, struct body_error *err)
{
	const char *s = NULL;
	size_t n = 0;
	int r = get_string(root, f->name, (size_t)f->hi, f->flags & F_REQUIRED, &s, &n, err);
	if (r || !s)
		return r;
	int ok = 1;
	switch (f->check) {
	case C_ANY:
		break;
	case C_NONEMPTY:
		ok = n > 0;
		break;
	case C_PRINTABLE:
		ok = n > 0 && utf8_printable(s, n);
		break;
	case C_NAME:
		ok = body_check_name(s) == 0;
		break;
	case C_PATH:
		if ((r = body_check_path(s, err)) < 0)
			return r;
		break;
	case C_ABS_PATH:
		ok = (f->empty_ok && !s[0]) || body_check_path(s, err) == 0;
		break;
	case C_SNAPSHOT:
		ok = snapshot_id_form(s);
		break;
	case C_CHOICE:
		ok = 0;
		for (size_t i = 0; f->choices[i] && !ok; i++)
			if (!strcmp(s, f->choices[i])) {
				s = f->choices[i];
				ok = 1;
			}
		break;
	}
	if (!ok)
		return body_error_set(err, API_ERR_INVALID_FIELD, "%s", f->msg);
	*(const char **)at(out, f->off) = s;
	if (f->off2 != NO_OFF)
		*(size_t *)at(out, f->off2) = n;
	return 0;
}

static int int_field(json_t *root, const struct field *f, void *out, struct body_error *err)
{
	json_t *v = json_object_get(root, f->name);
	int64_t *dst = at(out, f->off);
	if (!v) {
		*dst = f->dflt;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < f->lo || json_integer_value(v) > f->hi)
		return body_error_set(err, API_ERR_INVALID_FIELD, "%s", f->msg);
	*dst = json_integer_value(v);
	return 0;
}

static int one_field(json_t *root, const struct field *f, const struct body_limits *lim,
		     void *out, struct body_error *err)
{
	json_t *v;
	int r;
	switch (f->kind) {
	case K_STRING:
		return string_field(root, f, out, err);
	case K_BOOL:
		return get_bool(root, f->name, (int)f->dflt, at(out, f->off), err);
	case K_INT:
		return int_field(root, f, out, err);
	case K_TTL:
		v = json_object_get(root, f->name);
		if (!v)
			return f->flags & F_REQUIRED ? body_error_set(err, API_ERR_MISSING_FIELD,
								      "field '%s' is required", f->name)
						     : 0;
		return check_ttl(v, lim, at(out, f->off), err);
	case K_TIMEOUT:
		return get_timeout(root, lim, at(out, f->off), at(out, f->off2), err);
	case K_ENV:
		return get_env(root, at(out, f->off), err);
	case K_METADATA:
		return get_metadata(root, at(out, f->off), err);
	case K_NETWORK:
		v = json_object_get(root, f->name);
		r = net_policy_parse(v, f->name, at(out, f->off), err);
		if (!r) {
			char prefix[80];
			snprintf(prefix, sizeof(prefix), "%s.", f->name);
			int pp;
			r = body_public_ports(v, prefix, &pp, err);
			*(int *)at(out, f->off2) = pp == 1;
		}
		return r;
	}
	return body_error_set(err, API_ERR_INVALID_JSON, "a field of an unknown kind");
}

void body_clear(const struct body_spec *spec, void *out, size_t size)
{
	for (size_t i = 0; i < spec->nfields; i++) {
		const struct field *f = &spec->fields[i];
		if (f->kind == K_ENV || f->kind == K_METADATA)
			json_decref(*(json_t **)at(out, f->off));
		else if (f->kind == K_NETWORK)
			net_policy_free(*(struct net_policy **)at(out, f->off));
	}
	if (spec->root_off != NO_OFF)
		json_decref(*(json_t **)at(out, spec->root_off));
	memset(out, 0, size);
}

int body_parse(const struct body_spec *spec, const char *buf, size_t len,
	       const struct body_limits *lim, void *out, size_t size, struct body_error *err)
{
	const char *names[BODY_FIELDS_MAX + 1];
	size_t nn = 0;
	memset(out, 0, size);
	if (spec->nfields > BODY_FIELDS_MAX)
		return body_error_set(err, API_ERR_INVALID_JSON, "a route names too many fields");
	for (size_t i = 0; i < spec->nfields; i++)
		names[nn++] = spec->fields[i].name;
	names[nn] = NULL;
	json_t *root = NULL;
	int keep = spec->root_off != NO_OFF;
	if (len > 0 || !spec->empty_ok) {
		root = open_body(buf, len, names, err);
		if (!root)
			return -EINVAL;
	} else {
		/* the defaults of an empty body; nothing points into it, and a
		 * caller need not clear what an empty body gave */
		root = json_object();
		if (!root)
			return body_error_set(err, API_ERR_INVALID_JSON, "out of memory");
		keep = 0;
	}
	if (keep)
		*(json_t **)at(out, spec->root_off) = root;
	int r = 0;
	for (size_t i = 0; i < spec->nfields && !r; i++)
		r = one_field(root, &spec->fields[i], lim, out, err);
	if (!r && spec->rules)
		r = spec->rules(out, err);
	if (!keep)
		json_decref(root);
	if (r)
		body_clear(spec, out, size);
	return r;
}

int body_check_path(const char *path, struct body_error *err)
{
	if (!path || !*path)
		return body_error_set(err, API_ERR_INVALID_PATH, "a path is required");
	size_t n = strlen(path);
	if (n > BODY_PATH_MAX)
		return body_error_set(err, API_ERR_INVALID_PATH, "the path is longer than %d bytes",
			    BODY_PATH_MAX);
	if (path[0] != '/')
		return body_error_set(err, API_ERR_INVALID_PATH, "the path must be absolute");
	int c0 = 0; /* a file's name may hold bidirectional marks; never C0 or DEL */
	for (size_t i = 0; i < n; i++)
		c0 |= (unsigned char)path[i] < 0x20 || path[i] == 0x7f;
	if (!utf8_valid(path, n) || c0)
		return body_error_set(err, API_ERR_INVALID_PATH,
			    "the path must be UTF-8 without control characters");
	return 0;
}
