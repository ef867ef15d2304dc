/*
 * routes.c - the table of every route pandastackd serves (see route.h).
 * docs/openapi.yaml must list exactly these; tests/integration checks it.
 */
#include <stdio.h>

#include "daemon/api/api.h"
#include "daemon/http/route.h"
#include "daemon/http/web_static.h"

#define KEY ROUTE_AUTH_KEY
#define ADMIN ROUTE_AUTH_ADMIN
#define NONE ROUTE_AUTH_NONE
#define BUF ROUTE_BODY_BUFFERED

/* The query parameters of the routes that take any (route.h). */
static const char *const q_list_sandboxes[] = {"status", "metadata.", NULL};
static const char *const q_list_snapshots[] = {"sandbox_id", NULL};
static const char *const q_command_output[] = {"stdout_offset", "stderr_offset", "max_bytes",
					       "wait_seconds", NULL};
static const char *const q_path[] = {"path", NULL};
static const char *const q_path_recursive[] = {"path", "recursive", NULL};

static const struct route table[] = {
	/* the dashboard (web_static.h): files only, it sends a key with each call */
	{"GET", "/", NONE, BUF, API_BODY_SMALL, web_static_index, NULL, NULL, NULL},
	{"GET", "/ui/{file}", NONE, BUF, API_BODY_SMALL, web_static_file, NULL, NULL, NULL},

	{"GET", "/healthz", KEY, BUF, API_BODY_SMALL, api_healthz, NULL, NULL, NULL},
	{"GET", "/metrics", ADMIN, BUF, API_BODY_SMALL, api_metrics, NULL, NULL, NULL},

	/* the MCP endpoint (docs/mcp.md); GET answers 405: no server stream */
	{"POST", "/mcp", KEY, BUF, API_BODY_MCP, api_mcp_post, NULL, NULL, NULL},
	{"DELETE", "/mcp", KEY, BUF, API_BODY_SMALL, api_mcp_delete, NULL, NULL, NULL},

	{"POST", "/v1/keys", KEY, BUF, API_BODY_SMALL, api_keys_create, NULL, NULL, NULL},
	{"GET", "/v1/keys", KEY, BUF, API_BODY_SMALL, api_keys_list, NULL, NULL, NULL},
	{"DELETE", "/v1/keys/{id}", KEY, BUF, API_BODY_SMALL, api_keys_delete, NULL, NULL, NULL},

	{"GET", "/v1/templates", KEY, BUF, API_BODY_SMALL, api_templates_list, NULL, NULL, NULL},
	{"POST", "/v1/templates/{name}/build", ADMIN, BUF, API_BODY_SMALL, api_templates_build,
	 NULL, NULL, NULL},

	{"POST", "/v1/sandboxes", KEY, BUF, API_BODY_SMALL, api_sandboxes_create, NULL, NULL, NULL},
	{"GET", "/v1/sandboxes", KEY, BUF, API_BODY_SMALL, api_sandboxes_list, NULL, NULL,
	 q_list_sandboxes},
	{"GET", "/v1/sandboxes/{id}", KEY, BUF, API_BODY_SMALL, api_sandboxes_get, NULL, NULL, NULL},
	{"DELETE", "/v1/sandboxes/{id}", KEY, BUF, API_BODY_SMALL, api_sandboxes_delete, NULL,
	 NULL, NULL},
	{"POST", "/v1/sandboxes/{id}/ttl", KEY, BUF, API_BODY_SMALL, api_sandboxes_ttl, NULL,
	 NULL, NULL},

	{"GET", "/v1/sandboxes/{id}/network", KEY, BUF, API_BODY_SMALL, api_network_get, NULL,
	 NULL, NULL},
	{"PUT", "/v1/sandboxes/{id}/network", KEY, BUF, API_BODY_SMALL, api_network_put, NULL,
	 NULL, NULL},
	/* snapshots, forks, pause and resume (api_snapshots.c) */
	{"POST", "/v1/sandboxes/{id}/snapshots", KEY, BUF, API_BODY_SMALL, api_snapshots_create,
	 NULL, NULL, NULL},
	{"POST", "/v1/sandboxes/{id}/fork", KEY, BUF, API_BODY_SMALL, api_sandboxes_fork, NULL,
	 NULL, NULL},
	{"POST", "/v1/sandboxes/{id}/pause", KEY, BUF, API_BODY_SMALL, api_sandboxes_pause, NULL,
	 NULL, NULL},
	{"POST", "/v1/sandboxes/{id}/resume", KEY, BUF, API_BODY_SMALL, api_sandboxes_resume, NULL,
	 NULL, NULL},
	{"GET", "/v1/snapshots", KEY, BUF, API_BODY_SMALL, api_snapshots_list, NULL, NULL,
	 q_list_snapshots},
	{"GET", "/v1/snapshots/{id}", KEY, BUF, API_BODY_SMALL, api_snapshots_get, NULL, NULL, NULL},
	{"DELETE", "/v1/snapshots/{id}", KEY, BUF, API_BODY_SMALL, api_snapshots_delete, NULL,
	 NULL, NULL},

	{"POST", "/v1/sandboxes/{id}/exec", KEY, BUF, API_BODY_EXEC, api_exec, NULL, NULL, NULL},
	{"POST", "/v1/sandboxes/{id}/exec_stream", KEY, BUF, API_BODY_EXEC, api_exec_stream, NULL,
	 NULL, NULL},
	{"GET", "/v1/sandboxes/{id}/commands", KEY, BUF, API_BODY_SMALL, api_commands_list, NULL,
	 NULL, NULL},
	{"POST", "/v1/sandboxes/{id}/commands/{cid}/kill", KEY, BUF, API_BODY_SMALL,
	 api_commands_kill, NULL, NULL, NULL},
	{"GET", "/v1/sandboxes/{id}/commands/{cid}/output", KEY, BUF, API_BODY_SMALL,
	 api_commands_output, NULL, NULL, q_command_output},
	{"POST", "/v1/sandboxes/{id}/commands/{cid}/stdin", KEY, BUF, API_BODY_EXEC,
	 api_commands_stdin, NULL, NULL, NULL},

	{"POST", "/v1/sandboxes/{id}/run_code", KEY, BUF, API_BODY_CODE, api_run_code, NULL, NULL, NULL},
	{"POST", "/v1/sandboxes/{id}/contexts", KEY, BUF, API_BODY_SMALL, api_contexts_create, NULL,
	 NULL, NULL},
	{"GET", "/v1/sandboxes/{id}/contexts", KEY, BUF, API_BODY_SMALL, api_contexts_list, NULL,
	 NULL, NULL},
	{"DELETE", "/v1/sandboxes/{id}/contexts/{ctx}", KEY, BUF, API_BODY_SMALL,
	 api_contexts_delete, NULL, NULL, NULL},
	{"POST", "/v1/sandboxes/{id}/contexts/{ctx}/run_code", KEY, BUF, API_BODY_CODE,
	 api_context_run, NULL, NULL, NULL},
	{"POST", "/v1/sandboxes/{id}/contexts/{ctx}/run_code_stream", KEY, BUF, API_BODY_CODE,
	 api_context_run_stream, NULL, NULL, NULL},
	{"POST", "/v1/sandboxes/{id}/contexts/{ctx}/interrupt", KEY, BUF, API_BODY_SMALL,
	 api_contexts_interrupt, NULL, NULL, NULL},
	{"POST", "/v1/sandboxes/{id}/contexts/{ctx}/restart", KEY, BUF, API_BODY_SMALL,
	 api_contexts_restart, NULL, NULL, NULL},

	{"PUT", "/v1/sandboxes/{id}/fs", KEY, ROUTE_BODY_STREAM, 0, api_fs_upload_end,
	 api_fs_upload_begin, api_fs_upload_chunk, q_path},
	{"GET", "/v1/sandboxes/{id}/fs", KEY, BUF, API_BODY_SMALL, api_fs_download, NULL, NULL,
	 q_path},
	{"DELETE", "/v1/sandboxes/{id}/fs", KEY, BUF, API_BODY_SMALL, api_fs_remove, NULL, NULL,
	 q_path_recursive},
	{"GET", "/v1/sandboxes/{id}/fs/stat", KEY, BUF, API_BODY_SMALL, api_fs_stat, NULL, NULL,
	 q_path},
	{"GET", "/v1/sandboxes/{id}/fs/list", KEY, BUF, API_BODY_SMALL, api_fs_list, NULL, NULL,
	 q_path},
	{"POST", "/v1/sandboxes/{id}/fs/mkdir", KEY, BUF, API_BODY_SMALL, api_fs_mkdir, NULL,
	 NULL, NULL},

	/* exposed ports: matched by port_target.h's rules, not by the pattern
	 * (the Host form has no such path); any other method is served as GET */
#define PORT_ROUTE(m)                                                                  \
	{m, "/v1/sandboxes/{id}/ports/{port}/{path}", ROUTE_AUTH_PORT, ROUTE_BODY_STREAM, 0, \
	 api_ports_end, api_ports_begin, api_ports_chunk, NULL}
	PORT_ROUTE("GET"), PORT_ROUTE("HEAD"), PORT_ROUTE("POST"), PORT_ROUTE("PUT"),
	PORT_ROUTE("PATCH"), PORT_ROUTE("DELETE"), PORT_ROUTE("OPTIONS"),
#undef PORT_ROUTE
};

const struct route *routes_table(size_t *n)
{
	*n = sizeof(table) / sizeof(table[0]);
	return table;
}

void routes_print(FILE *f)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		fprintf(f, "%s %s\n", table[i].method, table[i].pattern);
}
