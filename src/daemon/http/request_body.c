/*
 * request_body.c - JSON body and query validation (see request_body.h).
 *
 * Each parser loads the bytes with jansson (duplicate keys rejected, NUL in
 * strings rejected), walks the object's keys once against the route's field
 * list (anything else is unknown_field) and checks every value.
 */
#include "daemon/http/request_body.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "daemon/net/net_policy.h"

/* Load buf as a JSON object.  Returns the root (new reference) or NULL. */
static json_t *load_object(const char *buf, size_t len, struct body_error *err)
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
	json_t *root = load_object(buf, len, err);
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

/* "cwd": an absolute guest path; *out NULL when absent. */
static int get_cwd(json_t *obj, const char **out, struct body_error *err)
{
	int r = get_string(obj, "cwd", BODY_PATH_MAX, 0, out, NULL, err);
	if (!r && *out && body_check_path(*out, err) < 0)
		r = body_error_set(err, API_ERR_INVALID_FIELD,
			 "field 'cwd' must be an absolute path of at most %d bytes", BODY_PATH_MAX);
	return r;
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
static int get_public_ports(json_t *net, const char *field, int *out, struct body_error *err)
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

int body_parse_create_sandbox(const char *buf, size_t len, const struct body_limits *lim,
			      struct create_sandbox_body *out, struct body_error *err)
{
	static const char *const fields[] = {"template", "snapshot", "ttl_seconds", "env",
					     "metadata", "network", "on_timeout", NULL};
	memset(out, 0, sizeof(*out));
	json_t *root = out->root = open_body(buf, len, fields, err);
	if (!root)
		return -EINVAL;
	int r = get_string(root, "snapshot", 64, 0, &out->snapshot, NULL, err);
	if (!r && out->snapshot && !snapshot_id_form(out->snapshot))
		r = body_error_set(err, API_ERR_INVALID_FIELD,
				   "field 'snapshot' must be a snapshot id (snap_ and 20 hex digits)");
	if (!r)
		r = get_string(root, "template", BODY_NAME_MAX, !out->snapshot, &out->template_name,
			       NULL, err);
	if (!r && out->template_name && body_check_name(out->template_name) < 0)
		r = body_error_set(err, API_ERR_INVALID_FIELD,
			 "field 'template' must be 1-%d characters of [a-z0-9._-]", BODY_NAME_MAX);
	if (!r)
		r = get_string(root, "on_timeout", 16, 0, &out->on_timeout, NULL, err);
	if (!r && out->on_timeout && strcmp(out->on_timeout, "stop") != 0 &&
	    strcmp(out->on_timeout, "pause") != 0)
		r = body_error_set(err, API_ERR_INVALID_FIELD,
				   "field 'on_timeout' must be \"stop\" or \"pause\"");
	json_t *ttl = json_object_get(root, "ttl_seconds");
	if (!r && ttl)
		r = check_ttl(ttl, lim, &out->ttl_seconds, err);
	if (!r)
		r = get_env(root, &out->env, err);
	if (!r)
		r = get_metadata(root, &out->metadata, err);
	if (!r)
		r = net_policy_parse(json_object_get(root, "network"), "network", &out->network, err);
	if (!r) {
		int pp;
		r = get_public_ports(json_object_get(root, "network"), "network.", &pp,
				     err);
		out->public_ports = pp == 1;
	}
	if (r)
		create_sandbox_body_clear(out);
	return r;
}

void create_sandbox_body_clear(struct create_sandbox_body *b)
{
	net_policy_free(b->network);
	json_decref(b->env);
	json_decref(b->metadata);
	json_decref(b->root);
	memset(b, 0, sizeof(*b));
}

int body_parse_ttl(const char *buf, size_t len, const struct body_limits *lim,
		   struct ttl_body *out, struct body_error *err)
{
	static const char *const fields[] = {"ttl_seconds", NULL};
	memset(out, 0, sizeof(*out));
	json_t *root = open_body(buf, len, fields, err);
	if (!root)
		return -EINVAL;
	json_t *ttl = json_object_get(root, "ttl_seconds");
	int r = ttl ? check_ttl(ttl, lim, &out->ttl_seconds, err)
		    : body_error_set(err, API_ERR_MISSING_FIELD, "field 'ttl_seconds' is required");
	json_decref(root);
	return r;
}

int body_parse_snapshot(const char *buf, size_t len, struct snapshot_body *out,
			struct body_error *err)
{
	static const char *const fields[] = {"name", NULL};
	memset(out, 0, sizeof(*out));
	if (len == 0)
		return 0;
	json_t *root = out->root = open_body(buf, len, fields, err);
	if (!root)
		return -EINVAL;
	size_t n = 0;
	int r = get_string(root, "name", BODY_SNAPSHOT_NAME_MAX, 0, &out->name, &n, err);
	if (!r && out->name && (n == 0 || !utf8_printable(out->name, n)))
		r = body_error_set(err, API_ERR_INVALID_FIELD,
			 "field 'name' must be 1-%d printable characters", BODY_SNAPSHOT_NAME_MAX);
	if (r)
		snapshot_body_clear(out);
	return r;
}

void snapshot_body_clear(struct snapshot_body *b)
{
	json_decref(b->root);
	memset(b, 0, sizeof(*b));
}

int body_parse_fork(const char *buf, size_t len, const struct body_limits *lim,
		    struct fork_body *out, struct body_error *err)
{
	static const char *const fields[] = {"count", "ttl_seconds", NULL};
	memset(out, 0, sizeof(*out));
	out->count = 1;
	if (len == 0)
		return 0;
	json_t *root = open_body(buf, len, fields, err);
	if (!root)
		return -EINVAL;
	int r = 0;
	json_t *c = json_object_get(root, "count");
	if (c && (!json_is_integer(c) || json_integer_value(c) < 1 ||
		  json_integer_value(c) > BODY_FORK_MAX))
		r = body_error_set(err, API_ERR_INVALID_FIELD, "field 'count' must be an integer from 1 to %d",
			 BODY_FORK_MAX);
	else if (c)
		out->count = json_integer_value(c);
	json_t *ttl = json_object_get(root, "ttl_seconds");
	if (!r && ttl)
		r = check_ttl(ttl, lim, &out->ttl_seconds, err);
	json_decref(root);
	return r;
}

int body_parse_resume(const char *buf, size_t len, const struct body_limits *lim,
		      struct resume_body *out, struct body_error *err)
{
	static const char *const fields[] = {"ttl_seconds", NULL};
	memset(out, 0, sizeof(*out));
	if (len == 0)
		return 0;
	json_t *root = open_body(buf, len, fields, err);
	if (!root)
		return -EINVAL;
	json_t *ttl = json_object_get(root, "ttl_seconds");
	int r = ttl ? check_ttl(ttl, lim, &out->ttl_seconds, err) : 0;
	json_decref(root);
	return r;
}

int body_parse_exec(const char *buf, size_t len, const struct body_limits *lim,
		    struct exec_body *out, struct body_error *err)
{
	static const char *const fields[] = {"cmd", "timeout_seconds", "env", "cwd", "stdin",
					     "background", NULL};
	memset(out, 0, sizeof(*out));
	json_t *root = out->root = open_body(buf, len, fields, err);
	if (!root)
		return -EINVAL;
	size_t cmdlen = 0;
	int r = get_string(root, "cmd", BODY_CMD_MAX, 1, &out->cmd, &cmdlen, err);
	if (!r && cmdlen == 0)
		r = body_error_set(err, API_ERR_INVALID_FIELD, "field 'cmd' must not be empty");
	if (!r)
		r = get_timeout(root, lim, &out->has_timeout, &out->timeout_ms, err);
	if (!r)
		r = get_env(root, &out->env, err);
	if (!r)
		r = get_cwd(root, &out->cwd, err);
	if (!r)
		r = get_string(root, "stdin", BODY_STDIN_MAX, 0, &out->stdin_data, &out->stdin_len,
			       err);
	if (!r)
		r = get_bool(root, "background", 0, &out->background, err);
	if (!r && out->background && out->stdin_data)
		r = body_error_set(err, API_ERR_INVALID_FIELD,
			 "field 'stdin' does not go with 'background': write to the command's "
			 "stdin with POST .../commands/{cid}/stdin");
	if (r)
		exec_body_clear(out);
	return r;
}

void exec_body_clear(struct exec_body *b)
{
	json_decref(b->env);
	json_decref(b->root);
	memset(b, 0, sizeof(*b));
}

int body_parse_key(const char *buf, size_t len, struct key_body *out, struct body_error *err)
{
	static const char *const fields[] = {"name", "team", NULL};
	memset(out, 0, sizeof(*out));
	json_t *root = out->root = open_body(buf, len, fields, err);
	if (!root)
		return -EINVAL;
	size_t n = 0;
	int r = get_string(root, "name", BODY_NAME_MAX, 1, &out->name, &n, err);
	if (!r && (n == 0 || !utf8_printable(out->name, n)))
		r = body_error_set(err, API_ERR_INVALID_FIELD, "field 'name' must be 1-%d printable characters",
			 BODY_NAME_MAX);
	if (!r)
		r = get_string(root, "team", BODY_NAME_MAX, 0, &out->team, NULL, err);
	if (!r && out->team && body_check_name(out->team) < 0)
		r = body_error_set(err, API_ERR_INVALID_FIELD,
			 "field 'team' must be 1-%d characters of [a-z0-9._-]", BODY_NAME_MAX);
	if (r)
		key_body_clear(out);
	return r;
}

void key_body_clear(struct key_body *b)
{
	json_decref(b->root);
	memset(b, 0, sizeof(*b));
}

int body_parse_mkdir(const char *buf, size_t len, struct mkdir_body *out, struct body_error *err)
{
	static const char *const fields[] = {"path", "parents", NULL};
	memset(out, 0, sizeof(*out));
	json_t *root = out->root = open_body(buf, len, fields, err);
	if (!root)
		return -EINVAL;
	int r = get_string(root, "path", BODY_PATH_MAX, 1, &out->path, NULL, err);
	if (!r)
		r = body_check_path(out->path, err);
	if (!r)
		r = get_bool(root, "parents", 1, &out->parents, err);
	if (r)
		mkdir_body_clear(out);
	return r;
}

void mkdir_body_clear(struct mkdir_body *b)
{
	json_decref(b->root);
	memset(b, 0, sizeof(*b));
}

int body_parse_build(const char *buf, size_t len, struct build_body *out, struct body_error *err)
{
	static const char *const fields[] = {"force", NULL};
	memset(out, 0, sizeof(*out));
	if (len == 0)
		return 0;
	json_t *root = open_body(buf, len, fields, err);
	if (!root)
		return -EINVAL;
	int r = get_bool(root, "force", 0, &out->force, err);
	json_decref(root);
	if (r)
		memset(out, 0, sizeof(*out));
	return r;
}

int body_parse_network(const char *buf, size_t len, json_t *current, struct net_policy **out,
		       int *public_ports, struct body_error *err)
{
	static const char *const keys[] = {"egress", "allow_out", "deny_out"};
	*out = NULL;
	*public_ports = -1;
	json_t *root = load_object(buf, len, err);
	if (!root)
		return -EINVAL;
	struct net_policy *own = NULL;
	int r = net_policy_parse(root, "", &own, err); /* the body's errors, as sent */
	net_policy_free(own);
	if (!r)
		r = get_public_ports(root, "", public_ports, err);
	for (size_t i = 0; !r && json_is_object(current) && i < sizeof(keys) / sizeof(keys[0]); i++) {
		json_t *v = json_object_get(current, keys[i]);
		if (v && !json_object_get(root, keys[i]) && json_object_set(root, keys[i], v) < 0)
			r = body_error_set(err, API_ERR_INVALID_JSON, "out of memory");
	}
	if (!r)
		r = net_policy_parse(root, "", out, err);
	json_decref(root);
	return r;
}

int body_parse_empty(const char *buf, size_t len, struct body_error *err)
{
	static const char *const fields[] = {NULL};
	if (len == 0)
		return 0;
	json_t *root = open_body(buf, len, fields, err);
	json_decref(root);
	return root ? 0 : -EINVAL;
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

int body_parse_bool_query(const char *name, const char *value, int dflt, int *out,
			  struct body_error *err)
{
	if (!value) {
		*out = dflt;
		return 0;
	}
	if (!strcmp(value, "true") || !strcmp(value, "1")) {
		*out = 1;
		return 0;
	}
	if (!strcmp(value, "false") || !strcmp(value, "0")) {
		*out = 0;
		return 0;
	}
	return body_error_set(err, API_ERR_INVALID_QUERY, "query parameter '%.32s' must be true or false",
		    name);
}

int body_parse_context(const char *buf, size_t len, struct context_body *out,
		       struct body_error *err)
{
	static const char *const fields[] = {"language", "cwd", "env", "notebook", NULL};
	memset(out, 0, sizeof(*out));
	json_t *root = out->root = open_body(buf, len, fields, err);
	if (!root)
		return -EINVAL;
	const char *lang = NULL;
	const char *nb = NULL;
	int r = get_string(root, "language", BODY_NAME_MAX, 0, &lang, NULL, err);
	if (!r && lang && strcmp(lang, "python") != 0)
		r = body_error_set(err, API_ERR_INVALID_FIELD, "field 'language' must be \"python\"");
	if (!r)
		r = get_cwd(root, &out->cwd, err);
	if (!r)
		r = get_env(root, &out->env, err);
	if (!r)
		r = get_string(root, "notebook", BODY_PATH_MAX, 0, &nb, NULL, err);
	if (!r && nb && nb[0] && body_check_path(nb, err) < 0)
		r = body_error_set(err, API_ERR_INVALID_FIELD,
				   "field 'notebook' must be an absolute path of at most %d bytes, "
				   "or \"\"",
				   BODY_PATH_MAX);
	out->notebook = nb;
	if (r)
		context_body_clear(out);
	return r;
}

void context_body_clear(struct context_body *b)
{
	json_decref(b->env);
	json_decref(b->root);
	memset(b, 0, sizeof(*b));
}

int body_parse_code(const char *buf, size_t len, const struct body_limits *lim, int one_shot,
		    struct code_body *out, struct body_error *err)
{
	static const char *const ctx_fields[] = {"code", "timeout_seconds", NULL};
	static const char *const shot_fields[] = {"code", "language", "timeout_seconds", NULL};
	memset(out, 0, sizeof(*out));
	json_t *root = out->root = open_body(buf, len, one_shot ? shot_fields : ctx_fields, err);
	if (!root)
		return -EINVAL;
	const char *lang = NULL;
	int r = one_shot ? get_string(root, "language", BODY_NAME_MAX, 0, &lang, NULL, err) : 0;
	if (!r && lang && strcmp(lang, "python") != 0 && strcmp(lang, "shell") != 0)
		r = body_error_set(err, API_ERR_INVALID_FIELD,
			 "field 'language' must be \"python\" or \"shell\"");
	out->shell = lang && !strcmp(lang, "shell");
	if (!r)
		r = get_string(root, "code", out->shell ? BODY_CMD_MAX : BODY_CODE_MAX, 1,
			       &out->code, &out->code_len, err);
	if (!r && out->shell && out->code_len == 0)
		r = body_error_set(err, API_ERR_INVALID_FIELD, "field 'code' must not be empty");
	if (!r)
		r = get_timeout(root, lim, &out->has_timeout, &out->timeout_ms, err);
	if (r)
		code_body_clear(out);
	return r;
}

void code_body_clear(struct code_body *b)
{
	json_decref(b->root);
	memset(b, 0, sizeof(*b));
}

int body_parse_uint_query(const char *name, const char *value, uint64_t dflt, uint64_t max,
			  uint64_t *out, struct body_error *err)
{
	if (!value) {
		*out = dflt;
		return 0;
	}
	uint64_t v = 0;
	size_t n = strlen(value);
	if (n == 0 || n > 20)
		goto bad;
	for (size_t i = 0; i < n; i++) {
		if (value[i] < '0' || value[i] > '9')
			goto bad;
		unsigned d = (unsigned)(value[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			goto bad;
		v = v * 10 + d;
	}
	if (v > max)
		goto bad;
	*out = v;
	return 0;
bad:
	return body_error_set(err, API_ERR_INVALID_QUERY,
		    "query parameter '%.32s' must be a whole number from 0 to %llu", name,
		    (unsigned long long)max);
}

/* The signals a background command may be sent by name. */
static const char *const command_signals[] = {"SIGKILL", "SIGTERM", "SIGINT", "SIGHUP",
					      "SIGQUIT", "SIGUSR1", "SIGUSR2", NULL};

int body_parse_command_kill(const char *buf, size_t len, struct command_kill_body *out,
			    struct body_error *err)
{
	static const char *const fields[] = {"signal", NULL};
	memset(out, 0, sizeof(*out));
	out->signal = command_signals[0];
	if (len == 0)
		return 0;
	json_t *root = open_body(buf, len, fields, err);
	if (!root)
		return -EINVAL;
	const char *sig = NULL;
	int r = get_string(root, "signal", 16, 0, &sig, NULL, err);
	if (!r && sig) {
		out->signal = NULL;
		for (size_t i = 0; command_signals[i]; i++)
			if (!strcmp(sig, command_signals[i]))
				out->signal = command_signals[i];
		if (!out->signal) {
			out->signal = command_signals[0];
			r = body_error_set(err, API_ERR_INVALID_FIELD,
				 "field 'signal' must be one of SIGKILL, SIGTERM, SIGINT, SIGHUP, "
				 "SIGQUIT, SIGUSR1, SIGUSR2");
		}
	}
	json_decref(root);
	return r;
}

int body_parse_command_stdin(const char *buf, size_t len, struct command_stdin_body *out,
			     struct body_error *err)
{
	static const char *const fields[] = {"data", "eof", NULL};
	memset(out, 0, sizeof(*out));
	json_t *root = out->root = open_body(buf, len, fields, err);
	if (!root)
		return -EINVAL;
	int r = get_string(root, "data", BODY_STDIN_MAX, 0, &out->data, &out->len, err);
	if (!r)
		r = get_bool(root, "eof", 0, &out->eof, err);
	if (!r && !out->data && !out->eof)
		r = body_error_set(err, API_ERR_MISSING_FIELD, "field 'data' is required unless 'eof' is true");
	if (r)
		command_stdin_body_clear(out);
	return r;
}

void command_stdin_body_clear(struct command_stdin_body *b)
{
	json_decref(b->root);
	memset(b, 0, sizeof(*b));
}
