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
	return 0;
}

int cgroup_exec_new(const char *dir, uint64_t seq, struct exec_cgroup *cg)
{
	cg->procs_fd = -1;
	if (snprintf(cg->path, sizeof(cg->path), "%s/exec-%llu", dir,
		     (unsigned long long)seq) >= (int)sizeof(cg->path))
		return -ENAMETOOLONG;
	if (mkdir(cg->path, 0755) < 0 && errno != EEXIST)
		return -errno;
	char p[PATH_MAX + 16];
	snprintf(p, sizeof(p), "%s/cgroup.procs", cg->path);
	cg->procs_fd = open(p, O_WRONLY | O_CLOEXEC);
	if (cg->procs_fd < 0) {
		int e = -errno;
		rmdir(cg->path);
		return e;
	}
	return 0;
}

int cgroup_exec_join_self(const struct exec_cgroup *cg)
{
	if (cg->procs_fd < 0)
		return -EBADF;
	return write(cg->procs_fd, "0", 1) == 1 ? 0 : -errno;
}

int cgroup_exec_kill(const struct exec_cgroup *cg)
{
	char p[PATH_MAX];
	if (snprintf(p, sizeof(p), "%s/cgroup.kill", cg->path) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = write(fd, "1", 1) == 1 ? 0 : -errno;
	close(fd);
	return rc;
}

void cgroup_exec_release(struct exec_cgroup *cg)
{
	if (cg->procs_fd >= 0)
		close(cg->procs_fd);
	cg->procs_fd = -1;
	if (!cg->path[0])
		return;
	if (rmdir(cg->path) < 0 && errno == EBUSY && nlinger < LINGER_MAX) {
		char *dup = strdup(cg->path);
		if (dup)
			linger[nlinger++] = dup;
	}
	cg->path[0] = '\0';
}

void cgroup_sweep(void)
{
	for (unsigned i = 0; i < nlinger;) {
		if (rmdir(linger[i]) == 0 || errno != EBUSY) {
			free(linger[i]);
			linger[i] = linger[--nlinger];
			continue;
		}
		i++;
	}
}

unsigned cgroup_lingering(void)
{
	return nlinger;
}
