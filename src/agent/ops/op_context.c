/*
 * op_context.c - the code-context operations (docs/agent-protocol.md,
 * "Code contexts"): context_create, context_run, context_delete,
 * context_interrupt, context_restart, context_list and context_pool (the
 * template bake's warm kernel).  The contexts themselves and the routing
 * of their kernels' events are contexts.c.
 *
 * Streams and contexts: a context_create stream waits for the kernel's
 * first "ready" (its END then describes the context) and a context_run
 * stream relays its exec's events; both are struct context_wait linked into
 * the context.  A CANCEL of a run cancels its exec (a queued one is
 * removed, a running one interrupted; the context keeps its state); a
 * CANCEL of a create that has not ended destroys the half-made context,
 * since the host was never told it exists.  The host leaving cancels every
 * stream (so every run) but no context.
 *
 * Threads: the loop thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>

#include "agent/astream.h"
#include "agent/contexts.h"
#include "common/log.h"
#include "common/util.h"

static const struct op_ops pool_ops;
static void pool_detach(void *state);

/* The destroy of both ops here (a stream waiting on a context, the stream
 * waiting for the warm pool): unhook the state from what it waits on, then
 * free it. */
static void waiter_destroy(struct astream *s)
{
	if (!s->op)
		return;
	if (s->ops == &pool_ops)
		pool_detach(s->op);
	else
		contexts_wait_unlink(s->op);
	free(s->op);
	s->op = NULL;
}

/* --- streams waiting on a context ---------------------------------------- */

static void wait_cancel(struct astream *s)
{
	struct context_wait *w = s->op;
	struct agent_context *c = w ? w->ctx : NULL;
	if (!c)
		return;
	if (w->exec_id == 0) {
		/* a create nobody will hear about: its context must not linger */
		contexts_wait_unlink(w);
		contexts_destroy(c, ECANCELED, "the create was cancelled");
		return;
	}
	kernel_ctx_cancel(c->k, w->exec_id);
	contexts_wait_unlink(w);
}

static const struct op_ops wait_ops = {
	.name = "context",
	.cancel = wait_cancel,
	.destroy = waiter_destroy,
};

/* Make s wait on c for exec_id (0: the create). */
static int wait_on(struct astream *s, struct agent_context *c, uint64_t exec_id)
{
	struct context_wait *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->s = s;
	w->exec_id = exec_id;
	contexts_wait_link(c, w);
	s->ops = &wait_ops;
	s->op = w;
	return 0;
}

/* The context named by req, or NULL with the stream ended (ENOENT). */
static struct agent_context *find_or_end(struct astream *s, const struct agent_req *req)
{
	struct agent_context *c = contexts_find(req->ctx_id);
	if (!c)
		astream_end_err(s, ENOENT, "no context '%s'", req->ctx_id);
	return c;
}

/* --- context_create --------------------------------------------------------*/

/*
 * What every kernel the agent starts shares, into *o (the rest zeroed): the
 * user's environment (req's variables added to the base) and, in the test
 * modes, which run on a host, run files under /tmp to keep its /run clean.
 * Returns the environment array, which the caller frees once the kernel
 * took its copy, or NULL (out of memory).
 */
static char **kernel_opts_base(const struct astream *s, const struct agent_req *req,
			       struct kernel_opts *o)
{
	char **envp = agent_env_build(req);
	memset(o, 0, sizeof(*o));
	o->kind = KERNEL_AUTO;
	o->env = (const char *const *)envp;
	o->run_dir = s->env->init_mode ? NULL : "/tmp";
	return envp;
}

static int op_create(struct astream *s, struct agent_req *req)
{
	const char *cwd;
	if (agent_cwd_ready(s, req->cwd, &cwd))
		return 0;
	struct kernel_opts o;
	char **envp = kernel_opts_base(s, req, &o);
	if (!envp)
		return -ENOMEM;
	o.cwd = cwd;
	o.output_cap = (size_t)req->output_cap;
	o.use_pool = 1;
	if (o.output_cap > KERNEL_OUTPUT_CAP_MAX)
		o.output_cap = KERNEL_OUTPUT_CAP_MAX;
	/* the default notebook file only in the guest (a test host has no
	 * /workspace); a path the host named anywhere */
	char nb[AGENT_REQ_PATH_MAX + 1] = "";
	if (!req->notebook_off && (req->notebook || s->env->init_mode))
		contexts_notebook_path(req->ctx_id, req->notebook, nb, sizeof(nb));
	struct agent_context *c = NULL;
	int r = contexts_create(s->env, req->ctx_id, &o, (int64_t)req->idle_timeout_ms, nb, &c);
	free(envp);
	if (r == -EEXIST) {
		astream_end_err(s, EEXIST, "context '%s' exists", req->ctx_id);
		return 0;
	}
	if (r == -EMFILE) {
		astream_end_err(s, EMFILE, "at most %d contexts at once", CONTEXTS_MAX);
		return 0;
	}
	if (r < 0)
		return r;
	/* The "ready" event (maybe already queued: a warm spare) ends s. */
	r = wait_on(s, c, 0);
	if (r < 0)
		contexts_destroy(c, -r, "out of memory");
	return r;
}

/* --- context_run -----------------------------------------------------------*/

static int op_run(struct astream *s, struct agent_req *req)
{
	struct agent_context *c = find_or_end(s, req);
	if (!c)
		return 0;
	uint64_t exec_id = 0;
	int r = kernel_ctx_run(c->k, req->code, req->code_len, (int64_t)req->timeout_ms, &exec_id);
	if (r < 0)
		return r;
	r = wait_on(s, c, exec_id);
	if (r < 0) {
		kernel_ctx_cancel(c->k, exec_id);
		return r;
	}
	notebook_run(&c->nb, exec_id, req->code, req->code_len);
	/* the host learns at once that the run is queued (or an error) */
	astream_event(s, json_pack("{s:s, s:I}", "type", "accepted", "exec_id",
				   (json_int_t)exec_id));
	return 0;
}

/* --- context_delete, _interrupt, _restart, _list -----------------------------*/

static int op_simple(struct astream *s, struct agent_req *req)
{
	if (req->op == AGENT_OP_CONTEXT_LIST) {
		json_t *o = contexts_list_json();
		if (!o)
			return -ENOMEM;
		astream_end(s, o);
		return 0;
	}
	struct agent_context *c = find_or_end(s, req);
	if (!c)
		return 0;
	switch (req->op) {
	case AGENT_OP_CONTEXT_DELETE:
		contexts_destroy(c, ECANCELED, "the context was deleted");
		break;
	case AGENT_OP_CONTEXT_INTERRUPT:
		kernel_ctx_interrupt(c->k);
		break;
	default:
		kernel_ctx_restart(c->k);
		break;
	}
	astream_end(s, NULL);
	return 0;
}

/* --- context_pool ----------------------------------------------------------*/

/* The one context_pool stream waiting for the spare (the pool's eventfd
 * can be watched once). */
struct pool_wait {
	struct astream *s;
	struct loop_watch w;
	int64_t t0;
};
static struct pool_wait *pool_waiter;

/* End the pool stream if the spare is ready or failed.  Returns 1 if so. */
static int pool_check(struct pool_wait *p)
{
	char err[256];
	enum kernel_pool_state st = kernel_pool_state(err, sizeof(err));
	if (st == KERNEL_POOL_STARTING)
		return 0;
	int64_t ms = util_now_ms() - p->t0;
	json_t *o;
	unsigned ready = kernel_pool_ready();
	if (st == KERNEL_POOL_READY)
		o = json_pack("{s:s, s:I, s:I}", "state", "ready", "ms", (json_int_t)ms, "kernels",
			      (json_int_t)ready);
	else
		o = json_pack("{s:s, s:s, s:I, s:I}", "state", "failed", "error",
			      st == KERNEL_POOL_FAILED ? err : "no spare kernel", "ms",
			      (json_int_t)ms, "kernels", (json_int_t)ready);
	log_kv(LOG_INFO, "context.pool", "state=%d kernels=%u ms=%lld", (int)st, ready,
	       (long long)ms);
	astream_end(p->s, o);
	return 1;
}

static void pool_detach(void *state)
{
	struct pool_wait *p = state;
	loop_watch_del(p->s->env->loop, &p->w);
	if (pool_waiter == p)
		pool_waiter = NULL;
}

static void on_pool(struct loop_watch *lw, uint32_t ev)
{
	(void)ev;
	struct pool_wait *p = lw->ctx;
	if (pool_check(p))
		pool_detach(p);
}

static const struct op_ops pool_ops = {
	.name = "context_pool",
	.destroy = waiter_destroy,
};

static int op_pool(struct astream *s, struct agent_req *req)
{
	if (pool_waiter) {
		astream_end_err(s, EBUSY, "another context_pool is waiting");
		return 0;
	}
	struct kernel_opts o;
	char **envp = kernel_opts_base(s, req, &o);
	if (!envp)
		return -ENOMEM;
	o.warm_code = req->code;
	/* the spares start where a context starts by default, so taking one
	 * needs no chdir */
	o.cwd = s->env->workdir;
	o.pool_size = (unsigned)req->pool_kernels;
	/* the guest is ours: spares run at idle priority and a refill also
	 * waits for idle CPUs there; the test modes run on a host shared with
	 * other work, where an idle-class spare might never run */
	o.refill_cpu_idle = s->env->init_mode;
	o.spare_full_priority = !s->env->init_mode;
	int r = kernel_pool_start(&o);
	free(envp);
	int fd = kernel_pool_fd();
	if (r < 0 || fd < 0)
		return r < 0 ? r : fd;
	struct pool_wait *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->s = s;
	p->t0 = util_now_ms();
	loop_watch_init(&p->w, on_pool, p);
	s->ops = &pool_ops;
	s->op = p;
	if (pool_check(p))
		return 0;
	r = loop_watch_add(s->env->loop, &p->w, fd, EPOLLIN);
	if (r < 0)
		return r;
	pool_waiter = p;
	return 0;
}

_Static_assert(AGENT_REQ_POOL_KERNELS_MAX == KERNEL_POOL_MAX,
	       "context_pool's kernels and the pool's size agree");

/* --- entry ---------------------------------------------------------------------*/

int op_context_start(struct astream *s, struct agent_req *req)
{
	switch (req->op) {
	case AGENT_OP_CONTEXT_CREATE:
		return op_create(s, req);
	case AGENT_OP_CONTEXT_RUN:
		return op_run(s, req);
	case AGENT_OP_CONTEXT_POOL:
		return op_pool(s, req);
	default:
		return op_simple(s, req);
	}
}
