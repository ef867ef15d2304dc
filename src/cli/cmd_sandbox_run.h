/*
 * cmd_sandbox_run.h - `pandastack sandbox exec` and `sandbox run-code`:
 * their specs and run functions, listed in the sandbox group's table
 * (cmd_sandbox.c).  Both print the command's stdout on stdout and its
 * stderr on stderr, raw, and exit with the command's exit code.
 * Threads: the main thread.
 */
#ifndef PANDASTACK_CLI_CMD_SANDBOX_RUN_H
#define PANDASTACK_CLI_CMD_SANDBOX_RUN_H

#include <jansson.h>

#include "cli/cli.h"

extern const struct args_spec cmd_exec_spec;
extern const struct args_spec cmd_run_code_spec;

/* cmd_exec_run - POST /v1/sandboxes/{id}/exec; returns the exit code. */
int cmd_exec_run(struct cli_ctx *ctx, const struct args_result *a);

/* cmd_run_code_run - POST /v1/sandboxes/{id}/run_code; returns the exit
 * code. */
int cmd_run_code_run(struct cli_ctx *ctx, const struct args_result *a);

/*
 * cmd_exit_status - a command's exit code from the API (the JSON integer
 * v) as a process exit code: 0..255 as is, anything else (negative, over
 * 255, not an integer) 255.  Pure.
 */
int cmd_exit_status(const json_t *v);

#endif
