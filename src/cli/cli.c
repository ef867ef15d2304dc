/*
 * cli.c - the CLI's dispatcher: top-level flags, the group table, help for
 * the program and for each group, and handing a command its parsed
 * arguments (see cli.h).
 */
#include "cli/cli.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "cli/output.h"

static const struct cli_group *const groups[] = {
	&cli_group_sandbox,
	&cli_group_fs,
	&cli_group_keys,
	&cli_group_templates,
	&cli_group_snapshot,
};
#define NGROUPS (sizeof(groups) / sizeof(groups[0]))

static void print_main_help(FILE *f)
{
	fprintf(f, "Usage: pandastack [--json] [--ca-file FILE] GROUP COMMAND [ARGS...]\n\n"
		   "The PandaStack command-line client: sandboxes, their files, API keys and\n"
		   "templates, through the REST API.\n\nGroups:\n");
	for (size_t g = 0; g < NGROUPS; g++) {
		char cmds[160] = "";
		size_t o = 0;
		for (const struct cli_cmd *c = groups[g]->cmds; c->name; c++) {
			int n = snprintf(cmds + o, sizeof(cmds) - o, "%s%s", o ? "|" : "", c->name);
			if (n < 0 || (size_t)n >= sizeof(cmds) - o)
				break;
			o += (size_t)n;
		}
		fprintf(f, "  %-10s %-46s %s\n", groups[g]->name, cmds, groups[g]->summary);
	}
	fprintf(f, "  %-10s %-46s %s\n", "mcp", "", "an MCP server on stdio (docs/mcp.md)");
	fprintf(f,
		"\nEnvironment:\n"
		"  PANDASTACK_API_URL  the API's base URL (default " CLI_DEFAULT_URL ")\n"
		"  PANDASTACK_API_KEY  your API key (pds_...), sent as a Bearer token\n"
		"  PANDASTACK_CA_FILE  PEM file of the CA certificates trusted for https,\n"
		"                      instead of the system's (--ca-file FILE wins over it)\n"
		"\nExit codes: 0 success; 1 API error (its code and message on stderr), API\n"
		"unreachable, or a local file error; 2 usage error.  'sandbox exec' and\n"
		"'sandbox run-code' exit with the command's own exit code instead.\n"
		"\n--json (any command) prints the API's JSON answer as is.\n"
		"Run 'pandastack GROUP --help' or 'pandastack GROUP COMMAND --help' for more.\n");
}

static void print_group_help(const struct cli_group *g, FILE *f)
{
	fprintf(f, "Usage: pandastack %s COMMAND [ARGS...]\n\n%c%s.\n\nCommands:\n", g->name,
		toupper((unsigned char)g->summary[0]), g->summary + 1);
	for (const struct cli_cmd *c = g->cmds; c->name; c++)
		fprintf(f, "  %-10s %s\n", c->name, c->spec->summary);
	fprintf(f, "\nRun 'pandastack %s COMMAND --help' for a command's flags.\n", g->name);
}

static const struct cli_group *find_group(const char *name)
{
	for (size_t g = 0; g < NGROUPS; g++) {
		if (strcmp(groups[g]->name, name) == 0 ||
		    (groups[g]->alias && strcmp(groups[g]->alias, name) == 0))
			return groups[g];
	}
	return NULL;
}

static const struct cli_cmd *find_cmd(const struct cli_group *g, const char *name)
{
	for (const struct cli_cmd *c = g->cmds; c->name; c++) {
		if (strcmp(c->name, name) == 0)
			return c;
	}
	return NULL;
}

static int is_help(const char *a)
{
	return strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0 || strcmp(a, "help") == 0;
}

/* Run command c with the words after its name; json, ca_file: --json and
 * --ca-file came first (ca_file NULL when not). */
static int run_cmd(const struct cli_cmd *c, int argc, char **argv, int json, const char *ca_file)
{
	struct args_result a;
	char err[256];
	int rc = args_parse(c->spec, argc, argv, &a, err, sizeof(err));
	if (rc) {
		out_usage(c->spec->path, err);
		return CLI_EXIT_USAGE;
	}
	if (a.help) {
		args_print_help(c->spec, stdout);
		args_result_free(&a);
		return CLI_EXIT_OK;
	}
	struct cli_ctx ctx = {.path = c->spec->path, .json = json || a.json,
			      .ca_file = a.ca_file ? a.ca_file : ca_file};
	int code = c->run(&ctx, &a);
	client_free(ctx.client);
	args_result_free(&a);
	if (fflush(stdout) != 0 && code == CLI_EXIT_OK) {
		out_error("cannot write to stdout");
		code = CLI_EXIT_API;
	}
	return code;
}

int cli_main(int argc, char **argv)
{
	int i = 1, json = 0;
	const char *ca_file = NULL;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (is_help(argv[i])) {
			print_main_help(stdout);
			return CLI_EXIT_OK;
		} else if (strcmp(argv[i], "--version") == 0) {
			printf("pandastack %s\n", CLI_VERSION);
			return CLI_EXIT_OK;
		} else if (strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (strncmp(argv[i], "--ca-file", 9) == 0 &&
			   (argv[i][9] == '=' || argv[i][9] == '\0')) {
			ca_file = argv[i][9] ? argv[i] + 10 : i + 1 < argc ? argv[++i] : "";
			if (!*ca_file) {
				out_usage("", "flag --ca-file needs a value (FILE)");
				return CLI_EXIT_USAGE;
			}
		} else {
			char msg[128];
			snprintf(msg, sizeof(msg), "unknown flag %.64s", argv[i]);
			out_usage("", msg);
			return CLI_EXIT_USAGE;
		}
	}
	if (i >= argc) {
		print_main_help(stderr);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(argv[i], "help") == 0) {
		/* "pandastack help [GROUP [COMMAND]]" is the same as --help. */
		if (i + 1 < argc && strcmp(argv[i + 1], "mcp") == 0) {
			char help[] = "--help", *words[] = {help};
			return cli_mcp_main(1, words, NULL);
		}
		const struct cli_group *g = i + 1 < argc ? find_group(argv[i + 1]) : NULL;
		const struct cli_cmd *c = g && i + 2 < argc ? find_cmd(g, argv[i + 2]) : NULL;
		if (i + 1 < argc && (!g || (i + 2 < argc && !c))) {
			/* help for something that does not exist is a usage error */
			fprintf(stderr, "pandastack: no help for unknown command '%s'\n",
				argv[g ? i + 2 : i + 1]);
			print_main_help(stderr);
			return CLI_EXIT_USAGE;
		}
		if (c)
			args_print_help(c->spec, stdout);
		else if (g)
			print_group_help(g, stdout);
		else
			print_main_help(stdout);
		return CLI_EXIT_OK;
	}
	if (strcmp(argv[i], "mcp") == 0)
		return cli_mcp_main(argc - i - 1, argv + i + 1, ca_file);
	const struct cli_group *g = find_group(argv[i]);
	if (!g) {
		char msg[128];
		snprintf(msg, sizeof(msg), "unknown command '%.64s'", argv[i]);
		out_usage("", msg);
		return CLI_EXIT_USAGE;
	}
	if (i + 1 >= argc) {
		print_group_help(g, stderr);
		return CLI_EXIT_USAGE;
	}
	if (is_help(argv[i + 1])) {
		print_group_help(g, stdout);
		return CLI_EXIT_OK;
	}
	const struct cli_cmd *c = find_cmd(g, argv[i + 1]);
	if (!c) {
		char msg[128];
		snprintf(msg, sizeof(msg), "unknown command '%.64s'", argv[i + 1]);
		out_usage(g->name, msg);
		return CLI_EXIT_USAGE;
	}
	return run_cmd(c, argc - i - 2, argv + i + 2, json, ca_file);
}
