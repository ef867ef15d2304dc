/*
 * cmd_sandbox.c - `pandastack sandbox create|list|get|delete|set-ttl`, and
 * the group's table (exec and run-code are in cmd_sandbox_run.c, ps and
 * kill-command in cmd_sandbox_commands.c).
 * Routes: docs/api.md, "POST/GET /v1/sandboxes", "GET/DELETE
 * /v1/sandboxes/{id}", "POST /v1/sandboxes/{id}/ttl".
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_sandbox_commands.h"
#include "cli/cmd_sandbox_run.h"
#include "cli/output.h"

#define TTL_MAX 31536000 /* a year in seconds: the daemon's --max-ttl decides */
#define KV_MAX 256       /* K=V words taken from one flag */

/* ---- create ----------------------------------------------------------------- */

static const struct arg_flag create_flags[] = {
	{"template", ARG_VALUE, 1, "T", "template to restore, e.g. code-interpreter"},
	{"ttl", ARG_VALUE, 0, "S", "seconds until the sandbox is stopped (default: the server's)"},
	{"env", ARG_REPEAT, 0, "K=V", "default environment variable of every exec"},
	{"metadata", ARG_REPEAT, 0, "K=V", "metadata to attach (filter with list --metadata)"},
	{NULL, 0, 0, NULL, NULL},
};

static const struct args_spec create_spec = {
	.path = "sandbox create",
	.usage = "--template T [--ttl S] [--env K=V]... [--metadata K=V]...",
	.summary = "Create a sandbox from a template and print its id.",
	.details = "With --json the whole sandbox object is printed instead of the id.\n\n"
		   "Example:\n  id=$(pandastack sandbox create --template code-interpreter "
		   "--ttl 3600)\n",
	.flags = create_flags,
};

/* Add the K=V words of repeatable flag name to body as field. */
static int add_kv(struct cli_ctx *ctx, const struct args_result *a, const char *name,
		  const char *field, json_t *body)
{
	const char *words[KV_MAX];
	char what[40];
	size_t n = args_values(a, name, words, KV_MAX);
	if (n == 0)
		return CLI_EXIT_OK;
	snprintf(what, sizeof(what), "--%s", name);
	if (n > KV_MAX)
		return cli_usage_error(ctx, "too many K=V flags");
	json_t *obj;
	int code = cli_parse_kv_list(ctx, what, words, n, &obj);
	if (code)
		return code;
	json_object_set_new(body, field, obj);
	return CLI_EXIT_OK;
}

static int run_create(struct cli_ctx *ctx, const struct args_result *a)
{
	json_t *body = json_pack("{s:s}", "template", args_value(a, "template"));
	if (!body)
		return cli_usage_error(ctx, "--template is not valid UTF-8");
	int code = CLI_EXIT_OK;
	const char *ttl = args_value(a, "ttl");
	if (ttl) {
		int64_t s;
		code = cli_parse_seconds(ctx, "--ttl", ttl, 1, TTL_MAX, &s);
		if (!code)
			json_object_set_new(body, "ttl_seconds", json_integer(s));
	}
	if (!code)
		code = add_kv(ctx, a, "env", "env", body);
	if (!code)
		code = add_kv(ctx, a, "metadata", "metadata", body);
	struct client_response r = {0};
	if (!code) {
		struct urlpath u;
		urlpath_init(&u);
		urlpath_lit(&u, "/v1/sandboxes");
		code = cli_request(ctx, "POST", &u, body, &r);
	}
	json_decref(body);
	if (code)
		return code;
	const char *id = json_string_value(json_object_get(r.json, "id"));
	if (ctx->json) {
		out_raw(&r);
	} else if (id) {
		char clean[128];
		printf("%s\n", out_sanitize(id, strlen(id), clean, sizeof(clean)));
	} else {
		out_error("error: bad_response: the answer has no sandbox id");
		code = CLI_EXIT_API;
	}
	client_response_clear(&r);
	return code;
}

/* ---- list ------------------------------------------------------------------- */

static const struct arg_flag list_flags[] = {
	{"status", ARG_VALUE, 0, "S", "only sandboxes in status S: running, paused, stopped, error"},
	{"metadata", ARG_REPEAT, 0, "K=V", "only sandboxes whose metadata K is V"},
	{NULL, 0, 0, NULL, NULL},
};

static const struct args_spec list_spec = {
	.path = "sandbox list",
	.usage = "[--status S] [--metadata K=V]...",
	.summary = "List your team's sandboxes, oldest first.",
	.flags = list_flags,
};

static int run_list(struct cli_ctx *ctx, const struct args_result *a)
{
	struct urlpath u;
	urlpath_init(&u);
	urlpath_lit(&u, "/v1/sandboxes");
	if (args_value(a, "status"))
		urlpath_query(&u, "status", args_value(a, "status"));
	const char *meta[KV_MAX];
	size_t n = args_values(a, "metadata", meta, KV_MAX);
	if (n > KV_MAX)
		return cli_usage_error(ctx, "too many --metadata flags");
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(meta[i], '=');
		if (!eq || eq == meta[i] || eq - meta[i] > 64)
			return cli_usage_error(ctx, "--metadata wants KEY=VALUE");
		char key[80];
		snprintf(key, sizeof(key), "metadata.%.*s", (int)(eq - meta[i]), meta[i]);
		urlpath_query(&u, key, eq + 1);
	}
	static const struct out_col cols[] = {
		{"ID", "id"},           {"TEMPLATE", "template"}, {"STATUS", "status"},
		{"CREATED", "created_at"}, {"EXPIRES", "expires_at"},
	};
	struct client_response r;
	int code = cli_request(ctx, "GET", &u, NULL, &r);
	return code ? code
		    : cli_show_table(ctx, &r, "sandboxes", "sandbox list", cols,
				     sizeof(cols) / sizeof(cols[0]));
}

/* ---- get, delete, set-ttl ------------------------------------------------------ */

static const char *const id_pos[] = {"ID", NULL};

static const struct args_spec get_spec = {
	.path = "sandbox get",
	.usage = "ID",
	.summary = "Show one sandbox: status, template, times, metadata.",
	.positionals = id_pos,
};

static int run_get(struct cli_ctx *ctx, const struct args_result *a)
{
	struct urlpath u;
	cli_sandbox_path(&u, a->pos[0], "");
	struct client_response r;
	int code = cli_request(ctx, "GET", &u, NULL, &r);
	return code ? code : cli_show_fields(ctx, &r);
}

static const struct args_spec delete_spec = {
	.path = "sandbox delete",
	.usage = "ID",
	.summary = "Stop a sandbox and remove it (its files are gone).",
	.details = "Prints nothing on success.\n",
	.positionals = id_pos,
};

static int run_delete(struct cli_ctx *ctx, const struct args_result *a)
{
	struct urlpath u;
	cli_sandbox_path(&u, a->pos[0], "");
	struct client_response r;
	int code = cli_request(ctx, "DELETE", &u, NULL, &r);
	return code ? code : cli_show_nothing(ctx, &r);
}

static const char *const ttl_pos[] = {"ID", "S", NULL};

static const struct args_spec set_ttl_spec = {
	.path = "sandbox set-ttl",
	.usage = "ID S",
	.summary = "Make a running sandbox expire S seconds from now; print the new expiry.",
	.positionals = ttl_pos,
};

static int run_set_ttl(struct cli_ctx *ctx, const struct args_result *a)
{
	int64_t s;
	int code = cli_parse_seconds(ctx, "S", a->pos[1], 1, TTL_MAX, &s);
	if (code)
		return code;
	json_t *body = json_pack("{s:I}", "ttl_seconds", (json_int_t)s);
	if (!body)
		return cli_usage_error(ctx, "out of memory");
	struct urlpath u;
	cli_sandbox_path(&u, a->pos[0], "/ttl");
	struct client_response r;
	code = cli_request(ctx, "POST", &u, body, &r);
	json_decref(body);
	if (code)
		return code;
	if (ctx->json) {
		out_raw(&r);
	} else {
		char v[OUT_CELL_MAX];
		json_t *exp = json_object_get(r.json, "expires_at");
		if (exp)
			printf("expires_at: %s\n", out_value("expires_at", exp, v, sizeof(v)));
	}
	client_response_clear(&r);
	return CLI_EXIT_OK;
}

/* ---- the group ------------------------------------------------------------------ */

static const struct cli_cmd sandbox_cmds[] = {
	{"create", &create_spec, run_create},
	{"list", &list_spec, run_list},
	{"get", &get_spec, run_get},
	{"delete", &delete_spec, run_delete},
	{"set-ttl", &set_ttl_spec, run_set_ttl},
	{"exec", &cmd_exec_spec, cmd_exec_run},
	{"run-code", &cmd_run_code_spec, cmd_run_code_run},
	{"ps", &cmd_ps_spec, cmd_ps_run},
	{"kill-command", &cmd_kill_command_spec, cmd_kill_command_run},
	{NULL, NULL, NULL},
};

const struct cli_group cli_group_sandbox = {
	.name = "sandbox",
	.alias = "sandboxes",
	.summary = "create sandboxes, run commands and code in them, delete them",
	.cmds = sandbox_cmds,
};
