/*
 * cmd_fs.c - `pandastack fs ls|stat|rm|mkdir`, and the fs group's table
 * (upload and download are in cmd_fs_transfer.c).  Routes: docs/api.md
 * "Files": GET .../fs/list, GET .../fs/stat, DELETE .../fs, POST .../fs/mkdir.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_fs_transfer.h"
#include "cli/output.h"

static const char *const id_path_pos[] = {"ID", "PATH", NULL};

/* ---- ls ---------------------------------------------------------------------------- */

static const struct args_spec ls_spec = {
	.path = "fs ls",
	.usage = "ID PATH",
	.summary = "List a directory in a sandbox: type, size, modification time, name.",
	.details = "At most 10000 entries, sorted by name; a longer listing is cut, with a note\n"
		   "on stderr.\n",
	.positionals = id_path_pos,
};

static int run_ls(struct cli_ctx *ctx, const struct args_result *a)
{
	static const struct out_col cols[] = {
		{"TYPE", "type"},
		{"SIZE", "size"},
		{"MODIFIED", "mtime_ms"},
		{"NAME", "name"},
	};
	struct urlpath u;
	cli_sandbox_path(&u, a->pos[0], "/fs/list");
	urlpath_query(&u, "path", a->pos[1]);
	struct client_response r;
	int code = cli_request(ctx, "GET", &u, NULL, &r);
	if (code)
		return code;
	int cut = !ctx->json && json_is_true(json_object_get(r.json, "truncated"));
	size_t n = json_array_size(out_list_items(r.json, "entries"));
	code = cli_show_table(ctx, &r, "entries", "entries", cols, sizeof(cols) / sizeof(cols[0]));
	if (!code && cut)
		out_error("the listing was cut at %zu entries", n);
	return code;
}

/* ---- stat ---------------------------------------------------------------------------- */

static const struct args_spec stat_spec = {
	.path = "fs stat",
	.usage = "ID PATH",
	.summary = "Show a file's entry in a sandbox: name, path, type, size, mode, mtime.",
	.positionals = id_path_pos,
};

static int run_stat(struct cli_ctx *ctx, const struct args_result *a)
{
	struct urlpath u;
	cli_sandbox_path(&u, a->pos[0], "/fs/stat");
	urlpath_query(&u, "path", a->pos[1]);
	return cli_call(ctx, "GET", &u, NULL, CLI_SHOW_FIELDS);
}

/* ---- rm ------------------------------------------------------------------------------ */

static const struct arg_flag rm_flags[] = {
	{"recursive", ARG_BOOL, 0, NULL, "remove a directory and everything in it"},
	{NULL, 0, 0, NULL, NULL},
};

static const struct args_spec rm_spec = {
	.path = "fs rm",
	.usage = "ID PATH [--recursive]",
	.summary = "Remove a file, or a directory (an empty one unless --recursive).",
	.details = "Prints nothing on success.\n",
	.flags = rm_flags,
	.positionals = id_path_pos,
};

static int run_rm(struct cli_ctx *ctx, const struct args_result *a)
{
	struct urlpath u;
	cli_sandbox_path(&u, a->pos[0], "/fs");
	urlpath_query(&u, "path", a->pos[1]);
	if (args_has(a, "recursive"))
		urlpath_query(&u, "recursive", "true");
	return cli_call(ctx, "DELETE", &u, NULL, CLI_SHOW_NOTHING);
}

/* ---- mkdir --------------------------------------------------------------------------- */

static const struct arg_flag mkdir_flags[] = {
	{"no-parents", ARG_BOOL, 0, NULL,
	 "fail when a parent is missing or the directory exists"},
	{NULL, 0, 0, NULL, NULL},
};

static const struct args_spec mkdir_spec = {
	.path = "fs mkdir",
	.usage = "ID PATH [--no-parents]",
	.summary = "Create a directory in a sandbox, with its parents (like mkdir -p).",
	.details = "Prints nothing on success (--json: the new directory's entry).\n",
	.flags = mkdir_flags,
	.positionals = id_path_pos,
};

static int run_mkdir(struct cli_ctx *ctx, const struct args_result *a)
{
	json_t *body = json_pack("{s:s, s:b}", "path", a->pos[1], "parents",
				 !args_has(a, "no-parents"));
	if (!body)
		return cli_usage_error(ctx, "PATH is not valid UTF-8");
	struct urlpath u;
	cli_sandbox_path(&u, a->pos[0], "/fs/mkdir");
	int code = cli_call(ctx, "POST", &u, body, CLI_SHOW_NOTHING);
	json_decref(body);
	return code;
}

/* ---- the group ------------------------------------------------------------------------ */

static const struct cli_cmd fs_cmds[] = {
	{"upload", &cmd_upload_spec, cmd_upload_run},
	{"download", &cmd_download_spec, cmd_download_run},
	{"ls", &ls_spec, run_ls},
	{"stat", &stat_spec, run_stat},
	{"rm", &rm_spec, run_rm},
	{"mkdir", &mkdir_spec, run_mkdir},
	{NULL, NULL, NULL},
};

const struct cli_group cli_group_fs = {
	.name = "fs",
	.alias = NULL,
	.summary = "move files in and out of a sandbox and look at its filesystem",
	.cmds = fs_cmds,
};
