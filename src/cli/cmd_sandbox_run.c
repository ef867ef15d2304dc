/*
 * cmd_sandbox_run.c - `pandastack sandbox exec` and `sandbox run-code`
 * (see cmd_sandbox_run.h).  Routes: docs/api.md "POST
 * /v1/sandboxes/{id}/exec" and the one-shot "POST
 * /v1/sandboxes/{id}/run_code {code, language}".
 */
#include "cli/cmd_sandbox_run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/output.h"
#include "common/body_caps.h"
#include "common/util.h"


static const char *const id_pos[] = {"ID", NULL};

/* ---- shared -------------------------------------------------------------------- */

int cmd_exit_status(const json_t *v)
{
	if (!json_is_integer(v))
		return 255;
	json_int_t c = json_integer_value(v);
	return c >= 0 && c <= 255 ? (int)c : 255;
}

/* Write the JSON string v's bytes (NULs included) to f. */
static void write_string(FILE *f, const json_t *v)
{
	if (!json_is_string(v) || json_string_length(v) == 0)
		return;
	fwrite(json_string_value(v), 1, json_string_length(v), f);
	fflush(f);
}

/* POST the body to /v1/sandboxes/{id}/<what>. */
static int post_run(struct cli_ctx *ctx, const char *id, const char *what, const json_t *body,
		    struct client_response *r)
{
	struct urlpath u;
	cli_sandbox_path(&u, id, what);
	return cli_request(ctx, "POST", &u, body, r);
}

/* ---- exec ----------------------------------------------------------------------- */

static const struct arg_flag exec_flags[] = {
	{"timeout", ARG_VALUE, 0, "S",
	 "kill the command after S seconds (0: no limit; default: the server's, 60)"},
	{"cwd", ARG_VALUE, 0, "DIR", "working directory in the sandbox (absolute)"},
	{"env", ARG_REPEAT, 0, "K=V", "environment variable for this command"},
	{"stdin", ARG_BOOL, 0, NULL, "send this program's standard input (text, at most 1 MiB)"},
	{"background", ARG_BOOL, 0, NULL,
	 "start it in the background and print its command id (no timeout unless --timeout)"},
	{NULL, 0, 0, NULL, NULL},
};

const struct args_spec cmd_exec_spec = {
	.path = "sandbox exec",
	.usage = "ID [--timeout S] [--cwd DIR] [--env K=V]... [--stdin | --background] [--] CMD...",
	.summary = "Run a shell command (/bin/sh -c CMD) in a sandbox and wait for it.",
	.details =
		"CMD is every word after \"--\" (or from the first word after ID that is not\n"
		"a flag), joined with spaces as a shell joins \"$*\"; quote it as one word to\n"
		"keep its own quoting.  The command's stdout is printed on stdout and its stderr on\n"
		"stderr, as it produced them.\n\n"
		"Exit code: the command's own exit code (128+N when signal N killed it), so\n"
		"1 may be the command's as well as an API error; 2 is a usage error when the\n"
		"command did not run.  A timeout is reported on stderr.  With --json the API's\n"
		"answer {stdout, stderr, exit_code, duration_ms, timed_out, ...} is printed\n"
		"instead, and the exit code is still the command's.\n\n"
		"With --background the command starts and keeps running (a dev server, a\n"
		"training job): its id (cmd_...) is printed at once and the exit code is 0; see\n"
		"`sandbox ps` and `sandbox kill-command`.\n\n"
		"Example:\n  pandastack sandbox exec \"$id\" --timeout 30 -- 'python -c \"print(2 + 2)\"'\n"
		"  cid=$(pandastack sandbox exec \"$id\" --background -- python3 -m http.server)\n",
	.flags = exec_flags,
	.positionals = id_pos,
	.rest = "CMD",
	.rest_required = 1,
};

/* Read all of stdin (at most BODY_STDIN_MAX bytes) as a JSON string. */
static int read_stdin(struct cli_ctx *ctx, json_t **out)
{
	*out = NULL;
	char *buf = malloc(BODY_STDIN_MAX + 1);
	if (!buf) {
		out_error("out of memory");
		return CLI_EXIT_API;
	}
	ssize_t n = util_read_full(STDIN_FILENO, buf, BODY_STDIN_MAX + 1);
	if (n < 0) {
		free(buf);
		out_error("cannot read standard input: %s", strerror((int)-n));
		return CLI_EXIT_API;
	}
	if (n > BODY_STDIN_MAX) {
		free(buf);
		return cli_usage_error(ctx, "standard input is larger than 1 MiB (the API's cap)");
	}
	*out = json_stringn(buf, (size_t)n);
	free(buf);
	if (!*out)
		return cli_usage_error(ctx, "standard input is not UTF-8 text");
	return CLI_EXIT_OK;
}

/* The exec request body from the parsed flags. */
static int build_exec_body(struct cli_ctx *ctx, const struct args_result *a, json_t **out)
{
	json_t *body = json_object();
	json_t *cmd = json_string(a->rest);
	*out = NULL;
	if (!body || !cmd) {
		json_decref(body);
		json_decref(cmd);
		return cli_usage_error(ctx, "CMD is not valid UTF-8");
	}
	json_object_set_new(body, "cmd", cmd);
	int code = CLI_EXIT_OK;
	json_t *v = NULL;
	if (args_value(a, "timeout")) {
		code = cli_parse_duration(ctx, "--timeout", args_value(a, "timeout"), 0,
					  BODY_TIMEOUT_MAX_S, &v);
		if (!code)
			json_object_set_new(body, "timeout_seconds", v);
	}
	if (!code && args_value(a, "cwd")) {
		v = json_string(args_value(a, "cwd"));
		if (!v)
			code = cli_usage_error(ctx, "--cwd is not valid UTF-8");
		else
			json_object_set_new(body, "cwd", v);
	}
	if (!code) {
		const char *env[BODY_ENV_MAX_VARS];
		size_t n = args_values(a, "env", env, BODY_ENV_MAX_VARS);
		if (n > BODY_ENV_MAX_VARS) {
			code = cli_usage_error(ctx, "more than 128 --env flags");
		} else if (n) {
			code = cli_parse_kv_list(ctx, "--env", env, n, &v);
			if (!code)
				json_object_set_new(body, "env", v);
		}
	}
	if (!code && args_has(a, "background")) {
		if (args_has(a, "stdin"))
			code = cli_usage_error(ctx, "--stdin does not go with --background");
		else
			json_object_set_new(body, "background", json_true());
	}
	if (!code && args_has(a, "stdin")) {
		code = read_stdin(ctx, &v);
		if (!code)
			json_object_set_new(body, "stdin", v);
	}
	if (code) {
		json_decref(body);
		return code;
	}
	*out = body;
	return CLI_EXIT_OK;
}

int cmd_exec_run(struct cli_ctx *ctx, const struct args_result *a)
{
	json_t *body;
	int code = build_exec_body(ctx, a, &body);
	if (code)
		return code;
	struct client_response r;
	code = post_run(ctx, a->pos[0], "/exec", body, &r);
	json_decref(body);
	if (code)
		return code;
	if (args_has(a, "background"))
		return cli_show_id(ctx, &r, "command");
	json_t *exit_code = json_object_get(r.json, "exit_code");
	if (!json_is_integer(exit_code)) {
		out_error("error: bad_response: the exec answer has no exit_code");
		client_response_clear(&r);
		return CLI_EXIT_API;
	}
	code = cmd_exit_status(exit_code);
	if (ctx->json) {
		out_raw(&r);
	} else {
		write_string(stdout, json_object_get(r.json, "stdout"));
		write_string(stderr, json_object_get(r.json, "stderr"));
		if (json_is_true(json_object_get(r.json, "timed_out")))
			out_error("the command timed out and was killed (exit code %d)", code);
	}
	client_response_clear(&r);
	return code;
}

/* ---- run-code --------------------------------------------------------------------- */

static const struct arg_flag run_code_flags[] = {
	{"language", ARG_VALUE, 0, "L", "python (default) or shell"},
	{NULL, 0, 0, NULL, NULL},
};

const struct args_spec cmd_run_code_spec = {
	.path = "sandbox run-code",
	.usage = "ID [--language L] [--] CODE...",
	.summary = "Run a snippet of code in a fresh interpreter in a sandbox.",
	.details =
		"CODE is everything after \"--\", joined with spaces.  Prints what the code\n"
		"wrote to stdout, then the text form of each result (such as the value of a\n"
		"last expression); stderr and a raised error's traceback go to stderr.\n\n"
		"Exit code: the run's exit code when the API gives one, else 1 when the code\n"
		"raised an error and 0 when it did not; 1 is also an API error, 2 a usage\n"
		"error.  With --json the API's answer is printed as is.\n\n"
		"Example:\n  pandastack sandbox run-code \"$id\" --language python -- "
		"'x = 42; print(x * 2)'\n",
	.flags = run_code_flags,
	.positionals = id_pos,
	.rest = "CODE",
	.rest_required = 1,
};

/* Print a run's error (a traceback string or list, or name/value) on stderr. */
static void print_run_error(const json_t *e)
{
	char buf[OUT_CELL_MAX];
	fflush(stdout);
	if (json_is_string(e)) {
		write_string(stderr, e);
		fputc('\n', stderr);
		return;
	}
	const json_t *tb = json_object_get(e, "traceback");
	if (json_is_string(tb)) {
		write_string(stderr, tb);
		fputc('\n', stderr);
	} else if (json_is_array(tb) && json_array_size(tb)) {
		size_t i;
		const json_t *line;
		json_array_foreach(tb, i, line) {
			write_string(stderr, line);
			fputc('\n', stderr);
		}
	} else {
		const char *name = json_string_value(json_object_get(e, "name"));
		const json_t *value = json_object_get(e, "value");
		fprintf(stderr, "%s: %s\n", name ? name : "error",
			out_value("value", value ? value : e, buf, sizeof(buf)));
	}
	fflush(stderr);
}

int cmd_run_code_run(struct cli_ctx *ctx, const struct args_result *a)
{
	const char *lang = args_value(a, "language");
	json_t *body = json_pack("{s:s, s:s}", "code", a->rest, "language", lang ? lang : "python");
	if (!body)
		return cli_usage_error(ctx, "CODE or --language is not valid UTF-8");
	struct client_response r;
	int code = post_run(ctx, a->pos[0], "/run_code", body, &r);
	json_decref(body);
	if (code)
		return code;
	json_t *err = json_object_get(r.json, "error");
	int failed = err && !json_is_null(err);
	json_t *exit_code = json_object_get(r.json, "exit_code");
	code = json_is_integer(exit_code) ? cmd_exit_status(exit_code) : failed ? 1 : 0;
	if (ctx->json) {
		out_raw(&r);
		client_response_clear(&r);
		return code;
	}
	write_string(stdout, json_object_get(r.json, "stdout"));
	size_t i;
	json_t *res;
	json_array_foreach(json_object_get(r.json, "results"), i, res) {
		json_t *text = json_object_get(res, "text");
		if (json_is_string(text) && json_string_length(text)) {
			write_string(stdout, text);
			fputc('\n', stdout);
		}
	}
	fflush(stdout);
	write_string(stderr, json_object_get(r.json, "stderr"));
	if (failed)
		print_run_error(err);
	client_response_clear(&r);
	return code;
}
