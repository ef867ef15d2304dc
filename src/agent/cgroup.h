/*
 * cgroup.h - one cgroup v2 group per exec, so that a timeout or a cancel
 * kills the whole process tree (cgroup.kill), including processes that left
 * the exec's session or process group.
 *
 * Groups are <dir>/exec-<n>; the child is created inside its group (clone3
 * with CLONE_INTO_CGROUP on the group's folder descriptor opened here), or,
 * on a kernel without it, joins between fork and exec (cgroup.procs).
 * Moving a running process costs the guest an RCU grace period (the
 * kernel's cgroup_threadgroup_rwsem taken for writing): ~10 ms under
 * emulation, on every exec; being created inside the group costs nothing.  A group
 * still holding processes when its exec ends (a background job the user
 * left running) cannot be removed yet: it is remembered and removed by
 * cgroup_sweep once empty (the agent calls it whenever it reaps an orphan).
 *
 * Fork bombs: the folder gets a pids.max below the guest's task limit, so
 * the agent and the code kernels can always fork, and each group the lower
 * of EXEC_PIDS_MAX and half of that (cgroup.c), so one bomb leaves room for
 * other execs; with the cpu controller on, all execs together weigh as much
 * as one task of the agent's.  When a group outlives its exec, its pids.max
 * is lowered to the tasks it holds plus LINGER_PIDS_SLACK (cgroup.c); a
 * group that outlives its exec after a fork was refused by its pids limit
 * is killed (a fork bomb whose first shell exited at once would otherwise
 * churn at the limit for ever).
 *
 * Threads: the loop thread only (the lingering list is not locked).
 */
#ifndef PANDASTACK_AGENT_CGROUP_H
#define PANDASTACK_AGENT_CGROUP_H

#include <limits.h>
#include <stdint.h>

struct exec_cgroup {
	char path[PATH_MAX];
	int dir_fd;     /* the group's folder, O_RDONLY|O_DIRECTORY|O_CLOEXEC;
	                 * -1 when closed */
};

/* cgroup_enable_controllers - enable the pids and cpu controllers for
 * dir's children (cgroup.subtree_control; dir must hold no processes unless
 * it is the root).  Best effort for cpu.  Returns 0, or -errno of the pids
 * controller's write. */
int cgroup_enable_controllers(const char *dir);

/* cgroup_prepare - create dir (a folder inside a cgroup2 mount) and check
 * that it supports cgroup.kill; then, best effort, cap the tasks of all
 * execs (dir's pids.max, a share of the guest's task limit) and enable the
 * pids and cpu controllers for the exec groups.  Returns 0, or -errno
 * (-ENOTSUP when the kernel has no cgroup.kill). */
int cgroup_prepare(const char *dir);

/* cgroup_exec_new - create <dir>/exec-<seq> with its pids.max (when the
 * pids controller is on; see above) and open its folder (dir_fd).
 * Returns 0 with *cg filled, or -errno (nothing left behind). */
int cgroup_exec_new(const char *dir, uint64_t seq, struct exec_cgroup *cg);

/* cgroup_exec_join_self - in a forked child not created inside cg: move
 * the calling process into cg (its cgroup.procs).  Async-signal-safe.
 * Returns 0 or -errno. */
int cgroup_exec_join_self(const struct exec_cgroup *cg);

/* cgroup_exec_kill - SIGKILL every process in cg (cgroup.kill).
 * Returns 0 or -errno. */
int cgroup_exec_kill(const struct exec_cgroup *cg);

/* cgroup_exec_release - close cg's descriptor and remove the group, or
 * remember it for cgroup_sweep if processes remain: then lower its
 * pids.max to its tasks plus LINGER_PIDS_SLACK, and kill them at once if
 * the group already ran into its pids limit. */
void cgroup_exec_release(struct exec_cgroup *cg);

/* cgroup_sweep - remove remembered groups that have become empty, and
 * (at most every PIDS_CHECK_MS) kill those that ran into their pids
 * limit. */
void cgroup_sweep(void);

/* cgroup_lingering - how many groups wait for removal. */
unsigned cgroup_lingering(void);

#endif
