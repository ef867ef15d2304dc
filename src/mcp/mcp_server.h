/*
 * mcp_server.h - the Model Context Protocol server core shared by both
 * front ends (`pandastack mcp` on stdio, POST /mcp on the daemon): one
 * session's lifecycle and the methods it answers, by MCP revision
 * 2025-11-25 (also spoken: 2025-06-18).
 *
 * Lifecycle ("Basic: Lifecycle"): the first request must be `initialize`
 * (only `ping` is answered before it); the answer carries the negotiated
 * version (the client's when it is one of MCP_VERSIONS, else the latest),
 * the `tools` capability, serverInfo and instructions.  The client's
 * `notifications/initialized` completes it.  A second `initialize` is
 * refused (-32600).
 *
 * Methods: `ping` ({}), `tools/list` (no pagination: a cursor is an
 * invalid param, as none is ever handed out), `tools/call` (mcp_tools.h).
 * Any other method is -32601.  Notifications are never answered
 * (`notifications/cancelled` is accepted and ignored: a call runs to its
 * end); responses from the client are ignored, as this server sends no
 * requests.
 *
 * Threads: a session may be used by several threads at once (the HTTP
 * front end); its state is guarded inside.  mcp_session_handle blocks for
 * as long as the tool it runs.
 */
#ifndef PANDASTACK_MCP_SERVER_H
#define PANDASTACK_MCP_SERVER_H

#include <stddef.h>

#include <jansson.h>

#include "mcp/mcp_backend.h"
#include "mcp/mcp_rpc.h"

/* The newest revision spoken, and every one spoken (newest first). */
#define MCP_VERSION_LATEST "2025-11-25"
#define MCP_VERSIONS {"2025-11-25", "2025-06-18"}

struct mcp_session;

/* mcp_version_supported - 1 if v names a revision this server speaks.
 * Pure. */
int mcp_version_supported(const char *v);

/* mcp_session_new - a session before `initialize`; server_version is
 * reported in serverInfo (copied).  0 with *out (mcp_session_free), or
 * -ENOMEM. */
int mcp_session_new(const char *server_version, struct mcp_session **out);

/* mcp_session_free - NULL is a no-op.  No call may be running on s. */
void mcp_session_free(struct mcp_session *s);

/*
 * mcp_session_handle - answer one parsed message (borrowed) with backend
 * b: the response to send (new reference), or NULL when nothing is to be
 * sent: a notification, a client's response, or (the only case for a
 * request) memory ran out.
 */
json_t *mcp_session_handle(struct mcp_session *s, const struct mcp_backend *b,
			   const struct mcp_rpc_msg *m);

/*
 * mcp_session_handle_bytes - the same for len bytes of one message as it
 * arrived (a line of stdio, an HTTP body): a message that does not parse
 * gets its JSON-RPC error.  Returns the serialised response (one line
 * without the newline; heap, the caller frees; *outlen its length), or
 * NULL when nothing is to be sent.
 */
char *mcp_session_handle_bytes(struct mcp_session *s, const struct mcp_backend *b,
			       const char *buf, size_t len, size_t *outlen);

/* mcp_session_version - the negotiated revision, or NULL before
 * `initialize` was answered.  The string lives as long as s. */
const char *mcp_session_version(struct mcp_session *s);

#endif
