/*
 * mcp_tools.c - the tool table, the check of arguments against it, and
 * each tool's work (see mcp_tools.h).  The input schemas that tools/list
 * shows are written from the same table that the check reads, so the two
 * cannot disagree.
 */
#include "mcp/mcp_tools.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "mcp/mcp_content.h"

#define ARGS_MAX 6

enum arg_type { ARG_STRING, ARG_INTEGER, ARG_NUMBER };

struct arg {
	const char *name;
	enum arg_type type;
	int required;
	size_t min_len, max_len; /* strings: characters (JSON Schema's minLength/maxLength) */
	double min, max;         /* numbers: inclusive */
	int nul_ok;              /* strings: may hold U+0000 (file content) */
	const char *description;
};

/* The checked arguments of one call, by their index in the tool's table. */
struct args {
	const json_t *v[ARGS_MAX]; /* NULL when absent */
};

struct tool;
typedef int (*tool_fn)(const struct mcp_call *c, const struct args *a, json_t **result);

struct tool {
	const char *name;
	const char *title;
	const char *description;
	struct arg args[ARGS_MAX];
	int read_only;   /* annotations: readOnlyHint */
	int destructive; /* annotations: destructiveHint */
	json_t *(*output_schema)(void);
	tool_fn run;
};

/* ---- results -------------------------------------------------------------- */

/* A tool execution error: {"content": [text], "isError": true}. */
static json_t *tool_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *tool_error(const char *fmt, ...)
{
	char msg[1400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_t *t = mcp_content_text(msg, strlen(msg));
	return t ? json_pack("{s:[o], s:b}", "content", t, "isError", 1) : NULL;
}

static json_t *api_error(const char *what, const struct mcp_fail *f)
{
	return tool_error("%s failed: %s: %s", what, f->code[0] ? f->code : "error", f->message);
}

/* A structured result: obj (stolen) as structuredContent and, as the
 * revision asks for compatibility, its serialisation as a text block. */
static json_t *structured(json_t *obj)
{
	if (!obj)
		return NULL;
	char *s = json_dumps(obj, JSON_COMPACT);
	json_t *t = s ? mcp_content_text(s, strlen(s)) : NULL;
	free(s);
	if (!t) {
		json_decref(obj);
		return NULL;
	}
	return json_pack("{s:[o], s:o}", "content", t, "structuredContent", obj);
}

static const char *str(const struct args *a, int i)
{
	return a->v[i] ? json_string_value(a->v[i]) : NULL;
}

static int ret(json_t *r, json_t **result)
{
	*result = r;
	return r ? 0 : -ENOMEM;
}

/* Percent-encode s into out for a URI (RFC 3986: unreserved bytes and,
 * when keep_slash, "/" are kept). */
static void uri_part(const char *s, int keep_slash, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;
	for (; *s && o + 4 < cap; s++) {
		unsigned char ch = (unsigned char)*s;
		if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
		    ch == '-' || ch == '.' || ch == '_' || ch == '~' || (keep_slash && ch == '/')) {
			out[o++] = (char)ch;
		} else {
			out[o++] = '%';
			out[o++] = hex[ch >> 4];
			out[o++] = hex[ch & 15];
		}
	}
	out[o] = '\0';
}

/* ---- the tools ------------------------------------------------------------ */

static int run_create_sandbox(const struct mcp_call *c, const struct args *a, json_t **result)
{
	const struct mcp_backend *b = c->backend;
	const char *tpl = str(a, 0) ? str(a, 0) : "code-interpreter";
	int64_t ttl = a->v[1] ? json_integer_value(a->v[1]) : 0;
	json_t *sbx = NULL;
	struct mcp_fail f = {0};
	if (b->create_sandbox(b->arg, tpl, ttl, &sbx, &f) < 0)
		return ret(api_error("create_sandbox", &f), result);
	return ret(structured(sbx), result);
}

static int run_list_sandboxes(const struct mcp_call *c, const struct args *a, json_t **result)
{
	(void)a;
	const struct mcp_backend *b = c->backend;
	json_t *list = NULL;
	struct mcp_fail f = {0};
	if (b->list_sandboxes(b->arg, &list, &f) < 0)
		return ret(api_error("list_sandboxes", &f), result);
	if (!json_is_array(json_object_get(list, "sandboxes"))) {
		json_decref(list);
		return ret(tool_error("list_sandboxes failed: the API's answer has no sandboxes"),
			   result);
	}
	return ret(structured(list), result);
}

static int run_kill_sandbox(const struct mcp_call *c, const struct args *a, json_t **result)
{
	const struct mcp_backend *b = c->backend;
	struct mcp_fail f = {0};
	if (b->kill_sandbox(b->arg, str(a, 0), &f) < 0)
		return ret(api_error("kill_sandbox", &f), result);
	mcp_contexts_forget(c->contexts, str(a, 0), NULL);
	return ret(structured(json_pack("{s:s, s:b}", "id", str(a, 0), "killed", 1)), result);
}

static int run_run_code(const struct mcp_call *c, const struct args *a, json_t **result)
{
	const struct mcp_backend *b = c->backend;
	const char *sbx = str(a, 0);
	double timeout = a->v[2] ? json_number_value(a->v[2]) : -1;
	char ctx[MCP_ID_MAX];
	struct mcp_fail f = {0};
	json_t *exe = NULL;
	int renewed = 0;
	for (int attempt = 0;; attempt++) {
		if (!mcp_contexts_get(c->contexts, sbx, ctx)) {
			if (b->create_context(b->arg, sbx, ctx, sizeof(ctx), &f) < 0)
				return ret(api_error("run_code (making a code context)", &f), result);
			mcp_contexts_put(c->contexts, sbx, ctx);
		}
		if (b->run_code(b->arg, sbx, ctx, str(a, 1), timeout, &exe, &f) == 0)
			break;
		/* The guest shut the context down when it was idle, or it was
		 * deleted: make a new one once and say that state was lost. */
		if (attempt == 0 && strcmp(f.code, "context_not_found") == 0) {
			mcp_contexts_forget(c->contexts, sbx, ctx);
			renewed = 1;
			continue;
		}
		return ret(api_error("run_code", &f), result);
	}
	json_t *content = json_array();
	int is_error = 0;
	char esbx[3 * MCP_ID_MAX], ectx[3 * MCP_ID_MAX], prefix[512];
	uri_part(sbx, 0, esbx, sizeof(esbx));
	uri_part(ctx, 0, ectx, sizeof(ectx));
	json_int_t n = json_integer_value(json_object_get(exe, "execution_count"));
	snprintf(prefix, sizeof(prefix), "pandastack://sandboxes/%s/contexts/%s/cells/%lld/results",
		 esbx, ectx, (long long)n);
	static const char note[] = "[the sandbox's earlier code context had ended (idle or "
				   "deleted): this cell ran in a new one, earlier variables are gone]";
	int e = content ? 0 : -ENOMEM;
	if (!e && renewed && json_array_append_new(content, mcp_content_text(note, sizeof(note) - 1)))
		e = -ENOMEM;
	if (!e)
		e = mcp_content_execution(content, exe, prefix, &is_error);
	json_decref(exe);
	if (e) {
		json_decref(content);
		return e;
	}
	return ret(json_pack("{s:o, s:b}", "content", content, "isError", is_error), result);
}

static int run_exec(const struct mcp_call *c, const struct args *a, json_t **result)
{
	const struct mcp_backend *b = c->backend;
	json_t *body = json_pack("{s:O}", "cmd", a->v[1]);
	static const char *const opt[] = {NULL, NULL, "timeout_seconds", "cwd", "stdin"};
	for (int i = 2; body && i <= 4; i++)
		if (a->v[i] && json_object_set(body, opt[i], (json_t *)a->v[i])) {
			json_decref(body);
			body = NULL;
		}
	if (!body)
		return -ENOMEM;
	json_t *res = NULL;
	struct mcp_fail f = {0};
	int e = b->exec(b->arg, str(a, 0), body, &res, &f);
	json_decref(body);
	if (e < 0)
		return ret(api_error("exec", &f), result);
	if (!json_is_object(res)) {
		json_decref(res);
		return ret(tool_error("exec failed: the API's answer is not an object"), result);
	}
	return ret(structured(res), result);
}

static int run_read_file(const struct mcp_call *c, const struct args *a, json_t **result)
{
	const struct mcp_backend *b = c->backend;
	char *data = NULL;
	size_t len = 0;
	struct mcp_fail f = {0};
	if (b->read_file(b->arg, str(a, 0), str(a, 1), MCP_FILE_MAX, &data, &len, &f) < 0)
		return ret(api_error("read_file", &f), result);
	char esbx[3 * MCP_ID_MAX], epath[3 * 4096 + 1], uri[sizeof(esbx) + sizeof(epath) + 64];
	uri_part(str(a, 0), 0, esbx, sizeof(esbx));
	uri_part(str(a, 1), 1, epath, sizeof(epath));
	snprintf(uri, sizeof(uri), "pandastack://sandboxes/%s/files%s", esbx, epath);
	json_t *block = mcp_content_file(uri, data, len);
	free(data);
	return ret(block ? json_pack("{s:[o]}", "content", block) : NULL, result);
}

static int run_write_file(const struct mcp_call *c, const struct args *a, json_t **result)
{
	const struct mcp_backend *b = c->backend;
	if (!a->v[2] == !a->v[3])
		return ret(tool_error("write_file: give exactly one of content and content_base64"),
			   result);
	char *decoded = NULL;
	const char *data;
	size_t len;
	if (a->v[2]) {
		data = json_string_value(a->v[2]);
		len = json_string_length(a->v[2]);
	} else {
		int e = base64_decode(json_string_value(a->v[3]), json_string_length(a->v[3]),
					  &decoded, &len);
		if (e == -ENOMEM)
			return e;
		if (e < 0)
			return ret(tool_error("write_file: content_base64 is not valid base64"),
				   result);
		data = decoded;
	}
	if (len > MCP_FILE_MAX) {
		free(decoded);
		return ret(tool_error("write_file: the file is larger than %u bytes", MCP_FILE_MAX),
			   result);
	}
	json_t *res = NULL;
	struct mcp_fail f = {0};
	int e = b->write_file(b->arg, str(a, 0), str(a, 1), data, len, &res, &f);
	free(decoded);
	if (e < 0)
		return ret(api_error("write_file", &f), result);
	json_t *size = json_object_get(res, "size");
	json_t *out = json_pack("{s:s, s:I}", "path", str(a, 1), "size",
				json_is_integer(size) ? json_integer_value(size) : (json_int_t)len);
	json_decref(res);
	return ret(structured(out), result);
}

/* ---- output schemas ------------------------------------------------------- */

static json_t *schema_sandbox(void)
{
	return json_pack("{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}}, s:[s, s, s]}", "type",
			 "object", "properties", "id", "type", "string", "template", "type", "string",
			 "status", "type", "string", "expires_at", "type", "string", "required", "id",
			 "template", "status");
}

static json_t *schema_list(void)
{
	return json_pack("{s:s, s:{s:{s:s, s:{s:s}}}, s:[s]}", "type", "object", "properties",
			 "sandboxes", "type", "array", "items", "type", "object", "required",
			 "sandboxes");
}

static json_t *schema_killed(void)
{
	return json_pack("{s:s, s:{s:{s:s}, s:{s:s}}, s:[s, s]}", "type", "object", "properties",
			 "id", "type", "string", "killed", "type", "boolean", "required", "id",
			 "killed");
}

static json_t *schema_exec(void)
{
	return json_pack("{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}}, s:[s, s, s]}",
			 "type", "object", "properties", "stdout", "type", "string", "stderr", "type",
			 "string", "exit_code", "type", "integer", "duration_ms", "type", "integer",
			 "timed_out", "type", "boolean", "required", "stdout", "stderr", "exit_code");
}

static json_t *schema_written(void)
{
	return json_pack("{s:s, s:{s:{s:s}, s:{s:s}}, s:[s, s]}", "type", "object", "properties",
			 "path", "type", "string", "size", "type", "integer", "required", "path",
			 "size");
}

/* ---- the table ------------------------------------------------------------ */

#define SANDBOX_ID                                                                     \
	{"sandbox_id", ARG_STRING, 1, 1, 64, 0, 0, 0,                                  \
	 "The sandbox's id (sbx_...), as create_sandbox or list_sandboxes gave it."}
#define TIMEOUT(what)                                                                  \
	{"timeout_seconds", ARG_NUMBER, 0, 0, 0, 0, 86400, 0,                         \
	 "Seconds before " what " is stopped (0: no limit; default: the daemon's, 60)."}
#define GUEST_PATH                                                                     \
	{"path", ARG_STRING, 1, 1, 4095, 0, 0, 0,                                      \
	 "An absolute path in the sandbox, e.g. /workspace/data.csv."}

static const struct tool tools[] = {
	{"create_sandbox", "Create a sandbox",
	 "Start a new sandbox: an isolated microVM restored from a template, with Python "
	 "(pandas, numpy, matplotlib on code-interpreter) and a shell. Answers its id, to pass "
	 "to the other tools. It ends after ttl_seconds, or with kill_sandbox.",
	 {{"template", ARG_STRING, 0, 1, 64, 0, 0, 0,
	   "The template to start from (default code-interpreter; base has no IPython)."},
	  {"ttl_seconds", ARG_INTEGER, 0, 0, 0, 1, 86400, 0,
	   "Seconds the sandbox lives (default: the daemon's, 300)."}},
	 0, 0, schema_sandbox, run_create_sandbox},
	{"list_sandboxes", "List sandboxes",
	 "List the sandboxes of this API key's team (running ones and recently ended ones).",
	 {{0}}, 1, 0, schema_list, run_list_sandboxes},
	{"kill_sandbox", "Kill a sandbox",
	 "Stop a sandbox and delete it with its files. Its id answers not found afterwards.",
	 {SANDBOX_ID}, 0, 1, schema_killed, run_kill_sandbox},
	{"run_code", "Run Python code",
	 "Run Python code in a sandbox's persistent Jupyter kernel: variables and imports stay "
	 "between calls, like a notebook. Answers what it printed, the last expression's value, "
	 "charts as PNG images (matplotlib), tables as HTML and text, and an exception's "
	 "traceback as an error.",
	 {SANDBOX_ID,
	  {"code", ARG_STRING, 1, 0, MCP_CODE_MAX, 0, 0, 0, "The Python code of one cell."},
	  TIMEOUT("the cell")},
	 0, 1, NULL, run_run_code},
	{"exec", "Run a shell command",
	 "Run a command with /bin/sh -c in a sandbox and wait for it to end. Answers its "
	 "stdout, stderr and exit code (a non-zero exit code is a result, not a failure).",
	 {SANDBOX_ID,
	  {"cmd", ARG_STRING, 1, 1, 65536, 0, 0, 0, "The command line, e.g. ls -l /workspace."},
	  TIMEOUT("the command"),
	  {"cwd", ARG_STRING, 0, 1, 4095, 0, 0, 0,
	   "The working directory, an absolute path (default /workspace)."},
	  {"stdin", ARG_STRING, 0, 0, 1u << 20, 0, 0, 0,
	   "Text sent to the command's standard input, then end of file."}},
	 0, 1, schema_exec, run_exec},
	{"read_file", "Read a file",
	 "Read a file of a sandbox (at most 8 MiB): text as text, PNG/JPEG/GIF/WebP as an "
	 "image, other bytes as a base64 blob.",
	 {SANDBOX_ID, GUEST_PATH}, 1, 0, NULL, run_read_file},
	{"write_file", "Write a file",
	 "Write a file of a sandbox (created or replaced, parent folders made; at most 8 MiB). "
	 "Give the text as content, or bytes as content_base64.",
	 {SANDBOX_ID, GUEST_PATH,
	  {"content", ARG_STRING, 0, 0, MCP_FILE_MAX, 0, 0, 1, "The file's text."},
	  {"content_base64", ARG_STRING, 0, 0, (MCP_FILE_MAX + 2) / 3 * 4, 0, 0, 0,
	   "The file's bytes in base64 (instead of content)."}},
	 0, 1, schema_written, run_write_file},
};

#define NTOOLS (sizeof(tools) / sizeof(tools[0]))

static size_t nargs(const struct tool *t)
{
	size_t n = 0;
	while (n < ARGS_MAX && t->args[n].name)
		n++;
	return n;
}

static json_t *input_schema(const struct tool *t)
{
	json_t *props = json_object(), *req = json_array();
	json_t *s = json_pack("{s:s, s:o, s:b}", "type", "object", "properties", props,
			      "additionalProperties", 0);
	if (!s || !req) {
		json_decref(s);
		json_decref(req);
		return NULL;
	}
	int bad = 0;
	for (size_t i = 0; i < nargs(t); i++) {
		const struct arg *g = &t->args[i];
		json_t *p = json_pack("{s:s, s:s}", "type",
				      g->type == ARG_STRING    ? "string"
				      : g->type == ARG_INTEGER ? "integer"
							       : "number",
				      "description", g->description);
		if (p && g->type == ARG_STRING) {
			if (g->min_len)
				bad |= json_object_set_new(p, "minLength", json_integer((json_int_t)g->min_len));
			bad |= json_object_set_new(p, "maxLength", json_integer((json_int_t)g->max_len));
		} else if (p) {
			bad |= json_object_set_new(p, "minimum", json_real(g->min));
			bad |= json_object_set_new(p, "maximum", json_real(g->max));
		}
		bad |= !p || json_object_set_new(props, g->name, p);
		if (g->required)
			bad |= json_array_append_new(req, json_string(g->name));
	}
	if (json_array_size(req))
		bad |= json_object_set(s, "required", req);
	json_decref(req);
	if (bad) {
		json_decref(s);
		return NULL;
	}
	return s;
}

json_t *mcp_tools_list(void)
{
	json_t *list = json_array();
	for (size_t i = 0; list && i < NTOOLS; i++) {
		const struct tool *t = &tools[i];
		json_t *in = input_schema(t);
		json_t *d = in ? json_pack("{s:s, s:s, s:s, s:o, s:{s:s, s:b, s:b, s:b}}", "name",
					   t->name, "title", t->title, "description",
					   t->description, "inputSchema", in, "annotations",
					   "title", t->title, "readOnlyHint", t->read_only,
					   "destructiveHint", t->destructive, "openWorldHint", 0)
			       : NULL;
		if (d && t->output_schema) {
			json_t *o = t->output_schema();
			if (!o || json_object_set_new(d, "outputSchema", o)) {
				json_decref(d);
				d = NULL;
			}
		}
		if (!d || json_array_append_new(list, d)) {
			json_decref(list);
			list = NULL;
		}
	}
	return list;
}

/* Characters (code points) of a valid UTF-8 string. */
static size_t chars(const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xC0) != 0x80;
	return n;
}

/* Check args against t's table; fill a.  Returns 0, or -EINVAL with why. */
static int check_args(const struct tool *t, const json_t *args, struct args *a, char *why,
		      size_t whylen)
{
	memset(a, 0, sizeof(*a));
	size_t n = nargs(t);
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)args, key, v)
	{
		size_t i = 0;
		while (i < n && strcmp(t->args[i].name, key) != 0)
			i++;
		if (i == n) {
			snprintf(why, whylen, "unknown argument '%.64s'", key);
			return -EINVAL;
		}
		const struct arg *g = &t->args[i];
		if (g->type == ARG_STRING) {
			if (!json_is_string(v)) {
				snprintf(why, whylen, "%s must be a string", g->name);
				return -EINVAL;
			}
			size_t len = json_string_length(v), c = chars(json_string_value(v), len);
			if (c < g->min_len || c > g->max_len) {
				snprintf(why, whylen, "%s must have %zu to %zu characters", g->name,
					 g->min_len, g->max_len);
				return -EINVAL;
			}
			if (!g->nul_ok && strlen(json_string_value(v)) != len) {
				snprintf(why, whylen, "%s must not contain U+0000", g->name);
				return -EINVAL;
			}
		} else {
			/* JSON Schema's "integer" takes 2.0 as well; jansson keeps the
			 * two apart, so an integral real is accepted here too. */
			int ok = json_is_number(v);
			double d = json_number_value(v);
			if (ok && g->type == ARG_INTEGER && json_is_real(v))
				ok = d == floor(d);
			if (!ok) {
				snprintf(why, whylen, "%s must be %s", g->name,
					 g->type == ARG_INTEGER ? "an integer" : "a number");
				return -EINVAL;
			}
			if (!(d >= g->min && d <= g->max)) {
				snprintf(why, whylen, "%s must be between %g and %g", g->name, g->min,
					 g->max);
				return -EINVAL;
			}
		}
		a->v[i] = v;
	}
	for (size_t i = 0; i < n; i++)
		if (t->args[i].required && !a->v[i]) {
			snprintf(why, whylen, "%s is required", t->args[i].name);
			return -EINVAL;
		}
	return 0;
}

int mcp_tools_call(const struct mcp_call *c, const char *name, const json_t *args,
		   json_t **result, int *rpc_code, char *msg, size_t msglen)
{
	*result = NULL;
	const struct tool *t = NULL;
	for (size_t i = 0; i < NTOOLS && !t; i++)
		if (strcmp(tools[i].name, name) == 0)
			t = &tools[i];
	if (!t) {
		*rpc_code = -32602;
		snprintf(msg, msglen, "Unknown tool: %.128s", name);
		return -EINVAL;
	}
	json_t *empty = NULL;
	if (!args)
		args = empty = json_object();
	if (!args)
		return -ENOMEM;
	struct args a;
	char why[256];
	int e = check_args(t, args, &a, why, sizeof(why));
	if (e < 0) {
		json_decref(empty);
		if (c->args_error_is_result)
			return ret(tool_error("Invalid arguments for tool %s: %s", t->name, why),
				   result);
		*rpc_code = -32602;
		snprintf(msg, msglen, "Invalid arguments for tool %s: %s", t->name, why);
		return -EINVAL;
	}
	/* Integers that arrived as integral reals become integers for the API. */
	json_t *fixed[ARGS_MAX] = {0};
	for (size_t i = 0; i < nargs(t) && !e; i++)
		if (a.v[i] && t->args[i].type == ARG_INTEGER && json_is_real(a.v[i])) {
			a.v[i] = fixed[i] = json_integer((json_int_t)json_real_value(a.v[i]));
			e = fixed[i] ? 0 : -ENOMEM;
		}
	if (!e)
		e = t->run(c, &a, result);
	for (size_t i = 0; i < ARGS_MAX; i++)
		json_decref(fixed[i]);
	json_decref(empty);
	return e;
}
