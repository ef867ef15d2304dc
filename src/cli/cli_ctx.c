/*
 * cli_ctx.c - what every command shares: the API client made from the
 * environment, one checked API call with its error printed, the ways an
 * answer is printed, and parsing of K=V lists and second counts (see cli.h).
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/output.h"

int cli_usage_error(struct cli_ctx *ctx, const char *message)
{
	out_usage(ctx->path, message);
	return CLI_EXIT_USAGE;
}

int cli_client(struct cli_ctx *ctx, struct client **out)
{
	*out = NULL;
	if (ctx->client) {
		*out = ctx->client;
		return CLI_EXIT_OK;
	}
	const char *url = getenv("PANDASTACK_API_URL");
	const char *key = getenv("PANDASTACK_API_KEY");
	const char *ca_file = ctx->ca_file ? ctx->ca_file : getenv("PANDASTACK_CA_FILE");
	if (!url || !*url)
		url = CLI_DEFAULT_URL;
	if (!key || !*key) {
		out_error("PANDASTACK_API_KEY is not set (export PANDASTACK_API_KEY=pds_...)");
		return CLI_EXIT_USAGE;
	}
	char err[256];
	int rc = client_new(url, key, ca_file && *ca_file ? ca_file : NULL, &ctx->client, err,
			    sizeof(err));
	if (rc) {
		out_error("%s", err[0] ? err : strerror(-rc));
		return rc == -EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_API;
	}
	*out = ctx->client;
	return CLI_EXIT_OK;
}

int cli_request(struct cli_ctx *ctx, const char *method, const struct urlpath *u,
		const json_t *body, struct client_response *resp)
{
	memset(resp, 0, sizeof(*resp));
	int rc = urlpath_status(u);
	if (rc == -EINVAL)
		return cli_usage_error(ctx, "an ID or path argument is empty, '.' or '..'");
	if (rc)
		return cli_usage_error(ctx, "an argument is too long for a URL");
	struct client *client;
	int code = cli_client(ctx, &client);
	if (code)
		return code;
	struct client_error err;
	rc = client_call(client, method, u->s, body, resp, &err);
	if (rc) {
		out_client_error(&err);
		return CLI_EXIT_API;
	}
	return CLI_EXIT_OK;
}

void cli_sandbox_path(struct urlpath *u, const char *id, const char *suffix)
{
	urlpath_init(u);
	urlpath_lit(u, "/v1/sandboxes");
	urlpath_seg(u, id);
	urlpath_lit(u, suffix);
}

int cli_show_nothing(struct cli_ctx *ctx, struct client_response *r)
{
	if (ctx->json)
		out_raw(r);
	client_response_clear(r);
	return CLI_EXIT_OK;
}

int cli_show_fields(struct cli_ctx *ctx, struct client_response *r)
{
	if (ctx->json || !json_is_object(r->json))
		out_raw(r);
	else
		out_fields(r->json);
	client_response_clear(r);
	return CLI_EXIT_OK;
}

int cli_show_id(struct cli_ctx *ctx, struct client_response *r, const char *what)
{
	int code = CLI_EXIT_OK;
	const char *id = json_string_value(json_object_get(r->json, "id"));
	if (ctx->json) {
		out_raw(r);
	} else if (id) {
		char clean[128];
		printf("%s\n", out_sanitize(id, strlen(id), clean, sizeof(clean)));
	} else {
		out_error("error: bad_response: the answer has no %s id", what);
		code = CLI_EXIT_API;
	}
	client_response_clear(r);
	return code;
}

int cli_show_table(struct cli_ctx *ctx, struct client_response *r, const char *items,
		   const char *what, const struct out_col *cols, size_t ncols)
{
	int code = CLI_EXIT_OK;
	json_t *rows = out_list_items(r->json, items);
	if (ctx->json) {
		out_raw(r);
	} else if (rows) {
		out_table(rows, cols, ncols);
	} else {
		out_error("error: bad_response: the answer has no %s", what);
		code = CLI_EXIT_API;
	}
	client_response_clear(r);
	return code;
}

int cli_call(struct cli_ctx *ctx, const char *method, const struct urlpath *u,
	     const json_t *body, enum cli_show show)
{
	struct client_response r;
	int code = cli_request(ctx, method, u, body, &r);
	if (code)
		return code;
	return show == CLI_SHOW_FIELDS ? cli_show_fields(ctx, &r) : cli_show_nothing(ctx, &r);
}

int cli_list(struct cli_ctx *ctx, const struct urlpath *u, const char *items, const char *what,
	     const struct out_col *cols, size_t ncols)
{
	struct client_response r;
	int code = cli_request(ctx, "GET", u, NULL, &r);
	return code ? code : cli_show_table(ctx, &r, items, what, cols, ncols);
}

int cli_parse_kv_list(struct cli_ctx *ctx, const char *what, const char *const *words, size_t n,
		      json_t **out)
{
	*out = json_object();
	if (!*out) {
		out_error("out of memory");
		return CLI_EXIT_API;
	}
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(words[i], '=');
		if (!eq || eq == words[i]) {
			char msg[160];
			snprintf(msg, sizeof(msg), "%s wants KEY=VALUE, not '%.64s'", what, words[i]);
			json_decref(*out);
			*out = NULL;
			return cli_usage_error(ctx, msg);
		}
		char *k = strndup(words[i], (size_t)(eq - words[i]));
		json_t *v = json_string(eq + 1);
		if (!k || !v || json_object_set_new(*out, k, v)) {
			free(k);
			json_decref(*out);
			*out = NULL;
			char msg[160], word[80];
			out_sanitize(words[i], strlen(words[i]), word, sizeof(word));
			snprintf(msg, sizeof(msg), "%s '%s' is not UTF-8 text", what, word);
			return cli_usage_error(ctx, msg);
		}
		free(k);
	}
	return CLI_EXIT_OK;
}

int cli_parse_seconds(struct cli_ctx *ctx, const char *what, const char *s, int64_t min,
		      int64_t max, int64_t *out)
{
	int rc = args_parse_int64(s, min, max, out);
	if (rc == 0)
		return CLI_EXIT_OK;
	char msg[160];
	if (rc == -ERANGE)
		snprintf(msg, sizeof(msg), "%s must be between %lld and %lld seconds, not %.32s", what,
			 (long long)min, (long long)max, s);
	else
		snprintf(msg, sizeof(msg), "%s wants whole seconds, not '%.32s'", what, s);
	return cli_usage_error(ctx, msg);
}

int cli_parse_duration(struct cli_ctx *ctx, const char *what, const char *s, double min,
		       double max, json_t **out)
{
	*out = NULL;
	char msg[160];
	int dots = 0, digits = 0, other = 0;
	for (const char *p = s; *p; p++) {
		if (*p == '.')
			dots++;
		else if (*p >= '0' && *p <= '9')
			digits++;
		else
			other++;
	}
	if (other || digits == 0 || dots > 1 || strlen(s) > 32) {
		snprintf(msg, sizeof(msg), "%s wants a number of seconds, not '%.32s'", what, s);
		return cli_usage_error(ctx, msg);
	}
	char *end = NULL;
	double v = strtod(s, &end);
	if (!end || *end || !(v >= min && v <= max)) {
		snprintf(msg, sizeof(msg), "%s must be between %g and %g seconds, not %.32s", what,
			 min, max, s);
		return cli_usage_error(ctx, msg);
	}
	if (dots == 0 || v == (double)(json_int_t)v)
		*out = json_integer((json_int_t)v);
	else
		*out = json_real(v);
	if (!*out) {
		out_error("out of memory");
		return CLI_EXIT_API;
	}
	return CLI_EXIT_OK;
}
