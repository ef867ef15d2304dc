/*
 * mcp_rpc.h - JSON-RPC 2.0 messages as the Model Context Protocol uses them
 * (MCP revision 2025-11-25, "Base Protocol: Messages"; JSON-RPC 2.0
 * specification): reading one message from bytes that came from outside,
 * and building the answers.
 *
 * What MCP narrows in JSON-RPC: a request id is a string or an integer,
 * never null; params, when present, is an object; a message is one object
 * (batches were removed in revision 2025-06-18).  A message is classified
 * as a request (method and id), a notification (method, no id) or a
 * response (id with result or error), or refused with the JSON-RPC error
 * to answer: -32700 parse error (not JSON, not UTF-8, a repeated key, over
 * MCP_RPC_MESSAGE_MAX bytes) or -32600 invalid request (any other shape).
 *
 * Memory: a parsed message holds one reference to the whole JSON root;
 * its json_t fields are borrowed from it until mcp_rpc_msg_clear.  The
 * builders return new references.
 * Threads: pure functions, any thread.
 */
#ifndef PANDASTACK_MCP_RPC_H
#define PANDASTACK_MCP_RPC_H

#include <stddef.h>

#include <jansson.h>

/* Bytes of one message, on either transport (a write_file call carries a
 * file of MCP_FILE_MAX bytes as base64 with room to spare). */
#define MCP_RPC_MESSAGE_MAX (16u << 20)
/* Bytes of a string request id; longer ids are refused. */
#define MCP_RPC_ID_MAX 256

/* JSON-RPC 2.0 error codes (JSON-RPC 2.0, section 5.1). */
#define MCP_RPC_PARSE_ERROR (-32700)
#define MCP_RPC_INVALID_REQUEST (-32600)
#define MCP_RPC_METHOD_NOT_FOUND (-32601)
#define MCP_RPC_INVALID_PARAMS (-32602)
#define MCP_RPC_INTERNAL_ERROR (-32603)

enum mcp_rpc_kind {
	MCP_RPC_REQUEST = 1,      /* method + id: answer exactly once */
	MCP_RPC_NOTIFICATION = 2, /* method, no id: never answered */
	MCP_RPC_RESPONSE = 3,     /* id + result or error: a client's answer */
};

struct mcp_rpc_msg {
	json_t *root;             /* the whole message (one reference) */
	enum mcp_rpc_kind kind;
	const char *method;       /* requests and notifications; borrowed */
	json_t *id;               /* requests and responses; borrowed */
	json_t *params;           /* an object, or NULL when absent; borrowed */
};

/* A refused message: the code and message of the error answer, and the id
 * to answer with (a new reference, json null when it could not be read). */
struct mcp_rpc_err {
	int code;                 /* MCP_RPC_PARSE_ERROR or MCP_RPC_INVALID_REQUEST */
	char message[160];        /* one sentence, ASCII */
	json_t *id;               /* owned; release with mcp_rpc_err_clear */
};

/*
 * mcp_rpc_parse - read len bytes of buf (not NUL-terminated; may be NULL
 * when len is 0) as one JSON-RPC message.  Returns 0 with *out filled
 * (mcp_rpc_msg_clear), or -EINVAL with *err filled (mcp_rpc_err_clear) and
 * *out empty, or -ENOMEM.  Never aborts on any input.
 */
int mcp_rpc_parse(const char *buf, size_t len, struct mcp_rpc_msg *out, struct mcp_rpc_err *err);

/* mcp_rpc_msg_clear - release what a parsed message holds; safe on a
 * zeroed or cleared one. */
void mcp_rpc_msg_clear(struct mcp_rpc_msg *m);

/* mcp_rpc_err_clear - release err's id; safe on a zeroed one. */
void mcp_rpc_err_clear(struct mcp_rpc_err *e);

/* mcp_rpc_result - {"jsonrpc":"2.0","id":id,"result":result}; id is
 * borrowed, result is stolen.  NULL on ENOMEM. */
json_t *mcp_rpc_result(json_t *id, json_t *result);

/*
 * mcp_rpc_error - {"jsonrpc":"2.0","id":id,"error":{"code","message"[,
 * "data"]}}; id is borrowed (NULL: no id member, as the 2025-11-25 schema
 * allows when the id could not be read), data is stolen (may be NULL).
 * The message is made valid UTF-8.  NULL on ENOMEM.
 */
json_t *mcp_rpc_error(json_t *id, int code, const char *message, json_t *data);

/*
 * mcp_rpc_dump - serialise msg (borrowed) as one line of compact JSON
 * without a newline (JSON escapes keep any newline out of it), as both
 * transports send it.  Returns a NUL-terminated heap string (*len its
 * length) the caller frees, or NULL on ENOMEM.
 */
char *mcp_rpc_dump(const json_t *msg, size_t *len);

#endif
