/*
 * cli.h - the pandastack command-line client's structure: command groups
 * (sandbox, fs, keys, templates, snapshot), each a table of commands with an
 * args_spec and a run function, dispatched by cli_main (cli.c); the shared
 * context the commands get; and the exit codes (docs/cli.md):
 *
 *   0  success
 *   1  the API answered an error (its code and message on stderr), it could
 *      not be reached, or a local file failed
 *   2  usage: bad flags, missing arguments, bad environment
 *   N  sandbox exec / run-code: the command's own exit code
 *
 * Environment: PANDASTACK_API_URL (default CLI_DEFAULT_URL),
 * PANDASTACK_API_KEY (required by every command that calls the API) and
 * PANDASTACK_CA_FILE (the CA certificates trusted for https; --ca-file wins).
 * Threads: the main thread only.
 */
#ifndef PANDASTACK_CLI_CLI_H
#define PANDASTACK_CLI_CLI_H

#include <jansson.h>

#include "cli/args.h"
#include "client/client.h"
#include "client/urlpath.h"

#define CLI_EXIT_OK 0
#define CLI_EXIT_API 1
#define CLI_EXIT_USAGE 2
#define CLI_DEFAULT_URL "http://127.0.0.1:8080"
#define CLI_VERSION "0.1.0"

struct cli_ctx {
	const char *path;       /* "sandbox exec": for messages */
	int json;               /* --json: print the API's JSON as is */
	const char *ca_file;    /* --ca-file (borrowed from argv) or NULL */
	struct client *client; /* made by cli_client at first use; freed by cli_main */
};

struct cli_cmd {
	const char *name;             /* "exec"; NULL ends a table */
	const struct args_spec *spec;
	/* Runs the parsed command; returns the process exit code. */
	int (*run)(struct cli_ctx *ctx, const struct args_result *a);
};

struct cli_group {
	const char *name;            /* "sandbox" */
	const char *alias;           /* another accepted name, or NULL */
	const char *summary;         /* one line */
	const struct cli_cmd *cmds;  /* ended by a NULL name */
};

/* The groups, one per cmd_*.c file. */
extern const struct cli_group cli_group_sandbox;
extern const struct cli_group cli_group_fs;
extern const struct cli_group cli_group_keys;
extern const struct cli_group cli_group_templates;
extern const struct cli_group cli_group_snapshot;

/*
 * cli_main - the whole program: parse argv (argc words, argv[0] the program
 * name), dispatch, and return the exit code.  Help goes to stdout, errors
 * to stderr.
 */
int cli_main(int argc, char **argv);

/*
 * cli_mcp_main - `pandastack mcp` with the argc words after "mcp" and the
 * --ca-file that came before it (NULL when none): serve MCP on
 * stdin/stdout until stdin ends (cmd_mcp.c).  Returns the exit code.
 */
int cli_mcp_main(int argc, char **argv, const char *ca_file);

/*
 * cli_client - the API client from the environment and ctx->ca_file (made
 * once per ctx, owned by ctx).  Returns CLI_EXIT_OK with *out, or
 * CLI_EXIT_USAGE after printing why (no key, bad URL), or CLI_EXIT_API
 * (libcurl failed).
 */
int cli_client(struct cli_ctx *ctx, struct client **out);

/*
 * cli_request - one API call for a command: check the path built in u
 * (a bad one is a usage error), get the client, call.  Returns CLI_EXIT_OK
 * with *resp filled (client_response_clear), or the exit code after printing
 * the problem on stderr (then *resp is empty).
 */
int cli_request(struct cli_ctx *ctx, const char *method, const struct urlpath *u,
		const json_t *body, struct client_response *resp);

/* cli_sandbox_path - u = /v1/sandboxes/{id}<suffix> (suffix: "" for the
 * sandbox itself, or "/exec", "/fs/list", ...). */
void cli_sandbox_path(struct urlpath *u, const char *id, const char *suffix);

/*
 * cli_show_* - print a command's successful answer r and clear it
 * (client_response_clear); with --json every one prints the answer as the
 * server sent it (out_raw).  Otherwise:
 *   cli_show_nothing  nothing (commands that say "prints nothing on success")
 *   cli_show_fields   each member as "key: value" (out_fields)
 *   cli_show_id       the answer's "id" on a line; when there is none,
 *                     "the answer has no <what> id" on stderr and CLI_EXIT_API
 *   cli_show_table    the array under items (out_list_items) as a table of
 *                     cols; when there is none, "the answer has no <what>"
 *                     on stderr and CLI_EXIT_API
 * Return the command's exit code.
 */
struct out_col;
int cli_show_nothing(struct cli_ctx *ctx, struct client_response *r);
int cli_show_fields(struct cli_ctx *ctx, struct client_response *r);
int cli_show_id(struct cli_ctx *ctx, struct client_response *r, const char *what);
int cli_show_table(struct cli_ctx *ctx, struct client_response *r, const char *items,
		   const char *what, const struct out_col *cols, size_t ncols);

/*
 * cli_call / cli_list - the whole of most commands: cli_request, then on
 * success the answer shown as show says (cli_call: nothing or its fields)
 * or as the table cli_show_table prints (cli_list: a GET of a list).
 * Return the command's exit code.
 */
enum cli_show { CLI_SHOW_NOTHING, CLI_SHOW_FIELDS };
int cli_call(struct cli_ctx *ctx, const char *method, const struct urlpath *u,
	     const json_t *body, enum cli_show show);
int cli_list(struct cli_ctx *ctx, const struct urlpath *u, const char *items, const char *what,
	     const struct out_col *cols, size_t ncols);

/*
 * cli_usage_error - print message as a usage error of the current command
 * and return CLI_EXIT_USAGE.
 */
int cli_usage_error(struct cli_ctx *ctx, const char *message);

/*
 * cli_parse_kv_list - "K=V" words (n of them) into a new JSON object of
 * strings (*out, new reference).  what names the flag in messages
 * ("--env").  Returns CLI_EXIT_OK, or CLI_EXIT_USAGE after printing which
 * word has no "=" or an empty key.
 */
int cli_parse_kv_list(struct cli_ctx *ctx, const char *what, const char *const *words, size_t n,
		      json_t **out);

/*
 * cli_parse_seconds - a --ttl / --timeout style value: whole seconds in
 * [min, max] into *out.  Returns CLI_EXIT_OK or CLI_EXIT_USAGE after
 * printing the problem.
 */
int cli_parse_seconds(struct cli_ctx *ctx, const char *what, const char *s, int64_t min,
		      int64_t max, int64_t *out);

/*
 * cli_parse_duration - a --timeout style value: a decimal number of
 * seconds ("30", "0.5"; no sign, exponent or hex) in [min, max], as a new
 * JSON integer when whole, else a real (*out, new reference).  Returns
 * CLI_EXIT_OK or CLI_EXIT_USAGE after printing the problem.
 */
int cli_parse_duration(struct cli_ctx *ctx, const char *what, const char *s, double min,
		       double max, json_t **out);

#endif
