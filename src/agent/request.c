/*
 * request.c - validation of OPEN requests (see request.h).
 *
 * Each op has a list of allowed fields; every field present is checked for
 * its JSON type and range, null counts as absent for optional fields, and
 * any other key is refused so a misspelt option never passes silently.
 * Pure: no I/O; the only side effect is allocation.
 */
#include "agent/request.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/log.h"
#include "common/pip_index.h"
#include "common/util.h"

/* Field flags. */
#define F_REQ 1u /* required */

enum ftype { T_STRING, T_PATH, T_BOOL, T_UINT, T_OBJECT };

struct field {
	const char *name;
	enum ftype type;
	unsigned flags;
};

struct op_spec {
	const char *name;
	enum agent_op op;
	const struct field *fields; /* terminated by name == NULL */
};

static const struct field restore_fields[] = {
	{"wall_clock_ns", T_STRING, F_REQ},
	{"entropy", T_STRING, F_REQ},
	{"pip_index_url", T_STRING, 0},
	{"sandbox_id", T_STRING, 0},
	{NULL, 0, 0},
};
static const struct field exec_fields[] = {
	{"cmd", T_STRING, F_REQ}, {"env", T_OBJECT, 0},     {"cwd", T_PATH, 0},
	{"timeout_ms", T_UINT, 0}, {"stdin", T_BOOL, 0},     {"output_cap", T_UINT, 0},
	{NULL, 0, 0},
};
static const struct field file_write_fields[] = {
	{"path", T_PATH, F_REQ}, {"mode", T_UINT, 0}, {"parents", T_BOOL, 0}, {NULL, 0, 0},
};
static const struct field path_fields[] = {
	{"path", T_PATH, F_REQ},
	{NULL, 0, 0},
};
static const struct field remove_fields[] = {
	{"path", T_PATH, F_REQ},
	{"recursive", T_BOOL, 0},
	{NULL, 0, 0},
};
static const struct field mkdir_fields[] = {
	{"path", T_PATH, F_REQ}, {"parents", T_BOOL, 0}, {"mode", T_UINT, 0}, {NULL, 0, 0},
};

static const struct field ctx_create_fields[] = {
	{"id", T_STRING, F_REQ},    {"language", T_STRING, 0},     {"cwd", T_PATH, 0},
	{"env", T_OBJECT, 0},       {"idle_timeout_ms", T_UINT, 0}, {"output_cap", T_UINT, 0},
	{"notebook", T_PATH, 0},    {"notebook_off", T_BOOL, 0},
	{NULL, 0, 0},
};
static const struct field ctx_run_fields[] = {
	{"id", T_STRING, F_REQ},
	{"code", T_STRING, F_REQ},
	{"timeout_ms", T_UINT, 0},
	{NULL, 0, 0},
};
static const struct field ctx_id_fields[] = {
	{"id", T_STRING, F_REQ},
	{NULL, 0, 0},
};
static const struct field no_fields[] = {
	{NULL, 0, 0},
};
static const struct field ctx_pool_fields[] = {
	{"code", T_STRING, 0},
	{"kernels", T_UINT, 0},
	{NULL, 0, 0},
};

static const struct field cmd_start_fields[] = {
	{"id", T_STRING, F_REQ},   {"cmd", T_STRING, F_REQ}, {"env", T_OBJECT, 0},
	{"cwd", T_PATH, 0},        {"timeout_ms", T_UINT, 0},
	{NULL, 0, 0},
};
static const struct field cmd_kill_fields[] = {
	{"id", T_STRING, F_REQ},
	{"signal", T_STRING, 0},
	{NULL, 0, 0},
};
static const struct field cmd_output_fields[] = {
	{"id", T_STRING, F_REQ},       {"stdout_offset", T_UINT, 0}, {"stderr_offset", T_UINT, 0},
	{"max_bytes", T_UINT, 0},      {"wait_ms", T_UINT, 0},
	{NULL, 0, 0},
};
static const struct field cmd_stdin_fields[] = {
	{"id", T_STRING, F_REQ},
	{"eof", T_BOOL, 0},
	{"timeout_ms", T_UINT, 0},
	{NULL, 0, 0},
};

static const struct op_spec ops[] = {
	{"restore", AGENT_OP_RESTORE, restore_fields},
	{"exec", AGENT_OP_EXEC, exec_fields},
	{"file_write", AGENT_OP_FILE_WRITE, file_write_fields},
	{"file_read", AGENT_OP_FILE_READ, path_fields},
	{"stat", AGENT_OP_STAT, path_fields},
	{"list", AGENT_OP_LIST, path_fields},
	{"remove", AGENT_OP_REMOVE, remove_fields},
	{"mkdir", AGENT_OP_MKDIR, mkdir_fields},
	{"context_create", AGENT_OP_CONTEXT_CREATE, ctx_create_fields},
	{"context_run", AGENT_OP_CONTEXT_RUN, ctx_run_fields},
	{"context_delete", AGENT_OP_CONTEXT_DELETE, ctx_id_fields},
	{"context_interrupt", AGENT_OP_CONTEXT_INTERRUPT, ctx_id_fields},
	{"context_restart", AGENT_OP_CONTEXT_RESTART, ctx_id_fields},
	{"context_list", AGENT_OP_CONTEXT_LIST, no_fields},
	{"context_pool", AGENT_OP_CONTEXT_POOL, ctx_pool_fields},
	{"command_start", AGENT_OP_COMMAND_START, cmd_start_fields},
	{"command_list", AGENT_OP_COMMAND_LIST, no_fields},
	{"command_kill", AGENT_OP_COMMAND_KILL, cmd_kill_fields},
	{"command_output", AGENT_OP_COMMAND_OUTPUT, cmd_output_fields},
	{"command_stdin", AGENT_OP_COMMAND_STDIN, cmd_stdin_fields},
};

/* Signals command_kill may send, by name. */
static const struct {
	const char *name;
	int sig;
} signals[] = {
	{"SIGKILL", SIGKILL}, {"SIGTERM", SIGTERM}, {"SIGINT", SIGINT},   {"SIGHUP", SIGHUP},
	{"SIGQUIT", SIGQUIT}, {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2},
};

const char *agent_op_name(enum agent_op op)
{
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (ops[i].op == op)
			return ops[i].name;
	return "?";
}

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* A copy of the JSON string v (NUL-free by jansson's parser default). */
static char *dup_string(json_t *v)
{
	size_t n = json_string_length(v);
	char *s = malloc(n + 1);
	if (s) {
		memcpy(s, json_string_value(v), n);
		s[n] = '\0';
	}
	return s;
}

/* Check one field's JSON type and basic shape. */
static int check_type(const struct field *f, json_t *v, char *err, size_t errlen)
{
	switch (f->type) {
	case T_STRING:
		if (!json_is_string(v))
			return fail(err, errlen, -EINVAL, "%s: must be a string", f->name);
		return 0;
	case T_PATH: {
		if (!json_is_string(v))
			return fail(err, errlen, -EINVAL, "%s: must be a string", f->name);
		size_t n = json_string_length(v);
		const char *s = json_string_value(v);
		if (n > AGENT_REQ_PATH_MAX)
			return fail(err, errlen, -E2BIG, "%s: longer than %u bytes", f->name,
				    AGENT_REQ_PATH_MAX);
		if (n == 0 || s[0] != '/')
			return fail(err, errlen, -EINVAL, "%s: must be an absolute path", f->name);
		if (memchr(s, '\0', n))
			return fail(err, errlen, -EINVAL, "%s: contains NUL", f->name);
		return 0;
	}
	case T_BOOL:
		if (!json_is_boolean(v))
			return fail(err, errlen, -EINVAL, "%s: must be true or false", f->name);
		return 0;
	case T_UINT:
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return fail(err, errlen, -EINVAL, "%s: must be a non-negative integer",
				    f->name);
		return 0;
	case T_OBJECT:
		if (!json_is_object(v))
			return fail(err, errlen, -EINVAL, "%s: must be an object", f->name);
		return 0;
	}
	return -EINVAL;
}

/* Field value or NULL when absent or null. */
static json_t *get(json_t *root, const char *name)
{
	json_t *v = json_object_get(root, name);
	return (v && !json_is_null(v)) ? v : NULL;
}

static int parse_u64_decimal(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	if (!*s || strlen(s) > 20)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static int parse_env(json_t *obj, struct agent_req *r, char *err, size_t errlen)
{
	size_t n = json_object_size(obj);
	if (n > AGENT_REQ_ENV_MAX_VARS)
		return fail(err, errlen, -E2BIG, "env: more than %u variables",
			    AGENT_REQ_ENV_MAX_VARS);
	r->env = calloc(n + 1, sizeof(char *));
	if (!r->env)
		return -ENOMEM;
	size_t total = 0;
	const char *key;
	json_t *val;
	json_object_foreach(obj, key, val) {
		if (!json_is_string(val))
			return fail(err, errlen, -EINVAL, "env: values must be strings");
		size_t kl = strlen(key), vl = json_string_length(val);
		if (kl == 0 || strchr(key, '='))
			return fail(err, errlen, -EINVAL,
				    "env: names must be non-empty and without '='");
		if (memchr(json_string_value(val), '\0', vl))
			return fail(err, errlen, -EINVAL, "env: value contains NUL");
		if (kl + vl + 2 > AGENT_REQ_ENV_MAX_BYTES - total)
			return fail(err, errlen, -E2BIG, "env: larger than %u bytes",
				    AGENT_REQ_ENV_MAX_BYTES);
		total += kl + vl + 2;
		char *kv = malloc(kl + vl + 2);
		if (!kv)
			return -ENOMEM;
		memcpy(kv, key, kl);
		kv[kl] = '=';
		memcpy(kv + kl + 1, json_string_value(val), vl);
		kv[kl + vl + 1] = '\0';
		r->env[r->nenv++] = kv;
	}
	return 0;
}

/* An id (field name): 1..AGENT_REQ_CTX_ID_MAX bytes of [A-Za-z0-9_-],
 * copied into *out. */
static int parse_id(json_t *v, const char *name, char **out, char *err, size_t errlen)
{
	size_t n = json_string_length(v);
	const char *s = json_string_value(v);
	if (n == 0 || n > AGENT_REQ_CTX_ID_MAX)
		return fail(err, errlen, -EINVAL, "%s: must be 1 to %u bytes", name,
			    AGENT_REQ_CTX_ID_MAX);
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return fail(err, errlen, -EINVAL, "%s: only [A-Za-z0-9_-] allowed", name);
	}
	return (*out = dup_string(v)) ? 0 : -ENOMEM;
}

/* A context's or a command's id. */
static int parse_ctx_id(json_t *v, struct agent_req *r, char *err, size_t errlen)
{
	return parse_id(v, "id", &r->ctx_id, err, errlen);
}

/* Code of a run or a warm-up: at most max bytes, no NUL. */
static int parse_code(json_t *v, size_t max, struct agent_req *r, char *err, size_t errlen)
{
	size_t n = json_string_length(v);
	if (n > max)
		return fail(err, errlen, -E2BIG, "code: longer than %zu bytes", max);
	if (memchr(json_string_value(v), '\0', n))
		return fail(err, errlen, -EINVAL, "code: contains NUL");
	if (!(r->code = dup_string(v)))
		return -ENOMEM;
	r->code_len = n;
	return 0;
}

/* Optional unsigned field v (may be NULL) at most max into *out. */
static int parse_uint_max(json_t *v, const char *name, uint64_t max, uint64_t *out, char *err,
			  size_t errlen)
{
	if (!v)
		return 0;
	if ((uint64_t)json_integer_value(v) > max)
		return fail(err, errlen, -EINVAL, "%s: above %llu", name, (unsigned long long)max);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

/* The command ops' fields (the exec fields they share are parsed by
 * fill_exec). */
static int fill_command(json_t *root, struct agent_req *r, char *err, size_t errlen)
{
	json_t *v;
	int e;
	if ((v = get(root, "id")) && (e = parse_ctx_id(v, r, err, errlen)) < 0)
		return e;
	r->signal = SIGKILL;
	if ((v = get(root, "signal"))) {
		size_t i = 0, n = sizeof(signals) / sizeof(signals[0]);
		while (i < n && strcmp(signals[i].name, json_string_value(v)) != 0)
			i++;
		if (i == n)
			return fail(err, errlen, -EINVAL,
				    "signal: one of SIGKILL SIGTERM SIGINT SIGHUP SIGQUIT "
				    "SIGUSR1 SIGUSR2");
		r->signal = signals[i].sig;
	}
	r->eof = (v = get(root, "eof")) ? json_is_true(v) : 0;
	if ((e = parse_uint_max(get(root, "stdout_offset"), "stdout_offset", UINT64_MAX / 2,
				&r->offset[0], err, errlen)) < 0 ||
	    (e = parse_uint_max(get(root, "stderr_offset"), "stderr_offset", UINT64_MAX / 2,
				&r->offset[1], err, errlen)) < 0 ||
	    (e = parse_uint_max(get(root, "max_bytes"), "max_bytes", AGENT_REQ_OUTPUT_CAP_MAX,
				&r->max_bytes, err, errlen)) < 0 ||
	    (e = parse_uint_max(get(root, "wait_ms"), "wait_ms", AGENT_REQ_WAIT_MAX_MS,
				&r->wait_ms, err, errlen)) < 0 ||
	    (e = parse_uint_max(get(root, "timeout_ms"), "timeout_ms", AGENT_REQ_TIMEOUT_MAX_MS,
				&r->timeout_ms, err, errlen)) < 0)
		return e;
	return 0;
}

/* The context ops' fields. */
static int fill_context(const struct op_spec *sp, json_t *root, struct agent_req *r, char *err,
			size_t errlen)
{
	json_t *v;
	int e;
	if ((v = get(root, "id")) && (e = parse_ctx_id(v, r, err, errlen)) < 0)
		return e;
	if ((v = get(root, "code")) &&
	    (e = parse_code(v,
			    sp->op == AGENT_OP_CONTEXT_POOL ? AGENT_REQ_WARM_CODE_MAX
							    : AGENT_REQ_CODE_MAX,
			    r, err, errlen)) < 0)
		return e;
	if ((v = get(root, "language")) && strcmp(json_string_value(v), "python") != 0)
		return fail(err, errlen, -EINVAL, "language: only \"python\" is supported");
	if ((v = get(root, "cwd")) && !(r->cwd = dup_string(v)))
		return -ENOMEM;
	if ((v = get(root, "notebook")) && !(r->notebook = dup_string(v)))
		return -ENOMEM;
	r->notebook_off = (v = get(root, "notebook_off")) ? json_is_true(v) : 0;
	if (r->notebook && r->notebook_off)
		return fail(err, errlen, -EINVAL, "notebook: not with notebook_off");
	if ((v = get(root, "env")) && (e = parse_env(v, r, err, errlen)) < 0)
		return e;
	if ((e = parse_uint_max(get(root, "timeout_ms"), "timeout_ms", AGENT_REQ_TIMEOUT_MAX_MS,
				&r->timeout_ms, err, errlen)) < 0 ||
	    (e = parse_uint_max(get(root, "idle_timeout_ms"), "idle_timeout_ms",
				AGENT_REQ_IDLE_MAX_MS, &r->idle_timeout_ms, err, errlen)) < 0 ||
	    (e = parse_uint_max(get(root, "output_cap"), "output_cap", AGENT_REQ_OUTPUT_CAP_MAX,
				&r->output_cap, err, errlen)) < 0 ||
	    (e = parse_uint_max(get(root, "kernels"), "kernels", AGENT_REQ_POOL_KERNELS_MAX,
				&r->pool_kernels, err, errlen)) < 0)
		return e;
	return 0;
}

/* The fields of exec, and of command_start (cmd, cwd, env, timeout_ms):
 * those absent from the op's field list are absent from root. */
static int fill_exec(json_t *root, struct agent_req *r, char *err, size_t errlen)
{
	json_t *v = get(root, "cmd");
	if (json_string_length(v) > AGENT_REQ_CMD_MAX)
		return fail(err, errlen, -E2BIG, "cmd: longer than %u bytes", AGENT_REQ_CMD_MAX);
	if (memchr(json_string_value(v), '\0', json_string_length(v)))
		return fail(err, errlen, -EINVAL, "cmd: contains NUL");
	if (!(r->cmd = dup_string(v)))
		return -ENOMEM;
	if ((v = get(root, "cwd")) && !(r->cwd = dup_string(v)))
		return -ENOMEM;
	if ((v = get(root, "env"))) {
		int e = parse_env(v, r, err, errlen);
		if (e < 0)
			return e;
	}
	int e = parse_uint_max(get(root, "timeout_ms"), "timeout_ms", AGENT_REQ_TIMEOUT_MAX_MS,
			       &r->timeout_ms, err, errlen);
	if (e < 0)
		return e;
	r->want_stdin = (v = get(root, "stdin")) ? json_is_true(v) : 0;
	r->output_cap = AGENT_REQ_OUTPUT_CAP_DEFAULT;
	return parse_uint_max(get(root, "output_cap"), "output_cap", AGENT_REQ_OUTPUT_CAP_MAX,
			      &r->output_cap, err, errlen);
}

/* Fill r from the checked object root for op spec sp. */
static int fill(const struct op_spec *sp, json_t *root, struct agent_req *r, char *err,
		size_t errlen)
{
	json_t *v;
	r->op = sp->op;
	if ((v = get(root, "path")) && !(r->path = dup_string(v)))
		return -ENOMEM;
	switch (sp->op) {
	case AGENT_OP_RESTORE: {
		if (parse_u64_decimal(json_string_value(get(root, "wall_clock_ns")),
				      &r->wall_clock_ns) < 0)
			return fail(err, errlen, -EINVAL,
				    "wall_clock_ns: must be a decimal u64 string");
		if (util_unhex(json_string_value(get(root, "entropy")), r->entropy,
			       sizeof(r->entropy)) < 0)
			return fail(err, errlen, -EINVAL, "entropy: must be %u hex digits",
				    2 * AGENT_REQ_ENTROPY_BYTES);
		if ((v = get(root, "pip_index_url"))) {
			/* written into an INI file: one line, the daemon's rules */
			const char *why = "";
			size_t n = json_string_length(v);
			if (n > PIP_INDEX_URL_MAX)
				return fail(err, errlen, -E2BIG, "pip_index_url: longer than %u bytes",
					    PIP_INDEX_URL_MAX);
			if (memchr(json_string_value(v), '\0', n) ||
			    pip_index_check(json_string_value(v), NULL, 0, NULL, &why) < 0)
				return fail(err, errlen, -EINVAL, "pip_index_url: %s", why);
			if (!(r->pip_index_url = dup_string(v)))
				return -ENOMEM;
		}
		if ((v = get(root, "sandbox_id")))
			return parse_id(v, "sandbox_id", &r->sandbox_id, err, errlen);
		return 0;
	}
	case AGENT_OP_EXEC:
		return fill_exec(root, r, err, errlen);
	case AGENT_OP_FILE_WRITE:
	case AGENT_OP_MKDIR:
		r->mode = sp->op == AGENT_OP_MKDIR ? 0755 : 0644;
		if ((v = get(root, "mode"))) {
			if (json_integer_value(v) > 07777)
				return fail(err, errlen, -EINVAL, "mode: above 07777");
			r->mode = (unsigned)json_integer_value(v);
		}
		r->parents = (v = get(root, "parents")) ? json_is_true(v) : 1;
		return 0;
	case AGENT_OP_REMOVE:
		r->recursive = (v = get(root, "recursive")) ? json_is_true(v) : 0;
		return 0;
	case AGENT_OP_CONTEXT_CREATE:
	case AGENT_OP_CONTEXT_RUN:
	case AGENT_OP_CONTEXT_DELETE:
	case AGENT_OP_CONTEXT_INTERRUPT:
	case AGENT_OP_CONTEXT_RESTART:
	case AGENT_OP_CONTEXT_LIST:
	case AGENT_OP_CONTEXT_POOL:
		return fill_context(sp, root, r, err, errlen);
	case AGENT_OP_COMMAND_START: {
		int e = fill_exec(root, r, err, errlen);
		return e < 0 ? e : fill_command(root, r, err, errlen);
	}
	case AGENT_OP_COMMAND_LIST:
	case AGENT_OP_COMMAND_KILL:
	case AGENT_OP_COMMAND_OUTPUT:
	case AGENT_OP_COMMAND_STDIN:
		return fill_command(root, r, err, errlen);
	default:
		return 0;
	}
}

int agent_req_parse(const void *json, size_t len, struct agent_req *out, char *err,
		    size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (err && errlen)
		err[0] = '\0';
	json_error_t jerr;
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return fail(err, errlen, -EBADMSG, "bad JSON: %s", jerr.text);
	if (!json_is_object(root)) {
		json_decref(root);
		return fail(err, errlen, -EBADMSG, "request must be a JSON object");
	}
	int rc;
	json_t *opv = json_object_get(root, "op");
	const struct op_spec *sp = NULL;
	if (!json_is_string(opv)) {
		rc = fail(err, errlen, -EINVAL, "op: missing or not a string");
		goto out;
	}
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strcmp(ops[i].name, json_string_value(opv)) == 0)
			sp = &ops[i];
	if (!sp) {
		char q[64];
		rc = fail(err, errlen, -EINVAL, "unknown op %s",
			  log_quote(json_string_value(opv), q, sizeof(q)));
		goto out;
	}
	/* every key must be "op" or a field of this op */
	const char *key;
	json_t *val;
	json_object_foreach(root, key, val) {
		if (strcmp(key, "op") == 0)
			continue;
		const struct field *f = sp->fields;
		while (f->name && strcmp(f->name, key) != 0)
			f++;
		if (!f->name) {
			char q[64];
			rc = fail(err, errlen, -EINVAL, "%s: unknown field %s", sp->name,
				  log_quote(key, q, sizeof(q)));
			goto out;
		}
		if (json_is_null(val) && !(f->flags & F_REQ))
			continue;
		if ((rc = check_type(f, val, err, errlen)) < 0)
			goto out;
	}
	for (const struct field *f = sp->fields; f->name; f++) {
		if ((f->flags & F_REQ) && !get(root, f->name)) {
			rc = fail(err, errlen, -EINVAL, "%s: missing field %s", sp->name, f->name);
			goto out;
		}
	}
	rc = fill(sp, root, out, err, errlen);
out:
	json_decref(root);
	if (rc < 0)
		agent_req_free(out);
	return rc;
}

void agent_req_free(struct agent_req *r)
{
	free(r->path);
	free(r->cmd);
	free(r->cwd);
	free(r->ctx_id);
	free(r->code);
	free(r->pip_index_url);
	free(r->sandbox_id);
	free(r->notebook);
	if (r->env)
		for (size_t i = 0; i < r->nenv; i++)
			free(r->env[i]);
	free(r->env);
	memset(r, 0, sizeof(*r));
}
