/*
 * child.c - starting a user's shell command and killing its tree (see
 * child.h).
 *
 * Threads: the loop thread only.
 */
#include "agent/child.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/loop.h"
#include "common/log.h"
#include "common/util.h"

/* Whether clone3 can create a child inside its group: 0 not tried yet,
 * 1 yes, -1 no (a kernel before 5.7: fork, then the child joins). */
static int clone_into_cgroup = 0;

/* In the child: report (stage, errno) on the error pipe and exit. */
static void __attribute__((noreturn)) child_fail(int errfd, int stage)
{
	int e[2] = {stage, errno ? errno : EIO};
	ssize_t w = write(errfd, e, sizeof(e));
	(void)w;
	_exit(127);
}

static void __attribute__((noreturn))
child_run(const struct child *c, const struct child_spec *sp, int in_group, uint64_t nofile,
	  int in_r, int out_w, int err_w, int errpipe_w)
{
	if (c->has_cg && !in_group)
		cgroup_exec_join_self(&c->cg); /* best effort: the pgroup still works */
	setsid();
	loop_child_sigreset();
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = nofile;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (in_r < 0) {
		in_r = open("/dev/null", O_RDONLY);
		if (in_r < 0)
			child_fail(errpipe_w, 1);
	}
	if (dup2(in_r, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
		child_fail(errpipe_w, 1);
	/* everything else closes at exec; the error pipe already is CLOEXEC */
	close_range(3, ~0u, CLOSE_RANGE_CLOEXEC);
	if (chdir(sp->cwd) < 0)
		child_fail(errpipe_w, 2);
	umask(022);
	char *argv[] = {"sh", "-c", (char *)sp->cmd, NULL};
	execve("/bin/sh", argv, sp->envp);
	child_fail(errpipe_w, 3);
}

/*
 * Fork the command's process: created inside c's group when it has one
 * (clone3, CLONE_INTO_CGROUP; *in_group = 1), else a plain fork (the child
 * joins itself).  Like fork(): the child's pid, 0 in the child, or -1 with
 * errno.  A raw clone3 runs no atfork handlers; the child needs none, as it
 * only calls async-signal-safe functions before execve.
 */
static pid_t fork_child(const struct child *c, int *in_group)
{
	*in_group = 0;
	if (c->has_cg && clone_into_cgroup >= 0) {
		struct clone_args a = {
			.flags = CLONE_INTO_CGROUP,
			.exit_signal = SIGCHLD,
			.cgroup = (uint64_t)c->cg.dir_fd,
		};
		long pid = syscall(SYS_clone3, &a, sizeof(a));
		if (pid >= 0) {
			clone_into_cgroup = 1;
			*in_group = 1;
			return (pid_t)pid;
		}
		if (errno == EAGAIN || errno == ENOMEM)
			return -1; /* fork would fail the same way */
		if (errno == ENOSYS || errno == E2BIG) {
			clone_into_cgroup = -1;
			log_kv(LOG_INFO, "agent.clone_into_cgroup", "supported=0 errno=%d", errno);
		}
	}
	return fork();
}

static int make_pipe(int p[2], int nonblock_end)
{
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	int fl = fcntl(p[nonblock_end], F_GETFL);
	fcntl(p[nonblock_end], F_SETFL, fl | O_NONBLOCK);
	return 0;
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++) {
		if (p[i] >= 0)
			close(p[i]);
		p[i] = -1;
	}
}

int child_spawn(struct agent_env *env, const struct child_spec *sp, struct child *c)
{
	memset(c, 0, sizeof(*c));
	c->out_fd[0] = c->out_fd[1] = c->in_fd = c->err_fd = -1;
	c->cg.dir_fd = -1;
	int po[2] = {-1, -1}, pe[2] = {-1, -1}, pi[2] = {-1, -1}, perr[2] = {-1, -1};
	int r = make_pipe(po, 0);
	if (!r)
		r = make_pipe(pe, 0);
	if (!r && sp->want_stdin)
		r = make_pipe(pi, 1);
	if (!r)
		r = make_pipe(perr, 0);
	if (!r && env->cgroup_dir && cgroup_exec_new(env->cgroup_dir, ++env->seq, &c->cg) == 0)
		c->has_cg = 1;
	c->t_cg_us = util_now_us();
	pid_t pid = -1;
	int in_group = 0;
	if (!r) {
		pid = fork_child(c, &in_group);
		if (pid < 0)
			r = -errno;
	}
	if (pid == 0)
		child_run(c, sp, in_group, env->child_nofile, pi[0], po[1], pe[1], perr[1]);
	if (r < 0) {
		close_pair(po);
		close_pair(pe);
		close_pair(pi);
		close_pair(perr);
		if (c->has_cg)
			cgroup_exec_release(&c->cg);
		c->has_cg = 0;
		return r;
	}
	c->t_fork_us = util_now_us();
	c->pid = pid;
	close(po[1]);
	close(pe[1]);
	close(perr[1]);
	if (pi[0] >= 0)
		close(pi[0]);
	c->out_fd[0] = po[0];
	c->out_fd[1] = pe[0];
	c->err_fd = perr[0];
	c->in_fd = pi[1];
	return 0;
}

void child_kill_tree(struct child *c, int reaped)
{
	if (c->has_cg)
		cgroup_exec_kill(&c->cg);
	if (c->pid > 0 && !reaped) {
		kill(-c->pid, SIGKILL);
		/* A kill within the child's first moments (a timeout of a few
		 * ms) can come before it called setsid() or joined its cgroup:
		 * then only the child itself exists, and this reaches it. */
		kill(c->pid, SIGKILL);
	}
}

int child_signal(struct child *c, int sig, int reaped)
{
	if (sig == SIGKILL) {
		int had = c->has_cg || (c->pid > 0 && !reaped);
		child_kill_tree(c, reaped);
		return had ? 0 : -ESRCH;
	}
	if (c->pid <= 0 || reaped)
		return -ESRCH;
	if (kill(-c->pid, sig) < 0 && kill(c->pid, sig) < 0)
		return -errno;
	return 0;
}

int child_read_error(struct child *c, int *err)
{
	int e[2];
	ssize_t n = read(c->err_fd, e, sizeof(e));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n == (ssize_t)sizeof(e) && e[1] > 0)
		*err = e[1];
	return 1;
}
