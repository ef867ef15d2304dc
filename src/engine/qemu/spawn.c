/*
 * spawn.c - double-fork QEMU into its own session under a small monitor
 * process that caps its logs and records its exit (see spawn.h).
 *
 * Between fork and exec only async-signal-safe calls are made (the caller
 * may have other threads holding malloc or stdio locks): everything that
 * allocates or formats is prepared before the first fork.
 */
#include "engine/qemu/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "engine/qemu/jail.h"

static const char log_marker[] = "\n[pandastack: log truncated]\n";

/* Make fd at least 3 (so 0-2 can be replaced freely), keeping CLOEXEC. */
static int high_fd(int fd)
{
	if (fd < 0 || fd >= 3)
		return fd;
	int n = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	int e = errno;
	close(fd);
	errno = e;
	return n;
}

static int pipe_high(int p[2])
{
	int t[2];
	if (pipe2(t, O_CLOEXEC) < 0)
		return -errno;
	p[0] = high_fd(t[0]);
	p[1] = high_fd(t[1]);
	if (p[0] < 0 || p[1] < 0) {
		int e = -errno;
		if (p[0] >= 0)
			close(p[0]);
		if (p[1] >= 0)
			close(p[1]);
		return e;
	}
	return 0;
}

/* --- async-signal-safe helpers used after fork ---------------------------- */

static void put_str(char *buf, size_t cap, size_t *o, const char *s)
{
	while (*s && *o + 1 < cap)
		buf[(*o)++] = *s++;
	buf[*o] = '\0';
}

static void put_int(char *buf, size_t cap, size_t *o, int v)
{
	char tmp[16];
	int n = 0;
	unsigned u = v < 0 ? (unsigned)-(long)v : (unsigned)v;
	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u && n < (int)sizeof(tmp));
	if (v < 0 && *o + 1 < cap)
		buf[(*o)++] = '-';
	while (n > 0 && *o + 1 < cap)
		buf[(*o)++] = tmp[--n];
	buf[*o] = '\0';
}

static const char *sig_name(int sig)
{
	switch (sig) {
	case SIGKILL: return "SIGKILL";
	case SIGTERM: return "SIGTERM";
	case SIGSEGV: return "SIGSEGV";
	case SIGABRT: return "SIGABRT";
	case SIGBUS: return "SIGBUS";
	case SIGILL: return "SIGILL";
	case SIGFPE: return "SIGFPE";
	case SIGSYS: return "SIGSYS (seccomp)";
	case SIGHUP: return "SIGHUP";
	case SIGINT: return "SIGINT";
	case SIGPIPE: return "SIGPIPE";
	case SIGXFSZ: return "SIGXFSZ";
	case SIGQUIT: return "SIGQUIT";
	default: return "?";
	}
}

static void write_full(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		p += w;
		n -= (size_t)w;
	}
}

struct log_sink {
	int in;        /* pipe read end, -1 when done */
	int out;       /* log file */
	size_t written;
	int truncated;
};

/* Copy what is readable from one pipe into its capped log.  0 at EOF. */
static int log_pump(struct log_sink *s, size_t cap, char *buf, size_t buflen)
{
	ssize_t n = read(s->in, buf, buflen);
	if (n < 0)
		return (errno == EINTR || errno == EAGAIN) ? 1 : 0;
	if (n == 0)
		return 0;
	size_t room = s->written < cap ? cap - s->written : 0;
	size_t take = (size_t)n < room ? (size_t)n : room;
	if (take) {
		write_full(s->out, buf, take);
		s->written += take;
	}
	if (take < (size_t)n && !s->truncated) {
		s->truncated = 1;
		write_full(s->out, log_marker, sizeof(log_marker) - 1);
	}
	return 1;
}

/* Close every descriptor not in keep[0..n) (n small; keep may be unsorted). */
static void close_others(int *keep, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	unsigned lo = 3;
	for (int i = 0; i < n; i++) {
		if (keep[i] < 3)
			continue;
		if ((unsigned)keep[i] > lo)
			close_range(lo, (unsigned)keep[i] - 1, 0);
		lo = (unsigned)keep[i] + 1;
	}
	close_range(lo, ~0u, 0);
}

struct spawn_fds {
	int dir, devnull, con, log;
	int out[2], err[2], stat[2];
};

struct spawn_status {
	int32_t pid;
	int32_t err;  /* errno of fork/exec or of a jail step, 0 when QEMU runs */
};

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* <run>/deadline as Unix ms; 0 when absent or unreadable.  Async-signal-safe. */
static int64_t read_deadline(int dir)
{
	int fd = openat(dir, SPAWN_DEADLINE_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	char buf[32];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	int64_t v = 0;
	for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9' && v < INT64_MAX / 10 - 10; i++)
		v = v * 10 + (buf[i] - '0');
	return v;
}

/* What the monitor watches besides the logs. */
struct watch {
	int ino;               /* inotify on the run directory, -1 */
	int lifeline;          /* -1 once released or unused */
	int64_t deadline;      /* Unix ms, 0 none */
	int64_t recheck_at;    /* monotonic ms: look whether run_dir is gone, 0 none */
	const char *killed;    /* why the monitor ended QEMU, NULL */
};

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* poll timeout until the next thing the watch must look at. */
static int watch_timeout(const struct watch *w)
{
	int64_t t = -1;
	if (w->deadline) {
		int64_t left = w->deadline - wall_ms();
		t = left > 0 ? left : 0;
	}
	if (w->recheck_at) {
		int64_t left = w->recheck_at - mono_ms();
		left = left > 0 ? left : 0;
		t = t < 0 || left < t ? left : t;
	}
	return t < 0 ? -1 : (t > 60000 ? 60000 : (int)t);
}

/* Drain inotify: a new deadline is re-read; a removal anywhere in the
 * folder makes us look, a moment later, whether the folder itself is gone
 * (its IN_DELETE_SELF never comes while we hold it open). */
static void watch_events(struct watch *w, int dir)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	for (;;) {
		ssize_t n = read(w->ino, buf, sizeof(buf));
		if (n <= 0)
			return;
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *e = (struct inotify_event *)p;
			if (e->mask & (IN_DELETE | IN_DELETE_SELF | IN_MOVED_FROM))
				w->recheck_at = mono_ms() + 100;
			if ((e->mask & (IN_CLOSE_WRITE | IN_MOVED_TO)) && e->len &&
			    !strcmp(e->name, SPAWN_DEADLINE_FILE))
				w->deadline = read_deadline(dir);
			p += sizeof(*e) + e->len;
		}
	}
}

/* Why QEMU must end now, or NULL. */
static const char *watch_verdict(struct watch *w, int dir)
{
	if (w->recheck_at && mono_ms() >= w->recheck_at) {
		w->recheck_at = 0;
		struct stat st;
		if (fstat(dir, &st) == 0 && st.st_nlink == 0)
			return "sandbox folder removed";
	}
	if (w->deadline && wall_ms() >= w->deadline)
		return "deadline passed";
	return NULL;
}

/* The monitor's own setup: default signal mask, no SIGPIPE/SIGHUP/SIGINT,
 * every descriptor closed but those it or QEMU needs, stdio on /dev/null. */
static void monitor_setup(struct spawn_fds *f, const struct spawn_opts *o)
{
	const struct jail *j = o->jail;
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGCHLD, &sa, NULL);
	prctl(PR_SET_NAME, "ps-qemu-mon", 0, 0, 0);
	/* The logs and pipes, stat, lifeline, uid lock, netns, cgroup.procs,
	 * what QEMU inherits. */
	int keep[8 + 4 + VMCG_MAX_DIRS + SPAWN_PASS_MAX] = {f->dir, f->devnull, f->con, f->log,
							    f->out[0], f->out[1], f->err[0], f->err[1]};
	int nkeep = 8;
	keep[nkeep++] = f->stat[1];
	if (o->lifeline_fd > 0)
		keep[nkeep++] = o->lifeline_fd;
	if (j) {
		keep[nkeep++] = jail_lock_fd(j);
		if (jail_netns_fd(j) >= 0)
			keep[nkeep++] = jail_netns_fd(j);
		const struct vmcg *cg = jail_cgroup(j);
		for (int i = 0; i < cg->ndirs; i++)
			if (cg->procs_fd[i] >= 0)
				keep[nkeep++] = cg->procs_fd[i];
	}
	for (int i = 0; i < o->npass && i < SPAWN_PASS_MAX; i++)
		keep[nkeep++] = o->pass_fds[i];
	close_others(keep, nkeep);
	dup2(f->devnull, 0);
	dup2(f->devnull, 1);
	dup2(f->devnull, 2);
}

/* Report st to the daemon (the stat pipe) and end the monitor. */
static void monitor_fail(struct spawn_fds *f, struct spawn_status *st)
{
	write_full(f->stat[1], (const char *)st, sizeof(*st));
	_exit(1);
}

/*
 * Fork and exec QEMU (in its own PID namespace when jailed: the jail is
 * entered in the child), then tell the daemon its pid or why it did not
 * start (the stat pipe).  Returns QEMU's pid; does not return when the
 * exec failed.
 */
static pid_t start_qemu(char *const argv[], struct spawn_fds *f, const struct spawn_opts *o)
{
	struct spawn_status st = {0, 0};
	const struct jail *j = o->jail;
	int ex[2];
	if ((j && unshare(CLONE_NEWPID) < 0) || pipe2(ex, O_CLOEXEC) < 0) {
		st.err = errno;
		monitor_fail(f, &st);
	}
	pid_t q = fork();
	if (q < 0) {
		st.err = errno;
		monitor_fail(f, &st);
	}
	if (q == 0) {
		static char *const empty_env[] = {NULL};
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		for (int s = 1; s < NSIG; s++)
			sigaction(s, &sa, NULL);
		dup2(f->out[1], 1);
		dup2(f->err[1], 2);
		/* Everything from 3 up closes at exec, the exec-error pipe too
		 * (the jail re-opens the one descriptor QEMU maps). */
		close_range(3, ~0u, CLOSE_RANGE_CLOEXEC);
		int e = j ? -jail_enter(j) : 0;
		for (int i = 0; !e && i < o->npass && i < SPAWN_PASS_MAX; i++)
			if (fcntl(o->pass_fds[i], F_SETFD, 0) < 0)
				e = errno;
		if (!e) {
			execve(argv[0], argv, empty_env);
			e = errno;
		}
		write_full(ex[1], (const char *)&e, sizeof(e));
		_exit(127);
	}
	close(ex[1]);
	close(f->out[1]);
	close(f->err[1]);
	if (j) {
		/* QEMU has what it needs; the uid lock stays with us. */
		const struct vmcg *cg = jail_cgroup(j);
		for (int i = 0; i < cg->ndirs; i++)
			if (cg->procs_fd[i] >= 0)
				close(cg->procs_fd[i]);
		if (jail_netns_fd(j) >= 0)
			close(jail_netns_fd(j));
	}
	for (int i = 0; i < o->npass && i < SPAWN_PASS_MAX; i++)
		close(o->pass_fds[i]);
	int e = 0;
	ssize_t n;
	while ((n = read(ex[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(ex[0]);
	st.pid = q;
	/* EOF: the exec happened (the pipe closed with it). */
	st.err = n == (ssize_t)sizeof(e) ? e : (n < 0 ? errno : 0);
	write_full(f->stat[1], (const char *)&st, sizeof(st));
	close(f->stat[1]);
	if (st.err) {
		waitpid(q, NULL, 0);
		if (j)
			vmcg_remove(jail_cgroup(j));
		_exit(1);
	}
	return q;
}

/* The watch of the VM's folder (o->watch: its deadline and removal) and of
 * the daemon's lifeline, ready for watch_timeout and watch_verdict. */
static void watch_open(struct watch *w, struct spawn_fds *f, const struct spawn_opts *o)
{
	*w = (struct watch){.ino = -1, .lifeline = o->lifeline_fd > 0 ? o->lifeline_fd : -1};
	if (!o->watch)
		return;
	char self[64];
	size_t so = 0;
	put_str(self, sizeof(self), &so, "/proc/self/fd/");
	put_int(self, sizeof(self), &so, f->dir);
	w->ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (w->ino >= 0 &&
	    inotify_add_watch(w->ino, self,
			      IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE |
				      IN_DELETE_SELF | IN_ONLYDIR) < 0) {
		close(w->ino);
		w->ino = -1;
	}
	w->deadline = read_deadline(f->dir);
}

/*
 * Copy QEMU's stdout and stderr to their logs (cap bytes each) until both
 * end, killing QEMU when the watch says so (its deadline passed, its folder
 * went, its daemon went away before it was used).
 */
static void pump_until_exit(pid_t q, struct spawn_fds *f, const struct spawn_opts *o,
			    struct watch *w, size_t cap)
{
	struct log_sink sinks[2] = {{f->out[0], f->con, 0, 0}, {f->err[0], f->log, 0, 0}};
	char buf[16384];
	for (;;) {
		struct pollfd p[4];
		int np = 0, idx[2];
		for (int i = 0; i < 2; i++)
			if (sinks[i].in >= 0) {
				p[np].fd = sinks[i].in;
				p[np].events = POLLIN;
				idx[np++] = i;
			}
		if (np == 0)
			break;
		int nlogs = np, pino = -1, plife = -1;
		if (w->ino >= 0 && !w->killed) {
			p[np].fd = w->ino;
			p[np].events = POLLIN;
			pino = np++;
		}
		if (w->lifeline >= 0 && !w->killed) {
			p[np].fd = w->lifeline;
			p[np].events = POLLIN;
			plife = np++;
		}
		int pr = poll(p, (nfds_t)np, w->killed ? -1 : watch_timeout(w));
		if (pr < 0)
			continue;
		for (int i = 0; i < nlogs; i++) {
			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			struct log_sink *s = &sinks[idx[i]];
			if (!log_pump(s, cap, buf, sizeof(buf))) {
				close(s->in);
				s->in = -1;
			}
		}
		if (w->killed)
			continue;
		if (pino >= 0 && (p[pino].revents & POLLIN))
			watch_events(w, f->dir);
		const char *why = o->watch ? watch_verdict(w, f->dir) : NULL;
		if (plife >= 0 && (p[plife].revents & (POLLIN | POLLHUP | POLLERR))) {
			char c;
			ssize_t got = read(w->lifeline, &c, 1);
			if (got != 0 && !(got < 0 && (errno == EINTR || errno == EAGAIN))) {
				close(w->lifeline); /* released (or broken: keep QEMU) */
				w->lifeline = -1;
			} else if (got == 0) {
				why = "its daemon went away before it was used";
			}
		}
		if (why) {
			w->killed = why;
			kill(q, SIGKILL);
		}
	}
}

/* qemu.exit in the VM's folder: how QEMU ended (wait status ws) and, when
 * the monitor killed it, why. */
static void write_exit(struct spawn_fds *f, int ws, const char *killed)
{
	char line[160];
	size_t o2 = 0;
	if (WIFSIGNALED(ws)) {
		put_str(line, sizeof(line), &o2, "killed by signal ");
		put_int(line, sizeof(line), &o2, WTERMSIG(ws));
		put_str(line, sizeof(line), &o2, " (");
		put_str(line, sizeof(line), &o2, sig_name(WTERMSIG(ws)));
		put_str(line, sizeof(line), &o2, ")");
	} else {
		put_str(line, sizeof(line), &o2, "exited ");
		put_int(line, sizeof(line), &o2, WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
	}
	if (killed) {
		put_str(line, sizeof(line), &o2, ": ");
		put_str(line, sizeof(line), &o2, killed);
	}
	put_str(line, sizeof(line), &o2, "\n");
	int xf = openat(f->dir, "qemu.exit.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (xf >= 0) {
		write_full(xf, line, o2);
		close(xf);
		renameat(f->dir, "qemu.exit.tmp", f->dir, "qemu.exit");
	}
}

/* The monitor: starts QEMU, reports, logs, watches, records the exit.
 * Never returns.  A fork of a possibly multi-threaded process that never
 * execs: async-signal-safe calls only, for its whole life. */
static void monitor(char *const argv[], struct spawn_fds *f, const struct spawn_opts *o)
{
	size_t cap = o->log_cap ? o->log_cap : SPAWN_DEFAULT_LOG_CAP;
	monitor_setup(f, o);
	pid_t q = start_qemu(argv, f, o);
	struct watch w;
	watch_open(&w, f, o);
	pump_until_exit(q, f, o, &w, cap);
	int ws = 0;
	while (waitpid(q, &ws, 0) < 0 && errno == EINTR)
		;
	if (o->jail)
		vmcg_remove(jail_cgroup(o->jail));
	write_exit(f, ws, w.killed);
	_exit(0);
}

static void close_fds(struct spawn_fds *f)
{
	int *all[] = {&f->dir, &f->devnull, &f->con, &f->log, &f->out[0], &f->out[1],
		      &f->err[0], &f->err[1], &f->stat[0], &f->stat[1]};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (*all[i] >= 0) {
			close(*all[i]);
			*all[i] = -1;
		}
}

int spawn_detached(char *const argv[], const char *run_dir, const struct spawn_opts *opts,
		   pid_t *pid)
{
	struct spawn_fds f = {-1, -1, -1, -1, {-1, -1}, {-1, -1}, {-1, -1}};
	struct spawn_opts none = {0};
	const struct spawn_opts *o = opts ? opts : &none;
	int r = 0;
	if (!argv || !argv[0] || argv[0][0] != '/')
		return -EINVAL;
	f.dir = high_fd(open(run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	f.devnull = high_fd(open("/dev/null", O_RDWR | O_CLOEXEC));
	if (f.dir < 0 || f.devnull < 0) {
		r = -errno;
		goto out;
	}
	f.con = high_fd(openat(f.dir, "console.log", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640));
	f.log = high_fd(openat(f.dir, "qemu.log", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640));
	if (f.con < 0 || f.log < 0) {
		r = -errno;
		goto out;
	}
	if ((r = pipe_high(f.out)) < 0 || (r = pipe_high(f.err)) < 0 || (r = pipe_high(f.stat)) < 0)
		goto out;
	unlinkat(f.dir, "qemu.exit", 0);

	pid_t a = fork();
	if (a < 0) {
		r = -errno;
		goto out;
	}
	if (a == 0) {
		setsid();
		pid_t m = fork();
		if (m < 0) {
			struct spawn_status st = {0, errno};
			write_full(f.stat[1], (const char *)&st, sizeof(st));
			_exit(1);
		}
		if (m > 0)
			_exit(0);
		monitor(argv, &f, o);
	}
	close(f.stat[1]);
	f.stat[1] = -1;
	while (waitpid(a, NULL, 0) < 0 && errno == EINTR)
		;
	struct spawn_status st = {0, 0};
	ssize_t n = util_read_full(f.stat[0], &st, sizeof(st));
	if (n != (ssize_t)sizeof(st)) {
		r = n < 0 ? (int)n : -ECHILD;
		goto out;
	}
	if (st.err) {
		r = -st.err;
		goto out;
	}
	*pid = st.pid;
	char num[32];
	int len = snprintf(num, sizeof(num), "%d\n", (int)st.pid);
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/qemu.pid", run_dir) >= (int)sizeof(path)) {
		r = -ENAMETOOLONG;
		goto out;
	}
	r = util_write_file(path, num, (size_t)len, 0644);
out:
	close_fds(&f);
	return r;
}

int spawn_set_deadline(const char *run_dir, int64_t unix_ms)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/%s", run_dir, SPAWN_DEADLINE_FILE) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (unix_ms <= 0)
		return unlink(path) == 0 || errno == ENOENT ? 0 : -errno;
	char num[32];
	int len = snprintf(num, sizeof(num), "%lld\n", (long long)unix_ms);
	return util_write_file(path, num, (size_t)len, 0644);
}

int spawn_release(int fd)
{
	if (fd < 0)
		return 0;
	int r = util_write_all(fd, "r", 1);
	close(fd);
	return r;
}

int spawn_exit_status(const char *run_dir, int timeout_ms, char *buf, size_t buflen)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/qemu.exit", run_dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	int64_t deadline = util_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	for (;;) {
		char *data = NULL;
		size_t len = 0;
		int r = util_read_file(path, 256, &data, &len);
		if (r == 0) {
			while (len && (data[len - 1] == '\n' || data[len - 1] == '\r'))
				data[--len] = '\0';
			snprintf(buf, buflen, "%s", data);
			free(data);
			return 0;
		}
		if (r != -ENOENT || util_now_ms() >= deadline)
			return r;
		struct timespec ts = {0, 5 * 1000000};
		nanosleep(&ts, NULL);
	}
}

/* 1 when line (len bytes) contains one of skip's phrases. */
static int skipped(const char *line, size_t len, const char *const *skip)
{
	for (; skip && *skip; skip++) {
		size_t k = strlen(*skip);
		for (size_t i = 0; k && i + k <= len; i++)
			if (!memcmp(line + i, *skip, k))
				return 1;
	}
	return 0;
}

int spawn_log_tail(const char *run_dir, const char *name, const char *const *skip, char *buf,
		   size_t buflen)
{
	char path[PATH_MAX], tail[4097];
	if (buflen == 0)
		return -EINVAL;
	buf[0] = '\0';
	if (snprintf(path, sizeof(path), "%s/%s", run_dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	off_t from = st.st_size > 4096 ? st.st_size - 4096 : 0;
	ssize_t n = pread(fd, tail, 4096, from);
	close(fd);
	if (n < 0)
		return -EIO;
	tail[n] = '\0';
	/* Drop trailing blank lines, then take the last line that is not
	 * one to skip. */
	char *start;
	for (;;) {
		while (n > 0 && (tail[n - 1] == '\n' || tail[n - 1] == '\r' || tail[n - 1] == ' '))
			tail[--n] = '\0';
		if (n == 0)
			return -ENODATA;
		start = tail + n;
		while (start > tail && start[-1] != '\n')
			start--;
		if (!skipped(start, (size_t)(tail + n - start), skip))
			break;
		n = start - tail;
		tail[n] = '\0';
	}
	size_t o = 0;
	for (char *p = start; *p && o + 1 < buflen; p++)
		buf[o++] = ((unsigned char)*p < 0x20 || *p == 0x7f) ? ' ' : *p;
	buf[o] = '\0';
	return 0;
}
