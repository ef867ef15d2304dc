/*
 * kernel_proc.c - starting, signalling and reaping kernel processes (see
 * kernel_proc.h).
 *
 * Between fork and execve the child runs only async-signal-safe calls:
 * everything it needs (argv, envp, fds) is prepared by the parent.
 */
#include "agent/kernel/kernel_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* Kernels started here, so the agent's reaper can hand us their status. */
#define TRACK_MAX 1024
static struct {
	pid_t pid;
	int noted, status;
} track[TRACK_MAX];
static pthread_mutex_t track_mu = PTHREAD_MUTEX_INITIALIZER;

static void track_add(pid_t pid)
{
	pthread_mutex_lock(&track_mu);
	for (int i = 0; i < TRACK_MAX; i++) {
		if (track[i].pid == 0) {
			track[i].pid = pid;
			track[i].noted = 0;
			break;
		}
	}
	pthread_mutex_unlock(&track_mu);
}

/* The noted status of pid: 1 and *status if there, else 0. */
static int track_noted(pid_t pid, int *status)
{
	int found = 0;
	pthread_mutex_lock(&track_mu);
	for (int i = 0; i < TRACK_MAX; i++) {
		if (track[i].pid == pid && track[i].noted) {
			*status = track[i].status;
			found = 1;
			break;
		}
	}
	pthread_mutex_unlock(&track_mu);
	return found;
}

static void track_del(pid_t pid)
{
	pthread_mutex_lock(&track_mu);
	for (int i = 0; i < TRACK_MAX; i++)
		if (track[i].pid == pid)
			track[i].pid = 0;
	pthread_mutex_unlock(&track_mu);
}

int kernel_proc_note_exit(pid_t pid, int status)
{
	int ours = 0;
	if (pid <= 0)
		return 0;
	pthread_mutex_lock(&track_mu);
	for (int i = 0; i < TRACK_MAX; i++) {
		if (track[i].pid == pid) {
			track[i].noted = 1;
			track[i].status = status;
			ours = 1;
			break;
		}
	}
	pthread_mutex_unlock(&track_mu);
	return ours;
}

/* A close-on-exec copy of fd numbered >= 10, so the child's dup2 onto
 * 0..3 never overwrites a source (the agent may run with 0..2 closed).
 * -1 on failure. */
static int lift_fd(int fd)
{
	return fcntl(fd, F_DUPFD_CLOEXEC, 10);
}

/* Close every fd from first up, except keep (>= first). */
static void close_from(int first, int keep)
{
	if (syscall(SYS_close_range, first, keep - 1, 0) == 0 &&
	    syscall(SYS_close_range, keep + 1, ~0U, 0) == 0)
		return;
	for (int i = first; i < 65536; i++)
		if (i != keep)
			close(i);
}

/* The child side: never returns. */
static void child(const struct kernel_spawn *s, const int fd[4], int errfd, pid_t parent)
{
	sigset_t all;
	sigemptyset(&all);
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL); /* fails harmlessly for KILL/STOP */
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	int e = 0;
	if (setsid() < 0)
		e = errno;
	if (!e && prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		e = errno;
	if (!e && getppid() != parent)
		_exit(127); /* the starting thread's process is already gone */
	if (!e && s->idle) {
		/* A spare only takes CPU nobody else wants, and is the OOM
		 * killer's first victim; best effort (no error if refused). */
		struct sched_param sp = { .sched_priority = 0 };
		sched_setscheduler(0, SCHED_IDLE, &sp);
		setpriority(PRIO_PROCESS, 0, 19);
		int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
		if (oom >= 0) {
			ssize_t w = write(oom, "1000", 4);
			(void)w;
			close(oom);
		}
	} else if (!e && s->nice > 0) {
		setpriority(PRIO_PROCESS, 0, s->nice);
	}
	if (!e && s->cwd && chdir(s->cwd) < 0)
		e = errno;
	for (int i = 0; i < 4 && !e; i++)
		if (fd[i] >= 0 && dup2(fd[i], i) < 0)
			e = errno;
	if (!e) {
		/* errfd (>= 10, close-on-exec) stays to report a failed exec. */
		close_from(fd[3] >= 0 ? 4 : 3, errfd);
		execve(s->path, s->argv, s->envp);
		e = errno;
	}
	ssize_t w = write(errfd, &e, sizeof(e));
	(void)w;
	_exit(127);
}

/* The system's OOM kill count (/proc/vmstat oom_kill), or -1. */
static int64_t oom_kill_count(void)
{
	char *txt = NULL;
	size_t len = 0;
	if (util_read_file("/proc/vmstat", 64 * 1024, &txt, &len) < 0)
		return -1;
	int64_t v = -1;
	const char *k = strstr(txt, "\noom_kill ");
	if (k)
		v = strtoll(k + 10, NULL, 10);
	free(txt);
	return v;
}

int kernel_proc_spawn(const struct kernel_spawn *s, struct kernel_proc *p)
{
	memset(p, 0, sizeof(*p));
	p->pidfd = -1;
	p->oom_kills = oom_kill_count();
	int fd[4] = { -1, -1, -1, -1 }, pipefd[2] = { -1, -1 }, r = 0, devnull = -1;
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int i = 0; i < 4 && r == 0; i++) {
		int src = s->fd[i] >= 0 ? s->fd[i] : (i < 3 ? devnull : -1);
		if (src < 0)
			continue;
		fd[i] = lift_fd(src);
		if (fd[i] < 0)
			r = -errno;
	}
	if (r == 0 && pipe2(pipefd, O_CLOEXEC) < 0)
		r = -errno;
	int errfd = -1;
	if (r == 0) {
		errfd = lift_fd(pipefd[1]);
		close(pipefd[1]);
		pipefd[1] = errfd;
		if (errfd < 0)
			r = -errno;
	}
	pid_t parent = getpid();
	pid_t pid = r == 0 ? fork() : -1;
	if (r == 0 && pid < 0)
		r = -errno;
	if (pid == 0)
		child(s, fd, errfd, parent);
	if (pid > 0)
		track_add(pid); /* before it can exit and be reaped by the agent */
	for (int i = 0; i < 4; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	if (devnull >= 0)
		close(devnull);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	if (r == 0) {
		int e = 0;
		ssize_t n;
		do
			n = read(pipefd[0], &e, sizeof(e));
		while (n < 0 && errno == EINTR);
		if (n == (ssize_t)sizeof(e)) {
			waitpid(pid, NULL, 0); /* ECHILD if the agent reaped it: fine */
			track_del(pid);
			r = -(e ? e : EIO);
		}
	}
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (r < 0)
		return r;
	p->pid = pid;
#ifdef SYS_pidfd_open
	p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (p->pidfd >= 0)
		fcntl(p->pidfd, F_SETFD, FD_CLOEXEC);
	else if (errno == ESRCH)
		p->exited = 1; /* already reaped by the agent: status via note */
#endif
	return 0;
}

int kernel_proc_poll(struct kernel_proc *p)
{
	if (p->pid <= 0)
		return 1;
	if (p->exited && p->status_known)
		return 1;
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	int r;
	if (p->pidfd >= 0)
		r = waitid((idtype_t)P_PIDFD, (id_t)p->pidfd, &si, WEXITED | WNOHANG);
	else
		r = waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG);
	if (r == 0 && si.si_pid == 0 && !p->exited)
		return 0;
	if (r == 0 && si.si_pid != 0) {
		p->exited = 1;
		p->status_known = 1;
		if (si.si_code == CLD_EXITED)
			p->status = (si.si_status & 0xff) << 8;
		else
			p->status = si.si_status & 0x7f;
		return 1;
	}
	/* ECHILD: the agent's reaper took it; its report may be on the way. */
	int st;
	if (track_noted(p->pid, &st)) {
		p->exited = 1;
		p->status_known = 1;
		p->status = st;
		return 1;
	}
	if (r < 0 && errno != ECHILD)
		return -errno;
	p->exited = 1;
	return -EAGAIN;
}

void kernel_proc_give_up(struct kernel_proc *p)
{
	p->exited = 1;
}

int kernel_proc_signal(const struct kernel_proc *p, int sig)
{
	/* The group outlives its leader while members remain, so this works
	 * after the leader exited too.  The number cannot be reused meanwhile:
	 * the open pidfd pins it until kernel_proc_release. */
	if (p->pid <= 0)
		return -ESRCH;
	if (kill(-p->pid, sig) < 0) {
		int e = errno;
		/* The leader may have left its group empty but still be ours. */
		if (e == ESRCH && kill(p->pid, sig) == 0)
			return 0;
		return -e;
	}
	return 0;
}

int kernel_proc_kill(struct kernel_proc *p, int64_t timeout_ms)
{
	if (p->pid <= 0)
		return 0;
	kernel_proc_signal(p, SIGKILL);
	int64_t end = util_now_ms() + timeout_ms;
	for (;;) {
		int r = kernel_proc_poll(p);
		if (r == 1)
			return 0;
		int64_t left = end - util_now_ms();
		if (left <= 0)
			break;
		if (r == 0 && p->pidfd >= 0) {
			struct pollfd pf = { .fd = p->pidfd, .events = POLLIN };
			poll(&pf, 1, (int)(left < 100 ? left : 100));
		} else {
			struct timespec ts = { 0, 5 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	kernel_proc_give_up(p);
	return -ETIMEDOUT;
}

/* One thread back to SCHED_OTHER at nice 0.  0 or -errno. */
static int promote_task(pid_t tid)
{
	struct sched_param sp = { .sched_priority = 0 };
	int r = 0;
	if (sched_setscheduler(tid, SCHED_OTHER, &sp) < 0)
		r = -errno;
	if (setpriority(PRIO_PROCESS, (id_t)tid, 0) < 0 && r == 0)
		r = -errno;
	return r;
}

int kernel_proc_promote(const struct kernel_proc *p)
{
	if (p->pid <= 0)
		return -ESRCH;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%ld/task", (long)p->pid);
	int r = 0, seen = 0;
	DIR *d = opendir(path);
	if (d) {
		struct dirent *de;
		while ((de = readdir(d)) != NULL) {
			char *end;
			long tid = strtol(de->d_name, &end, 10);
			if (de->d_name[0] < '0' || de->d_name[0] > '9' || *end || tid <= 0)
				continue;
			int e = promote_task((pid_t)tid);
			if (e < 0 && e != -ESRCH && r == 0)
				r = e; /* a thread that just ended is fine */
			seen++;
		}
		closedir(d);
	}
	if (!seen)
		r = promote_task(p->pid);
	snprintf(path, sizeof(path), "/proc/%ld/oom_score_adj", (long)p->pid);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int e = fd < 0 ? -errno : util_write_all(fd, "0", 1);
	if (fd >= 0)
		close(fd);
	if (e < 0 && e != -ENOENT && r == 0)
		r = e;
	return r;
}

int kernel_proc_sample(const struct kernel_proc *p, char *state, uint64_t *cpu)
{
	if (p->pid <= 0)
		return -ESRCH;
	char path[64], *txt = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%ld/task/%ld/stat", (long)p->pid, (long)p->pid);
	int r = util_read_file(path, 4096, &txt, &len);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	/* "pid (comm) S ppid ... utime stime ...": comm may hold anything,
	 * so fields count from the last ')'; utime and stime are the 11th
	 * and 12th after the state. */
	char *rp = strrchr(txt, ')');
	unsigned long long ut = 0, st = 0;
	char s = 0;
	int n = rp ? sscanf(rp + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu", &s,
			    &ut, &st)
		   : 0;
	free(txt);
	if (n != 3)
		return -EINVAL;
	*state = s;
	*cpu = ut + st;
	return 0;
}

void kernel_proc_release(struct kernel_proc *p)
{
	if (p->pidfd >= 0)
		close(p->pidfd);
	if (p->pid > 0)
		track_del(p->pid);
	memset(p, 0, sizeof(*p));
	p->pidfd = -1;
}

void kernel_proc_describe(const struct kernel_proc *p, char *out, size_t n)
{
	if (!p->status_known) {
		snprintf(out, n, "kernel exited (status unknown)");
	} else if (WIFEXITED(p->status)) {
		snprintf(out, n, "kernel exited with status %d", WEXITSTATUS(p->status));
	} else if (WIFSIGNALED(p->status)) {
		int sig = WTERMSIG(p->status);
		const char *abbr = sigabbrev_np(sig);
		int64_t oom = sig == SIGKILL && p->oom_kills >= 0 ? oom_kill_count() : -1;
		if (oom > p->oom_kills) {
			snprintf(out, n, "kernel killed by the out-of-memory killer (signal %d)", sig);
			return;
		}
		snprintf(out, n, "kernel killed by signal %d (SIG%s%s)", sig, abbr ? abbr : "?",
			 sig == SIGKILL ? ", possibly out of memory" : "");
	} else {
		snprintf(out, n, "kernel ended (wait status %d)", p->status);
	}
}

char *kernel_proc_which(const char *name, char *const *envp)
{
	if (!name || !name[0]) {
		errno = ENOENT;
		return NULL;
	}
	if (strchr(name, '/'))
		return strdup(name);
	const char *path = "/usr/local/bin:/usr/bin:/bin";
	for (size_t i = 0; envp && envp[i]; i++)
		if (strncmp(envp[i], "PATH=", 5) == 0)
			path = envp[i] + 5;
	const char *p = path;
	while (*p || p == path) {
		const char *colon = strchr(p, ':');
		size_t dl = colon ? (size_t)(colon - p) : strlen(p);
		char *cand = NULL;
		if (asprintf(&cand, "%.*s/%s", (int)dl, dl ? p : ".", name) < 0) {
			errno = ENOMEM;
			return NULL;
		}
		if (access(cand, X_OK) == 0)
			return cand;
		free(cand);
		if (!colon)
			break;
		p = colon + 1;
	}
	errno = ENOENT;
	return NULL;
}
