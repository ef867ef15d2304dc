/*
 * restore_hooks.h - the guest's after-restore hooks (docs/snapshots.md,
 * "After-restore hooks"): the executables of one folder, run after a
 * restore that hands a sandbox out (the restore op's sandbox_id), so that
 * the guest's own servers can re-key before anyone reaches the sandbox.
 *
 * The hooks are the regular, executable files of the folder whose names are
 * 1 to 255 bytes of [A-Za-z0-9_.-] not starting with '.', at most
 * RESTORE_HOOKS_MAX of them (in byte order of their names; the rest are
 * skipped).  They run one at a time in that order, each as an exec command
 * is started (child.h: `/bin/sh -c 'exec HOOK'`, its own session, process
 * group and exec cgroup) with stdin /dev/null, the exec base environment
 * plus PANDASTACK_SANDBOX_ID, in the agent's workdir.  Each may run for
 * RESTORE_HOOK_TIMEOUT_MS, and all of them together until the deadline the
 * caller gives; one over its time is killed with its whole tree (a hook
 * not started by the deadline is skipped), so the last one ends at most
 * RESTORE_HOOK_KILL_WAIT_MS after the deadline.  The first RESTORE_HOOK_OUTPUT_MAX
 * bytes of what a hook writes (stdout and stderr together) are kept for the
 * report, the rest is read and dropped.  When a hook exits, what it wrote is
 * read and its pipes are closed: a process it left running must not write to
 * them (it gets EPIPE).
 *
 * Threads: the loop thread only.
 */
#ifndef PANDASTACK_AGENT_RESTORE_HOOKS_H
#define PANDASTACK_AGENT_RESTORE_HOOKS_H

#include <stdint.h>

#include <jansson.h>

#include "agent/astream.h"

/* Most hooks run after one restore. */
#define RESTORE_HOOKS_MAX 32
/* Longest run of one hook, ms. */
#define RESTORE_HOOK_TIMEOUT_MS 10000
/* After killing a hook, wait this long for it to be reaped, ms (then it is
 * left to the reaper and the next one runs). */
#define RESTORE_HOOK_KILL_WAIT_MS 2000
/* Output kept per hook for the report, bytes. */
#define RESTORE_HOOK_OUTPUT_MAX 4096

struct restore_hooks;

/* Called when the last hook ended (never from inside restore_hooks_start). */
typedef void (*restore_hooks_done_cb)(void *ctx);

/*
 * restore_hooks_start - list the hooks of dir (absolute; a missing folder
 * holds none) and start the first, for sandbox sandbox_id (the value of
 * PANDASTACK_SANDBOX_ID; copied), to be over by deadline_ms
 * (CLOCK_MONOTONIC).  done(ctx) runs once they all ended.  Returns 0 with *out
 * (restore_hooks_finished tells whether there was anything to run at all), or
 * -ENOMEM / -EINVAL (nothing started).  A hook that cannot be started is
 * reported as failed; the next one runs.
 */
int restore_hooks_start(struct agent_env *env, const char *dir, const char *sandbox_id,
			int64_t deadline_ms, restore_hooks_done_cb done, void *ctx,
			struct restore_hooks **out);

/* restore_hooks_count - how many hooks dir holds now (as restore_hooks_start
 * would list them, RESTORE_HOOKS_MAX at most), without running any; 0 when
 * it holds none or cannot be read.  NULL: 0. */
int restore_hooks_count(const char *dir);

/* restore_hooks_finished - 1 once every hook ended or was skipped. */
int restore_hooks_finished(const struct restore_hooks *h);

/*
 * restore_hooks_report - the hooks so far, in order, as a new JSON array
 * (NULL on ENOMEM): {"name", "exit_code", "signal" (null unless a signal
 * ended it), "timed_out", "ms", "output", "output_truncated"} for each hook
 * that ran (exit_code 127 and "error" for one that could not be started),
 * {"name", "skipped": true} for one not started by the deadline or past
 * RESTORE_HOOKS_MAX.  *failed (may be NULL) gets how many did not exit 0.
 */
json_t *restore_hooks_report(const struct restore_hooks *h, int *failed);

/*
 * restore_hooks_free - kill the running hook's tree, release everything
 * (the host cancelled the restore).  NULL is a no-op.
 */
void restore_hooks_free(struct restore_hooks *h);

#endif
