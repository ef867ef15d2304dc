/*
 * spawn.c - double-fork QEMU into its own session under a small monitor
 * process that caps its logs and records its exit (see spawn.h).
 *
 * Between fork and exec only async-signal-safe calls are made (the caller
 * may have other threads holding malloc or stdio locks): everything that
 * allocates or formats is prepared before the first fork.
 */
#include "engine/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"

extern char **environ;

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
static int pump(struct log_sink *s, size_t cap, char *buf, size_t buflen)
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
	int32_t err;  /* errno of fork/exec, 0 when QEMU runs */
};

/* The monitor: starts QEMU, reports, logs, records the exit.  Never returns. */
static void monitor(char *const argv[], struct spawn_fds *f, size_t cap)
{
	struct spawn_status st = {0, 0};
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
	int keep[] = {f->dir, f->devnull, f->con, f->log, f->out[0], f->out[1],
		      f->err[0], f->err[1], f->stat[1]};
	close_others(keep, (int)(sizeof(keep) / sizeof(keep[0])));
	dup2(f->devnull, 0);
	dup2(f->devnull, 1);
	dup2(f->devnull, 2);
	int ex[2];
	if (pipe2(ex, O_CLOEXEC) < 0) {
		st.err = errno;
		write_full(f->stat[1], (const char *)&st, sizeof(st));
		_exit(1);
	}
	pid_t q = fork();
	if (q < 0) {
		st.err = errno;
		write_full(f->stat[1], (const char *)&st, sizeof(st));
		_exit(1);
	}
	if (q == 0) {
		sa.sa_handler = SIG_DFL;
		for (int s = 1; s < NSIG; s++)
			sigaction(s, &sa, NULL);
		dup2(f->out[1], 1);
		dup2(f->err[1], 2);
		/* Everything from 3 up closes at exec, the exec-error pipe too. */
		close_range(3, ~0u, CLOSE_RANGE_CLOEXEC);
		execve(argv[0], argv, environ);
		int e = errno;
		write_full(ex[1], (const char *)&e, sizeof(e));
		_exit(127);
	}
	close(ex[1]);
	close(f->out[1]);
	close(f->err[1]);
	int e = 0;
	ssize_t n;
	while ((n = read(ex[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(ex[0]);
	st.pid = q;
	st.err = n == (ssize_t)sizeof(e) ? e : 0;
	write_full(f->stat[1], (const char *)&st, sizeof(st));
	close(f->stat[1]);
	if (st.err) {
		waitpid(q, NULL, 0);
		_exit(1);
	}
	struct log_sink sinks[2] = {{f->out[0], f->con, 0, 0}, {f->err[0], f->log, 0, 0}};
	char buf[16384];
	for (;;) {
		struct pollfd p[2];
		int np = 0, idx[2];
		for (int i = 0; i < 2; i++)
			if (sinks[i].in >= 0) {
				p[np].fd = sinks[i].in;
				p[np].events = POLLIN;
				idx[np++] = i;
			}
		if (np == 0)
			break;
		if (poll(p, (nfds_t)np, -1) < 0)
			continue;
		for (int i = 0; i < np; i++) {
			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			struct log_sink *s = &sinks[idx[i]];
			if (!pump(s, cap, buf, sizeof(buf))) {
				close(s->in);
				s->in = -1;
			}
		}
	}
	int ws = 0;
	while (waitpid(q, &ws, 0) < 0 && errno == EINTR)
		;
	char line[96];
	size_t o = 0;
	if (WIFSIGNALED(ws)) {
		put_str(line, sizeof(line), &o, "killed by signal ");
		put_int(line, sizeof(line), &o, WTERMSIG(ws));
		put_str(line, sizeof(line), &o, " (");
		put_str(line, sizeof(line), &o, sig_name(WTERMSIG(ws)));
		put_str(line, sizeof(line), &o, ")\n");
	} else {
		put_str(line, sizeof(line), &o, "exited ");
		put_int(line, sizeof(line), &o, WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
		put_str(line, sizeof(line), &o, "\n");
	}
	int xf = openat(f->dir, "qemu.exit.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (xf >= 0) {
		write_full(xf, line, o);
		close(xf);
		renameat(f->dir, "qemu.exit.tmp", f->dir, "qemu.exit");
	}
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

int spawn_detached(char *const argv[], const char *run_dir, size_t log_cap, pid_t *pid)
{
	struct spawn_fds f = {-1, -1, -1, -1, {-1, -1}, {-1, -1}, {-1, -1}};
	int r = 0;
	if (!argv || !argv[0] || argv[0][0] != '/')
		return -EINVAL;
	if (!log_cap)
		log_cap = SPAWN_DEFAULT_LOG_CAP;
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
		monitor(argv, &f, log_cap);
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

int spawn_log_tail(const char *run_dir, const char *name, char *buf, size_t buflen)
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
	/* Drop trailing blank lines, then take the last line. */
	while (n > 0 && (tail[n - 1] == '\n' || tail[n - 1] == '\r' || tail[n - 1] == ' '))
		tail[--n] = '\0';
	if (n == 0)
		return -ENODATA;
	char *start = tail + n;
	while (start > tail && start[-1] != '\n')
		start--;
	size_t o = 0;
	for (char *p = start; *p && o + 1 < buflen; p++)
		buf[o++] = ((unsigned char)*p < 0x20 || *p == 0x7f) ? ' ' : *p;
	buf[o] = '\0';
	return 0;
}
