/*
 * cgroup.h - one cgroup v2 group per exec, so that a timeout or a cancel
 * kills the whole process tree (cgroup.kill), including processes that left
 * the exec's session or process group.
 *
 * Groups are <dir>/exec-<n>; the child joins its group between fork and
 * exec by writing "0" to the cgroup.procs descriptor opened here.  A group
 * still holding processes when its exec ends (a background job the user
 * left running) cannot be removed yet: it is remembered and removed by
 * cgroup_sweep once empty (the agent calls it whenever it reaps an orphan).
 *
 * Threads: the loop thread only (the lingering list is not locked).
 */
#ifndef PANDASTACK_AGENT_CGROUP_H
#define PANDASTACK_AGENT_CGROUP_H

#include <limits.h>
#include <stdint.h>

struct exec_cgroup {
	char path[PATH_MAX];
	int procs_fd;   /* cgroup.procs, O_WRONLY|O_CLOEXEC; -1 when closed */
};

/* cgroup_prepare - create dir (a folder inside a cgroup2 mount) and check
 * that it supports cgroup.kill.  Returns 0, or -errno (-ENOTSUP when the
 * kernel has no cgroup.kill). */
int cgroup_prepare(const char *dir);

/* cgroup_exec_new - create <dir>/exec-<seq> and open its cgroup.procs.
 * Returns 0 with *cg filled, or -errno (nothing left behind). */
int cgroup_exec_new(const char *dir, uint64_t seq, struct exec_cgroup *cg);

/* cgroup_exec_join_self - in the forked child: move the calling process
 * into cg.  Async-signal-safe.  Returns 0 or -errno. */
int cgroup_exec_join_self(const struct exec_cgroup *cg);

/* cgroup_exec_kill - SIGKILL every process in cg (cgroup.kill).
 * Returns 0 or -errno. */
int cgroup_exec_kill(const struct exec_cgroup *cg);

/* cgroup_exec_release - close cg's descriptor and remove the group, or
 * remember it for cgroup_sweep if processes remain. */
void cgroup_exec_release(struct exec_cgroup *cg);

/* cgroup_sweep - remove remembered groups that have become empty. */
void cgroup_sweep(void);

/* cgroup_lingering - how many groups wait for removal. */
unsigned cgroup_lingering(void);

#endif
