/*
 * kernel_proc.h - kernel processes: start one in its own session and
 * process group, signal the group, learn how it ended.
 *
 * A kernel is started with fork + execve from the context's client thread:
 * setsid() (it leads its own process group, so an interrupt or a kill of
 * the group reaches its children and leaves no orphans), signals unblocked
 * and at default, fds 0..3 as asked and every other fd closed, optional
 * niceness (or a spare's idle standing), and PR_SET_PDEATHSIG=SIGKILL tied to the starting thread (a
 * context's thread outlives its kernels).  An exec failure comes back as
 * its errno.
 *
 * Exit detection: a pidfd (pidfd_open) the caller polls, then
 * waitid(P_PIDFD); without pidfd support, waitpid(pid, WNOHANG).  The agent
 * is PID 1 and reaps every child with waitpid(-1): a kernel it reaps first
 * must be reported with kernel_proc_note_exit (its orphan hook), and
 * kernel_proc_poll then finds the status there.
 *
 * Threads: the kernel_proc functions are called by the thread that owns the
 * struct; kernel_proc_note_exit by any thread.
 */
#ifndef PANDASTACK_AGENT_KERNEL_PROC_H
#define PANDASTACK_AGENT_KERNEL_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What to start.  Borrowed for the duration of kernel_proc_spawn. */
struct kernel_spawn {
	const char *path;      /* executable path (see kernel_proc_which) */
	char *const *argv;     /* NULL-terminated */
	char *const *envp;     /* NULL-terminated "K=V" */
	const char *cwd;       /* NULL: inherit */
	int fd[4];             /* fds that become 0..3; -1: /dev/null (0..2) or closed (3) */
	int nice;              /* niceness to add (0..19) */
	int idle;              /* a warm spare: SCHED_IDLE, nice 19 and
	                          oom_score_adj 1000 (undone by
	                          kernel_proc_promote) */
};

struct kernel_proc {
	pid_t pid;             /* 0: none */
	int pidfd;             /* -1 without pidfd support */
	int exited;            /* the exit was seen */
	int status_known;      /* status below is valid */
	int status;            /* wait(2) status */
	int64_t oom_kills;     /* the system's OOM kills at the start (-1: unknown) */
};

/*
 * kernel_proc_spawn - start s as a new session leader.  Returns 0 with *p
 * filled, or -errno (from fork, or the child's chdir/execve errno).
 */
int kernel_proc_spawn(const struct kernel_spawn *s, struct kernel_proc *p);

/*
 * kernel_proc_poll - check whether the process ended, without blocking.
 * Returns 1 (p->exited set; p->status_known says whether the status was
 * learnt), 0 still running, -EAGAIN ended but reaped by someone else whose
 * report has not arrived yet (ask again shortly).
 */
int kernel_proc_poll(struct kernel_proc *p);

/* kernel_proc_give_up - mark an ended process whose status never arrived
 * as exited with unknown status. */
void kernel_proc_give_up(struct kernel_proc *p);

/* kernel_proc_signal - send sig to the process group (also after the
 * leader exited, until kernel_proc_release: its children may remain).
 * 0 or -errno (-ESRCH when nobody is left). */
int kernel_proc_signal(const struct kernel_proc *p, int sig);

/*
 * kernel_proc_kill - SIGKILL the group and wait up to timeout_ms for the
 * leader to end (status collected when we can).  0, or -ETIMEDOUT.
 */
int kernel_proc_kill(struct kernel_proc *p, int64_t timeout_ms);

/*
 * kernel_proc_promote - undo a spare's low standing: every thread of the
 * process (from /proc/PID/task; the leader alone without /proc) back to
 * SCHED_OTHER at nice 0, and oom_score_adj 0.  Needs CAP_SYS_NICE (the
 * agent is root).  0, or the first -errno met (the rest is still done).
 */
int kernel_proc_promote(const struct kernel_proc *p);

/*
 * kernel_proc_sample - the main thread's scheduler state letter (R, S, D,
 * ...; from /proc/PID/task/PID/stat) into *state and its CPU time so far
 * (user + system, clock ticks) into *cpu.  0 or -errno (-ESRCH: gone).
 */
int kernel_proc_sample(const struct kernel_proc *p, char *state, uint64_t *cpu);

/* kernel_proc_release - close the pidfd and forget the process (after it
 * exited, or to abandon it).  Safe on an empty struct. */
void kernel_proc_release(struct kernel_proc *p);

/*
 * kernel_proc_describe - how it ended, in words, into out (n bytes):
 * "kernel exited with status 1", "kernel killed by the out-of-memory killer
 * (signal 9)" (a SIGKILL while the system's OOM kill count grew, from
 * /proc/vmstat), "kernel killed by signal 9 (SIGKILL, possibly out of
 * memory)", "kernel exited (status unknown)".
 */
void kernel_proc_describe(const struct kernel_proc *p, char *out, size_t n);

/*
 * kernel_proc_note_exit - the agent's reaper reports a child it reaped
 * (status from waitpid).  Returns 1 if pid is a kernel started here (its
 * status is kept for kernel_proc_poll), else 0.  Any thread.
 */
int kernel_proc_note_exit(pid_t pid, int status);

/*
 * kernel_proc_which - the path execve should run for name: name itself if
 * it has a '/', else the first executable match in envp's PATH (default
 * /usr/local/bin:/usr/bin:/bin).  Returns a new string (caller frees) or
 * NULL with errno ENOENT / ENOMEM.
 */
char *kernel_proc_which(const char *name, char *const *envp);

#endif
