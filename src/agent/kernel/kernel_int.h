/*
 * kernel_int.h - private to kernel_*.c: the context structure shared by
 * the public API (kernel_ctx.c, kernel_create.c), the client thread
 * (kernel_life.c, kernel_thread.c), the two kernel backends (kernel_jupyter.c,
 * kernel_fallback.c) and the warm pool (kernel_pool.c).
 *
 * Locking: fields marked [mu] are guarded by ctx->mu; [thread] fields
 * belong to the client thread alone; [const] are set before the thread
 * starts and never change.  Lock order: pool lock, then registry lock,
 * then ctx->mu.
 */
#ifndef PANDASTACK_AGENT_KERNEL_INT_H
#define PANDASTACK_AGENT_KERNEL_INT_H

#include <pthread.h>
#include <stdint.h>

#include <jansson.h>
#include <zmq.h>

#include "agent/jupyter/jupyter_exec.h"
#include "agent/kernel/kernel.h"
#include "agent/kernel/kernel_late.h"
#include "agent/kernel/kernel_proc.h"

/* Kinds of queued work. */
enum kernel_job_kind {
	JOB_USER = 0,   /* the caller's code: events go out */
	JOB_SETUP,      /* internal: env/cwd/reseed/warm-up; silent */
};

struct kernel_job {
	uint64_t id;                 /* exec id (internal jobs too) */
	enum kernel_job_kind kind;
	const char *what;            /* for logs: "warm-up", "reseed", "setup" */
	char *code;                  /* owned, NUL-terminated */
	size_t code_len;             /* bytes (the code may hold NULs) */
	int64_t timeout_ms;          /* 0: none */
	uint64_t restore_gen;        /* an after-restore job: counted in that
	                                restore's barrier until it ends (0: not) */
	struct kernel_job *next;
};

struct kernel_event {
	uint64_t exec_id;
	json_t *ev;                  /* owned */
	struct kernel_event *next;
};

/* Deep copy of kernel_opts plus what the thread derives. */
struct kernel_cfg {
	enum kernel_kind kind;
	char *python;                /* resolved path */
	char *cwd;                   /* may be NULL */
	char **envp;                 /* full environment for the kernel */
	char **env_added;            /* the caller's "K=V" (for a spare's setup) */
	char *run_dir;
	size_t output_cap;
	int64_t start_timeout_ms;
	int64_t interrupt_grace_ms;
	int nice;                    /* niceness to add (0: none) */
	int idle;                    /* a pool spare: SCHED_IDLE standing */
};

/* Where the kernel is, as seen by the client thread. */
enum kernel_state {
	KS_NONE = 0,                 /* no process: start one when needed */
	KS_STARTING,                 /* spawned, not answering yet */
	KS_READY,                    /* serving */
	KS_FAILED,                   /* could not start; retry on new work */
};

struct kernel_backend;

struct kernel_ctx {
	/* [const] */
	int efd;                     /* events to the agent (eventfd) */
	int wake_fd;                 /* requests to the thread (eventfd) */
	pthread_t thread;
	char dir[128];               /* private folder */

	pthread_mutex_t mu;
	/* [mu] */
	struct kernel_job *jobs, *jobs_tail;
	struct kernel_event *evs, *evs_tail;
	uint64_t next_id;
	uint64_t running_id;         /* exec id in the kernel, 0: none */
	int stop;                    /* destroy requested */
	int interrupt_req;
	int restart_req;
	int pooled;                  /* a pool spare: events dropped */
	int spare_dead;              /* a spare whose kernel died: the pool
	                                replaces it (it is not restarted) */
	int announced;               /* "ready" went out for this kernel */
	int reseed_due;              /* restored: reseed ahead of the next job
	                                (kernel_reseed_all) */
	char reseed_sid[KERNEL_SANDBOX_ID_MAX + 1]; /* the sandbox id the last
	                                restore named, "" if none */
	uint64_t restore_gen;        /* a restore with a sandbox id waits for
	                                this context to settle (0: none) */
	char mark[160];              /* where pandastack_restore leaves its mark
	                                (in the private folder), "" before the
	                                first start */
	int64_t idle_since_ms;
	pid_t pid_pub;
	struct kernel_cfg *handover; /* new owner's cwd/env (pool take) */
	char fail_reason[256];
	json_t *ready_ev;            /* the last "ready" event sent */
	struct kernel_ctx *reg_prev, *reg_next; /* registry (its own lock) */

	/* [thread] */
	struct kernel_cfg cfg;
	const struct kernel_backend *be;
	void *bs;                    /* backend state */
	struct kernel_proc proc;
	enum kernel_state st;
	int fallback_tried;          /* AUTO: ipykernel failed once */
	int64_t ready_at_ms;         /* when the kernel became ready */
	int quick_deaths;            /* deaths soon after ready, in a row */
	int lazy_start;              /* start the next kernel only for work */
	int no_restart;              /* a dead spare: start no kernel at all */
	int64_t start_deadline;
	int64_t death_wait_until;    /* exited, status not yet reported */
	char kill_reason[256];       /* why we killed it, "" if we did not */
	int ready_pending;           /* kernel ready, "ready" not yet sent */
	json_t *kernel_info;         /* from kernel_info_reply */
	struct kernel_job *cur;
	struct jupyter_exec x;
	struct kernel_late late;     /* printed while no user run was current */
	/* The last run that ended cut short (interrupted, timed out or at
	 * its output cap), "" if the last one was not: what it printed
	 * still arrives after its end (a flood leaves a backlog) and is
	 * dropped, never given to the next run as late output. */
	char cut_msg_id[JUPYTER_ID_SIZE];
	int64_t cur_started, cur_deadline, grace_deadline, finish_deadline;
	int cur_timed_out, cur_interrupted;
	uint64_t cur_heard;          /* messages and output of the run so far */
	/* An interrupt may land just before the kernel blocks in a system
	 * call and then act only when the call returns (CPython checks for
	 * signals between bytecodes): while the kernel shows no reaction it
	 * is sent again (kernel_life.c, kernel__reinterrupt). */
	int64_t reint_at, reint_step_ms;
	uint64_t reint_heard, reint_cpu;
};

/* A kernel implementation driven by the client thread. */
struct kernel_backend {
	const char *name;            /* "jupyter" / "fallback" */
	/* Spawn the kernel and open its channels; fills c->proc. 0 / -errno. */
	int (*start)(struct kernel_ctx *c);
	/* Close channels and free c->bs (the process is the loop's job). */
	void (*stop)(struct kernel_ctx *c);
	/* Add poll items (at most max); returns how many. */
	int (*fill_poll)(struct kernel_ctx *c, zmq_pollitem_t *it, int max);
	/* Handle the items fill_poll added (same order, with revents). */
	void (*on_poll)(struct kernel_ctx *c, zmq_pollitem_t *it, int n, int64_t now);
	/* Send code; internal jobs leave no trace in the kernel's history or
	 * execution count; msg_id out.  0 / -errno. */
	int (*execute)(struct kernel_ctx *c, const char *code, int internal,
		       char msg_id[JUPYTER_ID_SIZE]);
	/* Earliest time the backend needs on_time (INT64_MAX: never). */
	int64_t (*next_due)(struct kernel_ctx *c);
	void (*on_time)(struct kernel_ctx *c, int64_t now);
	/* Ask the kernel to shut down politely (destroy); may be NULL. */
	void (*shutdown)(struct kernel_ctx *c);
	/* The last bytes the kernel process wrote to its own stdout/stderr,
	 * for start-failure messages (into out, n bytes, NUL-terminated). */
	void (*log_tail)(struct kernel_ctx *c, char *out, size_t n);
};

extern const struct kernel_backend kernel_jupyter_backend;
extern const struct kernel_backend kernel_fallback_backend;

/* Client thread entry (kernel_thread.c). */
void *kernel__thread_main(void *arg);

/* Kill: wait this long for the kernel process to be gone, ms. */
#define KILL_WAIT_MS 3000

/*
 * The kernel's life and its jobs (kernel_life.c), for the client thread's
 * loop (kernel_thread.c); client thread only.
 *   start        - start the kernel process (st NONE -> STARTING or FAILED)
 *   start_failed - the start failed (why): fail or fall back, per the kind
 *   with_last_words - why plus the last line the kernel printed, into out (n)
 *   start_next   - run the next queued job when the kernel is READY and idle
 *   finish       - end the running job (err: an error event, or NULL)
 *   interrupt    - interrupt the running job (timed_out: its timeout passed)
 *   reinterrupt  - send the interrupt again, the kernel not having reacted
 *   kill         - kill the kernel's process group for reason, handle the death
 *   check_death  - look whether the process ended; handle it if so
 *   drop         - close the channels and forget the process (ended or abandoned)
 */
void kernel__start(struct kernel_ctx *c);
void kernel__start_failed(struct kernel_ctx *c, const char *why);
void kernel__with_last_words(struct kernel_ctx *c, const char *why, char *out, size_t n);
void kernel__start_next(struct kernel_ctx *c);
void kernel__finish(struct kernel_ctx *c, json_t *err);
void kernel__interrupt(struct kernel_ctx *c, int timed_out, int64_t now);
void kernel__reinterrupt(struct kernel_ctx *c, int64_t now);
void kernel__kill(struct kernel_ctx *c, const char *reason);
void kernel__check_death(struct kernel_ctx *c, int64_t now);
void kernel__drop(struct kernel_ctx *c);

/*
 * Callbacks from the backends to the kernel's life (kernel_life.c; client thread
 * only).  Any of them may end the kernel (c->bs is then freed and NULL):
 * a backend compares c->bs with its own pointer after each call.
 *   on_message - a parsed kernel message (borrowed) for the running job
 *   on_ready   - the kernel answers; kernel_info content (borrowed, copied)
 *   on_output  - raw bytes (n) the kernel process wrote to fd 1 (0) / 2 (1)
 *   on_lost    - the kernel cannot be used any more (why): kill + restart
 *   on_iopub_gap - messages of the kernel were lost (its iopub link was
 *                made again): the running cell is told on its stderr
 */
void kernel__on_message(struct kernel_ctx *c, const struct jupyter_msg *m);
void kernel__on_ready(struct kernel_ctx *c, const json_t *kernel_info);
void kernel__on_output(struct kernel_ctx *c, int is_stderr, const char *s, size_t n);
void kernel__on_lost(struct kernel_ctx *c, const char *why);
void kernel__on_iopub_gap(struct kernel_ctx *c);

/*
 * Events and jobs (kernel_ctx.c).  Any thread.
 *   emit / emit_locked - queue ev (stolen; dropped for pooled spares) for
 *                        the agent and signal its eventfd; _locked: the
 *                        caller holds c->mu
 *   job_new   - a job with a repaired copy of code (len bytes); NULL on
 *               memory.  job_free frees it (NULL-safe)
 *   push_front_locked - give j (taken) a new id and queue it first (c->mu
 *               held)
 *   wake      - signal the client thread's eventfd
 *   fail_job_locked - queue a "done" with error name/value for user job j
 *               that never ran (c->mu held; j stays the caller's)
 *   ctx_finish - client thread, at its end: leave the registry, free c
 */
void kernel__emit(struct kernel_ctx *c, uint64_t exec_id, json_t *ev);
void kernel__emit_locked(struct kernel_ctx *c, uint64_t exec_id, json_t *ev);
struct kernel_job *kernel__job_new(enum kernel_job_kind kind, const char *what,
				   const char *code, size_t len, int64_t timeout_ms);
void kernel__job_free(struct kernel_job *j);
void kernel__push_front_locked(struct kernel_ctx *c, struct kernel_job *j);
void kernel__wake(struct kernel_ctx *c);
void kernel__fail_job_locked(struct kernel_ctx *c, struct kernel_job *j, const char *name,
			     const char *value);
void kernel__ctx_finish(struct kernel_ctx *c);

/* Config (kernel_ctx.c): build from opts (0 / -errno), free. */
int kernel__cfg_build(struct kernel_cfg *cfg, const struct kernel_opts *o);
void kernel__cfg_clear(struct kernel_cfg *cfg);
/* Create a context around cfg (moved in, cleared on return) without the
 * pool, with first (may be NULL; taken) queued before the thread starts;
 * pooled spares drop their events.  0 / -errno. */
int kernel__ctx_start(struct kernel_cfg *cfg, int pooled, struct kernel_job *first,
		      struct kernel_ctx **out);

/*
 * kernel__activity_idle_ms - ms since any context that is not a pool spare
 * last had work (a run or setup queued or running, a create, a take); 0
 * while one has.  now is util_now_ms().  Any thread; takes the registry
 * lock and each context's mu (kernel_ctx.c).
 */
int64_t kernel__activity_idle_ms(int64_t now);

/* Python snippets (kernel_snippets.c): new strings, caller frees.
 * setup: the new owner's env (added) and cwd (NULL: unchanged) for a taken
 * spare; no reseed (one due since a restore runs ahead of it, or the spare
 * was started after the restore). */
char *kernel__code_warmup(void);
/* reseed: the generators; with sandbox_id (checked: NULL unless
 * [A-Za-z0-9_-]) also PANDASTACK_SANDBOX_ID and the registered hooks. */
char *kernel__code_reseed(const char *sandbox_id);
char *kernel__code_setup(const char *cwd, char *const *env_added);

/*
 * After a restore (the barrier: kernel_restore.c; marked: kernel_ctx.c;
 * restore_check: kernel_thread.c).
 *   KERNEL_RESTORE_MARK - the file pandastack_restore leaves in the
 *               kernel's private folder (PANDASTACK_KERNEL_DIR) while
 *               functions are registered
 *   marked    - any thread holding c->mu: 1 when c's kernel left the mark
 *   restore_check - client thread: settle c's part of a restore that waits
 *               (c->restore_gen, set only for a marked kernel): queue the
 *               after-restore job first when the kernel is ready, else count
 *               c as done
 *   restore_expect - agent's thread: the restore gen waits for one more
 *               context (kernel_reseed_all)
 *   restore_begin - agent's thread: a new barrier; returns its gen
 *   restore_done - any thread: a context of gen settled; ran: its job ran
 *               to its end, error (may be NULL) why it failed; pid the kernel
 */
#define KERNEL_RESTORE_MARK "after-restore"
int kernel__marked(struct kernel_ctx *c);
void kernel__restore_check(struct kernel_ctx *c);
uint64_t kernel__restore_begin(void);
void kernel__restore_expect(uint64_t gen);
void kernel__restore_done(uint64_t gen, pid_t pid, int ran, const char *error);

/* kernel__cfg_setenv - set "name=value" in cfg's kernel environment
 * (replacing the variable if there).  0 or -ENOMEM. */
int kernel__cfg_setenv(struct kernel_cfg *cfg, const char *name, const char *value);

/* The fallback kernel's Python source (kernel_fallback_py.c). */
extern const char kernel__fallback_py[];

/* Pool (kernel_pool.c): a spare changed state (ready, failed, died).
 * Any thread holding none of the pool's, the registry's or a context's
 * locks. */
void kernel__pool_notify(void);
/* Take a ready spare compatible with cfg (same interpreter, kind): it
 * leaves the pool and stops being "pooled"; the caller owns it (NULL if
 * none).  Agent's thread. */
struct kernel_ctx *kernel__pool_take(const struct kernel_cfg *cfg);

#endif
