/*
 * cmd_mcp.c - `pandastack mcp`: an MCP server on stdin and stdout
 * (docs/mcp.md) whose tools call the REST API with PANDASTACK_API_URL and
 * PANDASTACK_API_KEY.  The protocol is the shared core (mcp/mcp_stdio.h,
 * mcp/mcp_server.h); this file only makes the API client and the backend.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/output.h"
#include "mcp/mcp_backend_rest.h"
#include "mcp/mcp_stdio.h"

static void print_help(FILE *f)
{
	fprintf(f, "Usage: pandastack mcp\n\n"
		   "Serve the Model Context Protocol on stdin and stdout for an MCP client\n"
		   "(Claude Desktop, an agent framework, ...): tools to create sandboxes, run\n"
		   "Python and shell commands in them, read and write their files, list and kill\n"
		   "them.  The tools call the API at PANDASTACK_API_URL with PANDASTACK_API_KEY.\n"
		   "stdout carries only MCP messages; errors go to stderr.  See docs/mcp.md.\n");
}

int cli_mcp_main(int argc, char **argv, const char *ca_file)
{
	if (argc > 0 && (strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--help") == 0)) {
		print_help(stdout);
		return CLI_EXIT_OK;
	}
	if (argc > 0) {
		out_usage("mcp", "takes no arguments");
		return CLI_EXIT_USAGE;
	}
	struct cli_ctx ctx = {.path = "mcp", .ca_file = ca_file};
	struct client *api;
	int code = cli_client(&ctx, &api);
	if (code)
		return code;
	/* a client that goes away is a write error, not a signal */
	signal(SIGPIPE, SIG_IGN);
	struct mcp_backend b;
	mcp_backend_rest(&b, api);
	int e = mcp_stdio_serve(STDIN_FILENO, STDOUT_FILENO, &b, CLI_VERSION);
	client_free(api);
	if (e && e != -EPIPE) {
		out_error("mcp: %s", strerror(-e));
		return CLI_EXIT_API;
	}
	return CLI_EXIT_OK;
}
