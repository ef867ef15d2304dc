/*
 * cmd_keys.c - `pandastack keys create|list|delete`: the team's API keys.
 * Routes: docs/api.md "POST /v1/keys", "GET /v1/keys", "DELETE
 * /v1/keys/{id}".
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/output.h"

/* ---- create -------------------------------------------------------------------------- */

static const struct arg_flag create_flags[] = {
	{"name", ARG_VALUE, 1, "N", "a name to recognise the key by (1-64 printable characters)"},
	{"team", ARG_VALUE, 0, "T", "team of the new key (default: yours; others need an admin key)"},
	{NULL, 0, 0, NULL, NULL},
};

static const struct args_spec create_spec = {
	.path = "keys create",
	.usage = "--name N [--team T]",
	.summary = "Create an API key and print its secret (shown only this once).",
	.details = "stdout gets the secret alone, so it can be captured:\n"
		   "  key=$(pandastack keys create --name ci)\n"
		   "The key's id (for keys delete) is printed on stderr.\n",
	.flags = create_flags,
};

static int run_create(struct cli_ctx *ctx, const struct args_result *a)
{
	json_t *body = json_pack("{s:s}", "name", args_value(a, "name"));
	if (!body)
		return cli_usage_error(ctx, "--name is not valid UTF-8");
	const char *team = args_value(a, "team");
	if (team && json_object_set_new(body, "team", json_string(team))) {
		json_decref(body);
		return cli_usage_error(ctx, "--team is not valid UTF-8");
	}
	struct urlpath u;
	urlpath_init(&u);
	urlpath_lit(&u, "/v1/keys");
	struct client_response r;
	int code = cli_request(ctx, "POST", &u, body, &r);
	json_decref(body);
	if (code)
		return code;
	json_t *key = json_object_get(r.json, "key");
	if (ctx->json) {
		out_raw(&r);
	} else if (json_is_string(key)) {
		char k[256], id[128];
		const char *kid = json_string_value(json_object_get(r.json, "id"));
		printf("%s\n", out_sanitize(json_string_value(key), json_string_length(key), k,
					    sizeof(k)));
		fflush(stdout);
		out_error("created key %s; its secret is shown only this once",
			  kid ? out_sanitize(kid, strlen(kid), id, sizeof(id)) : "?");
	} else {
		out_error("error: bad_response: the answer has no key");
		code = CLI_EXIT_API;
	}
	client_response_clear(&r);
	return code;
}

/* ---- list ---------------------------------------------------------------------------- */

static const struct args_spec list_spec = {
	.path = "keys list",
	.usage = "",
	.summary = "List your team's API keys (every key, for an admin key); never secrets.",
};

static int run_list(struct cli_ctx *ctx, const struct args_result *a)
{
	(void)a;
	struct urlpath u;
	urlpath_init(&u);
	urlpath_lit(&u, "/v1/keys");
	static const struct out_col cols[] = {
		{"ID", "id"},       {"NAME", "name"},          {"TEAM", "team"},
		{"ADMIN", "admin"}, {"CREATED", "created_at"},
	};
	return cli_list(ctx, &u, "keys", "key list", cols, sizeof(cols) / sizeof(cols[0]));
}

/* ---- delete -------------------------------------------------------------------------- */

static const char *const id_pos[] = {"ID", NULL};

static const struct args_spec delete_spec = {
	.path = "keys delete",
	.usage = "ID",
	.summary = "Delete an API key by its id (key_...): it stops working at once.",
	.details = "Prints nothing on success.  Admin keys cannot be deleted.\n",
	.positionals = id_pos,
};

static int run_delete(struct cli_ctx *ctx, const struct args_result *a)
{
	struct urlpath u;
	urlpath_init(&u);
	urlpath_lit(&u, "/v1/keys");
	urlpath_seg(&u, a->pos[0]);
	return cli_call(ctx, "DELETE", &u, NULL, CLI_SHOW_NOTHING);
}

/* ---- the group ------------------------------------------------------------------------ */

static const struct cli_cmd keys_cmds[] = {
	{"create", &create_spec, run_create},
	{"list", &list_spec, run_list},
	{"delete", &delete_spec, run_delete},
	{NULL, NULL, NULL},
};

const struct cli_group cli_group_keys = {
	.name = "keys",
	.alias = "key",
	.summary = "create, list and delete API keys",
	.cmds = keys_cmds,
};
