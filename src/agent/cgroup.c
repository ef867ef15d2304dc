/*
 * cgroup.c - per-exec cgroup v2 groups (see cgroup.h).
 * Threads: the loop thread only.
 */
#include "agent/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

/* Groups whose processes outlived their exec; removed when empty. */
#define LINGER_MAX 4096
static char *linger[LINGER_MAX];
static unsigned nlinger;

/* pids.max of each exec group: processes plus threads.  No normal workload
 * (a parallel build, a test runner, a server with its workers) comes near
 * it; a fork bomb stops there instead of exhausting the guest. */
#define EXEC_PIDS_MAX 4096
/* Percentage of the guest's task limit (min of kernel.threads-max and
 * kernel.pid_max) all exec groups together may hold (pids.max of the
 * folder): the rest stays for the agent, the code kernels and the kernel's
 * own threads, so several fork bombs together still leave the agent room
 * to fork.  threads-max is ~1 per 128 KiB of RAM, so this also bounds the
 * memory a bomb's tasks can pin. */
#define EXECS_PIDS_SHARE_PCT 75
/* Lingering groups are checked for a hit pids limit at most this often. */
#define PIDS_CHECK_MS 250
/* Tasks a group may add to those it holds when its exec ends (its pids.max
 * is lowered to their sum): room for a background job's workers and
 * threads, while a fork bomb whose first shell exited runs into it within
 * seconds even where forks are slow (a guest under TCG forks a few dozen
 * times a second, so a limit in the thousands took it a minute). */
#define LINGER_PIDS_SLACK 256

/* pids.max given to each exec group: EXEC_PIDS_MAX, or half the folder's
 * limit when that is lower: a bomb then hits its own group's limit (where
 * pids.events counts it on every kernel) and leaves the other half to the
 * other execs (a shell that cannot fork cannot even run `echo alive; cat`). */
static long long exec_pids_max;

/* The pids.max cgroup_exec_new gives each group. */
static long long group_pids_max(void)
{
	return exec_pids_max ? exec_pids_max : EXEC_PIDS_MAX;
}

/* Write a short string to dir/file.  0 or -errno. */
static int write_attr(const char *dir, const char *file, const char *val)
{
	char p[PATH_MAX];
	if (snprintf(p, sizeof(p), "%s/%s", dir, file) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = strlen(val);
	int rc = write(fd, val, n) == (ssize_t)n ? 0 : -errno;
	close(fd);
	return rc;
}

/* Read a small file into buf (NUL-terminated).  Bytes read or -errno. */
static ssize_t read_attr(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, len - 1);
	int e = errno;
	close(fd);
	if (n < 0)
		return -e;
	buf[n] = '\0';
	return n;
}

static long long read_sysctl(const char *path)
{
	char b[64];
	if (read_attr(path, b, sizeof(b)) <= 0)
		return -1;
	return strtoll(b, NULL, 10);
}

int cgroup_enable_controllers(const char *dir)
{
	int r = write_attr(dir, "cgroup.subtree_control", "+pids");
	write_attr(dir, "cgroup.subtree_control", "+cpu"); /* CONFIG_FAIR_GROUP_SCHED */
	return r;
}

int cgroup_prepare(const char *dir)
{
	int r = util_mkdir_p(dir, 0755);
	if (r < 0)
		return r;
	char p[PATH_MAX];
	if (snprintf(p, sizeof(p), "%s/cgroup.kill", dir) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	if (access(p, W_OK) < 0)
		return errno == ENOENT ? -ENOTSUP : -errno;
	/* Best effort: the controllers exist only where the parent enabled
	 * them; without them execs still run, unbounded. */
	long long tmax = read_sysctl("/proc/sys/kernel/threads-max");
	long long pmax = read_sysctl("/proc/sys/kernel/pid_max");
	if (pmax > 0 && (tmax <= 0 || pmax < tmax))
		tmax = pmax;
	exec_pids_max = EXEC_PIDS_MAX;
	if (tmax > 0) {
		char v[32];
		long long lim = tmax * EXECS_PIDS_SHARE_PCT / 100;
		if (lim < 64)
			lim = 64;
		snprintf(v, sizeof(v), "%lld", lim);
		if (write_attr(dir, "pids.max", v) == 0 && lim / 2 < exec_pids_max)
			exec_pids_max = lim / 2;
	}
	cgroup_enable_controllers(dir);
	return 0;
}

int cgroup_exec_new(const char *dir, uint64_t seq, struct exec_cgroup *cg)
{
	cg->dir_fd = -1;
	if (snprintf(cg->path, sizeof(cg->path), "%s/exec-%llu", dir,
		     (unsigned long long)seq) >= (int)sizeof(cg->path))
		return -ENAMETOOLONG;
	if (mkdir(cg->path, 0755) < 0 && errno != EEXIST)
		return -errno;
	char v[32];
	snprintf(v, sizeof(v), "%lld", group_pids_max());
	write_attr(cg->path, "pids.max", v); /* best effort: no pids controller */
	cg->dir_fd = open(cg->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg->dir_fd < 0) {
		int e = -errno;
		rmdir(cg->path);
		return e;
	}
	return 0;
}

int cgroup_exec_join_self(const struct exec_cgroup *cg)
{
	if (cg->dir_fd < 0)
		return -EBADF;
	int fd = openat(cg->dir_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = write(fd, "0", 1) == 1 ? 0 : -errno;
	close(fd);
	return r;
}

int cgroup_exec_kill(const struct exec_cgroup *cg)
{
	return write_attr(cg->path, "cgroup.kill", "1");
}

/* Whether a counter line "<key> N" of buf has N > 0. */
static int counter_set(const char *buf, const char *key)
{
	size_t kl = strlen(key);
	for (const char *l = buf; l; ) {
		if (strncmp(l, key, kl) == 0 && l[kl] == ' ' && strtoll(l + kl + 1, NULL, 10) > 0)
			return 1;
		l = strchr(l, '\n');
		if (l)
			l++;
	}
	return 0;
}

/* Whether a fork in the group at path was refused by a pids limit: "max N"
 * with N > 0 in pids.events (6.1: counted in the forking group), or "max"
 * or "forkfail" in pids.events.local (kernels from 6.9 have it). */
static int hit_pids_max(const char *path)
{
	char p[PATH_MAX + 32], b[256];
	snprintf(p, sizeof(p), "%s/pids.events", path);
	if (read_attr(p, b, sizeof(b)) > 0 && counter_set(b, "max"))
		return 1;
	snprintf(p, sizeof(p), "%s/pids.events.local", path);
	return read_attr(p, b, sizeof(b)) > 0 && (counter_set(b, "max") || counter_set(b, "forkfail"));
}

/* A group left with processes that ran into its pids limit is a runaway
 * (a fork bomb churning at the limit for ever): kill it. */
static void kill_if_runaway(const char *path)
{
	if (hit_pids_max(path))
		write_attr(path, "cgroup.kill", "1");
}

/* Lower the pids.max of a group whose exec ended to the tasks it holds
 * plus LINGER_PIDS_SLACK (never above its own).  Best effort: without the
 * pids controller there is no pids.current. */
static void limit_lingering(const char *path)
{
	char p[PATH_MAX + 32], b[32];
	snprintf(p, sizeof(p), "%s/pids.current", path);
	if (read_attr(p, b, sizeof(b)) <= 0)
		return;
	long long lim = strtoll(b, NULL, 10) + LINGER_PIDS_SLACK;
	if (lim >= group_pids_max())
		return;
	snprintf(b, sizeof(b), "%lld", lim);
	write_attr(path, "pids.max", b);
}

void cgroup_exec_release(struct exec_cgroup *cg)
{
	if (cg->dir_fd >= 0)
		close(cg->dir_fd);
	cg->dir_fd = -1;
	if (!cg->path[0])
		return;
	if (rmdir(cg->path) < 0 && errno == EBUSY) {
		limit_lingering(cg->path);
		kill_if_runaway(cg->path);
		char *dup = nlinger < LINGER_MAX ? strdup(cg->path) : NULL;
		if (dup)
			linger[nlinger++] = dup;
	}
	cg->path[0] = '\0';
}

void cgroup_sweep(void)
{
	static int64_t last_check;
	int64_t now = util_now_ms();
	int check = now - last_check >= PIDS_CHECK_MS;
	if (check)
		last_check = now;
	for (unsigned i = 0; i < nlinger;) {
		if (rmdir(linger[i]) == 0 || errno != EBUSY) {
			free(linger[i]);
			linger[i] = linger[--nlinger];
			continue;
		}
		if (check)
			kill_if_runaway(linger[i]);
		i++;
	}
}

unsigned cgroup_lingering(void)
{
	return nlinger;
}
