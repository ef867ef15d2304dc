/*
 * kernel.h - code contexts: persistent Python kernels for the agent's
 * context_* operations.  The one header the rest of the agent includes.
 *
 * A context is a kernel process plus a client thread that owns it.  The
 * kernel is ipykernel spoken to over the Jupyter wire protocol (libzmq,
 * jupyter_*.h) or, on images without ipykernel, a small stdlib-only Python
 * program (kernel_fallback.c, its source in kernel_fallback_py.c); both give
 * the same events, so callers never
 * care which they got.  KERNEL_AUTO tries ipykernel and falls back when it
 * cannot start (and remembers that for later contexts).
 *
 * The agent's single-threaded loop talks to a context without blocking:
 *   kernel_ctx_create   start (returns at once; the kernel starts in the
 *                       background, a "ready" event follows)
 *   kernel_ctx_run      queue code; runs in order; returns an exec id
 *   kernel_ctx_fd       an eventfd that is readable while events wait
 *   kernel_ctx_next_event  take one event (-EAGAIN when none)
 *   kernel_ctx_interrupt / _cancel / _restart / _destroy
 *
 * Events (JSON objects, with the exec id they belong to; 0 for the context):
 *   exec events, in order, ending with exactly one "done" per exec id:
 *     {"type": "stdout" | "stderr", "text": "..."}
 *     {"type": "result", "is_main_result": bool, "text", "html", "markdown",
 *      "svg", "png", "jpeg", "json", "latex", "javascript", "extra"}
 *     {"type": "done", "execution_count": n | null,
 *      "error": null | {"name", "value", "traceback"},
 *      "duration_ms": n, "timed_out": bool}
 *   context events (exec id 0):
 *     {"type": "ready", "kernel": "jupyter" | "fallback", "language":
 *      "python", "language_version": "3.11.2", "pid": n}
 *     {"type": "restarted", "reason": "kernel exited with status 1"}
 *     {"type": "failed", "error": "..."}   (the kernel could not start;
 *                        queued runs end with an error; a later run retries)
 *
 * Timeouts: a run's timeout interrupts it (SIGINT to the kernel's process
 * group); its done has "timed_out": true and error TimeoutError, and the
 * context keeps its state.  A kernel that ignores the interrupt for the
 * grace period is killed with its group and restarted (state lost; the
 * error says so).  A kernel that dies mid-run ends the run with
 * DeadKernelError naming the exit status or signal and restarts by itself.
 *
 * Warm kernels: kernel_pool_start keeps up to KERNEL_POOL_MAX spare
 * contexts warmed up (numpy, pandas, matplotlib.pyplot imported, inline
 * backend configured), so a template bake can leave them in the snapshot;
 * kernel_ctx_create takes a ready one when compatible.  Spares run at the
 * lowest CPU priority (SCHED_IDLE, nice 19) and are the out-of-memory
 * killer's first choice until taken (unless spare_full_priority); a taken
 * one goes back to normal priority.  The pool refills in the background, one spare at a time, and
 * only once no context has had work for KERNEL_POOL_REFILL_IDLE_MS (and,
 * with refill_cpu_idle, the CPUs were idle as long), so a refill never
 * competes with the user's runs.  After every restore the agent calls
 * kernel_reseed_all so that no two clones share random streams: every
 * kernel, spares included, reseeds ahead of its next run (an idle kernel
 * is left asleep), so taking a spare costs one reseed before its first run.
 *
 * The agent's reaper (waitpid(-1) in PID 1) must pass every child it reaps
 * but does not own to kernel_note_exit, so kernel exits are reported with
 * their real status.
 *
 * Threads: every function here is for the agent's thread (any one thread
 * at a time per context), except kernel_note_exit (any thread).  Context
 * threads never call back into the agent.
 */
#ifndef PANDASTACK_AGENT_KERNEL_H
#define PANDASTACK_AGENT_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

enum kernel_kind {
	KERNEL_AUTO = 0,       /* ipykernel if it starts, else the fallback */
	KERNEL_JUPYTER = 1,    /* ipykernel only */
	KERNEL_FALLBACK = 2,   /* the plain-Python kernel only */
};

/* Defaults and limits. */
#define KERNEL_OUTPUT_CAP_DEFAULT (16u * 1024u * 1024u) /* bytes per run */
#define KERNEL_OUTPUT_CAP_MAX (48u * 1024u * 1024u)
#define KERNEL_CODE_MAX (8u * 1024u * 1024u)           /* bytes of code */
#define KERNEL_START_TIMEOUT_DEFAULT_MS 120000
#define KERNEL_INTERRUPT_GRACE_DEFAULT_MS 10000
#define KERNEL_ENV_MAX_VARS 1024
/* Warm pool: most spares kept, and the quiet time before a refill, ms. */
#define KERNEL_POOL_MAX 8
#define KERNEL_POOL_REFILL_IDLE_MS 1000

/* How to make a context.  Borrowed during the call (copied). */
struct kernel_opts {
	enum kernel_kind kind;
	const char *python;          /* interpreter; NULL: "python3" in PATH */
	const char *cwd;             /* NULL: the agent's */
	const char *const *env;      /* NULL-terminated "K=V" added to the
	                                agent's environment; may be NULL */
	const char *run_dir;         /* parent of the private folders; NULL:
	                                /run/pandastack/kernels, else /tmp */
	size_t output_cap;           /* bytes per run; 0: default */
	int64_t start_timeout_ms;    /* 0: default */
	int64_t interrupt_grace_ms;  /* 0: default */
	int use_pool;                /* take the warm spare if compatible */
	const char *warm_code;       /* kernel_pool_start only: Python run in
	                                every spare after the built-in warm-up
	                                (the template's warm step); may be NULL */
	unsigned pool_size;          /* kernel_pool_start only: spares to keep
	                                warm; 0: 1; at most KERNEL_POOL_MAX */
	int refill_cpu_idle;         /* kernel_pool_start only: a refill also
	                                waits for the machine's CPUs to be idle
	                                (the guest, where the agent is PID 1) */
	int spare_full_priority;     /* kernel_pool_start only: spares keep
	                                normal priority and OOM standing (hosts
	                                shared with other work: tests); 0: the
	                                idle standing of the guest */
};

struct kernel_ctx;

/*
 * kernel_ctx_create - make a context (a ready spare from the pool when
 * o->use_pool and one is compatible: "ready" follows at once; else a new
 * kernel).  Returns 0 with
 * *out (free with kernel_ctx_destroy), -EINVAL (bad options), -E2BIG (too
 * many env vars), -ENOMEM, -errno (eventfd, thread).
 */
int kernel_ctx_create(const struct kernel_opts *o, struct kernel_ctx **out);

/* kernel_ctx_fd - the eventfd to poll for POLLIN (owned by the context;
 * valid until kernel_ctx_destroy). */
int kernel_ctx_fd(const struct kernel_ctx *c);

/*
 * kernel_ctx_run - queue code (len bytes, UTF-8; invalid bytes are
 * repaired) with a timeout in ms (0: none).  *exec_id identifies its
 * events.  Returns 0, -E2BIG (code over KERNEL_CODE_MAX), -ESHUTDOWN,
 * -ENOMEM.
 */
int kernel_ctx_run(struct kernel_ctx *c, const char *code, size_t len, int64_t timeout_ms,
		   uint64_t *exec_id);

/*
 * kernel_ctx_next_event - take the oldest event: 0 with *exec_id and *ev
 * (a new reference: json_decref it), or -EAGAIN when none waits (the fd is
 * then drained).
 */
int kernel_ctx_next_event(struct kernel_ctx *c, uint64_t *exec_id, json_t **ev);

/* kernel_ctx_interrupt - interrupt the running execution, if any (queued
 * ones stay queued).  0. */
int kernel_ctx_interrupt(struct kernel_ctx *c);

/*
 * kernel_ctx_cancel - end exec_id: a queued one is removed (its done says
 * Cancelled), a running one is interrupted.  0, or -ENOENT if exec_id is
 * neither queued nor running.
 */
int kernel_ctx_cancel(struct kernel_ctx *c, uint64_t exec_id);

/* kernel_ctx_restart - kill the kernel and start a new one (state lost);
 * a running execution ends with an error, queued ones run afterwards.  0. */
int kernel_ctx_restart(struct kernel_ctx *c);

/* kernel_ctx_idle_ms - ms since the context last had work (0 while a run
 * is queued or running), for the reaper. */
int64_t kernel_ctx_idle_ms(struct kernel_ctx *c);

/* kernel_ctx_pid - the current kernel process (0 while none). */
pid_t kernel_ctx_pid(struct kernel_ctx *c);

/*
 * kernel_ctx_destroy - stop the context and free it.  Returns at once: its
 * thread sends shutdown_request, kills the kernel's process group after
 * a short grace, removes its private folder and frees everything.  Remove
 * kernel_ctx_fd from your poll set first; no more events come.  NULL-safe.
 */
void kernel_ctx_destroy(struct kernel_ctx *c);

/*
 * kernel_wait_all - wait up to timeout_ms for every destroyed context's
 * thread to finish (agent shutdown, tests).  0 or -ETIMEDOUT.
 */
int kernel_wait_all(int64_t timeout_ms);

/* kernel_note_exit - the agent's reaper reports a reaped child it does not
 * own.  Returns 1 if it was a kernel, else 0.  Any thread. */
int kernel_note_exit(pid_t pid, int status);

/* Warm pool ---------------------------------------------------------------*/

enum kernel_pool_state {
	KERNEL_POOL_NONE = 0,      /* no pool (not started, or stopped) */
	KERNEL_POOL_STARTING,      /* fewer ready spares than its size: one is
	                              warming up or the refill waits for idle */
	KERNEL_POOL_READY,         /* every spare of its size is warm */
	KERNEL_POOL_FAILED,        /* a spare could not start: no more refills
	                              until the next kernel_pool_start */
};

/*
 * kernel_pool_start - remember o (run_dir, python, kind, cwd, env,
 * warm_code, pool_size, refill_cpu_idle) for spares and fill the pool up
 * to o->pool_size now, one spare after another, without waiting for the
 * machine to be idle (later refills do wait).  Warm-ups run in the
 * background.  For the template bake: poll kernel_pool_fd, then read
 * kernel_pool_state until READY.  0 or -errno (-EINVAL: pool_size over
 * KERNEL_POOL_MAX).
 */
int kernel_pool_start(const struct kernel_opts *o);

/* kernel_pool_ready - how many warm spares wait now. */
unsigned kernel_pool_ready(void);

/* kernel_pool_pids - the kernel processes of the spares (ready or
 * warming), at most max into out; returns how many. */
size_t kernel_pool_pids(pid_t *out, size_t max);

/* kernel_pool_fd - an eventfd readable after the pool's state changed
 * (kernel_pool_state drains it).  Created on first use; -errno if not. */
int kernel_pool_fd(void);

/* kernel_pool_state - the spare's state; err (errlen bytes, may be NULL)
 * gets the reason of FAILED. */
enum kernel_pool_state kernel_pool_state(char *err, size_t errlen);

/* kernel_pool_stop - destroy the spares and stop making new ones (joins
 * the pool's refill thread). */
void kernel_pool_stop(void);

/* Most bytes of a sandbox id (the restore op's sandbox_id). */
#define KERNEL_SANDBOX_ID_MAX 64
/* Longest run of a kernel's after-restore job (reseed, then the functions
 * registered with pandastack_restore), ms; then it is interrupted. */
#define KERNEL_RESTORE_HOOKS_MS 10000

/*
 * kernel_reseed_all - after a restore: mark every context and every spare
 * for a reseed of Python's random, numpy's global generator and OpenSSL's
 * (_ssl.RAND_add, where the kernel has libcrypto loaded) from os.urandom,
 * run ahead of the context's next job (so no code runs on the old
 * generators, and an idle kernel stays asleep); a kernel process started
 * later seeds itself.  With sandbox_id (a restore that hands the sandbox
 * out: [A-Za-z0-9_-], at most KERNEL_SANDBOX_ID_MAX bytes; NULL: none) the
 * reseed also sets PANDASTACK_SANDBOX_ID in the kernel's os.environ and
 * calls the functions registered with pandastack_restore; a context whose
 * kernel registered some (the module left its mark in the kernel's private
 * folder) runs that job at once, bounded by KERNEL_RESTORE_HOOKS_MS, and
 * counts in the restore's barrier (kernel_restore_status) until the job
 * ended; other kernels are not woken.  Call after
 * the kernel RNG was reseeded (the restore op).  Returns the number of
 * contexts marked.
 */
int kernel_reseed_all(const char *sandbox_id);

/* kernel_restore_fd - an eventfd readable after a context settled its
 * part of the barrier of the last kernel_reseed_all with a sandbox id (read
 * kernel_restore_status, which drains it).  -errno if it cannot be made. */
int kernel_restore_fd(void);

/* The barrier of the last kernel_reseed_all with a sandbox id. */
struct kernel_restore_status {
	unsigned pending;   /* contexts that have not settled yet */
	unsigned ran;       /* kernels that ran their after-restore job to its end */
	unsigned failed;    /* of those, ended with an error */
	json_t *errors;     /* new reference: [{"pid", "error"}] of the failed
	                       (at most 8, each error at most 300 bytes) */
};

/* kernel_restore_status - the barrier now (out->errors: json_decref it).
 * The agent's thread. */
void kernel_restore_status(struct kernel_restore_status *out);

#endif
