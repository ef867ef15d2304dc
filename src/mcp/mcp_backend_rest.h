/*
 * mcp_backend_rest.h - the MCP backend (mcp_backend.h) on PandaStack's
 * REST API, through the shared REST client (client/client.h,
 * client/client_transfer.h): each operation is one API call with the client's
 * key, so a tool sees exactly the routes, checks, team boundaries, limits
 * and errors of every other client.  `pandastack mcp` gives it the user's
 * PANDASTACK_API_URL and PANDASTACK_API_KEY; the daemon's POST /mcp gives
 * it a client for its own address with the caller's key.
 *
 * Files move through an anonymous memory file (memfd), since the client
 * streams transfers from and to file descriptors; read_file stops a
 * download as soon as it passes its cap.
 *
 * Threads: as the client: one thread at a time per backend.
 */
#ifndef PANDASTACK_MCP_BACKEND_REST_H
#define PANDASTACK_MCP_BACKEND_REST_H

#include "client/client.h"
#include "mcp/mcp_backend.h"

/* mcp_backend_rest - fill *b with the REST operations on client c
 * (borrowed: it must outlive every call through b). */
void mcp_backend_rest(struct mcp_backend *b, struct client *c);

#endif
