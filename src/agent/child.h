/*
 * child.h - starting a user's shell command (`/bin/sh -c CMD`) for the
 * agent and killing its whole process tree: the one spawn of the exec
 * operation (op_exec.c) and of background commands (commands.c).
 *
 * The command runs in its own session and process group, in its own cgroup
 * v2 group when the agent has a cgroup folder (cgroup.h), with umask 022,
 * the agent's RLIMIT_NOFILE for commands, the given environment and
 * working directory, stdout and stderr on pipes and stdin on a pipe or
 * /dev/null.  Whether the shell could be started is reported on a CLOEXEC
 * error pipe: EOF once execve succeeded, else (stage, errno) as two ints.
 *
 * Threads: the loop thread only (it forks; the child only calls
 * async-signal-safe functions).
 */
#ifndef PANDASTACK_AGENT_CHILD_H
#define PANDASTACK_AGENT_CHILD_H

#include <stdint.h>
#include <sys/types.h>

#include "agent/astream.h"
#include "agent/cgroup.h"

/* What to start.  Borrowed during child_spawn. */
struct child_spec {
	const char *cmd;    /* the shell command (sh -c) */
	char *const *envp;  /* the whole environment (agent_env_build) */
	const char *cwd;    /* an existing folder */
	int want_stdin;     /* 1: stdin is a pipe (in_fd); 0: /dev/null */
};

/* A started command.  The descriptors are the parent's ends (CLOEXEC):
 * out_fd and err_fd nonblocking for reading, in_fd nonblocking for
 * writing; the owner closes them (-1 once closed). */
struct child {
	pid_t pid;          /* the shell; its pgid and sid too */
	int out_fd[2];      /* [0] its stdout, [1] its stderr */
	int in_fd;          /* its stdin, or -1 (want_stdin 0) */
	int err_fd;         /* the error pipe (see above) */
	struct exec_cgroup cg;
	int has_cg;         /* cg holds the command (cgroup_exec_release it) */
	int64_t t_cg_us;    /* CLOCK_MONOTONIC us: the group was ready */
	int64_t t_fork_us;  /* CLOCK_MONOTONIC us: fork returned */
};

/*
 * child_spawn - start sp in a new group <env->cgroup_dir>/exec-<n> (when
 * env has a cgroup folder; without a group if it cannot be made).  Returns
 * 0 with *c filled (register c->pid with loop_child_watch at once), or
 * -errno (pipe, fork, ENOMEM) with nothing left open or running.
 */
int child_spawn(struct agent_env *env, const struct child_spec *sp, struct child *c);

/*
 * child_kill_tree - SIGKILL the whole tree: cgroup.kill when it has a
 * group, and the process group while the shell is unreaped (reaped 0: the
 * pgid cannot have been reused yet).
 */
void child_kill_tree(struct child *c, int reaped);

/*
 * child_signal - send sig to the command's process group (while unreaped)
 * and, for SIGKILL, kill the whole tree as child_kill_tree.  Returns 0 or
 * -errno of kill(2) (-ESRCH: nothing left to signal).
 */
int child_signal(struct child *c, int sig, int reaped);

/*
 * child_read_error - read the error pipe.  Returns 0 while it has said
 * nothing yet (EAGAIN), 1 once it is done (EOF: the shell runs; or a
 * report: *err gets the errno that stopped it); the caller then closes
 * err_fd.
 */
int child_read_error(struct child *c, int *err);

#endif
