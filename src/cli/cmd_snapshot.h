/*
 * cmd_snapshot.h - the sandbox group's snapshot commands (cmd_snapshot.c):
 * `pandastack sandbox snapshot|fork|pause|resume`, each a spec and a run
 * function for the group's table (cli.h).  The `snapshot` group itself is
 * cli_group_snapshot (cli.h).  Main thread only.
 */
#ifndef PANDASTACK_CLI_CMD_SNAPSHOT_H
#define PANDASTACK_CLI_CMD_SNAPSHOT_H

#include "cli/cli.h"

extern const struct args_spec cmd_snapshot_spec;
extern const struct args_spec cmd_fork_spec;
extern const struct args_spec cmd_pause_spec;
extern const struct args_spec cmd_resume_spec;

/* Run the parsed command; return the process exit code (cli.h). */
int cmd_snapshot_run(struct cli_ctx *ctx, const struct args_result *a);
int cmd_fork_run(struct cli_ctx *ctx, const struct args_result *a);
int cmd_pause_run(struct cli_ctx *ctx, const struct args_result *a);
int cmd_resume_run(struct cli_ctx *ctx, const struct args_result *a);

#endif
