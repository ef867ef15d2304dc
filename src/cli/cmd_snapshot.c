/*
 * cmd_snapshot.c - snapshots of sandboxes and what is made from them:
 * `pandastack sandbox snapshot|fork|pause|resume` (in the sandbox group's
 * table, cmd_sandbox.c) and `pandastack snapshot list|delete`.
 * Routes: docs/api.md, "Snapshots, forks, pause and resume".
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_snapshot.h"
#include "cli/output.h"

#define FORK_MAX 16
#define TTL_MAX 31536000 /* the daemon's --max-ttl decides */

static const char *const id_pos[] = {"ID", NULL};

/* ---- sandbox snapshot -------------------------------------------------------- */

static const struct arg_flag snapshot_flags[] = {
	{"name", ARG_VALUE, 0, "N", "a name to recognise the snapshot by (1-128 characters)"},
	{NULL, 0, 0, NULL, NULL},
};

const struct args_spec cmd_snapshot_spec = {
	.path = "sandbox snapshot",
	.usage = "ID [--name N]",
	.summary = "Capture a running sandbox (memory, processes, files) and print the snapshot id.",
	.details = "The sandbox keeps running.  Create sandboxes from the snapshot with\n"
		   "  pandastack sandbox create --snapshot SNAP_ID\n",
	.flags = snapshot_flags,
	.positionals = id_pos,
};

int cmd_snapshot_run(struct cli_ctx *ctx, const struct args_result *a)
{
	json_t *body = json_object();
	const char *name = args_value(a, "name");
	if (!body || (name && json_object_set_new(body, "name", json_string(name)))) {
		json_decref(body);
		return cli_usage_error(ctx, "--name is not valid UTF-8");
	}
	struct urlpath u;
	cli_sandbox_path(&u, a->pos[0], "/snapshots");
	struct client_response r;
	int code = cli_request(ctx, "POST", &u, body, &r);
	json_decref(body);
	return code ? code : cli_show_id(ctx, &r, "snapshot");
}

/* ---- sandbox fork ------------------------------------------------------------ */

static const struct arg_flag fork_flags[] = {
	{"count", ARG_VALUE, 0, "N", "how many forks, 1 to 16 (default 1)"},
	{"ttl", ARG_VALUE, 0, "S", "seconds until each fork is stopped (default: the server's)"},
	{NULL, 0, 0, NULL, NULL},
};

const struct args_spec cmd_fork_spec = {
	.path = "sandbox fork",
	.usage = "ID [--count N] [--ttl S]",
	.summary = "Clone a running sandbox N times from one capture; print the new ids.",
	.details = "Each fork has the sandbox's processes, code contexts, files and\n"
		   "environment, and its own clock and entropy.  All or none: when one\n"
		   "fork fails, none is left.  One id per line.\n",
	.flags = fork_flags,
	.positionals = id_pos,
};

int cmd_fork_run(struct cli_ctx *ctx, const struct args_result *a)
{
	int64_t count = 1, ttl = 0;
	int code = CLI_EXIT_OK;
	const char *cs = args_value(a, "count");
	if (cs && args_parse_int64(cs, 1, FORK_MAX, &count) < 0) {
		char msg[96];
		snprintf(msg, sizeof(msg), "--count wants a whole number from 1 to %d, not '%.32s'",
			 FORK_MAX, cs);
		return cli_usage_error(ctx, msg);
	}
	if (!code && args_value(a, "ttl"))
		code = cli_parse_seconds(ctx, "--ttl", args_value(a, "ttl"), 1, TTL_MAX, &ttl);
	if (code)
		return code;
	json_t *body = json_pack("{s:I}", "count", (json_int_t)count);
	if (body && ttl)
		json_object_set_new(body, "ttl_seconds", json_integer(ttl));
	if (!body)
		return cli_usage_error(ctx, "out of memory");
	struct urlpath u;
	cli_sandbox_path(&u, a->pos[0], "/fork");
	struct client_response r;
	code = cli_request(ctx, "POST", &u, body, &r);
	json_decref(body);
	if (code)
		return code;
	if (ctx->json) {
		out_raw(&r);
		client_response_clear(&r);
		return CLI_EXIT_OK;
	}
	json_t *list = json_object_get(r.json, "sandboxes");
	size_t i;
	json_t *s;
	json_array_foreach(list, i, s) {
		const char *id = json_string_value(json_object_get(s, "id"));
		char clean[128];
		if (id)
			printf("%s\n", out_sanitize(id, strlen(id), clean, sizeof(clean)));
	}
	if (!json_is_array(list)) {
		out_error("error: bad_response: the answer has no sandboxes");
		code = CLI_EXIT_API;
	}
	client_response_clear(&r);
	return code;
}

/* ---- sandbox pause, resume ----------------------------------------------------- */

const struct args_spec cmd_pause_spec = {
	.path = "sandbox pause",
	.usage = "ID",
	.summary = "Capture a sandbox and end its VM; its TTL stops until resume.",
	.details = "Prints the sandbox's fields (status: paused).  A paused sandbox keeps\n"
		   "its processes and code contexts on disk and survives a server restart.\n",
	.positionals = id_pos,
};

static const struct arg_flag resume_flags[] = {
	{"ttl", ARG_VALUE, 0, "S", "seconds until it is stopped (default: what it had left; "
				  "the server's default if it was paused at its TTL)"},
	{NULL, 0, 0, NULL, NULL},
};

const struct args_spec cmd_resume_spec = {
	.path = "sandbox resume",
	.usage = "ID [--ttl S]",
	.summary = "Restore a paused sandbox under the same id; print its fields.",
	.flags = resume_flags,
	.positionals = id_pos,
};

/* POST op with body (borrowed; NULL: none), then the sandbox's fields. */
static int pause_or_resume(struct cli_ctx *ctx, const struct args_result *a, const char *op,
			   json_t *body)
{
	struct urlpath u;
	cli_sandbox_path(&u, a->pos[0], op);
	return cli_call(ctx, "POST", &u, body, CLI_SHOW_FIELDS);
}

int cmd_pause_run(struct cli_ctx *ctx, const struct args_result *a)
{
	return pause_or_resume(ctx, a, "/pause", NULL);
}

int cmd_resume_run(struct cli_ctx *ctx, const struct args_result *a)
{
	int64_t ttl = 0;
	if (args_value(a, "ttl")) {
		int code = cli_parse_seconds(ctx, "--ttl", args_value(a, "ttl"), 1, TTL_MAX, &ttl);
		if (code)
			return code;
	}
	json_t *body = ttl ? json_pack("{s:I}", "ttl_seconds", (json_int_t)ttl) : NULL;
	if (ttl && !body)
		return cli_usage_error(ctx, "out of memory");
	int code = pause_or_resume(ctx, a, "/resume", body);
	json_decref(body);
	return code;
}

/* ---- snapshot list, delete ------------------------------------------------------ */

static const struct arg_flag list_flags[] = {
	{"sandbox", ARG_VALUE, 0, "ID", "only the snapshots of sandbox ID"},
	{NULL, 0, 0, NULL, NULL},
};

static const struct args_spec list_spec = {
	.path = "snapshot list",
	.usage = "[--sandbox ID]",
	.summary = "List your team's snapshots, oldest first.",
	.flags = list_flags,
};

static int run_list(struct cli_ctx *ctx, const struct args_result *a)
{
	struct urlpath u;
	urlpath_init(&u);
	urlpath_lit(&u, "/v1/snapshots");
	if (args_value(a, "sandbox"))
		urlpath_query(&u, "sandbox_id", args_value(a, "sandbox"));
	static const struct out_col cols[] = {
		{"ID", "id"},     {"SANDBOX", "sandbox_id"}, {"TEMPLATE", "template"},
		{"NAME", "name"}, {"SIZE", "size_bytes"},    {"CREATED", "created_at"},
	};
	return cli_list(ctx, &u, "snapshots", "snapshot list", cols, sizeof(cols) / sizeof(cols[0]));
}

static const struct args_spec delete_spec = {
	.path = "snapshot delete",
	.usage = "ID",
	.summary = "Delete a snapshot (sandboxes made from it keep working).",
	.details = "Prints nothing on success.  A snapshot a paused sandbox needs cannot be\n"
		   "deleted (snapshot_in_use): resume or delete that sandbox first.\n",
	.positionals = id_pos,
};

static int run_delete(struct cli_ctx *ctx, const struct args_result *a)
{
	struct urlpath u;
	urlpath_init(&u);
	urlpath_lit(&u, "/v1/snapshots");
	urlpath_seg(&u, a->pos[0]);
	return cli_call(ctx, "DELETE", &u, NULL, CLI_SHOW_NOTHING);
}

static const struct cli_cmd snapshot_cmds[] = {
	{"list", &list_spec, run_list},
	{"delete", &delete_spec, run_delete},
	{NULL, NULL, NULL},
};

const struct cli_group cli_group_snapshot = {
	.name = "snapshot",
	.alias = "snapshots",
	.summary = "list and delete snapshots of sandboxes",
	.cmds = snapshot_cmds,
};
