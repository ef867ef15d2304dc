/*
 * proc.c - run helper programs with a deadline (see proc.h).
 */
#include "engine/qemu/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"

extern char **environ;

int proc_run(char *const argv[], int timeout_ms, char *out, size_t outcap, int *status)
{
	int p[2];
	if (!argv || !argv[0])
		return -EINVAL;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	sigset_t none, dfl;
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	pid_t pid;
	int r = argv[0][0] == '/' ? posix_spawn(&pid, argv[0], &fa, &at, argv, environ)
				  : posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(p[1]);
	if (r != 0) {
		close(p[0]);
		return -r;
	}
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	int64_t deadline = util_now_ms() + (timeout_ms < 0 ? 0 : timeout_ms);
	size_t got = 0;
	int open_pipe = 1, timed_out = 0;
	if (out && outcap)
		out[0] = '\0';
	for (;;) {
		int64_t left = deadline - util_now_ms();
		if (left <= 0) {
			timed_out = 1;
			break;
		}
		struct pollfd pf[2];
		int n = 0;
		if (open_pipe) {
			pf[n].fd = p[0];
			pf[n++].events = POLLIN;
		}
		if (pidfd >= 0) {
			pf[n].fd = pidfd;
			pf[n++].events = POLLIN;
		}
		if (n == 0)
			break;
		if (poll(pf, (nfds_t)n, (int)(left > 100 ? 100 : left)) < 0 && errno != EINTR)
			break;
		if (open_pipe && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			char buf[4096];
			ssize_t k = read(p[0], buf, sizeof(buf));
			if (k <= 0) {
				if (k == 0 || (errno != EINTR && errno != EAGAIN))
					open_pipe = 0;
			} else if (out && outcap && got + 1 < outcap) {
				size_t take = (size_t)k < outcap - 1 - got ? (size_t)k : outcap - 1 - got;
				memcpy(out + got, buf, take);
				got += take;
				out[got] = '\0';
			}
		}
		/* Done once the process is gone: drain what it left (a
		 * grandchild holding the pipe open must not keep us here). */
		int exited = pidfd >= 0 && (pf[n - 1].revents & POLLIN);
		if (exited || (!open_pipe && pidfd < 0)) {
			fcntl(p[0], F_SETFL, O_NONBLOCK);
			char buf[4096];
			ssize_t k;
			while (open_pipe && (k = read(p[0], buf, sizeof(buf))) > 0) {
				if (out && outcap && got + 1 < outcap) {
					size_t take = (size_t)k < outcap - 1 - got ? (size_t)k
										   : outcap - 1 - got;
					memcpy(out + got, buf, take);
					got += take;
					out[got] = '\0';
				}
			}
			break;
		}
	}
	if (timed_out)
		kill(pid, SIGKILL);
	int ws = 0;
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	if (pidfd >= 0)
		close(pidfd);
	close(p[0]);
	if (status)
		*status = ws;
	return timed_out ? -ETIMEDOUT : 0;
}

int proc_run_ok(char *const argv[], int timeout_ms, char *out, size_t outcap)
{
	int st = 0;
	int r = proc_run(argv, timeout_ms, out, outcap, &st);
	if (r < 0)
		return r;
	return (WIFEXITED(st) && WEXITSTATUS(st) == 0) ? 0 : -EIO;
}
