/*
 * cmd_fs_transfer.h - `pandastack fs upload` and `fs download`: their specs
 * and run functions, listed in the fs group's table (cmd_fs.c).  Files are
 * streamed (never read whole into memory); a download goes to a temporary
 * file beside the destination and is renamed over it only when complete.
 * Threads: the main thread (they install SIGINT/SIGTERM handlers for the
 * length of a transfer).
 */
#ifndef PANDASTACK_CLI_CMD_FS_TRANSFER_H
#define PANDASTACK_CLI_CMD_FS_TRANSFER_H

#include <stddef.h>

#include "cli/cli.h"

extern const struct args_spec cmd_upload_spec;
extern const struct args_spec cmd_download_spec;

/* cmd_upload_run - PUT /v1/sandboxes/{id}/fs?path=R from --local; returns
 * the exit code. */
int cmd_upload_run(struct cli_ctx *ctx, const struct args_result *a);

/* cmd_download_run - GET /v1/sandboxes/{id}/fs?path=R into --local;
 * returns the exit code. */
int cmd_download_run(struct cli_ctx *ctx, const struct args_result *a);

/*
 * cmd_download_target - where a download of remote goes for --local
 * local: local itself, or local/<remote's base name> when local is an
 * existing directory, into out (cap bytes).  Returns 0, -ENAMETOOLONG,
 * -EINVAL (remote has no base name, e.g. "/").
 */
int cmd_download_target(const char *local, const char *remote, char *out, size_t cap);

#endif
