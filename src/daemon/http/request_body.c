/*
 * request_body.c - the API's request bodies, one table of fields per route
 * (body_table.h parses them all), and the query values (see request_body.h).
 */
#include "daemon/http/request_body.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "daemon/http/body_table.h"
#include "daemon/net/net_policy.h"

/* ---- the routes' bodies ---------------------------------------------------- */

static const char *const on_timeout_choices[] = {"stop", "pause", NULL};

#define NAME_MSG(f) "field '" f "' must be 1-" BODY_XSTR(BODY_NAME_MAX) " characters of [a-z0-9._-]"

static const struct field create_fields[] = {
	{"snapshot", K_STRING, 0, C_SNAPSHOT, 0, 64, 0, NULL, 0,
	 "field 'snapshot' must be a snapshot id (snap_ and 20 hex digits)",
	 AT(struct create_sandbox_body, snapshot), NO_OFF},
	{"template", K_STRING, 0, C_NAME, 0, BODY_NAME_MAX, 0, NULL, 0, NAME_MSG("template"),
	 AT(struct create_sandbox_body, template_name), NO_OFF},
	{"on_timeout", K_STRING, 0, C_CHOICE, 0, 16, 0, on_timeout_choices, 0,
	 "field 'on_timeout' must be \"stop\" or \"pause\"",
	 AT(struct create_sandbox_body, on_timeout), NO_OFF},
	{"ttl_seconds", K_TTL, 0, C_ANY, 0, 0, 0, NULL, 0, NULL,
	 AT(struct create_sandbox_body, ttl_seconds), NO_OFF},
	{"env", K_ENV, 0, C_ANY, 0, 0, 0, NULL, 0, NULL, AT(struct create_sandbox_body, env), NO_OFF},
	{"metadata", K_METADATA, 0, C_ANY, 0, 0, 0, NULL, 0, NULL,
	 AT(struct create_sandbox_body, metadata), NO_OFF},
	{"network", K_NETWORK, 0, C_ANY, 0, 0, 0, NULL, 0, NULL,
	 AT(struct create_sandbox_body, network), AT(struct create_sandbox_body, public_ports)},
};

/* A template, unless a snapshot names it. */
static int create_rules(void *p, struct body_error *err)
{
	struct create_sandbox_body *b = p;
	if (!b->snapshot && !b->template_name)
		return body_error_set(err, API_ERR_MISSING_FIELD, "field 'template' is required");
	return 0;
}

static const struct body_spec create_spec = {FIELDS(create_fields),
					     AT(struct create_sandbox_body, root), 0, create_rules};

int body_parse_create_sandbox(const char *buf, size_t len, const struct body_limits *lim,
			      struct create_sandbox_body *out, struct body_error *err)
{
	return body_parse(&create_spec, buf, len, lim, out, sizeof(*out), err);
}

void create_sandbox_body_clear(struct create_sandbox_body *b)
{
	body_clear(&create_spec, b, sizeof(*b));
}

static const struct field ttl_fields[] = {
	{"ttl_seconds", K_TTL, F_REQUIRED, C_ANY, 0, 0, 0, NULL, 0, NULL,
	 AT(struct ttl_body, ttl_seconds), NO_OFF},
};
static const struct body_spec ttl_spec = {FIELDS(ttl_fields), NO_OFF, 0, NULL};

int body_parse_ttl(const char *buf, size_t len, const struct body_limits *lim,
		   struct ttl_body *out, struct body_error *err)
{
	return body_parse(&ttl_spec, buf, len, lim, out, sizeof(*out), err);
}

static const struct field snapshot_fields[] = {
	{"name", K_STRING, 0, C_PRINTABLE, 0, BODY_SNAPSHOT_NAME_MAX, 0, NULL, 0,
	 "field 'name' must be 1-" BODY_XSTR(BODY_SNAPSHOT_NAME_MAX) " printable characters",
	 AT(struct snapshot_body, name), NO_OFF},
};
static const struct body_spec snapshot_spec = {FIELDS(snapshot_fields),
					       AT(struct snapshot_body, root), 1, NULL};

int body_parse_snapshot(const char *buf, size_t len, struct snapshot_body *out,
			struct body_error *err)
{
	return body_parse(&snapshot_spec, buf, len, NULL, out, sizeof(*out), err);
}

void snapshot_body_clear(struct snapshot_body *b)
{
	body_clear(&snapshot_spec, b, sizeof(*b));
}

static const struct field fork_fields[] = {
	{"count", K_INT, 0, C_ANY, 1, BODY_FORK_MAX, 1, NULL, 0,
	 "field 'count' must be an integer from 1 to " BODY_XSTR(BODY_FORK_MAX),
	 AT(struct fork_body, count), NO_OFF},
	{"ttl_seconds", K_TTL, 0, C_ANY, 0, 0, 0, NULL, 0, NULL, AT(struct fork_body, ttl_seconds),
	 NO_OFF},
};
static const struct body_spec fork_spec = {FIELDS(fork_fields), NO_OFF, 1, NULL};

int body_parse_fork(const char *buf, size_t len, const struct body_limits *lim,
		    struct fork_body *out, struct body_error *err)
{
	return body_parse(&fork_spec, buf, len, lim, out, sizeof(*out), err);
}

static const struct field resume_fields[] = {
	{"ttl_seconds", K_TTL, 0, C_ANY, 0, 0, 0, NULL, 0, NULL,
	 AT(struct resume_body, ttl_seconds), NO_OFF},
};
static const struct body_spec resume_spec = {FIELDS(resume_fields), NO_OFF, 1, NULL};

int body_parse_resume(const char *buf, size_t len, const struct body_limits *lim,
		      struct resume_body *out, struct body_error *err)
{
	return body_parse(&resume_spec, buf, len, lim, out, sizeof(*out), err);
}

static const struct field exec_fields[] = {
	{"cmd", K_STRING, F_REQUIRED, C_NONEMPTY, 0, BODY_CMD_MAX, 0, NULL, 0,
	 "field 'cmd' must not be empty", AT(struct exec_body, cmd), NO_OFF},
	{"timeout_seconds", K_TIMEOUT, 0, C_ANY, 0, 0, 0, NULL, 0, NULL,
	 AT(struct exec_body, has_timeout), AT(struct exec_body, timeout_ms)},
	{"env", K_ENV, 0, C_ANY, 0, 0, 0, NULL, 0, NULL, AT(struct exec_body, env), NO_OFF},
	{"cwd", K_STRING, 0, C_ABS_PATH, 0, BODY_PATH_MAX, 0, NULL, 0,
	 "field 'cwd' must be an absolute path of at most " BODY_XSTR(BODY_PATH_MAX) " bytes",
	 AT(struct exec_body, cwd), NO_OFF},
	{"stdin", K_STRING, 0, C_ANY, 0, BODY_STDIN_MAX, 0, NULL, 0, NULL,
	 AT(struct exec_body, stdin_data), AT(struct exec_body, stdin_len)},
	{"background", K_BOOL, 0, C_ANY, 0, 0, 0, NULL, 0, NULL, AT(struct exec_body, background),
	 NO_OFF},
};

static int exec_rules(void *p, struct body_error *err)
{
	struct exec_body *b = p;
	if (b->background && b->stdin_data)
		return body_error_set(err, API_ERR_INVALID_FIELD,
				      "field 'stdin' does not go with 'background': write to the "
				      "command's stdin with POST .../commands/{cid}/stdin");
	return 0;
}

static const struct body_spec exec_spec = {FIELDS(exec_fields), AT(struct exec_body, root), 0,
					   exec_rules};

int body_parse_exec(const char *buf, size_t len, const struct body_limits *lim,
		    struct exec_body *out, struct body_error *err)
{
	return body_parse(&exec_spec, buf, len, lim, out, sizeof(*out), err);
}

void exec_body_clear(struct exec_body *b)
{
	body_clear(&exec_spec, b, sizeof(*b));
}

static const struct field key_fields[] = {
	{"name", K_STRING, F_REQUIRED, C_PRINTABLE, 0, BODY_NAME_MAX, 0, NULL, 0,
	 "field 'name' must be 1-" BODY_XSTR(BODY_NAME_MAX) " printable characters",
	 AT(struct key_body, name), NO_OFF},
	{"team", K_STRING, 0, C_NAME, 0, BODY_NAME_MAX, 0, NULL, 0, NAME_MSG("team"),
	 AT(struct key_body, team), NO_OFF},
};
static const struct body_spec key_spec = {FIELDS(key_fields), AT(struct key_body, root), 0, NULL};

int body_parse_key(const char *buf, size_t len, struct key_body *out, struct body_error *err)
{
	return body_parse(&key_spec, buf, len, NULL, out, sizeof(*out), err);
}

void key_body_clear(struct key_body *b)
{
	body_clear(&key_spec, b, sizeof(*b));
}

static const struct field mkdir_fields[] = {
	{"path", K_STRING, F_REQUIRED, C_PATH, 0, BODY_PATH_MAX, 0, NULL, 0, NULL,
	 AT(struct mkdir_body, path), NO_OFF},
	{"parents", K_BOOL, 0, C_ANY, 0, 0, 1, NULL, 0, NULL, AT(struct mkdir_body, parents),
	 NO_OFF},
};
static const struct body_spec mkdir_spec = {FIELDS(mkdir_fields), AT(struct mkdir_body, root), 0,
					    NULL};

int body_parse_mkdir(const char *buf, size_t len, struct mkdir_body *out, struct body_error *err)
{
	return body_parse(&mkdir_spec, buf, len, NULL, out, sizeof(*out), err);
}

void mkdir_body_clear(struct mkdir_body *b)
{
	body_clear(&mkdir_spec, b, sizeof(*b));
}

static const struct field build_fields[] = {
	{"force", K_BOOL, 0, C_ANY, 0, 0, 0, NULL, 0, NULL, AT(struct build_body, force), NO_OFF},
};
static const struct body_spec build_spec = {FIELDS(build_fields), NO_OFF, 1, NULL};

int body_parse_build(const char *buf, size_t len, struct build_body *out, struct body_error *err)
{
	return body_parse(&build_spec, buf, len, NULL, out, sizeof(*out), err);
}

static const struct body_spec empty_spec = {NULL, 0, NO_OFF, 1, NULL};

int body_parse_empty(const char *buf, size_t len, struct body_error *err)
{
	char none;
	return body_parse(&empty_spec, buf, len, NULL, &none, 0, err);
}

static const char *const python_only[] = {"python", NULL};

static const struct field context_fields[] = {
	{"language", K_STRING, 0, C_CHOICE, 0, BODY_NAME_MAX, 0, python_only, 0,
	 "field 'language' must be \"python\"", AT(struct context_body, language), NO_OFF},
	{"cwd", K_STRING, 0, C_ABS_PATH, 0, BODY_PATH_MAX, 0, NULL, 0,
	 "field 'cwd' must be an absolute path of at most " BODY_XSTR(BODY_PATH_MAX) " bytes",
	 AT(struct context_body, cwd), NO_OFF},
	{"env", K_ENV, 0, C_ANY, 0, 0, 0, NULL, 0, NULL, AT(struct context_body, env), NO_OFF},
	{"notebook", K_STRING, 0, C_ABS_PATH, 0, BODY_PATH_MAX, 0, NULL, 1,
	 "field 'notebook' must be an absolute path of at most " BODY_XSTR(BODY_PATH_MAX)
	 " bytes, or \"\"",
	 AT(struct context_body, notebook), NO_OFF},
};
static const struct body_spec context_spec = {FIELDS(context_fields),
					      AT(struct context_body, root), 0, NULL};

int body_parse_context(const char *buf, size_t len, struct context_body *out,
		       struct body_error *err)
{
	return body_parse(&context_spec, buf, len, NULL, out, sizeof(*out), err);
}

void context_body_clear(struct context_body *b)
{
	body_clear(&context_spec, b, sizeof(*b));
}

static const char *const code_languages[] = {"python", "shell", NULL};

/* A context's cell; the one-shot run_code adds "language" (below). */
#define CODE_FIELD                                                                        \
	{"code", K_STRING, F_REQUIRED, C_ANY, 0, BODY_CODE_MAX, 0, NULL, 0, NULL,        \
	 AT(struct code_body, code), AT(struct code_body, code_len)}
#define CODE_TIMEOUT_FIELD                                                                \
	{"timeout_seconds", K_TIMEOUT, 0, C_ANY, 0, 0, 0, NULL, 0, NULL,                \
	 AT(struct code_body, has_timeout), AT(struct code_body, timeout_ms)}

static const struct field cell_fields[] = {CODE_FIELD, CODE_TIMEOUT_FIELD};
static const struct field shot_fields[] = {
	{"language", K_STRING, 0, C_CHOICE, 0, BODY_NAME_MAX, 0, code_languages, 0,
	 "field 'language' must be \"python\" or \"shell\"", AT(struct code_body, language),
	 NO_OFF},
	CODE_FIELD,
	CODE_TIMEOUT_FIELD,
};

/* Shell code is a command: never empty, at most BODY_CMD_MAX bytes. */
static int shot_rules(void *p, struct body_error *err)
{
	struct code_body *b = p;
	b->shell = b->language && !strcmp(b->language, "shell");
	if (b->shell && b->code_len > BODY_CMD_MAX)
		return body_error_set(err, API_ERR_INVALID_FIELD,
				      "field 'code' is longer than %d bytes", BODY_CMD_MAX);
	if (b->shell && b->code_len == 0)
		return body_error_set(err, API_ERR_INVALID_FIELD, "field 'code' must not be empty");
	return 0;
}

static const struct body_spec cell_spec = {FIELDS(cell_fields), AT(struct code_body, root), 0,
					   NULL};
static const struct body_spec shot_spec = {FIELDS(shot_fields), AT(struct code_body, root), 0,
					   shot_rules};

int body_parse_code(const char *buf, size_t len, const struct body_limits *lim, int one_shot,
		    struct code_body *out, struct body_error *err)
{
	return body_parse(one_shot ? &shot_spec : &cell_spec, buf, len, lim, out, sizeof(*out), err);
}

void code_body_clear(struct code_body *b)
{
	body_clear(&cell_spec, b, sizeof(*b)); /* the same references either way */
}

/* The signals a background command may be sent by name (the first is the
 * default). */
static const char *const command_signals[] = {"SIGKILL", "SIGTERM", "SIGINT", "SIGHUP",
					      "SIGQUIT", "SIGUSR1", "SIGUSR2", NULL};

static const struct field kill_fields[] = {
	{"signal", K_STRING, 0, C_CHOICE, 0, 16, 0, command_signals, 0,
	 "field 'signal' must be one of SIGKILL, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, "
	 "SIGUSR2",
	 AT(struct command_kill_body, signal), NO_OFF},
};

static int kill_rules(void *p, struct body_error *err)
{
	struct command_kill_body *b = p;
	(void)err;
	if (!b->signal)
		b->signal = command_signals[0];
	return 0;
}

static const struct body_spec kill_spec = {FIELDS(kill_fields), NO_OFF, 1, kill_rules};

int body_parse_command_kill(const char *buf, size_t len, struct command_kill_body *out,
			    struct body_error *err)
{
	int r = body_parse(&kill_spec, buf, len, NULL, out, sizeof(*out), err);
	if (r)
		out->signal = command_signals[0]; /* as documented: never NULL */
	return r;
}

static const struct field stdin_fields[] = {
	{"data", K_STRING, 0, C_ANY, 0, BODY_STDIN_MAX, 0, NULL, 0, NULL,
	 AT(struct command_stdin_body, data), AT(struct command_stdin_body, len)},
	{"eof", K_BOOL, 0, C_ANY, 0, 0, 0, NULL, 0, NULL, AT(struct command_stdin_body, eof),
	 NO_OFF},
};

static int stdin_rules(void *p, struct body_error *err)
{
	struct command_stdin_body *b = p;
	if (!b->data && !b->eof)
		return body_error_set(err, API_ERR_MISSING_FIELD,
				      "field 'data' is required unless 'eof' is true");
	return 0;
}

static const struct body_spec stdin_spec = {FIELDS(stdin_fields),
					    AT(struct command_stdin_body, root), 0, stdin_rules};

int body_parse_command_stdin(const char *buf, size_t len, struct command_stdin_body *out,
			     struct body_error *err)
{
	return body_parse(&stdin_spec, buf, len, NULL, out, sizeof(*out), err);
}

void command_stdin_body_clear(struct command_stdin_body *b)
{
	body_clear(&stdin_spec, b, sizeof(*b));
}

/* ---- bodies that are not a struct, and query values ------------------------ */

int body_parse_network(const char *buf, size_t len, json_t *current, struct net_policy **out,
		       int *public_ports, struct body_error *err)
{
	static const char *const keys[] = {"egress", "allow_out", "deny_out"};
	*out = NULL;
	*public_ports = -1;
	json_t *root = body_load_object(buf, len, err);
	if (!root)
		return -EINVAL;
	struct net_policy *own = NULL;
	int r = net_policy_parse(root, "", &own, err); /* the body's errors, as sent */
	net_policy_free(own);
	if (!r)
		r = body_public_ports(root, "", public_ports, err);
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
