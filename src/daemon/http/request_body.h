/*
 * request_body.h - strict validation of the REST API's JSON request bodies
 * and query values (docs/api.md is the reference for every field).
 *
 * One pure function per route body: bytes in, a typed struct or a
 * {code, message} error out.  No I/O, no globals, no engine: these are the
 * functions tests/fuzz/fuzz_api_body.c feeds.  Every check the API promises
 * lives here: JSON syntax, object shape, unknown fields, types, ranges,
 * string sizes and character sets.
 *
 * Errors (rows of the error table, api_errors.h; all are 400 answers):
 *   API_ERR_INVALID_JSON   not JSON, not an object, duplicate keys
 *   API_ERR_UNKNOWN_FIELD  a field the route does not define
 *   API_ERR_MISSING_FIELD  a required field is absent
 *   API_ERR_INVALID_FIELD  wrong type, out of range, bad characters, too long
 *   API_ERR_INVALID_PATH   a file path that is not absolute, too long, not UTF-8
 *   API_ERR_INVALID_QUERY  a query parameter with a bad value
 *
 * Ownership: structs hold a reference to the parsed JSON root (root) so
 * their const char * fields stay valid; release with the matching _clear.
 * Threads: any.
 */
#ifndef PANDASTACK_DAEMON_REQUEST_BODY_H
#define PANDASTACK_DAEMON_REQUEST_BODY_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/body_caps.h" /* BODY_*_MAX: the caps, shared with the CLI */
#include "daemon/api_errors.h"
#include "daemon/body_error.h"
#include "daemon/config.h" /* struct body_limits */

struct net_policy;

/* POST /v1/sandboxes: a template or a snapshot (or both when they agree) */
struct create_sandbox_body {
	json_t *root;
	const char *template_name; /* [a-z0-9][a-z0-9._-]{0,63}; NULL with a snapshot */
	const char *snapshot;      /* "snap_" + 20 hex digits, or NULL */
	int64_t ttl_seconds;       /* 0 when absent (the daemon's default) */
	json_t *env;               /* new reference; {} when absent */
	json_t *metadata;          /* new reference; {} when absent */
	int public_ports;          /* network.public_ports: 1 true, 0 false/absent */
	struct net_policy *network; /* owned; the default policy when absent
				     * (net_policy.h checks the object) */
	const char *on_timeout;    /* "stop" or "pause"; NULL when absent */
};

/* POST /v1/sandboxes/{id}/snapshots (the body is optional) */
struct snapshot_body {
	json_t *root;
	const char *name;     /* 1..BODY_SNAPSHOT_NAME_MAX printable bytes, or NULL */
};

/* POST /v1/sandboxes/{id}/fork */
struct fork_body {
	int64_t count;        /* 1..BODY_FORK_MAX; 1 when absent */
	int64_t ttl_seconds;  /* 0 when absent */
};

/* POST /v1/sandboxes/{id}/resume */
struct resume_body {
	int64_t ttl_seconds;  /* 0 when absent */
};

/* POST /v1/sandboxes/{id}/ttl */
struct ttl_body {
	int64_t ttl_seconds;
};

/* POST /v1/sandboxes/{id}/exec and exec_stream */
struct exec_body {
	json_t *root;
	const char *cmd;
	int has_timeout;      /* timeout_seconds given */
	int64_t timeout_ms;   /* 0: no limit (only when given as 0) */
	json_t *env;          /* new reference; {} when absent */
	const char *cwd;      /* NULL when absent */
	const char *stdin_data; /* NULL when absent */
	size_t stdin_len;
	int background;       /* "background": true: start and answer at once
			       * (exec only; never with stdin) */
};

/* POST .../commands/{cid}/kill (the body is optional) */
struct command_kill_body {
	const char *signal;   /* a static name: "SIGKILL" (default), "SIGTERM", ... */
};

/* POST .../commands/{cid}/stdin */
struct command_stdin_body {
	json_t *root;
	const char *data;     /* NULL when absent (then eof is set) */
	size_t len;
	int eof;              /* close the command's stdin after data */
};

/* POST /v1/sandboxes/{id}/contexts (language is checked: "python") */
struct context_body {
	json_t *root;
	const char *language; /* "python" (static), NULL when absent */
	const char *cwd;      /* NULL when absent */
	const char *notebook; /* NULL when absent (the default file), "" for none */
	json_t *env;          /* new reference; {} when absent */
};

/* POST .../contexts/{ctx}/run_code(_stream) and the one-shot
 * POST /v1/sandboxes/{id}/run_code */
struct code_body {
	json_t *root;
	const char *code;     /* may be empty for a context's cell */
	size_t code_len;
	const char *language; /* one-shot: "python" or "shell" (static), NULL when absent */
	int shell;            /* one-shot: language "shell" (default "python") */
	int has_timeout;      /* timeout_seconds given */
	int64_t timeout_ms;   /* 0: no limit (only when given as 0) */
};

/* POST /v1/keys */
struct key_body {
	json_t *root;
	const char *name;
	const char *team;     /* NULL when absent */
};

/* POST /v1/sandboxes/{id}/fs/mkdir */
struct mkdir_body {
	json_t *root;
	const char *path;
	int parents;          /* default 1 */
};

/* POST /v1/templates/{name}/build (the body is optional) */
struct build_body {
	int force;            /* default 0 */
};

/*
 * body_parse_* - parse and check len bytes of buf (not NUL-terminated; may
 * be NULL when len is 0).  Return 0 with *out filled (release with the
 * _clear function), or -EINVAL with *err filled and *out empty.
 * body_parse_build accepts an empty body.
 */
int body_parse_create_sandbox(const char *buf, size_t len, const struct body_limits *lim,
			      struct create_sandbox_body *out, struct body_error *err);
void create_sandbox_body_clear(struct create_sandbox_body *b);

int body_parse_ttl(const char *buf, size_t len, const struct body_limits *lim,
		   struct ttl_body *out, struct body_error *err);

/* body_parse_snapshot accepts an empty body. */
int body_parse_snapshot(const char *buf, size_t len, struct snapshot_body *out,
			struct body_error *err);
void snapshot_body_clear(struct snapshot_body *b);

/* body_parse_fork accepts an empty body (one fork). */
int body_parse_fork(const char *buf, size_t len, const struct body_limits *lim,
		    struct fork_body *out, struct body_error *err);

/* body_parse_resume accepts an empty body; {"ttl_seconds"} as for create. */
int body_parse_resume(const char *buf, size_t len, const struct body_limits *lim,
		      struct resume_body *out, struct body_error *err);

int body_parse_exec(const char *buf, size_t len, const struct body_limits *lim,
		    struct exec_body *out, struct body_error *err);
void exec_body_clear(struct exec_body *b);

int body_parse_context(const char *buf, size_t len, struct context_body *out,
		       struct body_error *err);
void context_body_clear(struct context_body *b);

/* one_shot: the sandbox's run_code (it takes "language"); else a context's. */
int body_parse_code(const char *buf, size_t len, const struct body_limits *lim, int one_shot,
		    struct code_body *out, struct body_error *err);
void code_body_clear(struct code_body *b);

int body_parse_key(const char *buf, size_t len, struct key_body *out, struct body_error *err);
void key_body_clear(struct key_body *b);

int body_parse_mkdir(const char *buf, size_t len, struct mkdir_body *out, struct body_error *err);
void mkdir_body_clear(struct mkdir_body *b);

int body_parse_build(const char *buf, size_t len, struct build_body *out, struct body_error *err);

/* body_parse_command_kill accepts an empty body (SIGKILL). */
int body_parse_command_kill(const char *buf, size_t len, struct command_kill_body *out,
			    struct body_error *err);

/* body_parse_command_stdin: "data" (a string, at most BODY_STDIN_MAX bytes)
 * and "eof"; one of them is required. */
int body_parse_command_stdin(const char *buf, size_t len, struct command_stdin_body *out,
			     struct body_error *err);
void command_stdin_body_clear(struct command_stdin_body *b);

/*
 * body_parse_network - PUT /v1/sandboxes/{id}/network: the body is a network
 * object (net_policy_parse) whose keys replace those of current (the policy
 * in force as net_policy_json gives it; NULL: the default); the keys the
 * body leaves out keep their value.  *public_ports: the body's
 * "public_ports" (exposed ports), 1 or 0, or -1 when absent.  0 with *out
 * (net_policy_free), or -EINVAL with err (the body's own errors first).
 */
int body_parse_network(const char *buf, size_t len, json_t *current, struct net_policy **out,
		       int *public_ports, struct body_error *err);

/* body_parse_empty - a body that carries nothing (interrupt, restart): empty
 * or {}.  0, or -EINVAL with err (invalid_json, unknown_field). */
int body_parse_empty(const char *buf, size_t len, struct body_error *err);

/*
 * body_check_path - a guest path from a query or body: NUL-terminated,
 * absolute, 1..BODY_PATH_MAX bytes, valid UTF-8, no control characters.
 * Returns 0 or -EINVAL with err (code invalid_path).
 */
int body_check_path(const char *path, struct body_error *err);

/* body_meta_key_ok - 1 if k is a metadata key: 1-BODY_META_KEY_MAX
 * characters of [A-Za-z0-9_.-]; else 0.  Any thread. */
int body_meta_key_ok(const char *k);

/* body_check_name: common/body_caps.h. */

/*
 * body_parse_bool_query - a query flag: NULL gives dflt; "true"/"1" and
 * "false"/"0" are accepted.  Returns 0 or -EINVAL with err (invalid_query).
 */
int body_parse_bool_query(const char *name, const char *value, int dflt, int *out,
			  struct body_error *err);

/*
 * body_parse_uint_query - a whole-number query parameter: NULL gives dflt;
 * otherwise 1-20 decimal digits with a value of at most max.  Returns 0 or
 * -EINVAL with err (invalid_query).
 */
int body_parse_uint_query(const char *name, const char *value, uint64_t dflt, uint64_t max,
			  uint64_t *out, struct body_error *err);

#endif
