/*
 * pool.h - pre-started QEMU processes per template, each already waiting in
 * `-incoming defer` with its own overlay and sockets, so that a create skips
 * QEMU's start-up: it only migrates the state in, continues and handshakes.
 *
 * A pool entry is a complete run directory under pool_dir; taking one
 * renames it to the caller's run_dir (sockets and files move with it), so
 * pool_dir and run_dir must be on the same filesystem (else -EXDEV).
 * A background thread refills the pool after each take and replaces entries
 * whose QEMU died.  size 0 turns the pool off (pool_take then returns
 * -EAGAIN and callers use vm_restore).
 * Threads: every function may be called from any thread.
 */
#ifndef PANDASTACK_POOL_H
#define PANDASTACK_POOL_H

#include "engine/template.h"
#include "engine/vm.h"

struct pool;

/*
 * pool_new - start a pool of size entries for template t (borrowed; must
 * outlive the pool) in pool_dir (created; stale entries there are killed
 * and removed).  Returns 0 with *out, or -errno.
 */
int pool_new(const struct template *t, const char *pool_dir, unsigned size, struct pool **out);

/*
 * pool_take - take a ready entry, rename it to run_dir and finish the
 * restore (migrate-incoming, cont, handshake, restore message with gopts),
 * like vm_restore.  Returns 0 with *out, -EAGAIN if no entry is ready, or
 * -errno with err filled (the entry is discarded).
 */
int pool_take(struct pool *p, const char *run_dir, const struct guest_restore_opts *gopts,
	      int timeout_ms, struct vm **out, struct vm_err *err);

/* pool_ready - entries ready now. */
unsigned pool_ready(struct pool *p);

/* pool_free - stop the refill thread, kill and remove every entry. */
void pool_free(struct pool *p);

#endif
