/*
 * api_mcp_sessions.h - the MCP sessions of the daemon's Streamable HTTP
 * endpoint (POST /mcp, docs/mcp.md): each `initialize` makes a session
 * (mcp/mcp_server.h) under a new id that the client sends back in
 * Mcp-Session-Id (MCP revision 2025-11-25, "Transports: Session
 * Management").  A session belongs to the API key that made it: another
 * key gets "no such session", as for an id that never existed.
 *
 * Ids are "mcp_" + 32 hex digits (16 bytes from getrandom): visible ASCII,
 * unguessable.  A team holds at most API_MCP_SESSIONS_PER_TEAM sessions: a
 * new one past that replaces that team's session idle longest (not one in
 * use), never another team's.  At most API_MCP_SESSIONS_MAX sessions exist
 * at once; past that, creates fail (-EBUSY) until one ends.  A session
 * idle for API_MCP_SESSION_IDLE_MS ends.  Sessions live in memory:
 * a daemon restart ends them all (clients then start a new one, as the
 * transport asks them to on 404).
 *
 * Threads: any; one mutex guards the table.  A session taken with
 * api_mcp_sessions_get stays valid until api_mcp_sessions_put, even if it
 * is ended meanwhile.
 */
#ifndef PANDASTACK_DAEMON_API_MCP_SESSIONS_H
#define PANDASTACK_DAEMON_API_MCP_SESSIONS_H

#include <stdint.h>

#include "mcp/mcp_server.h"

#define API_MCP_SESSIONS_MAX 1024
#define API_MCP_SESSIONS_PER_TEAM 64
#define API_MCP_SESSION_IDLE_MS (3600 * 1000)
#define API_MCP_SESSION_ID_LEN (4 + 32) /* bytes without the NUL */

struct api_mcp_sessions;

/* api_mcp_sessions_new - an empty table.  0 with *out, or -ENOMEM. */
int api_mcp_sessions_new(struct api_mcp_sessions **out);

/* api_mcp_sessions_free - end every session and free the table (no
 * request may be using it); NULL is a no-op. */
void api_mcp_sessions_free(struct api_mcp_sessions *t);

/*
 * api_mcp_sessions_create - a new session owned by key_id of team,
 * reporting server_version; its id goes to id (API_MCP_SESSION_ID_LEN + 1
 * bytes).  Returns 0 with *s taken (api_mcp_sessions_put), -EBUSY when the
 * table is full or the team's sessions are all in use, -ENOMEM, or
 * getrandom's -errno.
 */
int api_mcp_sessions_create(struct api_mcp_sessions *t, const char *team, const char *key_id,
			    const char *server_version, char id[API_MCP_SESSION_ID_LEN + 1],
			    struct mcp_session **s);

/* api_mcp_sessions_get - take the session id of key_id: 0 with *s, or
 * -ENOENT (no such session for this key, ended, or idle too long). */
int api_mcp_sessions_get(struct api_mcp_sessions *t, const char *id, const char *key_id,
			 struct mcp_session **s);

/* api_mcp_sessions_put - give back a session taken by create or get. */
void api_mcp_sessions_put(struct api_mcp_sessions *t, struct mcp_session *s);

/* api_mcp_sessions_end - end the session id of key_id (DELETE /mcp): 0, or
 * -ENOENT.  It is freed once no request uses it. */
int api_mcp_sessions_end(struct api_mcp_sessions *t, const char *id, const char *key_id);

#endif
