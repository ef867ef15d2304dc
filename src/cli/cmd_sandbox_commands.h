/*
 * cmd_sandbox_commands.h - `pandastack sandbox ps` and `sandbox
 * kill-command`: a sandbox's background commands (docs/api.md, "Background
 * commands"; started with `sandbox exec --background`), listed in the
 * sandbox group's table (cmd_sandbox.c).
 * Threads: the main thread.
 */
#ifndef PANDASTACK_CLI_CMD_SANDBOX_COMMANDS_H
#define PANDASTACK_CLI_CMD_SANDBOX_COMMANDS_H

#include "cli/cli.h"

extern const struct args_spec cmd_ps_spec;
extern const struct args_spec cmd_kill_command_spec;

/* cmd_ps_run - GET /v1/sandboxes/{id}/commands as a table.  Returns an
 * exit code (cli.h). */
int cmd_ps_run(struct cli_ctx *ctx, const struct args_result *a);

/* cmd_kill_command_run - POST /v1/sandboxes/{id}/commands/{cid}/kill and
 * print the command's state.  Returns an exit code (cli.h). */
int cmd_kill_command_run(struct cli_ctx *ctx, const struct args_result *a);

#endif
