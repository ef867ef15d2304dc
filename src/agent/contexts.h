/*
 * contexts.h - the agent's code contexts, by id: each is a kernel
 * (kernel.h) plus the streams waiting on it, wired into the agent's loop.
 * The operations that use them are op_context.c (docs/agent-protocol.md,
 * "Code contexts").
 *
 * A context outlives the streams and the host connection that made it:
 * the daemon names it (its id) and finds it again after a restart of its
 * own.  Its kernel's events (kernel_ctx_fd) are read on the loop thread and
 * routed: exec events to the context_run stream of that exec id (EVENT for
 * stdout/stderr/result, END for done), the first "ready" (or a "failed"
 * before it) to the context_create stream waiting for it.  A context idle
 * (no run queued or running, no create waiting) for its idle timeout is
 * destroyed by the reaper.
 *
 * Ownership: a struct context_wait belongs to its stream's op (s->op) and
 * is only linked into the context; the context clears wait->ctx when it
 * goes away first, after ending the wait's stream.
 *
 * Threads: the loop thread only.
 */
#ifndef PANDASTACK_AGENT_CONTEXTS_H
#define PANDASTACK_AGENT_CONTEXTS_H

#include <stdint.h>

#include <jansson.h>

#include "agent/astream.h"
#include "agent/kernel/kernel.h"
#include "agent/loop.h"
#include "agent/notebook.h"
#include "agent/request.h"

/* Most contexts at once in one guest (each is a Python process). */
#define CONTEXTS_MAX 32
/* Idle time after which a context is reaped when its create named none, ms. */
#define CONTEXT_IDLE_DEFAULT_MS (30ll * 60 * 1000)

struct agent_context;

/* A stream waiting on a context: a context_run (exec_id > 0) or the
 * context_create waiting for the kernel to be ready (exec_id 0). */
struct context_wait {
	struct astream *s;
	struct agent_context *ctx;   /* NULL once the context is gone */
	uint64_t exec_id;
	struct context_wait *next;
};

struct agent_context {
	char id[AGENT_REQ_CTX_ID_MAX + 1];
	struct kernel_ctx *k;
	struct loop_watch w;         /* on kernel_ctx_fd */
	int64_t created_wall_ms;     /* CLOCK_REALTIME ms */
	int64_t idle_timeout_ms;
	char cwd[AGENT_REQ_PATH_MAX + 1];
	int ready;                   /* the first "ready" arrived */
	char kernel[16];             /* "jupyter" / "fallback" once ready */
	char version[32];            /* the language's version */
	long pid;                    /* the current kernel process */
	unsigned restarts;           /* kernels replaced (deaths, restarts) */
	char last_restart[256];      /* why the last one was replaced */
	struct context_wait *creator;
	struct context_wait *runs;
	int64_t last_wait_ms;        /* when a caller last waited on it (monotonic) */
	struct notebook nb;          /* its cells as a notebook file (notebook.h) */
	struct agent_context *next;
};

/*
 * contexts_create - a new context id with kernel options o (borrowed) that
 * is reaped after idle_timeout_ms (0: CONTEXT_IDLE_DEFAULT_MS); cwd is
 * recorded for listings; its cells are kept in the notebook file notebook
 * (absolute; NULL or "": none).  Its events are watched on env->loop.  Returns 0
 * with *out (owned by the registry), -EEXIST (id in use), -EMFILE
 * (CONTEXTS_MAX), or kernel_ctx_create's -errno.
 */
int contexts_create(struct agent_env *env, const char *id, const struct kernel_opts *o,
		    int64_t idle_timeout_ms, const char *notebook, struct agent_context **out);

/* The notebook file of a context created without naming one, when no
 * other context has it (else CONTEXTS_NOTEBOOK_DIR/notebook-<id>.ipynb). */
#define CONTEXTS_NOTEBOOK_DIR "/workspace"
#define CONTEXTS_NOTEBOOK_DEFAULT CONTEXTS_NOTEBOOK_DIR "/notebook.ipynb"

/*
 * contexts_notebook_path - the notebook file a new context id gets: want
 * (a path the host named; NULL for the default, "" for none).  The default
 * is CONTEXTS_NOTEBOOK_DEFAULT while no live context has it.  out gets the
 * path ("" for none; outlen bytes).
 */
void contexts_notebook_path(const char *id, const char *want, char *out, size_t outlen);

/* contexts_find - the context id, or NULL. */
struct agent_context *contexts_find(const char *id);

/*
 * contexts_destroy - end every stream waiting on c with END {"error":
 * {code err, message why}}, stop watching, destroy its kernel (in the
 * background) and free c.
 */
void contexts_destroy(struct agent_context *c, int err, const char *why);

/* contexts_wait_link - link w (w->s, w->exec_id set) to c; exec_id 0 makes
 * it c's creator. */
void contexts_wait_link(struct agent_context *c, struct context_wait *w);

/* contexts_wait_unlink - detach w from its context (no-op if it has none). */
void contexts_wait_unlink(struct context_wait *w);

/* contexts_json - c as the agent describes it (context_create's END and
 * context_list): {"id", "language", "kernel", "language_version", "pid",
 * "ready", "busy", "idle_ms", "created_at_ms", "cwd", "restarts",
 * "last_restart"}.  New reference or NULL (ENOMEM). */
json_t *contexts_json(struct agent_context *c);

/* contexts_list_json - {"contexts": [contexts_json...]} (new reference or
 * NULL), oldest first. */
json_t *contexts_list_json(void);

/* contexts_shutdown - destroy every context and the warm pool, then wait
 * up to wait_ms for their threads (agent exit in the test modes). */
void contexts_shutdown(int64_t wait_ms);

#endif
