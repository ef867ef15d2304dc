/*
 * cmd_templates.c - `pandastack templates list|build`.  Routes: docs/api.md
 * "GET /v1/templates" and "POST /v1/templates/{name}/build" (admin).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/output.h"

/* ---- list ---------------------------------------------------------------------------- */

static const struct args_spec list_spec = {
	.path = "templates list",
	.usage = "",
	.summary = "List the templates sandboxes can be created from, and their state.",
	.details = "STATUS is ready, stale (rebuild it), invalid or missing; BUILD is the last\n"
		   "build started through the API.\n",
};

static int run_list(struct cli_ctx *ctx, const struct args_result *a)
{
	(void)a;
	struct urlpath u;
	urlpath_init(&u);
	urlpath_lit(&u, "/v1/templates");
	static const struct out_col cols[] = {
		{"NAME", "name"},           {"STATUS", "status"},   {"VCPUS", "vcpus"},
		{"MEMORY_MIB", "memory_mib"}, {"POOL", "pool_ready"}, {"BUILD", "build"},
		{"ERROR", "error"},
	};
	struct client_response r;
	int code = cli_request(ctx, "GET", &u, NULL, &r);
	if (code)
		return code;
	/* The table shows the build's status rather than its whole object. */
	json_t *rows = ctx->json ? NULL : out_list_items(r.json, "templates"), *row;
	size_t i;
	json_array_foreach(rows, i, row) {
		json_t *b = json_object_get(row, "build");
		json_t *st = json_object_get(b, "status");
		if (json_is_object(b))
			json_object_set(row, "build", st ? st : json_null());
	}
	return cli_show_table(ctx, &r, "templates", "template list", cols,
			      sizeof(cols) / sizeof(cols[0]));
}

/* ---- build ----------------------------------------------------------------------------- */

static const struct arg_flag build_flags[] = {
	{"force", ARG_BOOL, 0, NULL, "rebuild even when the template is up to date"},
	{NULL, 0, 0, NULL, NULL},
};

static const char *const name_pos[] = {"NAME", NULL};

static const struct args_spec build_spec = {
	.path = "templates build",
	.usage = "NAME [--force]",
	.summary = "Start baking a template on the server (admin key; takes minutes).",
	.details = "Returns once the build started; follow it with 'pandastack templates list'.\n"
		   "The image must exist in the server's cache (make images).\n",
	.flags = build_flags,
	.positionals = name_pos,
};

static int run_build(struct cli_ctx *ctx, const struct args_result *a)
{
	json_t *body = json_pack("{s:b}", "force", args_has(a, "force"));
	if (!body)
		return cli_usage_error(ctx, "out of memory");
	struct urlpath u;
	urlpath_init(&u);
	urlpath_lit(&u, "/v1/templates");
	urlpath_seg(&u, a->pos[0]);
	urlpath_lit(&u, "/build");
	int code = cli_call(ctx, "POST", &u, body, CLI_SHOW_FIELDS);
	json_decref(body);
	return code;
}

/* ---- the group ------------------------------------------------------------------------ */

static const struct cli_cmd templates_cmds[] = {
	{"list", &list_spec, run_list},
	{"build", &build_spec, run_build},
	{NULL, NULL, NULL},
};

const struct cli_group cli_group_templates = {
	.name = "templates",
	.alias = "template",
	.summary = "list templates and start their builds",
	.cmds = templates_cmds,
};
