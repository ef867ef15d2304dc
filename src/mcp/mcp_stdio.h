/*
 * mcp_stdio.h - the MCP stdio transport (revision 2025-11-25, "Transports:
 * stdio"): JSON-RPC messages, one per line (UTF-8, delimited by "\n", no
 * embedded newlines), read from one file descriptor and answered on
 * another, which carries nothing but MCP messages.
 *
 * A line longer than MCP_RPC_MESSAGE_MAX bytes is skipped up to its
 * newline and answered with a -32700 error; a line that is not a message
 * gets its JSON-RPC error; blank lines and a "\r" before the newline are
 * ignored.  Messages are handled one at a time, in order.
 *
 * Threads: the calling thread only.
 */
#ifndef PANDASTACK_MCP_STDIO_H
#define PANDASTACK_MCP_STDIO_H

#include "mcp/mcp_backend.h"

/*
 * mcp_stdio_serve - serve one session with backend b until in reaches end
 * of file; server_version goes into serverInfo.  Returns 0 at end of
 * file, or -errno when reading in or writing out fails (-EPIPE when the
 * client went away) or memory runs out.
 */
int mcp_stdio_serve(int in, int out, const struct mcp_backend *b, const char *server_version);

#endif
