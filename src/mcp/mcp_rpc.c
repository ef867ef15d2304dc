/*
 * mcp_rpc.c - reading and building JSON-RPC 2.0 messages (see mcp_rpc.h).
 */
#include "mcp/mcp_rpc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

static int refuse(struct mcp_rpc_err *err, int code, json_t *id, const char *msg)
{
	err->code = code;
	snprintf(err->message, sizeof(err->message), "%s", msg);
	err->id = id ? json_incref(id) : NULL;
	return -EINVAL;
}

/* An id MCP accepts: a string of at most MCP_RPC_ID_MAX bytes, or an
 * integer (jansson keeps integers apart from reals: 1.5 and 1e3 are not). */
static int id_valid(const json_t *id)
{
	if (json_is_integer(id))
		return 1;
	return json_is_string(id) && json_string_length(id) <= MCP_RPC_ID_MAX;
}

int mcp_rpc_parse(const char *buf, size_t len, struct mcp_rpc_msg *out, struct mcp_rpc_err *err)
{
	memset(out, 0, sizeof(*out));
	memset(err, 0, sizeof(*err));
	if (len > MCP_RPC_MESSAGE_MAX)
		return refuse(err, MCP_RPC_PARSE_ERROR, NULL, "Parse error: the message is too large");
	/* jansson checks UTF-8 and nesting depth; duplicate keys are refused
	 * so that no two readers could see two different messages. */
	json_error_t je;
	json_t *root = json_loadb(buf ? buf : "", len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, &je);
	if (!root)
		return refuse(err, MCP_RPC_PARSE_ERROR, NULL, "Parse error: not a JSON text");
	int e;
	if (json_is_array(root)) {
		e = refuse(err, MCP_RPC_INVALID_REQUEST, NULL,
			   "Invalid Request: JSON-RPC batches are not supported");
		goto fail;
	}
	if (!json_is_object(root)) {
		e = refuse(err, MCP_RPC_INVALID_REQUEST, NULL,
			   "Invalid Request: a message is a JSON object");
		goto fail;
	}
	json_t *id = json_object_get(root, "id");
	json_t *good_id = id && id_valid(id) ? id : NULL;
	json_t *ver = json_object_get(root, "jsonrpc");
	if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0 ||
	    json_string_length(ver) != 3) {
		e = refuse(err, MCP_RPC_INVALID_REQUEST, good_id,
			   "Invalid Request: \"jsonrpc\" must be \"2.0\"");
		goto fail;
	}
	if (id && !good_id) {
		e = refuse(err, MCP_RPC_INVALID_REQUEST, NULL,
			   "Invalid Request: \"id\" must be a string or an integer");
		goto fail;
	}
	json_t *method = json_object_get(root, "method");
	json_t *result = json_object_get(root, "result");
	json_t *error = json_object_get(root, "error");
	if (method) {
		if (!json_is_string(method) || json_string_length(method) == 0 ||
		    strlen(json_string_value(method)) != json_string_length(method)) {
			e = refuse(err, MCP_RPC_INVALID_REQUEST, good_id,
				   "Invalid Request: \"method\" must be a non-empty string");
			goto fail;
		}
		if (result || error) {
			e = refuse(err, MCP_RPC_INVALID_REQUEST, good_id,
				   "Invalid Request: a request has no \"result\" or \"error\"");
			goto fail;
		}
		json_t *params = json_object_get(root, "params");
		if (params && !json_is_object(params)) {
			e = refuse(err, MCP_RPC_INVALID_REQUEST, good_id,
				   "Invalid Request: \"params\" must be an object");
			goto fail;
		}
		out->kind = id ? MCP_RPC_REQUEST : MCP_RPC_NOTIFICATION;
		out->method = json_string_value(method);
		out->params = params;
	} else {
		/* a response: exactly one of result and error, and an id */
		if (!id || !result == !error) {
			e = refuse(err, MCP_RPC_INVALID_REQUEST, good_id,
				   "Invalid Request: neither a request, a notification nor a response");
			goto fail;
		}
		if (error && (!json_is_object(error) ||
			      !json_is_integer(json_object_get(error, "code")) ||
			      !json_is_string(json_object_get(error, "message")))) {
			e = refuse(err, MCP_RPC_INVALID_REQUEST, good_id,
				   "Invalid Request: an error response needs an integer code and a message");
			goto fail;
		}
		out->kind = MCP_RPC_RESPONSE;
	}
	out->root = root;
	out->id = id;
	return 0;
fail:
	json_decref(root);
	return e;
}

void mcp_rpc_msg_clear(struct mcp_rpc_msg *m)
{
	json_decref(m->root);
	memset(m, 0, sizeof(*m));
}

void mcp_rpc_err_clear(struct mcp_rpc_err *e)
{
	json_decref(e->id);
	e->id = NULL;
}

json_t *mcp_rpc_result(json_t *id, json_t *result)
{
	json_t *m = result ? json_object() : NULL;
	if (!m || json_object_set_new(m, "jsonrpc", json_string("2.0")) ||
	    json_object_set(m, "id", id)) {
		json_decref(m);
		json_decref(result);
		return NULL;
	}
	/* the _new setter takes result, also when it fails */
	if (json_object_set_new(m, "result", result)) {
		json_decref(m);
		return NULL;
	}
	return m;
}

json_t *mcp_rpc_error(json_t *id, int code, const char *message, json_t *data)
{
	json_t *m = json_object();
	json_t *e = json_object();
	json_t *text = utf8_json_lossy(message, strlen(message));
	int bad = !m || !e || !text;
	bad = bad || json_object_set_new(e, "code", json_integer(code));
	bad = bad || json_object_set(e, "message", text);
	bad = bad || (data && json_object_set(e, "data", data));
	bad = bad || json_object_set_new(m, "jsonrpc", json_string("2.0"));
	bad = bad || (id && json_object_set(m, "id", id));
	bad = bad || json_object_set(m, "error", e);
	json_decref(text);
	json_decref(e);
	json_decref(data);
	if (bad) {
		json_decref(m);
		return NULL;
	}
	return m;
}

char *mcp_rpc_dump(const json_t *msg, size_t *len)
{
	char *s = json_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY);
	if (s && len)
		*len = strlen(s);
	return s;
}
