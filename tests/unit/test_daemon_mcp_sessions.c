/*
 * test_daemon_mcp_sessions.c - the table of MCP sessions over HTTP
 * (src/daemon/api/api_mcp_sessions.c): a session belongs to its key, a team
 * past its cap replaces its own idle session and never another team's,
 * sessions in use are never replaced, and a full table refuses (-EBUSY).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/api/api_mcp_sessions.h"

/* Make a session of team/key and give it back at once; its id in id. */
static int make(struct api_mcp_sessions *t, const char *team, const char *key,
		char id[API_MCP_SESSION_ID_LEN + 1])
{
	struct mcp_session *s = NULL;
	int e = api_mcp_sessions_create(t, team, key, "test", id, &s);
	if (e == 0)
		api_mcp_sessions_put(t, s);
	return e;
}

static int alive(struct api_mcp_sessions *t, const char *id, const char *key)
{
	struct mcp_session *s = NULL;
	if (api_mcp_sessions_get(t, id, key, &s) < 0)
		return 0;
	api_mcp_sessions_put(t, s);
	return 1;
}

static void owned_by_key(void **state)
{
	(void)state;
	struct api_mcp_sessions *t;
	assert_int_equal(api_mcp_sessions_new(&t), 0);
	char id[API_MCP_SESSION_ID_LEN + 1];
	assert_int_equal(make(t, "a", "key_a", id), 0);
	assert_int_equal(strlen(id), API_MCP_SESSION_ID_LEN);
	assert_true(alive(t, id, "key_a"));
	assert_false(alive(t, id, "key_b"));
	assert_int_equal(api_mcp_sessions_end(t, id, "key_b"), -ENOENT);
	assert_int_equal(api_mcp_sessions_end(t, id, "key_a"), 0);
	assert_false(alive(t, id, "key_a"));
	api_mcp_sessions_free(t);
}

static void a_team_cannot_end_another_teams_sessions(void **state)
{
	(void)state;
	struct api_mcp_sessions *t;
	assert_int_equal(api_mcp_sessions_new(&t), 0);
	char victim[API_MCP_SESSION_ID_LEN + 1], first[API_MCP_SESSION_ID_LEN + 1],
		id[API_MCP_SESSION_ID_LEN + 1];
	assert_int_equal(make(t, "admin", "key_admin", victim), 0);
	assert_int_equal(make(t, "b", "key_b", first), 0);
	/* team b makes far more sessions than its cap and the table holds */
	for (int i = 0; i < API_MCP_SESSIONS_MAX + 100; i++)
		assert_int_equal(make(t, "b", "key_b", id), 0);
	/* the other team's idle session lives on; b's first one was replaced
	 * (the control: replacement does happen) */
	assert_true(alive(t, victim, "key_admin"));
	assert_false(alive(t, first, "key_b"));
	assert_true(alive(t, id, "key_b"));
	api_mcp_sessions_free(t);
}

static void sessions_in_use_are_kept(void **state)
{
	(void)state;
	struct api_mcp_sessions *t;
	assert_int_equal(api_mcp_sessions_new(&t), 0);
	struct mcp_session *held[API_MCP_SESSIONS_PER_TEAM];
	char id[API_MCP_SESSION_ID_LEN + 1];
	for (int i = 0; i < API_MCP_SESSIONS_PER_TEAM; i++)
		assert_int_equal(api_mcp_sessions_create(t, "c", "key_c", "test", id, &held[i]), 0);
	/* all of c's sessions are in use: no room for c, room for others */
	assert_int_equal(make(t, "c", "key_c", id), -EBUSY);
	assert_int_equal(make(t, "d", "key_d", id), 0);
	for (int i = 0; i < API_MCP_SESSIONS_PER_TEAM; i++)
		api_mcp_sessions_put(t, held[i]);
	assert_int_equal(make(t, "c", "key_c", id), 0);
	api_mcp_sessions_free(t);
}

static void a_full_table_refuses(void **state)
{
	(void)state;
	struct api_mcp_sessions *t;
	assert_int_equal(api_mcp_sessions_new(&t), 0);
	char id[API_MCP_SESSION_ID_LEN + 1], team[16];
	int made = 0;
	for (int k = 0; made < API_MCP_SESSIONS_MAX; k++) {
		snprintf(team, sizeof(team), "t%d", k);
		for (int i = 0; i < API_MCP_SESSIONS_PER_TEAM && made < API_MCP_SESSIONS_MAX; i++) {
			assert_int_equal(make(t, team, team, id), 0);
			made++;
		}
	}
	assert_int_equal(make(t, "late", "key_late", id), -EBUSY);
	/* a team at its cap still replaces its own */
	assert_int_equal(make(t, "t0", "t0", id), 0);
	assert_true(alive(t, id, "t0"));
	api_mcp_sessions_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(owned_by_key),
		cmocka_unit_test(a_team_cannot_end_another_teams_sessions),
		cmocka_unit_test(sessions_in_use_are_kept),
		cmocka_unit_test(a_full_table_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
