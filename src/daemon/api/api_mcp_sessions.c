/*
 * api_mcp_sessions.c - the table of MCP sessions over HTTP (see
 * api_mcp_sessions.h): a fixed array searched linearly (lookups are rare
 * next to the tool calls they start), reference counts for sessions in
 * use, and lazy expiry on every change.
 */
#include "daemon/api/api_mcp_sessions.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "daemon/store/store.h"

struct slot {
	char id[API_MCP_SESSION_ID_LEN + 1]; /* "" when free */
	char key_id[STORE_ID_MAX];
	char team[STORE_NAME_MAX];
	struct mcp_session *s;
	int refs;          /* requests using s */
	int ended;         /* removed from the table; free s when refs is 0 */
	int64_t used_ms;   /* monotonic: last get or put */
};

struct api_mcp_sessions {
	pthread_mutex_t mu;
	/* a slot ended while in use keeps its session (and so stays taken)
	 * until its last put frees it */
	struct slot slots[API_MCP_SESSIONS_MAX];
};

int api_mcp_sessions_new(struct api_mcp_sessions **out)
{
	struct api_mcp_sessions *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->mu, NULL);
	*out = t;
	return 0;
}

void api_mcp_sessions_free(struct api_mcp_sessions *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < API_MCP_SESSIONS_MAX; i++)
		mcp_session_free(t->slots[i].s);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

/* End slot sl: free its session now, or mark it for its last put.
 * Under mu. */
static void end_slot(struct slot *sl)
{
	sl->id[0] = '\0';
	if (sl->refs == 0) {
		mcp_session_free(sl->s);
		memset(sl, 0, sizeof(*sl));
	} else {
		sl->ended = 1;
	}
}

/* End the sessions idle too long.  Under mu. */
static void expire(struct api_mcp_sessions *t, int64_t now)
{
	for (size_t i = 0; i < API_MCP_SESSIONS_MAX; i++) {
		struct slot *sl = &t->slots[i];
		if (sl->id[0] && sl->refs == 0 && now - sl->used_ms > API_MCP_SESSION_IDLE_MS)
			end_slot(sl);
	}
}

int api_mcp_sessions_create(struct api_mcp_sessions *t, const char *team, const char *key_id,
			    const char *server_version, char id[API_MCP_SESSION_ID_LEN + 1],
			    struct mcp_session **s)
{
	unsigned char rnd[16];
	char hex[33];
	int e = util_random(rnd, sizeof(rnd));
	if (e)
		return e;
	snprintf(id, API_MCP_SESSION_ID_LEN + 1, "mcp_%s", util_hex(rnd, sizeof(rnd), hex));
	struct mcp_session *ns;
	if ((e = mcp_session_new(server_version, &ns)) < 0)
		return e;
	pthread_mutex_lock(&t->mu);
	int64_t now = util_now_ms();
	expire(t, now);
	/* the team's own sessions: how many, and the one idle longest that
	 * nobody uses */
	size_t mine = 0;
	struct slot *sl = NULL, *oldest = NULL;
	for (size_t i = 0; i < API_MCP_SESSIONS_MAX; i++) {
		struct slot *c = &t->slots[i];
		if (!c->id[0] || strcmp(c->team, team) != 0)
			continue;
		mine++;
		if (c->refs == 0 && (!oldest || c->used_ms < oldest->used_ms))
			oldest = c;
	}
	if (mine >= API_MCP_SESSIONS_PER_TEAM) {
		if (!oldest) {
			pthread_mutex_unlock(&t->mu);
			mcp_session_free(ns);
			return -EBUSY;
		}
		end_slot(oldest); /* nobody uses it: freed at once */
		sl = oldest;
	}
	for (size_t i = 0; i < API_MCP_SESSIONS_MAX && !sl; i++)
		if (!t->slots[i].s)
			sl = &t->slots[i];
	if (!sl) {
		pthread_mutex_unlock(&t->mu);
		mcp_session_free(ns);
		return -EBUSY;
	}
	snprintf(sl->id, sizeof(sl->id), "%s", id);
	snprintf(sl->key_id, sizeof(sl->key_id), "%s", key_id);
	snprintf(sl->team, sizeof(sl->team), "%s", team);
	sl->s = ns;
	sl->refs = 1;
	sl->ended = 0;
	sl->used_ms = now;
	pthread_mutex_unlock(&t->mu);
	*s = ns;
	return 0;
}

int api_mcp_sessions_get(struct api_mcp_sessions *t, const char *id, const char *key_id,
			 struct mcp_session **s)
{
	int e = -ENOENT;
	pthread_mutex_lock(&t->mu);
	int64_t now = util_now_ms();
	expire(t, now);
	for (size_t i = 0; i < API_MCP_SESSIONS_MAX; i++) {
		struct slot *sl = &t->slots[i];
		if (sl->id[0] && strcmp(sl->id, id) == 0 && strcmp(sl->key_id, key_id) == 0) {
			sl->refs++;
			sl->used_ms = now;
			*s = sl->s;
			e = 0;
			break;
		}
	}
	pthread_mutex_unlock(&t->mu);
	return e;
}

void api_mcp_sessions_put(struct api_mcp_sessions *t, struct mcp_session *s)
{
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < API_MCP_SESSIONS_MAX; i++) {
		struct slot *sl = &t->slots[i];
		if (sl->s != s)
			continue;
		sl->refs--;
		sl->used_ms = util_now_ms();
		if (sl->ended && sl->refs == 0) {
			mcp_session_free(sl->s);
			memset(sl, 0, sizeof(*sl));
		}
		break;
	}
	pthread_mutex_unlock(&t->mu);
}

int api_mcp_sessions_end(struct api_mcp_sessions *t, const char *id, const char *key_id)
{
	int e = -ENOENT;
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < API_MCP_SESSIONS_MAX; i++) {
		struct slot *sl = &t->slots[i];
		if (sl->id[0] && strcmp(sl->id, id) == 0 && strcmp(sl->key_id, key_id) == 0) {
			end_slot(sl);
			e = 0;
			break;
		}
	}
	pthread_mutex_unlock(&t->mu);
	return e;
}
