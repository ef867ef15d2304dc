/*
 * mcp_server.c - one MCP session: lifecycle, version negotiation and
 * method dispatch (see mcp_server.h).
 */
#include "mcp/mcp_server.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp_contexts.h"
#include "mcp/mcp_tools.h"

enum state { NEW = 0, ANSWERED = 1, READY = 2 };

struct mcp_session {
	pthread_mutex_t mu;
	enum state state;
	char version[16];       /* negotiated; "" before initialize */
	char server_version[32];
	struct mcp_contexts *contexts;
};

static const char *const versions[] = MCP_VERSIONS;

static const char instructions[] =
	"PandaStack runs code in sandboxes (isolated microVMs). Call create_sandbox first and "
	"pass its id to the other tools; run_code keeps Python state between calls in the same "
	"sandbox; call kill_sandbox when done (sandboxes also end at their TTL).";

int mcp_version_supported(const char *v)
{
	for (size_t i = 0; v && i < sizeof(versions) / sizeof(versions[0]); i++)
		if (strcmp(v, versions[i]) == 0)
			return 1;
	return 0;
}

int mcp_session_new(const char *server_version, struct mcp_session **out)
{
	struct mcp_session *s = calloc(1, sizeof(*s));
	if (!s || mcp_contexts_new(&s->contexts) < 0) {
		free(s);
		return -ENOMEM;
	}
	pthread_mutex_init(&s->mu, NULL);
	snprintf(s->server_version, sizeof(s->server_version), "%s", server_version);
	*out = s;
	return 0;
}

void mcp_session_free(struct mcp_session *s)
{
	if (!s)
		return;
	mcp_contexts_free(s->contexts);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

const char *mcp_session_version(struct mcp_session *s)
{
	pthread_mutex_lock(&s->mu);
	const char *v = s->state == NEW ? NULL : s->version;
	pthread_mutex_unlock(&s->mu);
	return v;
}

static json_t *error(const struct mcp_rpc_msg *m, int code, const char *msg)
{
	return mcp_rpc_error(m->id, code, msg, NULL);
}

/* initialize: check InitializeRequestParams, negotiate, answer. */
static json_t *initialize(struct mcp_session *s, const struct mcp_rpc_msg *m)
{
	const json_t *p = m->params;
	const json_t *ver = json_object_get(p, "protocolVersion");
	const json_t *caps = json_object_get(p, "capabilities");
	const json_t *info = json_object_get(p, "clientInfo");
	if (!json_is_string(ver) || !json_is_object(caps) || !json_is_object(info) ||
	    !json_is_string(json_object_get(info, "name")) ||
	    !json_is_string(json_object_get(info, "version")))
		return error(m, MCP_RPC_INVALID_PARAMS,
			     "Invalid params: initialize needs protocolVersion, capabilities and "
			     "clientInfo {name, version}");
	const char *want = json_string_value(ver);
	pthread_mutex_lock(&s->mu);
	if (s->state != NEW) {
		pthread_mutex_unlock(&s->mu);
		return error(m, MCP_RPC_INVALID_REQUEST,
			     "Invalid Request: the session is already initialized");
	}
	snprintf(s->version, sizeof(s->version), "%s",
		 mcp_version_supported(want) ? want : MCP_VERSION_LATEST);
	s->state = ANSWERED;
	json_t *res = json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s, s:s}, s:s}", "protocolVersion",
				s->version, "capabilities", "tools", "listChanged", 0, "serverInfo",
				"name", "pandastack", "title", "PandaStack", "version",
				s->server_version, "description",
				"Sandboxes for untrusted code: Python cells, shell commands, files",
				"instructions", instructions);
	pthread_mutex_unlock(&s->mu);
	return res ? mcp_rpc_result(m->id, res) : NULL;
}

static json_t *tools_list(const struct mcp_rpc_msg *m)
{
	if (json_object_get(m->params, "cursor"))
		return error(m, MCP_RPC_INVALID_PARAMS, "Invalid params: unknown cursor");
	json_t *list = mcp_tools_list();
	return list ? mcp_rpc_result(m->id, json_pack("{s:o}", "tools", list)) : NULL;
}

static json_t *tools_call(struct mcp_session *s, const struct mcp_backend *b,
			  const struct mcp_rpc_msg *m)
{
	const json_t *name = json_object_get(m->params, "name");
	const json_t *args = json_object_get(m->params, "arguments");
	if (!json_is_string(name) || (args && !json_is_object(args)))
		return error(m, MCP_RPC_INVALID_PARAMS,
			     "Invalid params: tools/call needs a name (string) and arguments "
			     "(object)");
	pthread_mutex_lock(&s->mu);
	struct mcp_call c = {.backend = b,
			     .contexts = s->contexts,
			     .args_error_is_result = strcmp(s->version, "2025-06-18") != 0};
	pthread_mutex_unlock(&s->mu);
	json_t *result = NULL;
	int code = 0;
	char msg[256];
	int e = mcp_tools_call(&c, json_string_value(name), args, &result, &code, msg, sizeof(msg));
	if (e == -EINVAL)
		return error(m, code, msg);
	if (e < 0)
		return error(m, MCP_RPC_INTERNAL_ERROR, "Internal error: out of memory");
	return mcp_rpc_result(m->id, result);
}

json_t *mcp_session_handle(struct mcp_session *s, const struct mcp_backend *b,
			   const struct mcp_rpc_msg *m)
{
	if (m->kind == MCP_RPC_RESPONSE)
		return NULL;
	if (m->kind == MCP_RPC_NOTIFICATION) {
		pthread_mutex_lock(&s->mu);
		if (strcmp(m->method, "notifications/initialized") == 0 && s->state == ANSWERED)
			s->state = READY;
		pthread_mutex_unlock(&s->mu);
		return NULL;
	}
	if (strcmp(m->method, "initialize") == 0)
		return initialize(s, m);
	if (strcmp(m->method, "ping") == 0)
		return mcp_rpc_result(m->id, json_object());
	pthread_mutex_lock(&s->mu);
	enum state st = s->state;
	pthread_mutex_unlock(&s->mu);
	if (st == NEW)
		return error(m, MCP_RPC_INVALID_REQUEST,
			     "Invalid Request: send initialize first");
	if (strcmp(m->method, "tools/list") == 0)
		return tools_list(m);
	if (strcmp(m->method, "tools/call") == 0)
		return tools_call(s, b, m);
	char msg[200];
	snprintf(msg, sizeof(msg), "Method not found: %.128s", m->method);
	return error(m, MCP_RPC_METHOD_NOT_FOUND, msg);
}

char *mcp_session_handle_bytes(struct mcp_session *s, const struct mcp_backend *b,
			       const char *buf, size_t len, size_t *outlen)
{
	struct mcp_rpc_msg m;
	struct mcp_rpc_err err;
	json_t *resp;
	int e = mcp_rpc_parse(buf, len, &m, &err);
	if (e == -ENOMEM)
		return NULL;
	if (e < 0) {
		resp = mcp_rpc_error(err.id, err.code, err.message, NULL);
		mcp_rpc_err_clear(&err);
	} else {
		resp = mcp_session_handle(s, b, &m);
		mcp_rpc_msg_clear(&m);
	}
	if (!resp)
		return NULL;
	char *out = mcp_rpc_dump(resp, outlen);
	json_decref(resp);
	return out;
}
