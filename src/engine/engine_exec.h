/*
 * engine_exec.h - run one command in the guest through the agent and
 * collect its result (docs/agent-protocol.md, op "exec"): for the bake's
 * warm-up, the operator tool, tests and benchmarks.  The daemon streams
 * execs itself; this is the simple collect-everything form.
 * Threads: any thread (the agent connection is thread-safe); one call
 * uses its own stream.
 */
#ifndef PANDASTACK_ENGINE_EXEC_H
#define PANDASTACK_ENGINE_EXEC_H

#include <stddef.h>

#include <jansson.h>

#include "engine/guest_stream.h"

struct engine_exec_opts {
	int timeout_ms;         /* guest-side timeout (0: none); the host waits this + 30 s */
	json_t *env;            /* borrowed object of strings, or NULL */
	const char *cwd;        /* NULL: the agent's default */
	const void *stdin_data; /* bytes sent as stdin, or NULL for /dev/null */
	size_t stdin_len;
	size_t capture_cap;     /* bytes kept per channel (0: 1 MiB); the rest is counted */
};

struct engine_exec_result {
	int exit_code;          /* -1 if the END had none */
	int signal;             /* 0 if none */
	int timed_out;
	char *out, *err;        /* captured stdout/stderr, NUL-terminated, owned */
	size_t out_len, err_len;/* captured bytes */
	size_t out_total, err_total; /* bytes received in all */
	json_t *end;            /* the END object (owned), NULL after an ERROR */
};

/*
 * engine_exec - run cmd (/bin/sh -c) and wait for its END.  r is filled
 * (free with engine_exec_result_free even on error).
 * Returns 0 when the command ran (whatever its exit code), -EPROTO (the
 * agent answered ERROR or an END with "error"; r->end has it), -ETIMEDOUT,
 * -ECONNRESET, -ENOMEM.
 */
int engine_exec(struct guest_conn *c, const char *cmd, const struct engine_exec_opts *o,
		struct engine_exec_result *r);

/* engine_exec_result_free - release what r holds; r may be reused. */
void engine_exec_result_free(struct engine_exec_result *r);

#endif
