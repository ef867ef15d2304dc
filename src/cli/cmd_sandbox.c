/*
 * cmd_sandbox.c - `pandastack sandbox create|list|get|delete|set-ttl|url`,
 * and the group's table (exec and run-code are in cmd_sandbox_run.c, ps
 * and kill-command in cmd_sandbox_commands.c, snapshot, fork, pause and
 * resume in cmd_snapshot.c).
 * Routes: docs/api.md, "POST/GET /v1/sandboxes", "GET/DELETE
 * /v1/sandboxes/{id}", "POST /v1/sandboxes/{id}/ttl", "Exposed ports".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_sandbox_commands.h"
#include "cli/cmd_sandbox_run.h"
#include "cli/cmd_snapshot.h"
#include "cli/output.h"

#define TTL_MAX 31536000 /* a year in seconds: the daemon's --max-ttl decides */
#define KV_MAX 256       /* K=V words taken from one flag */

/* ---- create ----------------------------------------------------------------- */

static const struct arg_flag create_flags[] = {
	{"template", ARG_VALUE, 0, "T", "template to restore, e.g. code-interpreter"},
	{"snapshot", ARG_VALUE, 0, "SNAP", "snapshot to restore instead (sandbox snapshot prints one)"},
	{"on-timeout", ARG_VALUE, 0, "A", "what the TTL does: stop (default) or pause"},
	{"ttl", ARG_VALUE, 0, "S", "seconds until the sandbox is stopped (default: the server's)"},
	{"env", ARG_REPEAT, 0, "K=V", "default environment variable of every exec"},
	{"metadata", ARG_REPEAT, 0, "K=V", "metadata to attach (filter with list --metadata)"},
	{"network", ARG_VALUE, 0, "JSON",
	 "network settings, a JSON object: public_ports, egress, allow_out, deny_out"},
	{"public-ports", ARG_BOOL, 0, NULL, "serve the sandbox's ports without credentials"},
	{NULL, 0, 0, NULL, NULL},
};

static const struct args_spec create_spec = {
	.path = "sandbox create",
	.usage = "--template T | --snapshot SNAP [--ttl S] [--on-timeout stop|pause] [--env K=V]... "
		 "[--metadata K=V]... [--network JSON] [--public-ports]",
	.summary = "Create a sandbox from a template or a snapshot and print its id.",
	.details = "With --json the whole sandbox object is printed instead of the id.\n\n"
		   "--network takes the API's network object (docs/network.md); --public-ports\n"
		   "sets its public_ports to true.\n\n"
		   "Examples:\n  id=$(pandastack sandbox create --template code-interpreter "
		   "--ttl 3600)\n"
		   "  pandastack sandbox create --template base --network "
		   "'{\"egress\":\"deny\",\"allow_out\":[\"pypi.org\"]}'\n",
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

/* --network JSON and --public-ports into body's "network". */
static int add_network(struct cli_ctx *ctx, const struct args_result *a, json_t *body)
{
	const char *text = args_value(a, "network");
	int pub = args_has(a, "public-ports");
	if (!text && !pub)
		return CLI_EXIT_OK;
	json_t *net = text ? json_loads(text, JSON_REJECT_DUPLICATES, NULL) : json_object();
	if (!json_is_object(net)) {
		json_decref(net);
		return cli_usage_error(ctx, "--network wants a JSON object, e.g. "
					    "'{\"public_ports\": true}'");
	}
	if (pub)
		json_object_set_new(net, "public_ports", json_true());
	json_object_set_new(body, "network", net);
	return CLI_EXIT_OK;
}

static int run_create(struct cli_ctx *ctx, const struct args_result *a)
{
	const char *tpl = args_value(a, "template"), *snap = args_value(a, "snapshot");
	const char *on_timeout = args_value(a, "on-timeout");
	if (!tpl && !snap)
		return cli_usage_error(ctx, "missing --template T (or --snapshot SNAP)");
	json_t *body = json_object();
	if (!body || (tpl && json_object_set_new(body, "template", json_string(tpl))) ||
	    (snap && json_object_set_new(body, "snapshot", json_string(snap))) ||
	    (on_timeout && json_object_set_new(body, "on_timeout", json_string(on_timeout)))) {
		json_decref(body);
		return cli_usage_error(ctx, "a flag's value is not valid UTF-8");
	}
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
	if (!code)
		code = add_network(ctx, a, body);
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
	return cli_show_id(ctx, &r, "sandbox");
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
	return cli_list(ctx, &u, "sandboxes", "sandbox list", cols, sizeof(cols) / sizeof(cols[0]));
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
	return cli_call(ctx, "GET", &u, NULL, CLI_SHOW_FIELDS);
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
	return cli_call(ctx, "DELETE", &u, NULL, CLI_SHOW_NOTHING);
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

/* ---- url ------------------------------------------------------------------------ */

static const char *const url_pos[] = {"ID", "PORT", NULL};

static const struct arg_flag url_flags[] = {
	{"path", ARG_VALUE, 0, "P", "path (and query) on the server (default /)"},
	{"token", ARG_BOOL, 0, NULL,
	 "put the sandbox's access token in the URL's query (for a browser)"},
	{NULL, 0, 0, NULL, NULL},
};

static const struct args_spec url_spec = {
	.path = "sandbox url",
	.usage = "ID PORT [--path P] [--token]",
	.summary = "Print the URL of a port of a sandbox, where a server in it listens.",
	.details = "By host name (PORT-sbx-....DOMAIN, same scheme and port as the API) when the\n"
		   "daemon runs with --proxy-domain, else API_URL/v1/sandboxes/ID/ports/PORT/.\n"
		   "Private ports need the sandbox's access token: send it as the X-Access-Token\n"
		   "header (`sandbox get` shows access_token), or use --token.\n"
		   "With --json: {\"url\", \"host\", \"access_token\"}.\n\n"
		   "Example:\n  curl -H \"X-Access-Token: $TOKEN\" \"$(pandastack sandbox url $ID 8000)\"\n",
	.positionals = url_pos,
	.flags = url_flags,
};

/* The URL of port (path rel, no leading "/") of sandbox id under base (the
 * API URL), by host name when domain is set.  Returns a heap string. */
static char *port_url(const char *base, const char *id, const char *domain, long port,
		      const char *rel, char *host, size_t hostlen)
{
	char *url = NULL;
	host[0] = '\0';
	if (domain) {
		const char *scheme_end = strstr(base, "://");
		const char *auth = scheme_end ? scheme_end + 3 : base;
		size_t alen = strcspn(auth, "/");
		/* the API's port, ":N" after the host (after "]" for IPv6) */
		const char *end = auth[0] == '[' ? memchr(auth, ']', alen) : auth;
		const char *colon = end ? memchr(end, ':', alen - (size_t)(end - auth)) : NULL;
		char dashed[128];
		snprintf(dashed, sizeof(dashed), "%s", id);
		char *us = strchr(dashed, '_');
		if (us)
			*us = '-';
		snprintf(host, hostlen, "%ld-%s.%s", port, dashed, domain);
		if (asprintf(&url, "%.*s://%s%.*s/%s", scheme_end ? (int)(scheme_end - base) : 4,
			     scheme_end ? base : "http", host,
			     colon ? (int)(alen - (size_t)(colon - auth)) : 0, colon ? colon : "",
			     rel) < 0)
			url = NULL;
	} else if (asprintf(&url, "%s/v1/sandboxes/%s/ports/%ld/%s", base, id, port, rel) < 0) {
		url = NULL;
	}
	return url;
}

static int run_url(struct cli_ctx *ctx, const struct args_result *a)
{
	int64_t port;
	if (args_parse_int64(a->pos[1], 1, 65535, &port) < 0)
		return cli_usage_error(ctx, "PORT must be a number from 1 to 65535");
	const char *path = args_value(a, "path");
	const char *rel = path ? path + strspn(path, "/") : "";
	for (const unsigned char *p = (const unsigned char *)rel; *p; p++)
		if (*p <= 0x20 || *p == 0x7f)
			return cli_usage_error(ctx, "--path holds a space or a control character");
	struct client *client;
	int code = cli_client(ctx, &client);
	if (code)
		return code;
	struct urlpath u;
	cli_sandbox_path(&u, a->pos[0], "");
	struct client_response r;
	code = cli_request(ctx, "GET", &u, NULL, &r);
	if (code)
		return code;
	const char *id = json_string_value(json_object_get(r.json, "id"));
	const char *domain = json_string_value(json_object_get(r.json, "proxy_domain"));
	const char *token = json_string_value(json_object_get(r.json, "access_token"));
	char host[512];
	char *url = id ? port_url(client_base(client), id, domain, (long)port, rel, host,
				 sizeof(host))
		       : NULL;
	if (url && args_has(a, "token")) {
		char *with = NULL;
		if (!token) {
			out_error("error: no_access_token: this sandbox has no access token");
			code = CLI_EXIT_API;
		} else if (asprintf(&with, "%s%saccess_token=%s", url, strchr(rel, '?') ? "&" : "?",
				    token) < 0) {
			with = NULL;
		}
		free(url);
		url = with;
	}
	if (!url && !code) {
		out_error("error: bad_response: the answer has no sandbox id");
		code = CLI_EXIT_API;
	}
	if (url && ctx->json) {
		json_t *o = json_pack("{s:s, s:o, s:o}", "url", url, "host",
				      host[0] ? json_string(host) : json_null(), "access_token",
				      token ? json_string(token) : json_null());
		char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
		if (s)
			printf("%s\n", s);
		free(s);
		json_decref(o);
	} else if (url) {
		char clean[8192]; /* the answer's id, domain and token are the server's text */
		printf("%s\n", out_sanitize(url, strlen(url), clean, sizeof(clean)));
	}
	free(url);
	client_response_clear(&r);
	return code;
}

/* ---- the group ------------------------------------------------------------------ */

static const struct cli_cmd sandbox_cmds[] = {
	{"create", &create_spec, run_create},
	{"list", &list_spec, run_list},
	{"get", &get_spec, run_get},
	{"delete", &delete_spec, run_delete},
	{"set-ttl", &set_ttl_spec, run_set_ttl},
	{"url", &url_spec, run_url},
	{"exec", &cmd_exec_spec, cmd_exec_run},
	{"run-code", &cmd_run_code_spec, cmd_run_code_run},
	{"ps", &cmd_ps_spec, cmd_ps_run},
	{"kill-command", &cmd_kill_command_spec, cmd_kill_command_run},
	{"snapshot", &cmd_snapshot_spec, cmd_snapshot_run},
	{"fork", &cmd_fork_spec, cmd_fork_run},
	{"pause", &cmd_pause_spec, cmd_pause_run},
	{"resume", &cmd_resume_spec, cmd_resume_run},
	{NULL, NULL, NULL},
};

const struct cli_group cli_group_sandbox = {
	.name = "sandbox",
	.alias = "sandboxes",
	.summary = "create sandboxes, run commands and code in them, delete them",
	.cmds = sandbox_cmds,
};
