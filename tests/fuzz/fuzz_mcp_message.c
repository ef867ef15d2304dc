/*
 * fuzz_mcp_message.c - libFuzzer target for the MCP server core: the
 * JSON-RPC message reader (src/mcp/mcp_rpc.c), the session's lifecycle and
 * dispatch (mcp_server.c) and the tools' argument checks and result
 * building (mcp_tools.c, mcp_content.c), with a backend that answers from
 * canned data instead of a daemon.
 *
 * The input is newline-separated messages fed to one session, as the
 * stdio transport would.  Checks beyond "no crash, no leak, no UB": every
 * answer is one line of JSON with "jsonrpc": "2.0"; a request with a
 * readable id is answered with that id; a notification is never answered.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mcp/mcp_backend.h"
#include "mcp/mcp_rpc.h"
#include "mcp/mcp_server.h"

static void check(int ok)
{
	if (!ok)
		abort();
}

static int nope(struct mcp_fail *f)
{
	strcpy(f->code, "sandbox_not_found");
	strcpy(f->message, "no sandbox");
	f->status = 404;
	return -2;
}

static int create_sandbox(void *a, const char *t, int64_t ttl, json_t **out, struct mcp_fail *f)
{
	(void)a;
	(void)ttl;
	(void)f;
	*out = json_pack("{s:s, s:s, s:s}", "id", "sbx_1", "template", t, "status", "running");
	return 0;
}

static int list_sandboxes(void *a, json_t **out, struct mcp_fail *f)
{
	(void)a;
	(void)f;
	*out = json_pack("{s:[]}", "sandboxes");
	return 0;
}

static int kill_sandbox(void *a, const char *id, struct mcp_fail *f)
{
	(void)a;
	return strcmp(id, "sbx_1") == 0 ? 0 : nope(f);
}

static int create_context(void *a, const char *id, char *ctx, size_t n, struct mcp_fail *f)
{
	(void)a;
	if (strcmp(id, "sbx_1") != 0)
		return nope(f);
	strncpy(ctx, "ctx_1", n);
	return 0;
}

/* The cell's text is taken as the Execution's JSON, so the fuzzer reaches
 * the result builder with any shape. */
static int run_code(void *a, const char *id, const char *ctx, const char *code, double t,
		    json_t **out, struct mcp_fail *f)
{
	(void)a;
	(void)id;
	(void)ctx;
	(void)t;
	*out = json_loads(code, JSON_DECODE_ANY, NULL);
	if (!*out) {
		strcpy(f->code, "context_not_found");
		f->message[0] = '\0';
		return -2;
	}
	return 0;
}

static int exec_(void *a, const char *id, const json_t *body, json_t **out, struct mcp_fail *f)
{
	(void)a;
	(void)body;
	if (strcmp(id, "sbx_1") != 0)
		return nope(f);
	*out = json_pack("{s:s, s:s, s:i}", "stdout", "", "stderr", "", "exit_code", 0);
	return 0;
}

static int read_file(void *a, const char *id, const char *path, size_t max, char **data,
		     size_t *len, struct mcp_fail *f)
{
	(void)a;
	(void)id;
	(void)max;
	(void)f;
	*len = strlen(path);
	*data = strdup(path); /* the path's bytes stand for the file's */
	return 0;
}

static int write_file(void *a, const char *id, const char *path, const void *d, size_t len,
		      json_t **out, struct mcp_fail *f)
{
	(void)a;
	(void)id;
	(void)d;
	(void)f;
	*out = json_pack("{s:s, s:I}", "path", path, "size", (json_int_t)len);
	return 0;
}

static const struct mcp_backend backend = {
	.create_sandbox = create_sandbox,
	.list_sandboxes = list_sandboxes,
	.kill_sandbox = kill_sandbox,
	.create_context = create_context,
	.run_code = run_code,
	.exec = exec_,
	.read_file = read_file,
	.write_file = write_file,
};

static void one(struct mcp_session *s, const char *line, size_t len)
{
	size_t n = 0;
	char *out = mcp_session_handle_bytes(s, &backend, line, len, &n);
	struct mcp_rpc_msg m;
	struct mcp_rpc_err err;
	int parsed = mcp_rpc_parse(line, len, &m, &err) == 0;
	if (!parsed)
		mcp_rpc_err_clear(&err);
	if (!out) {
		/* silence is for notifications and client responses only */
		check(parsed && m.kind != MCP_RPC_REQUEST);
	} else {
		check(strlen(out) == n && !memchr(out, '\n', n));
		json_t *j = json_loads(out, 0, NULL);
		check(j != NULL);
		check(json_is_string(json_object_get(j, "jsonrpc")));
		if (parsed) {
			check(m.kind == MCP_RPC_REQUEST);
			check(json_equal(json_object_get(j, "id"), m.id));
		}
		json_decref(j);
		free(out);
	}
	if (parsed)
		mcp_rpc_msg_clear(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mcp_session *s;
	if (mcp_session_new("0", &s) < 0)
		return 0;
	const char *p = (const char *)data, *end = p + size;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		one(s, p, n);
		p += n + 1;
	}
	mcp_session_free(s);
	return 0;
}
