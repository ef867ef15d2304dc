/*
 * vm_cgroup.c - per-sandbox control groups on cgroup v1 or v2 (see
 * vm_cgroup.h).  Kernel interfaces: Documentation/admin-guide/cgroup-v2.rst
 * and cgroup-v1/{memory,pids,cpuacct,blkio-controller}.rst; the layout of
 * /proc/self/mountinfo is proc(5).
 */
#include "engine/qemu/vm_cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

#define PARENT_NAME "pandastack"
#define DAEMON_LEAF "pandastack-daemon"
#define MOUNTINFO_MAX (1024u * 1024u)
#define CGROUP_FILE_MAX (64u * 1024u)
#define CPU_PERIOD_US 100000u

/* Controller bits for a v1 hierarchy. */
enum { C_MEMORY = 1, C_PIDS = 2, C_CPU = 4, C_BLKIO = 8 };

static const struct {
	const char *name;
	int bit;
} v1_ctrls[] = {
	{"memory", C_MEMORY}, {"pids", C_PIDS}, {"cpu", C_CPU}, {"blkio", C_BLKIO},
};

/* Write s to path (a cgroup control file).  0 or -errno. */
static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = strlen(s);
	ssize_t w = write(fd, s, n);
	int e = w < 0 ? -errno : ((size_t)w == n ? 0 : -EIO);
	close(fd);
	return e;
}

static int path_in(char *out, const char *dir, const char *name)
{
	return snprintf(out, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX ? -ENAMETOOLONG : 0;
}

static int write_in(const char *dir, const char *file, const char *s)
{
	char p[PATH_MAX];
	int r = path_in(p, dir, file);
	return r < 0 ? r : write_str(p, s);
}

static int exists_in(const char *dir, const char *file)
{
	char p[PATH_MAX];
	return path_in(p, dir, file) == 0 && access(p, F_OK) == 0;
}

/* 1 if the comma-separated list has item. */
static int list_has(const char *list, const char *item)
{
	size_t n = strlen(item);
	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == n && !strncmp(p, item, n))
			return 1;
		p = e ? e + 1 : NULL;
	}
	return 0;
}

/* 1 if the space-separated list has item. */
static int words_have(const char *list, const char *item)
{
	size_t n = strlen(item);
	for (const char *p = list; *p;) {
		while (*p == ' ' || *p == '\n')
			p++;
		size_t len = strcspn(p, " \n");
		if (len == n && !strncmp(p, item, n))
			return 1;
		p += len;
	}
	return 0;
}

/* The calling process's group in the hierarchy with controllers ctrls
 * (v1: one of its names; v2: ctrls NULL means the "0::" line). */
static int own_group(const char *cgroup_file, const char *ctrl, char *out, size_t outlen)
{
	for (const char *line = cgroup_file; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char buf[PATH_MAX + 256];
		if (len < sizeof(buf)) {
			memcpy(buf, line, len);
			buf[len] = '\0';
			char *c1 = strchr(buf, ':');
			char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
			if (c1 && c2) {
				*c2 = '\0';
				const char *list = c1 + 1, *path = c2 + 1;
				int match = ctrl ? list_has(list, ctrl) : (!strncmp(buf, "0:", 2) && !*list);
				if (match) {
					if (strlen(path) >= outlen)
						return -ENAMETOOLONG;
					snprintf(out, outlen, "%s", path);
					return 0;
				}
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

/* One cgroup mount from mountinfo. */
struct cg_mount {
	char root[PATH_MAX];   /* the mount's root inside the hierarchy */
	char point[PATH_MAX];  /* where it is mounted */
	char opts[256];        /* super options (v1: controllers) */
	int v2;
};

/* Find the mount of the v1 hierarchy carrying ctrl, or the v2 mount
 * (ctrl NULL).  Mount points with escaped characters are skipped. */
static int find_mount(const char *mountinfo, const char *ctrl, struct cg_mount *m)
{
	for (const char *line = mountinfo; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char buf[2 * PATH_MAX + 512];
		if (len < sizeof(buf)) {
			memcpy(buf, line, len);
			buf[len] = '\0';
			/* id parent maj:min root point opts [optional...] - type source superopts */
			char *f[6] = {0};
			char *save = NULL, *tok = strtok_r(buf, " ", &save);
			int i = 0;
			while (tok && i < 6) {
				f[i++] = tok;
				tok = strtok_r(NULL, " ", &save);
			}
			while (tok && strcmp(tok, "-"))
				tok = strtok_r(NULL, " ", &save);
			char *type = tok ? strtok_r(NULL, " ", &save) : NULL;
			char *src = type ? strtok_r(NULL, " ", &save) : NULL;
			char *super = src ? strtok_r(NULL, " ", &save) : NULL;
			if (i == 6 && type && super && !strchr(f[3], '\\') && !strchr(f[4], '\\')) {
				int hit = ctrl ? (!strcmp(type, "cgroup") && list_has(super, ctrl))
					       : !strcmp(type, "cgroup2");
				if (hit && strlen(f[3]) < sizeof(m->root) &&
				    strlen(f[4]) < sizeof(m->point)) {
					snprintf(m->root, sizeof(m->root), "%s", f[3]);
					snprintf(m->point, sizeof(m->point), "%s", f[4]);
					snprintf(m->opts, sizeof(m->opts), "%s", super);
					m->v2 = !ctrl;
					return 0;
				}
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

/* The folder of group path `group` in mount m. */
static int group_dir(const struct cg_mount *m, const char *group, char *out)
{
	const char *rel = group;
	size_t rl = strlen(m->root);
	if (strcmp(m->root, "/")) {
		if (strncmp(group, m->root, rl) || (group[rl] && group[rl] != '/'))
			return -ENOENT; /* our group is outside what is mounted */
		rel = group + rl;
	}
	while (*rel == '/')
		rel++;
	int n = *rel ? snprintf(out, PATH_MAX, "%s/%s", m->point, rel)
		     : snprintf(out, PATH_MAX, "%s", m->point);
	return n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

static int mkdir_ok(const char *p)
{
	return mkdir(p, 0755) == 0 || errno == EEXIST ? 0 : -errno;
}

/* v2: make <own>/pandastack with memory, pids, cpu (and io) delegated. */
static int open_v2(struct vmcg_host *h, const struct cg_mount *m, const char *cgfile)
{
	char group[PATH_MAX], own[PATH_MAX], par[PATH_MAX];
	int r = own_group(cgfile, NULL, group, sizeof(group));
	if (r < 0 || (r = group_dir(m, group, own)) < 0)
		return r;
	char *ctl = NULL;
	size_t len = 0;
	char p[PATH_MAX];
	if ((r = path_in(p, own, "cgroup.controllers")) < 0 ||
	    (r = util_read_file(p, CGROUP_FILE_MAX, &ctl, &len)) < 0)
		return r;
	int has_mem = words_have(ctl, "memory"), has_pids = words_have(ctl, "pids");
	int has_cpu = words_have(ctl, "cpu"), has_io = words_have(ctl, "io");
	free(ctl);
	if (!has_mem || !has_pids)
		return -ENOTSUP;
	if (strcmp(group, "/")) {
		/* No internal processes: leave our own group for a leaf. */
		char leaf[PATH_MAX];
		if ((r = path_in(leaf, own, DAEMON_LEAF)) < 0 || (r = mkdir_ok(leaf)) < 0 ||
		    (r = write_in(leaf, "cgroup.procs", "0")) < 0)
			return r;
	}
	char want[64];
	snprintf(want, sizeof(want), "+memory +pids%s%s", has_cpu ? " +cpu" : "",
		 has_io ? " +io" : "");
	if ((r = write_in(own, "cgroup.subtree_control", want)) < 0)
		return r;
	if ((r = path_in(par, own, PARENT_NAME)) < 0 || (r = mkdir_ok(par)) < 0)
		return r;
	if ((r = write_in(par, "cgroup.subtree_control", want)) < 0)
		return r;
	h->version = VMCG_V2;
	h->ndirs = 1;
	snprintf(h->parent[0], PATH_MAX, "%s", par);
	h->ctrl[0][0] = '\0';
	h->can.memory = 1;
	h->can.pids = 1;
	h->can.swap = exists_in(par, "memory.swap.max");
	h->can.cpu_quota = has_cpu;
	h->can.cpu_weight = has_cpu;
	h->can.io_weight = has_io;
	return 0;
}

/* v1: <own group in each hierarchy>/pandastack for memory, pids, cpu, blkio. */
static int open_v1(struct vmcg_host *h, const char *mountinfo, const char *cgfile)
{
	int seen_points = 0;
	char points[VMCG_MAX_DIRS][PATH_MAX];
	for (size_t i = 0; i < sizeof(v1_ctrls) / sizeof(v1_ctrls[0]); i++) {
		struct cg_mount m;
		char group[PATH_MAX], own[PATH_MAX], par[PATH_MAX];
		if (find_mount(mountinfo, v1_ctrls[i].name, &m) < 0 ||
		    own_group(cgfile, v1_ctrls[i].name, group, sizeof(group)) < 0 ||
		    group_dir(&m, group, own) < 0 || path_in(par, own, PARENT_NAME) < 0)
			continue;
		int dup = 0;
		for (int k = 0; k < seen_points; k++)
			dup |= !strcmp(points[k], m.point);
		if (dup)
			continue;
		int r = mkdir_ok(par);
		if (r < 0)
			return r;
		snprintf(points[seen_points++], PATH_MAX, "%s", m.point);
		int n = h->ndirs++;
		snprintf(h->parent[n], PATH_MAX, "%s", par);
		snprintf(h->ctrl[n], sizeof(h->ctrl[n]), "%s", v1_ctrls[i].name);
		/* A mount may carry several of ours (cpu,cpuacct is common;
		 * memory+pids in one is possible): record each. */
		for (size_t j = 0; j < sizeof(v1_ctrls) / sizeof(v1_ctrls[0]); j++) {
			if (!list_has(m.opts, v1_ctrls[j].name))
				continue;
			switch (v1_ctrls[j].bit) {
			case C_MEMORY:
				h->can.memory = exists_in(par, "memory.limit_in_bytes");
				h->can.swap = exists_in(par, "memory.memsw.limit_in_bytes");
				break;
			case C_PIDS:
				h->can.pids = exists_in(par, "pids.max");
				break;
			case C_CPU:
				h->can.cpu_quota = exists_in(par, "cpu.cfs_quota_us");
				h->can.cpu_weight = exists_in(par, "cpu.shares");
				break;
			case C_BLKIO:
				h->can.io_weight = exists_in(par, "blkio.weight") ||
						   exists_in(par, "blkio.bfq.weight");
				break;
			}
		}
	}
	if (h->ndirs == 0)
		return -ENOENT;
	h->version = VMCG_V1;
	return 0;
}

/* The parents' CPU weight (best effort: the CPU controller may be absent). */
static void parent_weight(const struct vmcg_host *h, unsigned w)
{
	if (!w || !h->can.cpu_weight)
		return;
	w = w > 10000 ? 10000 : w;
	char v[32];
	for (int i = 0; i < h->ndirs; i++) {
		if (h->version == VMCG_V2) {
			snprintf(v, sizeof(v), "%u", w);
			write_in(h->parent[i], "cpu.weight", v);
		} else if (!strcmp(h->ctrl[i], "cpu")) {
			snprintf(v, sizeof(v), "%u", w * 1024u / 100u);
			write_in(h->parent[i], "cpu.shares", v);
		}
	}
}

int vmcg_host_open(struct vmcg_host *h, unsigned parent_cpu_weight)
{
	memset(h, 0, sizeof(*h));
	char *mi = NULL, *cg = NULL;
	size_t len;
	int r = util_read_file("/proc/self/mountinfo", MOUNTINFO_MAX, &mi, &len);
	if (r == 0)
		r = util_read_file("/proc/self/cgroup", CGROUP_FILE_MAX, &cg, &len);
	if (r < 0) {
		free(mi);
		return r;
	}
	struct cg_mount m2;
	r = -ENOENT;
	if (find_mount(mi, NULL, &m2) == 0)
		r = open_v2(h, &m2, cg);
	if (r < 0) {
		memset(h, 0, sizeof(*h));
		r = open_v1(h, mi, cg);
	}
	free(mi);
	free(cg);
	if (r == -ENOENT || r == -ENOTSUP) {
		memset(h, 0, sizeof(*h));
		return 0; /* no usable hierarchy: nothing can be limited */
	}
	if (r == 0)
		parent_weight(h, parent_cpu_weight);
	return r;
}

static int name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > 64 || name[0] == '.')
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return 0;
	}
	return 1;
}

/* Write the limits that belong to hierarchy i of h into dir. */
static int apply_limits(const struct vmcg_host *h, int i, const char *dir,
			const struct vmcg_spec *s)
{
	char v[64];
	int r = 0;
	int v2 = h->version == VMCG_V2;
	const char *c = h->ctrl[i];
	if (s->memory_bytes && h->can.memory && (v2 || !strcmp(c, "memory"))) {
		snprintf(v, sizeof(v), "%" PRIu64, s->memory_bytes);
		if ((r = write_in(dir, v2 ? "memory.max" : "memory.limit_in_bytes", v)) < 0)
			return r;
		if (v2)
			write_in(dir, "memory.swap.max", "0"); /* absent without swap accounting */
		else if (h->can.swap && (r = write_in(dir, "memory.memsw.limit_in_bytes", v)) < 0)
			return r;
	}
	if (s->pids_max && h->can.pids && (v2 || !strcmp(c, "pids"))) {
		snprintf(v, sizeof(v), "%u", s->pids_max);
		if ((r = write_in(dir, "pids.max", v)) < 0)
			return r;
	}
	if (v2 || !strcmp(c, "cpu")) {
		if (s->cpu_quota_pct && h->can.cpu_quota) {
			uint64_t quota = (uint64_t)s->cpu_quota_pct * CPU_PERIOD_US / 100u;
			if (v2) {
				snprintf(v, sizeof(v), "%" PRIu64 " %u", quota, CPU_PERIOD_US);
				r = write_in(dir, "cpu.max", v);
			} else {
				snprintf(v, sizeof(v), "%u", CPU_PERIOD_US);
				if ((r = write_in(dir, "cpu.cfs_period_us", v)) == 0) {
					snprintf(v, sizeof(v), "%" PRIu64, quota);
					r = write_in(dir, "cpu.cfs_quota_us", v);
				}
			}
			if (r < 0)
				return r;
		}
		if (s->cpu_weight && h->can.cpu_weight) {
			unsigned w = s->cpu_weight > 10000 ? 10000 : s->cpu_weight;
			/* v1 shares: 1024 is a default task's weight, v2's 100. */
			snprintf(v, sizeof(v), "%u", v2 ? w : (w * 1024u / 100u < 2 ? 2 : w * 1024u / 100u));
			if ((r = write_in(dir, v2 ? "cpu.weight" : "cpu.shares", v)) < 0)
				return r;
		}
	}
	if (s->io_weight && h->can.io_weight && (v2 || !strcmp(c, "blkio"))) {
		unsigned w = s->io_weight > 10000 ? 10000 : s->io_weight;
		/* Best effort: the weight needs a scheduler that honours it. */
		if (v2) {
			snprintf(v, sizeof(v), "default %u", w);
			write_in(dir, "io.weight", v);
		} else {
			unsigned w1 = w * 5u < 10 ? 10 : (w * 5u > 1000 ? 1000 : w * 5u);
			snprintf(v, sizeof(v), "%u", w1);
			if (write_in(dir, "blkio.weight", v) < 0)
				write_in(dir, "blkio.bfq.weight", v);
		}
	}
	return 0;
}

void vmcg_close_fds(struct vmcg *g)
{
	for (int i = 0; i < g->ndirs; i++)
		if (g->procs_fd[i] >= 0) {
			close(g->procs_fd[i]);
			g->procs_fd[i] = -1;
		}
}

int vmcg_remove(const struct vmcg *g)
{
	int first = 0;
	for (int i = 0; i < g->ndirs; i++)
		if (g->dir[i][0] && rmdir(g->dir[i]) < 0 && errno != ENOENT && !first)
			first = -errno;
	return first;
}

int vmcg_create(const struct vmcg_host *h, const char *name, const struct vmcg_spec *spec,
		struct vmcg *g)
{
	memset(g, 0, sizeof(*g));
	for (int i = 0; i < VMCG_MAX_DIRS; i++)
		g->procs_fd[i] = -1;
	if (!name_ok(name))
		return -EINVAL;
	int r = 0;
	for (int i = 0; i < h->ndirs; i++) {
		char *dir = g->dir[i];
		if (snprintf(dir, PATH_MAX, "%s/%s", h->parent[i], name) >= PATH_MAX) {
			r = -ENAMETOOLONG;
			break;
		}
		if (mkdir(dir, 0755) < 0) {
			/* A group left by a QEMU that is gone is empty: reuse
			 * is wrong (old limits), so remove and make anew. */
			if (errno != EEXIST || rmdir(dir) < 0 || mkdir(dir, 0755) < 0) {
				r = errno == EBUSY ? -EBUSY : -errno;
				dir[0] = '\0';
				break;
			}
		}
		g->ndirs = i + 1;
		char p[PATH_MAX];
		if ((r = apply_limits(h, i, dir, spec)) < 0 || (r = path_in(p, dir, "cgroup.procs")) < 0)
			break;
		g->procs_fd[i] = open(p, O_WRONLY | O_CLOEXEC);
		if (g->procs_fd[i] < 0) {
			r = -errno;
			break;
		}
	}
	if (r < 0) {
		log_kv(LOG_WARN, "cgroup.create_failed", "name=%s err=%s", name, strerror(-r));
		vmcg_close_fds(g);
		vmcg_remove(g);
		memset(g, 0, sizeof(*g));
		for (int i = 0; i < VMCG_MAX_DIRS; i++)
			g->procs_fd[i] = -1;
	}
	return r;
}

int vmcg_join_self(const struct vmcg *g)
{
	for (int i = 0; i < g->ndirs; i++) {
		if (g->procs_fd[i] < 0)
			continue;
		if (write(g->procs_fd[i], "0", 1) != 1)
			return -errno;
	}
	return 0;
}

int64_t vmcg_memory_peak(const struct vmcg *g)
{
	for (int i = 0; i < g->ndirs; i++) {
		const char *files[] = {"memory.peak", "memory.max_usage_in_bytes"};
		for (size_t k = 0; k < 2; k++) {
			char p[PATH_MAX], *data = NULL;
			size_t len;
			if (path_in(p, g->dir[i], files[k]) < 0 ||
			    util_read_file(p, 64, &data, &len) < 0)
				continue;
			int64_t v = strtoll(data, NULL, 10);
			free(data);
			return v;
		}
	}
	return -ENOENT;
}

int vmcg_io_weight_honoured(const char *path)
{
	struct stat st;
	if (!path || stat(path, &st) < 0)
		return 0;
	char sys[128], *data = NULL;
	size_t len = 0;
	unsigned maj = major(st.st_dev), min = minor(st.st_dev);
	/* A partition's queue is its disk's: try the device, then its parent. */
	for (int i = 0; i < 2; i++) {
		snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/%squeue/scheduler", maj, min,
			 i ? "../" : "");
		if (util_read_file(sys, 4096, &data, &len) == 0) {
			int bfq = strstr(data, "[bfq]") != NULL;
			free(data);
			return bfq;
		}
	}
	return 0;
}

const char *vmcg_cpu_dir(const struct vmcg_host *h, const struct vmcg *g)
{
	for (int i = 0; i < g->ndirs && i < h->ndirs; i++)
		if (h->version == VMCG_V2 || !strcmp(h->ctrl[i], "cpu"))
			return g->dir[i];
	return NULL;
}

/* The weight file of a CPU folder: v2 cpu.weight, else v1 cpu.shares. */
static const char *weight_file(const char *cpu_dir)
{
	char p[PATH_MAX];
	struct stat st;
	return path_in(p, cpu_dir, "cpu.weight") == 0 && stat(p, &st) == 0 ? "cpu.weight"
									 : "cpu.shares";
}

int vmcg_cpu_weight_get(const char *cpu_dir, unsigned *out)
{
	char p[PATH_MAX], *data = NULL;
	size_t len;
	int r = path_in(p, cpu_dir, weight_file(cpu_dir));
	if (r < 0 || (r = util_read_file(p, 64, &data, &len)) < 0)
		return r;
	char *end;
	unsigned long v = strtoul(data, &end, 10);
	free(data);
	if (end == data || v == 0 || v > 262144)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

int vmcg_cpu_weight_set(const char *cpu_dir, unsigned raw)
{
	char v[16];
	snprintf(v, sizeof(v), "%u", raw);
	return write_in(cpu_dir, weight_file(cpu_dir), v);
}
