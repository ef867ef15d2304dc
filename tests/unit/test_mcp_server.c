/*
 * test_mcp_server.c - the MCP server core (src/mcp/) with a fake backend:
 * JSON-RPC message reading, the lifecycle and version negotiation, the
 * tool list, argument checks by negotiated revision, each tool's result
 * (images, HTML tables, errors with their traceback, files), the code
 * context kept per sandbox, base64, and the stdio transport's handling of
 * garbage and blank lines.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/base64.h"
#include "mcp/mcp_backend.h"
#include "mcp/mcp_rpc.h"
#include "mcp/mcp_server.h"
#include "mcp/mcp_stdio.h"

/* ---- a fake backend that records what reached it ------------------------- */

static struct {
	int contexts_made;
	int runs;
	int fail_next_run; /* answer context_not_found once */
	char last_ctx[64];
	char written[64];
	size_t written_len;
	const char *file; /* read_file's bytes */
	size_t file_len;
	json_t *execution; /* run_code's answer (borrowed) */
} fake;

static int fake_create_sandbox(void *a, const char *t, int64_t ttl, json_t **out,
			       struct mcp_fail *f)
{
	(void)a;
	(void)f;
	*out = json_pack("{s:s, s:s, s:s, s:I}", "id", "sbx_1", "template", t, "status", "running",
			 "ttl", (json_int_t)ttl);
	return 0;
}

static int fake_list(void *a, json_t **out, struct mcp_fail *f)
{
	(void)a;
	(void)f;
	*out = json_pack("{s:[{s:s}]}", "sandboxes", "id", "sbx_1");
	return 0;
}

static int fake_kill(void *a, const char *id, struct mcp_fail *f)
{
	(void)a;
	if (strcmp(id, "sbx_1") == 0)
		return 0;
	snprintf(f->code, sizeof(f->code), "sandbox_not_found");
	snprintf(f->message, sizeof(f->message), "no sandbox '%s'", id);
	f->status = 404;
	return -EREMOTEIO;
}

static int fake_context(void *a, const char *id, char *ctx, size_t n, struct mcp_fail *f)
{
	(void)a;
	(void)id;
	(void)f;
	snprintf(ctx, n, "ctx_%d", ++fake.contexts_made);
	return 0;
}

static int fake_run(void *a, const char *id, const char *ctx, const char *code, double t,
		    json_t **out, struct mcp_fail *f)
{
	(void)a;
	(void)id;
	(void)code;
	(void)t;
	fake.runs++;
	snprintf(fake.last_ctx, sizeof(fake.last_ctx), "%s", ctx);
	if (fake.fail_next_run) {
		fake.fail_next_run = 0;
		snprintf(f->code, sizeof(f->code), "context_not_found");
		return -EREMOTEIO;
	}
	*out = json_incref(fake.execution);
	return 0;
}

static int fake_exec(void *a, const char *id, const json_t *body, json_t **out,
		     struct mcp_fail *f)
{
	(void)a;
	(void)id;
	(void)f;
	*out = json_pack("{s:O, s:s, s:i}", "stdout", json_object_get(body, "cmd"), "stderr", "",
			 "exit_code", 3);
	return 0;
}

static int fake_read(void *a, const char *id, const char *path, size_t max, char **data,
		     size_t *len, struct mcp_fail *f)
{
	(void)a;
	(void)id;
	(void)path;
	(void)max;
	(void)f;
	*data = malloc(fake.file_len + 1);
	memcpy(*data, fake.file, fake.file_len);
	(*data)[fake.file_len] = '\0';
	*len = fake.file_len;
	return 0;
}

static int fake_write(void *a, const char *id, const char *path, const void *d, size_t len,
		      json_t **out, struct mcp_fail *f)
{
	(void)a;
	(void)id;
	(void)f;
	memcpy(fake.written, d, len < sizeof(fake.written) ? len : sizeof(fake.written));
	fake.written_len = len;
	*out = json_pack("{s:s, s:I}", "path", path, "size", (json_int_t)len);
	return 0;
}

static const struct mcp_backend backend = {
	.create_sandbox = fake_create_sandbox,
	.list_sandboxes = fake_list,
	.kill_sandbox = fake_kill,
	.create_context = fake_context,
	.run_code = fake_run,
	.exec = fake_exec,
	.read_file = fake_read,
	.write_file = fake_write,
};

/* ---- helpers -------------------------------------------------------------- */

/* Send one message text; the answer as JSON (NULL when none). */
static json_t *send(struct mcp_session *s, const char *text)
{
	size_t n;
	char *out = mcp_session_handle_bytes(s, &backend, text, strlen(text), &n);
	if (!out)
		return NULL;
	assert_null(memchr(out, '\n', n));
	json_t *j = json_loads(out, 0, NULL);
	assert_non_null(j);
	free(out);
	return j;
}

static int error_code(const json_t *resp)
{
	return (int)json_integer_value(json_object_get(json_object_get(resp, "error"), "code"));
}

static struct mcp_session *session(const char *version)
{
	struct mcp_session *s;
	assert_int_equal(mcp_session_new("9.9", &s), 0);
	char init[256];
	snprintf(init, sizeof(init),
		 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
		 "{\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":"
		 "{\"name\":\"t\",\"version\":\"1\"}}}",
		 version);
	json_t *r = send(s, init);
	assert_non_null(json_object_get(r, "result"));
	json_decref(r);
	assert_null(send(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"));
	return s;
}

/* tools/call name with args (JSON text); the answer. */
static json_t *call(struct mcp_session *s, const char *name, const char *args)
{
	char *m = NULL;
	assert_true(asprintf(&m,
			     "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":"
			     "{\"name\":\"%s\",\"arguments\":%s}}",
			     name, args) > 0);
	json_t *r = send(s, m);
	free(m);
	assert_non_null(r);
	return r;
}

static json_t *result(json_t *resp)
{
	json_t *r = json_object_get(resp, "result");
	assert_non_null(r);
	return r;
}

static int is_error(json_t *resp)
{
	return json_is_true(json_object_get(result(resp), "isError"));
}

/* The n-th content block of a tools/call answer. */
static json_t *block(json_t *resp, size_t n)
{
	json_t *c = json_array_get(json_object_get(result(resp), "content"), n);
	assert_non_null(c);
	return c;
}

static const char *type_of(json_t *b)
{
	return json_string_value(json_object_get(b, "type"));
}

/* ---- JSON-RPC ------------------------------------------------------------- */

static void test_rpc_kinds(void **state)
{
	(void)state;
	struct mcp_rpc_msg m;
	struct mcp_rpc_err e;
	const char *req = "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"ping\",\"params\":{}}";
	assert_int_equal(mcp_rpc_parse(req, strlen(req), &m, &e), 0);
	assert_int_equal(m.kind, MCP_RPC_REQUEST);
	assert_string_equal(m.method, "ping");
	mcp_rpc_msg_clear(&m);
	const char *note = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}";
	assert_int_equal(mcp_rpc_parse(note, strlen(note), &m, &e), 0);
	assert_int_equal(m.kind, MCP_RPC_NOTIFICATION);
	mcp_rpc_msg_clear(&m);
	const char *resp = "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":1,\"message\":\"m\"}}";
	assert_int_equal(mcp_rpc_parse(resp, strlen(resp), &m, &e), 0);
	assert_int_equal(m.kind, MCP_RPC_RESPONSE);
	mcp_rpc_msg_clear(&m);
}

static void test_rpc_refusals(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		int code;
		int has_id;
	} cases[] = {
		{"", MCP_RPC_PARSE_ERROR, 0},
		{"{\"jsonrpc\":\"2.0\",", MCP_RPC_PARSE_ERROR, 0},
		{"{\"a\":1,\"a\":2}", MCP_RPC_PARSE_ERROR, 0},
		{"\"\xff\"", MCP_RPC_PARSE_ERROR, 0},
		{"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", MCP_RPC_INVALID_REQUEST, 0},
		{"42", MCP_RPC_INVALID_REQUEST, 0},
		{"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", MCP_RPC_INVALID_REQUEST, 1},
		{"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", MCP_RPC_INVALID_REQUEST, 0},
		{"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", MCP_RPC_INVALID_REQUEST, 0},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", MCP_RPC_INVALID_REQUEST, 1},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":[1]}",
		 MCP_RPC_INVALID_REQUEST, 1},
		{"{\"jsonrpc\":\"2.0\",\"id\":1}", MCP_RPC_INVALID_REQUEST, 1},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{}}", MCP_RPC_INVALID_REQUEST, 1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mcp_rpc_msg m;
		struct mcp_rpc_err e;
		assert_int_equal(mcp_rpc_parse(cases[i].text, strlen(cases[i].text), &m, &e), -EINVAL);
		assert_int_equal(e.code, cases[i].code);
		assert_true((e.id != NULL) == cases[i].has_id);
		assert_null(m.root);
		mcp_rpc_err_clear(&e);
	}
	/* the answer to an unreadable id has no id member (2025-11-25 schema) */
	struct mcp_session *s;
	assert_int_equal(mcp_session_new("1", &s), 0);
	json_t *r = send(s, "not json");
	assert_int_equal(error_code(r), MCP_RPC_PARSE_ERROR);
	assert_null(json_object_get(r, "id"));
	json_decref(r);
	mcp_session_free(s);
}

/* ---- lifecycle ------------------------------------------------------------ */

static void test_lifecycle(void **state)
{
	(void)state;
	struct mcp_session *s;
	assert_int_equal(mcp_session_new("9.9", &s), 0);
	assert_null(mcp_session_version(s));
	/* ping is fine before initialize, nothing else is */
	json_t *r = send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
	assert_true(json_is_object(result(r)));
	assert_int_equal(json_object_size(result(r)), 0);
	json_decref(r);
	r = send(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	assert_int_equal(error_code(r), MCP_RPC_INVALID_REQUEST);
	json_decref(r);
	/* bad initialize params */
	r = send(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"initialize\",\"params\":"
		    "{\"protocolVersion\":\"2025-11-25\"}}");
	assert_int_equal(error_code(r), MCP_RPC_INVALID_PARAMS);
	json_decref(r);
	/* a version this server does not speak: it offers its latest */
	r = send(s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\",\"params\":"
		    "{\"protocolVersion\":\"1999-01-01\",\"capabilities\":{},"
		    "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
	json_t *res = result(r);
	assert_string_equal(json_string_value(json_object_get(res, "protocolVersion")),
			    MCP_VERSION_LATEST);
	assert_non_null(json_object_get(json_object_get(res, "capabilities"), "tools"));
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(res, "serverInfo"), "version")),
		"9.9");
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 4);
	json_decref(r);
	assert_string_equal(mcp_session_version(s), MCP_VERSION_LATEST);
	/* once only */
	r = send(s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"initialize\",\"params\":"
		    "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
		    "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
	assert_int_equal(error_code(r), MCP_RPC_INVALID_REQUEST);
	json_decref(r);
	/* notifications and client responses get no answer */
	assert_null(send(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"));
	assert_null(send(s, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}"));
	r = send(s, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"resources/list\"}");
	assert_int_equal(error_code(r), MCP_RPC_METHOD_NOT_FOUND);
	json_decref(r);
	mcp_session_free(s);

	/* a supported older revision is kept */
	s = session("2025-06-18");
	assert_string_equal(mcp_session_version(s), "2025-06-18");
	mcp_session_free(s);
}

/* ---- tools ---------------------------------------------------------------- */

static void test_tools_list(void **state)
{
	(void)state;
	struct mcp_session *s = session("2025-11-25");
	json_t *r = send(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	json_t *tools = json_object_get(result(r), "tools");
	static const char *const names[] = {"create_sandbox", "list_sandboxes", "kill_sandbox",
					    "run_code",       "exec",           "read_file",
					    "write_file"};
	assert_int_equal(json_array_size(tools), 7);
	for (size_t i = 0; i < 7; i++) {
		json_t *t = json_array_get(tools, i);
		assert_string_equal(json_string_value(json_object_get(t, "name")), names[i]);
		json_t *in = json_object_get(t, "inputSchema");
		assert_string_equal(json_string_value(json_object_get(in, "type")), "object");
		assert_true(json_is_false(json_object_get(in, "additionalProperties")));
		assert_true(json_string_length(json_object_get(t, "description")) > 20);
	}
	json_t *req = json_object_get(json_object_get(json_array_get(tools, 4), "inputSchema"),
				      "required");
	assert_int_equal(json_array_size(req), 2); /* exec: sandbox_id, cmd */
	json_decref(r);
	r = send(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":"
		    "{\"cursor\":\"x\"}}");
	assert_int_equal(error_code(r), MCP_RPC_INVALID_PARAMS);
	json_decref(r);
	mcp_session_free(s);
}

static void test_bad_calls(void **state)
{
	(void)state;
	struct mcp_session *s = session("2025-11-25");
	/* an unknown tool and a malformed call are protocol errors */
	json_t *r = call(s, "rm_rf", "{}");
	assert_int_equal(error_code(r), MCP_RPC_INVALID_PARAMS);
	json_decref(r);
	r = call(s, "exec", "[1]");
	assert_int_equal(error_code(r), MCP_RPC_INVALID_PARAMS);
	json_decref(r);
	r = send(s, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{}}");
	assert_int_equal(error_code(r), MCP_RPC_INVALID_PARAMS);
	json_decref(r);
	/* 2025-11-25: arguments that fail the schema are tool errors */
	static const char *const bad[] = {
		"{\"sandbox_id\":\"sbx_1\"}",                          /* cmd missing */
		"{\"sandbox_id\":\"sbx_1\",\"cmd\":5}",                /* wrong type */
		"{\"sandbox_id\":\"sbx_1\",\"cmd\":\"\"}",             /* too short */
		"{\"sandbox_id\":\"sbx_1\",\"cmd\":\"ls\",\"x\":1}",   /* unknown */
		"{\"sandbox_id\":\"sbx_1\",\"cmd\":\"ls\",\"timeout_seconds\":-1}",
		"{\"sandbox_id\":\"sbx_1\",\"cmd\":\"l\\u0000s\"}",    /* NUL */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = call(s, "exec", bad[i]);
		assert_true(is_error(r));
		assert_non_null(strstr(json_string_value(json_object_get(block(r, 0), "text")),
				       "Invalid arguments"));
		json_decref(r);
	}
	r = call(s, "create_sandbox", "{\"ttl_seconds\":1.5}");
	assert_true(is_error(r));
	json_decref(r);
	mcp_session_free(s);
	/* 2025-06-18: the same are -32602 */
	s = session("2025-06-18");
	r = call(s, "exec", bad[0]);
	assert_int_equal(error_code(r), MCP_RPC_INVALID_PARAMS);
	json_decref(r);
	mcp_session_free(s);
}

static void test_structured_tools(void **state)
{
	(void)state;
	struct mcp_session *s = session("2025-11-25");
	/* an integral real is an integer, as JSON Schema has it */
	json_t *r = call(s, "create_sandbox", "{\"ttl_seconds\":60.0}");
	assert_false(is_error(r));
	json_t *sc = json_object_get(result(r), "structuredContent");
	assert_string_equal(json_string_value(json_object_get(sc, "template")), "code-interpreter");
	assert_int_equal(json_integer_value(json_object_get(sc, "ttl")), 60);
	assert_string_equal(type_of(block(r, 0)), "text"); /* and the same as text */
	json_decref(r);
	r = call(s, "exec", "{\"sandbox_id\":\"sbx_1\",\"cmd\":\"echo hi\"}");
	assert_false(is_error(r)); /* a non-zero exit is a result */
	sc = json_object_get(result(r), "structuredContent");
	assert_int_equal(json_integer_value(json_object_get(sc, "exit_code")), 3);
	json_decref(r);
	r = call(s, "list_sandboxes", "{}");
	assert_int_equal(json_array_size(json_object_get(
				 json_object_get(result(r), "structuredContent"), "sandboxes")),
			 1);
	json_decref(r);
	/* an API failure is a tool error naming the API's code */
	r = call(s, "kill_sandbox", "{\"sandbox_id\":\"sbx_9\"}");
	assert_true(is_error(r));
	assert_non_null(strstr(json_string_value(json_object_get(block(r, 0), "text")),
			       "sandbox_not_found"));
	json_decref(r);
	mcp_session_free(s);
}

static void test_run_code_results(void **state)
{
	(void)state;
	memset(&fake, 0, sizeof(fake));
	fake.execution = json_loads(
		"{\"stdout\":\"hello\\n\",\"stderr\":\"\",\"results\":["
		"{\"is_main_result\":false,\"text\":\"<Figure>\",\"png\":\"iVBORw0KGgo=\"},"
		"{\"is_main_result\":true,\"text\":\"   a\\n0  1\",\"html\":\"<table></table>\"},"
		"{\"png\":\"not base64!\"}],"
		"\"error\":null,\"execution_count\":1}",
		0, NULL);
	struct mcp_session *s = session("2025-11-25");
	json_t *r = call(s, "run_code", "{\"sandbox_id\":\"sbx_1\",\"code\":\"plot()\"}");
	assert_false(is_error(r));
	assert_string_equal(type_of(block(r, 0)), "text");
	assert_string_equal(json_string_value(json_object_get(block(r, 0), "text")), "hello\n");
	assert_string_equal(type_of(block(r, 2)), "image");
	assert_string_equal(json_string_value(json_object_get(block(r, 2), "mimeType")),
			    "image/png");
	assert_string_equal(json_string_value(json_object_get(block(r, 2), "data")),
			    "iVBORw0KGgo=");
	assert_string_equal(type_of(block(r, 3)), "text");
	json_t *res = json_object_get(block(r, 4), "resource");
	assert_string_equal(type_of(block(r, 4)), "resource");
	assert_string_equal(json_string_value(json_object_get(res, "mimeType")), "text/html");
	assert_non_null(strstr(json_string_value(json_object_get(res, "uri")),
			       "pandastack://sandboxes/sbx_1/contexts/ctx_1/"));
	/* guest data that is not base64 never becomes an image */
	assert_string_equal(type_of(block(r, 5)), "text");
	json_decref(r);
	/* the context is made once per sandbox */
	r = call(s, "run_code", "{\"sandbox_id\":\"sbx_1\",\"code\":\"x\"}");
	json_decref(r);
	assert_int_equal(fake.contexts_made, 1);
	assert_string_equal(fake.last_ctx, "ctx_1");
	/* a context that went away is made again, and the answer says so */
	fake.fail_next_run = 1;
	r = call(s, "run_code", "{\"sandbox_id\":\"sbx_1\",\"code\":\"x\"}");
	assert_int_equal(fake.contexts_made, 2);
	assert_string_equal(fake.last_ctx, "ctx_2");
	assert_non_null(strstr(json_string_value(json_object_get(block(r, 0), "text")), "new one"));
	json_decref(r);
	json_decref(fake.execution);

	/* an exception: isError, with its traceback */
	fake.execution = json_loads("{\"stdout\":\"\",\"results\":[],\"error\":{\"name\":"
				    "\"ZeroDivisionError\",\"value\":\"division by zero\","
				    "\"traceback\":\"Traceback...\\n1/0\"}}",
				    0, NULL);
	r = call(s, "run_code", "{\"sandbox_id\":\"sbx_1\",\"code\":\"1/0\"}");
	assert_true(is_error(r));
	const char *t = json_string_value(json_object_get(block(r, 0), "text"));
	assert_non_null(strstr(t, "ZeroDivisionError: division by zero"));
	assert_non_null(strstr(t, "Traceback"));
	json_decref(r);
	json_decref(fake.execution);
	/* nothing at all still has one block */
	fake.execution = json_loads("{}", 0, NULL);
	r = call(s, "run_code", "{\"sandbox_id\":\"sbx_1\",\"code\":\"pass\"}");
	assert_int_equal(json_array_size(json_object_get(result(r), "content")), 1);
	json_decref(r);
	json_decref(fake.execution);
	mcp_session_free(s);
}

static void test_files(void **state)
{
	(void)state;
	memset(&fake, 0, sizeof(fake));
	struct mcp_session *s = session("2025-11-25");
	json_t *r = call(s, "write_file",
			 "{\"sandbox_id\":\"sbx_1\",\"path\":\"/a\",\"content_base64\":\"AAEC/w==\"}");
	assert_false(is_error(r));
	assert_int_equal(fake.written_len, 4);
	assert_memory_equal(fake.written, "\x00\x01\x02\xff", 4);
	json_decref(r);
	r = call(s, "write_file", "{\"sandbox_id\":\"sbx_1\",\"path\":\"/a\",\"content\":\"hi\"}");
	assert_int_equal(fake.written_len, 2);
	json_decref(r);
	static const char *const bad[] = {
		"{\"sandbox_id\":\"sbx_1\",\"path\":\"/a\",\"content_base64\":\"AA=C\"}",
		"{\"sandbox_id\":\"sbx_1\",\"path\":\"/a\"}",
		"{\"sandbox_id\":\"sbx_1\",\"path\":\"/a\",\"content\":\"x\",\"content_base64\":\"\"}",
	};
	for (size_t i = 0; i < 3; i++) {
		r = call(s, "write_file", bad[i]);
		assert_true(is_error(r));
		json_decref(r);
	}
	fake.file = "caf\xc3\xa9\n";
	fake.file_len = 6;
	r = call(s, "read_file", "{\"sandbox_id\":\"sbx_1\",\"path\":\"/a b\"}");
	assert_string_equal(json_string_value(json_object_get(block(r, 0), "text")), "caf\xc3\xa9\n");
	json_decref(r);
	fake.file = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
	fake.file_len = 16;
	r = call(s, "read_file", "{\"sandbox_id\":\"sbx_1\",\"path\":\"/p.png\"}");
	assert_string_equal(type_of(block(r, 0)), "image");
	assert_string_equal(json_string_value(json_object_get(block(r, 0), "mimeType")),
			    "image/png");
	json_decref(r);
	fake.file = "\x00\xff";
	fake.file_len = 2;
	r = call(s, "read_file", "{\"sandbox_id\":\"sbx_1\",\"path\":\"/a b\"}");
	json_t *res = json_object_get(block(r, 0), "resource");
	assert_string_equal(json_string_value(json_object_get(res, "blob")), "AP8=");
	assert_string_equal(json_string_value(json_object_get(res, "uri")),
			    "pandastack://sandboxes/sbx_1/files/a%20b");
	json_decref(r);
	mcp_session_free(s);
}

static void test_base64(void **state)
{
	(void)state;
	assert_true(base64_valid("", 0));
	assert_true(base64_valid("QUJD", 4));
	assert_true(base64_valid("QUI=", 4));
	assert_true(base64_valid("QQ==", 4));
	assert_false(base64_valid("QQ=", 3));
	assert_false(base64_valid("Q===", 4));
	assert_false(base64_valid("QU I", 4));
	assert_false(base64_valid("=QUI", 4));
	char *out;
	size_t n;
	assert_int_equal(base64_encode("\xff\x00", 2, &out, &n), 0);
	assert_string_equal(out, "/wA=");
	free(out);
	assert_int_equal(base64_decode("/wA=", 4, &out, &n), 0);
	assert_int_equal(n, 2);
	assert_memory_equal(out, "\xff\x00", 2);
	free(out);
	assert_int_equal(base64_decode("/w A", 4, &out, &n), -EINVAL);
}

/* The stdio transport: garbage, blank and CRLF lines; answers in order;
 * the server keeps going after garbage. */
static void test_stdio(void **state)
{
	(void)state;
	int in[2], out[2];
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	const char *input =
		"garbage\n"
		"\n   \n"
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n"
		"\x01\x02\xff\n"
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}"; /* no final newline */
	assert_int_equal(write(in[1], input, strlen(input)), (ssize_t)strlen(input));
	close(in[1]);
	assert_int_equal(mcp_stdio_serve(in[0], out[1], &backend, "1"), 0);
	close(in[0]);
	close(out[1]);
	char buf[4096];
	ssize_t n = read(out[0], buf, sizeof(buf) - 1);
	close(out[0]);
	assert_true(n > 0);
	buf[n] = '\0';
	/* four answers: parse error, ping 1, parse error, ping 2 */
	int lines = 0;
	int codes[4] = {0}, ids[4] = {0};
	for (char *save, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		json_t *j = json_loads(l, 0, NULL);
		assert_non_null(j);
		assert_true(lines < 4);
		codes[lines] = error_code(j);
		ids[lines] = (int)json_integer_value(json_object_get(j, "id"));
		json_decref(j);
		lines++;
	}
	assert_int_equal(lines, 4);
	assert_int_equal(codes[0], MCP_RPC_PARSE_ERROR);
	assert_int_equal(ids[1], 1);
	assert_int_equal(codes[1], 0);
	assert_int_equal(codes[2], MCP_RPC_PARSE_ERROR);
	assert_int_equal(ids[3], 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rpc_kinds),        cmocka_unit_test(test_rpc_refusals),
		cmocka_unit_test(test_lifecycle),        cmocka_unit_test(test_tools_list),
		cmocka_unit_test(test_bad_calls),        cmocka_unit_test(test_structured_tools),
		cmocka_unit_test(test_run_code_results), cmocka_unit_test(test_files),
		cmocka_unit_test(test_base64),           cmocka_unit_test(test_stdio),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
