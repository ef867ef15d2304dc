/*
 * mcp_contexts.c - the per-session map of sandbox to code context (see
 * mcp_contexts.h): a small array searched linearly, with a use counter for
 * forgetting the least recently used entry.
 */
#include "mcp/mcp_contexts.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	char sandbox[MCP_ID_MAX]; /* "" when free */
	char ctx[MCP_ID_MAX];
	uint64_t used;            /* the map's clock at the last get or put */
};

struct mcp_contexts {
	pthread_mutex_t mu;
	uint64_t clock;
	struct entry e[MCP_CONTEXTS_MAX];
};

int mcp_contexts_new(struct mcp_contexts **out)
{
	struct mcp_contexts *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->mu, NULL);
	*out = m;
	return 0;
}

void mcp_contexts_free(struct mcp_contexts *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->mu);
	free(m);
}

/* The entry of sandbox_id, or NULL.  Under mu. */
static struct entry *find(struct mcp_contexts *m, const char *sandbox_id)
{
	for (size_t i = 0; i < MCP_CONTEXTS_MAX; i++)
		if (m->e[i].sandbox[0] && strcmp(m->e[i].sandbox, sandbox_id) == 0)
			return &m->e[i];
	return NULL;
}

int mcp_contexts_get(struct mcp_contexts *m, const char *sandbox_id, char ctx_id[MCP_ID_MAX])
{
	pthread_mutex_lock(&m->mu);
	struct entry *e = find(m, sandbox_id);
	if (e) {
		e->used = ++m->clock;
		memcpy(ctx_id, e->ctx, MCP_ID_MAX);
	}
	pthread_mutex_unlock(&m->mu);
	return e != NULL;
}

void mcp_contexts_put(struct mcp_contexts *m, const char *sandbox_id, const char *ctx_id)
{
	if (!*sandbox_id || strlen(sandbox_id) >= MCP_ID_MAX || strlen(ctx_id) >= MCP_ID_MAX)
		return;
	pthread_mutex_lock(&m->mu);
	struct entry *e = find(m, sandbox_id);
	for (size_t i = 0; !e && i < MCP_CONTEXTS_MAX; i++)
		if (!m->e[i].sandbox[0])
			e = &m->e[i];
	if (!e) { /* full: the least recently used */
		e = &m->e[0];
		for (size_t i = 1; i < MCP_CONTEXTS_MAX; i++)
			if (m->e[i].used < e->used)
				e = &m->e[i];
	}
	snprintf(e->sandbox, sizeof(e->sandbox), "%s", sandbox_id);
	snprintf(e->ctx, sizeof(e->ctx), "%s", ctx_id);
	e->used = ++m->clock;
	pthread_mutex_unlock(&m->mu);
}

void mcp_contexts_forget(struct mcp_contexts *m, const char *sandbox_id, const char *ctx_id)
{
	pthread_mutex_lock(&m->mu);
	struct entry *e = find(m, sandbox_id);
	if (e && (!ctx_id || strcmp(e->ctx, ctx_id) == 0))
		memset(e, 0, sizeof(*e));
	pthread_mutex_unlock(&m->mu);
}
