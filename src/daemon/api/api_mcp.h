/*
 * api_mcp.h - the state of the daemon's MCP endpoint (POST and DELETE
 * /mcp, handlers in api.h; docs/mcp.md): its sessions
 * (api_mcp_sessions.h) and how its tools reach this daemon's own API over
 * loopback (api_mcp.c says why they go that way): plain HTTP, or HTTPS
 * trusting exactly the daemon's own certificate's public key.
 *
 * Threads: api_mcp_new and api_mcp_free on the main thread, before any
 * other thread starts (it starts libcurl, whose global start is not
 * thread-safe everywhere) and after the HTTP server stopped.
 */
#ifndef PANDASTACK_DAEMON_API_MCP_H
#define PANDASTACK_DAEMON_API_MCP_H

#include "daemon/config.h"

struct api_mcp;

/*
 * api_mcp_new - the endpoint's state for cfg: an empty session table and,
 * with --tls-cert, the pin of that certificate's public key.  Returns 0
 * with *out (api_mcp_free), -ENOMEM, -EIO (libcurl failed to start), or
 * -EINVAL (the certificate file holds no PEM certificate).
 */
int api_mcp_new(const struct daemon_cfg *cfg, struct api_mcp **out);

/* api_mcp_free - end every session; NULL is a no-op. */
void api_mcp_free(struct api_mcp *m);

#endif
