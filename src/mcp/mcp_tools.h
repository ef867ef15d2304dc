/*
 * mcp_tools.h - the MCP tools PandaStack offers, defined once for every
 * front end: their names, descriptions, input schemas (JSON Schema
 * 2020-12, MCP's default dialect) and output schemas, the check of a
 * call's arguments against those schemas, and each tool's work through a
 * backend (mcp_backend.h).
 *
 *   create_sandbox  {template?, ttl_seconds?}          -> the sandbox object
 *   list_sandboxes  {}                                 -> {"sandboxes": [...]}
 *   kill_sandbox    {sandbox_id}                       -> {"id", "killed": true}
 *   run_code        {sandbox_id, code, timeout_seconds?}
 *                   -> text, images (PNG/JPEG), HTML tables, the error's
 *                      traceback as an isError result
 *   exec            {sandbox_id, cmd, timeout_seconds?, cwd?, stdin?}
 *                   -> {stdout, stderr, exit_code, ...}
 *   read_file       {sandbox_id, path} -> text, an image, or a base64 blob
 *   write_file      {sandbox_id, path, content | content_base64} -> {path, size}
 *
 * Errors follow MCP revision 2025-11-25, "Tools: Error Handling": an
 * unknown tool is a protocol error (-32602); arguments that fail the
 * input schema are a tool execution error (a result with isError, so a
 * model can correct them), or, for a session that negotiated 2025-06-18,
 * a protocol error -32602 as that revision asks; a failure of the API
 * (no such sandbox, the guest's error) is a tool execution error naming
 * the API's code.
 *
 * Threads: any; a call blocks for as long as its backend call.
 */
#ifndef PANDASTACK_MCP_TOOLS_H
#define PANDASTACK_MCP_TOOLS_H

#include <stddef.h>

#include <jansson.h>

#include "mcp/mcp_backend.h"
#include "mcp/mcp_contexts.h"

/* Bytes of a file read_file returns or write_file writes. */
#define MCP_FILE_MAX (8u << 20)
/* Bytes of run_code's code (the API's cap). */
#define MCP_CODE_MAX (1u << 20)

/* What one tools/call works with. */
struct mcp_call {
	const struct mcp_backend *backend;
	struct mcp_contexts *contexts; /* the session's: run_code's contexts */
	int args_error_is_result;      /* 1: schema failures are isError results */
};

/* mcp_tools_list - the "tools" array of a tools/list result (new
 * reference, NULL on ENOMEM). */
json_t *mcp_tools_list(void);

/*
 * mcp_tools_call - call tool name with args (an object, or NULL for none;
 * borrowed).  Returns 0 with *result, a CallToolResult (new reference);
 * or -EINVAL for a protocol error with *rpc_code (-32602) and msg (msglen
 * bytes) filled; or -ENOMEM.
 */
int mcp_tools_call(const struct mcp_call *c, const char *name, const json_t *args,
		   json_t **result, int *rpc_code, char *msg, size_t msglen);

#endif
