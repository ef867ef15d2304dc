/*
 * pool.h - ready sandboxes per template: each one restored, running, its
 * agent answering, the guest code of an exec already translated (TCG), its
 * jail, control group and network slot in place, so that a create only
 * hands one out.
 *
 * A background thread keeps `size` entries.  An entry is made like any
 * sandbox (vm_launch_clone + vm_finish_restore, so it gets the template's
 * restore message), then warmed (POOL_WARM_EXECS execs of `true`).  Until it
 * is handed out its QEMU's control group weighs a tenth of a sandbox's
 * (vm_set_cpu_low): making and keeping entries takes mostly CPU time the
 * sandboxes in use leave, yet a busy host does not starve the refill (with
 * an idle-class group, cpu.idle, a loaded host never refilled the pool).
 * The daemon's own part of making one (the network slot, the jail, the
 * spawn, QMP) runs on the refill thread at normal priority; it is a few ms
 * per entry.
 *
 * pool_take hands out the oldest entry: it renames the entry's run
 * directory to the caller's (sockets and files move with it, so pool_dir
 * and run_dir must be on the same filesystem, else -EXDEV), makes its
 * control group's weight normal again, sends the agent's restore message again
 * (docs/agent-protocol.md "restore": the wall clock now and 64 fresh bytes
 * of host entropy into the kernel's pool with a reseed of its CRNG, then a
 * reseed of every warm interpreter's generators, queued ahead of any user
 * code; with gopts->sandbox_id, the guest's after-restore hooks for it).
 * When the entry's guest has hooks (its first restore listed them) the take
 * waits for that END, so they have run before the sandbox is handed out;
 * otherwise it does not wait: the message is the connection's gate
 * (guest_stream.h), so the owner's first request waits for it and fails if
 * it failed.  Then it writes vm.json and releases the entry's lifeline.  So what an
 * entry's guest held before (its clock, the RNG state of its first
 * restore) tells nothing about what its owner's sandbox draws after.  The
 * caller then gives it its deadline (vm_set_deadline), as for vm_restore.
 *
 * An entry dies with the process that made it (the monitor's lifeline,
 * spawn.h) until handed out; entries whose QEMU or agent died are replaced.
 * size 0 starts no thread: pool_take answers -EAGAIN.
 * Threads: every function may be called from any thread.
 */
#ifndef PANDASTACK_POOL_H
#define PANDASTACK_POOL_H

#include <stdint.h>

#include "engine/template/template.h"
#include "engine/vm/vm.h"

/* Largest pool per template. */
#define POOL_MAX_SIZE 64u
/* Execs of `true` that warm a new entry (the first one after a restore
 * translates the guest's exec path afresh under TCG; later ones reuse it). */
#define POOL_WARM_EXECS 2

struct pool;

/* What a pool did since pool_new (counters) and holds now. */
struct pool_stats {
	unsigned size;            /* entries it keeps */
	unsigned ready;           /* entries ready now */
	uint64_t hits;            /* pool_take handed one out */
	uint64_t misses;          /* pool_take found none ready (-EAGAIN) */
	uint64_t take_failed;     /* an entry failed at its hand-out (discarded) */
	uint64_t made;            /* entries made ready */
	uint64_t make_failed;     /* entries that failed while being made */
	uint64_t died;            /* ready entries whose QEMU or agent died */
};

/*
 * pool_new - a pool of size entries (at most POOL_MAX_SIZE) for template t
 * (borrowed; must outlive the pool) in pool_dir (created; stale entries
 * there, left by an earlier process, are killed and removed).  The refill
 * thread starts at once.
 * Returns 0 with *out, or -errno (-EINVAL bad arguments, -E2BIG size).
 */
int pool_new(const struct template *t, const char *pool_dir, unsigned size, struct pool **out);

/*
 * pool_take - hand out a ready entry as a sandbox in run_dir (must not
 * exist), see above; its restore message carries gopts (borrowed, may be
 * NULL; guest_conn.h); timeout_ms bounds the hand-out.  Returns 0 with *out
 * (owned by the caller, as from vm_restore), -EAGAIN if no entry is ready
 * (a miss: nothing was done), or another -errno with err filled (the entry
 * was discarded and run_dir removed; the caller may fall back to
 * vm_restore).
 */
int pool_take(struct pool *p, const char *run_dir, const struct guest_restore_opts *gopts,
	      int timeout_ms, struct vm **out, struct vm_err *err);

/* pool_ready - entries ready now. */
unsigned pool_ready(struct pool *p);

/* pool_get_stats - counters and sizes into *out. */
void pool_get_stats(struct pool *p, struct pool_stats *out);

/* pool_free - stop the refill thread, kill and remove every entry.  NULL is
 * a no-op. */
void pool_free(struct pool *p);

#endif
