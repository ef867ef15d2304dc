/*
 * mcp_contexts.h - which code context an MCP session runs its cells in,
 * per sandbox: the run_code tool makes a context on its first call for a
 * sandbox and uses it afterwards, so variables and imports persist across
 * calls as in a notebook.  The map lives as long as its session; the
 * contexts themselves live in their sandboxes (the guest shuts an idle one
 * down, and the tool then makes a new one).
 *
 * At most MCP_CONTEXTS_MAX sandboxes are remembered; past that the entry
 * used least recently is forgotten (its context stays in its sandbox until
 * the guest reaps it when idle).
 *
 * Threads: any; a mutex inside guards the map (the HTTP front end may run
 * two requests of one session at once).
 */
#ifndef PANDASTACK_MCP_CONTEXTS_H
#define PANDASTACK_MCP_CONTEXTS_H

#include <stddef.h>

#define MCP_CONTEXTS_MAX 64
#define MCP_ID_MAX 64 /* bytes of a sandbox or context id with the NUL */

struct mcp_contexts;

/* mcp_contexts_new - an empty map.  0 with *out (mcp_contexts_free), or
 * -ENOMEM. */
int mcp_contexts_new(struct mcp_contexts **out);

/* mcp_contexts_free - free the map; NULL is a no-op. */
void mcp_contexts_free(struct mcp_contexts *m);

/* mcp_contexts_get - copy the context id remembered for sandbox_id into
 * ctx_id (MCP_ID_MAX bytes).  Returns 1 if there is one, 0 if not. */
int mcp_contexts_get(struct mcp_contexts *m, const char *sandbox_id, char ctx_id[MCP_ID_MAX]);

/* mcp_contexts_put - remember ctx_id for sandbox_id (replacing any other);
 * ids longer than MCP_ID_MAX - 1 bytes are not remembered. */
void mcp_contexts_put(struct mcp_contexts *m, const char *sandbox_id, const char *ctx_id);

/* mcp_contexts_forget - forget sandbox_id's context if it is ctx_id (NULL:
 * whatever it is). */
void mcp_contexts_forget(struct mcp_contexts *m, const char *sandbox_id, const char *ctx_id);

#endif
