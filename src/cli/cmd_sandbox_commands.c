/*
 * cmd_sandbox_commands.c - `pandastack sandbox ps` and `sandbox
 * kill-command` (see cmd_sandbox_commands.h).  Routes: docs/api.md "GET
 * /v1/sandboxes/{id}/commands" and "POST .../commands/{cid}/kill".
 */
#include "cli/cmd_sandbox_commands.h"

#include <string.h>

#include "cli/output.h"

static const char *const id_pos[] = {"ID", NULL};
static const char *const id_cid_pos[] = {"ID", "CID", NULL};

const struct args_spec cmd_ps_spec = {
	.path = "sandbox ps",
	.usage = "ID",
	.summary = "List a sandbox's background commands, running and ended, oldest first.",
	.details = "Start one with `sandbox exec --background`.  With --json the API's answer\n"
		   "{commands: [...]} is printed.\n",
	.positionals = id_pos,
};

int cmd_ps_run(struct cli_ctx *ctx, const struct args_result *a)
{
	static const struct out_col cols[] = {
		{"ID", "id"},      {"PID", "pid"},          {"RUNNING", "running"},
		{"EXIT", "exit_code"}, {"STARTED", "started_at"}, {"CMD", "cmd"},
	};
	struct urlpath u;
	cli_sandbox_path(&u, a->pos[0], "/commands");
	return cli_list(ctx, &u, "commands", "sandbox ps", cols, sizeof(cols) / sizeof(cols[0]));
}

static const struct arg_flag kill_flags[] = {
	{"signal", ARG_VALUE, 0, "SIG",
	 "SIGKILL (default: the whole process tree), SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, "
	 "SIGUSR2"},
	{NULL, 0, 0, NULL, NULL},
};

const struct args_spec cmd_kill_command_spec = {
	.path = "sandbox kill-command",
	.usage = "ID CID [--signal SIG]",
	.summary = "Send a signal to a background command and show its state.",
	.details = "Waits until the command's shell exited, or 2 s.  Killing an ended command is\n"
		   "not an error.\n\nExample:\n  pandastack sandbox kill-command \"$id\" \"$cid\" "
		   "--signal SIGTERM\n",
	.flags = kill_flags,
	.positionals = id_cid_pos,
};

int cmd_kill_command_run(struct cli_ctx *ctx, const struct args_result *a)
{
	const char *sig = args_value(a, "signal");
	json_t *body = json_pack("{s:s}", "signal", sig ? sig : "SIGKILL");
	if (!body)
		return cli_usage_error(ctx, "--signal is not valid UTF-8");
	struct urlpath u;
	cli_sandbox_path(&u, a->pos[0], "/commands");
	urlpath_seg(&u, a->pos[1]);
	urlpath_lit(&u, "/kill");
	int code = cli_call(ctx, "POST", &u, body, CLI_SHOW_FIELDS);
	json_decref(body);
	return code;
}
