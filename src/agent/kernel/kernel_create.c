/*
 * kernel_create.c - kernel_ctx_create (kernel.h): a ready spare from the warm
 * pool when the options allow one and a compatible spare is there, else a
 * new context.  It sits above both the pool (kernel_pool.c) and the contexts
 * (kernel_ctx.c), so neither has to call the other back.
 *
 * Threads: the agent's thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/kernel/kernel_int.h"
#include "common/log.h"
#include "common/util.h"

/* Give a taken spare to its new owner: its thread applies cfg (moved in)
 * before any of the owner's code (normal priority back, then env and cwd
 * if they differ: kernel_thread.c); "ready" goes out at once. */
static int adopt_spare(struct kernel_ctx *c, struct kernel_cfg *cfg)
{
	struct kernel_cfg *h = malloc(sizeof(*h));
	if (!h)
		return -ENOMEM;
	*h = *cfg;
	memset(cfg, 0, sizeof(*cfg));
	pthread_mutex_lock(&c->mu);
	c->handover = h;
	c->pooled = 0;
	c->idle_since_ms = util_now_ms();
	if (c->announced && c->ready_ev)
		kernel__emit_locked(c, 0, json_deep_copy(c->ready_ev));
	pthread_mutex_unlock(&c->mu);
	kernel__wake(c);
	return 0;
}

int kernel_ctx_create(const struct kernel_opts *o, struct kernel_ctx **out)
{
	struct kernel_cfg cfg;
	*out = NULL;
	int r = kernel__cfg_build(&cfg, o);
	if (r < 0)
		return r;
	if (o->use_pool) {
		struct kernel_ctx *c = kernel__pool_take(&cfg);
		if (c) {
			r = adopt_spare(c, &cfg);
			if (r == 0) {
				*out = c;
				log_kv(LOG_INFO, "kernel.take_spare", "pid=%ld", (long)kernel_ctx_pid(c));
				return 0;
			}
			kernel_ctx_destroy(c);
		}
	}
	return kernel__ctx_start(&cfg, 0, NULL, out);
}
