/*
 * jail.c - uids, the mount plan and the privilege drop of a sandbox QEMU
 * (see jail.h).  Kernel interfaces: mount_namespaces(7), pivot_root(2),
 * capabilities(7), prctl(2), setrlimit(2), flock(2).
 */
#include "engine/qemu/jail.h"

#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

#include "common/log.h"
#include "common/util.h"
#include "engine/paths.h"
#include "engine/qemu/qemu_args.h"

#define JAIL_MAX_OPS 64
#define QEMU_COPY_MAX (512u * 1024u * 1024u)

/* Binds are nosuid; RO and RW ones also noexec and (but for device nodes)
 * nodev; RO_EXEC ones (/usr, the QEMU binary) may be executed. */
enum op_kind { OP_MKDIR, OP_TOUCH, OP_SYMLINK, OP_BIND_RO, OP_BIND_RO_EXEC, OP_BIND_RW, OP_PROC };

/* One step of building the root.  Paths are absolute in the host's view
 * before pivot_root (dst under the jail's root). */
struct jail_op {
	enum op_kind kind;
	char src[PATH_MAX];    /* bind source, or symlink target */
	char dst[PATH_MAX];
};

struct jail_host {
	int enabled;
	char reason[160];
	uid_t uid_first;
	unsigned uid_count;
	char lock_dir[PATH_MAX];
	char qemu_bin[PATH_MAX];       /* the host's binary (its path in the jail too) */
	char qemu_copy[PATH_MAX];      /* the execute-only copy bound over it */
	int io_honoured;               /* the overlays' device honours I/O weights */
	unsigned mem_overhead_mib, pids_max, cpu_weight, nofile;
	struct vmcg_host cg;
	unsigned next;                 /* next uid offset to try */
};

struct jail {
	uid_t uid;
	int lock_fd;
	int netns_fd;
	struct vmcg cg;
	uint64_t fsize_max;
	unsigned nofile;
	char root[PATH_MAX];           /* <run>/root: the tmpfs is mounted here */
	char old[PATH_MAX];            /* <root>/.old, for pivot_root */
	int nops;
	struct jail_op ops[JAIL_MAX_OPS];
};

/* --- the host ------------------------------------------------------------ */

/* Copy src to dst (mode 0711, root-owned: executable, not readable by the
 * sandbox uids, which keeps QEMU non-dumpable across its exec). */
static int copy_exec_only(const char *src, const char *dst)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", dst) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	struct stat st;
	if (fstat(in, &st) < 0 || st.st_size <= 0 || (uint64_t)st.st_size > QEMU_COPY_MAX) {
		close(in);
		return -EINVAL;
	}
	int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
	if (out < 0) {
		int e = -errno;
		close(in);
		return e;
	}
	int r = util_copy_range(in, out, (uint64_t)st.st_size);
	close(in);
	if (r == 0 && (fchown(out, 0, 0) < 0 || fchmod(out, 0711) < 0 || fsync(out) < 0))
		r = -errno;
	if (close(out) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, dst) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

/* The copy's name says which binary it was made from (size, mtime, inode),
 * so a QEMU upgrade makes a new copy. */
static int prepare_qemu_copy(struct jail_host *h, const char *work_dir)
{
	struct stat st;
	if (stat(h->qemu_bin, &st) < 0)
		return -errno;
	int r = util_mkdir_p(work_dir, 0700);
	if (r < 0)
		return r;
	if (snprintf(h->qemu_copy, sizeof(h->qemu_copy), "%s/qemu-%llx-%llx-%llx", work_dir,
		     (unsigned long long)st.st_size, (unsigned long long)st.st_mtime,
		     (unsigned long long)st.st_ino) >= (int)sizeof(h->qemu_copy))
		return -ENAMETOOLONG;
	struct stat cs;
	if (stat(h->qemu_copy, &cs) == 0 && cs.st_size == st.st_size && (cs.st_mode & 07777) == 0711 &&
	    cs.st_uid == 0)
		return 0;
	return copy_exec_only(h->qemu_bin, h->qemu_copy);
}

int jail_host_open(const struct jail_config *c, const char *qemu_bin, struct jail_host **out,
		   char *err, size_t errlen)
{
	*out = NULL;
	struct jail_host *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->uid_first = c->uid_first ? c->uid_first : JAIL_DEFAULT_UID_FIRST;
	h->uid_count = c->uid_count ? c->uid_count : JAIL_DEFAULT_UID_COUNT;
	h->mem_overhead_mib = c->mem_overhead_mib ? c->mem_overhead_mib : JAIL_DEFAULT_MEM_OVERHEAD_MIB;
	h->pids_max = c->pids_max ? c->pids_max : JAIL_DEFAULT_PIDS_MAX;
	h->cpu_weight = c->cpu_weight ? c->cpu_weight : JAIL_DEFAULT_CPU_WEIGHT;
	h->nofile = c->nofile ? c->nofile : JAIL_DEFAULT_NOFILE;
	snprintf(h->lock_dir, sizeof(h->lock_dir), "%s", c->lock_dir ? c->lock_dir : JAIL_DEFAULT_LOCK_DIR);
	if ((uint64_t)h->uid_first + h->uid_count > 0xfffffffeu || h->uid_first == 0) {
		snprintf(err, errlen, "the jail's uid range must not include 0 or 4294967295");
		free(h);
		return -EINVAL;
	}
	if (c->disable || geteuid() != 0) {
		snprintf(h->reason, sizeof(h->reason), "%s",
			 c->disable ? "disabled by configuration" : "not running as root");
		snprintf(err, errlen, "QEMU runs unjailed: %s", h->reason);
		*out = h;
		return 0;
	}
	if (!qemu_bin || qemu_bin[0] != '/' || strlen(qemu_bin) >= sizeof(h->qemu_bin)) {
		snprintf(err, errlen, "the QEMU binary must be an absolute path");
		free(h);
		return -EINVAL;
	}
	if (!realpath(qemu_bin, h->qemu_bin)) {
		int e = -errno;
		snprintf(err, errlen, "%s: %s", qemu_bin, strerror(-e));
		free(h);
		return e;
	}
	int r = util_mkdir_p(h->lock_dir, 0700);
	if (r == 0 && c->work_dir)
		r = prepare_qemu_copy(h, c->work_dir);
	else if (r == 0)
		r = -EINVAL;
	if (r < 0) {
		snprintf(err, errlen, "cannot prepare the jail's files: %s", strerror(-r));
		free(h);
		return r;
	}
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned group_weight = 100u * JAIL_DEFAULT_GROUP_TASKS_PER_CPU * (ncpu > 0 ? (unsigned)ncpu : 1u);
	if ((r = vmcg_host_open(&h->cg, group_weight)) < 0) {
		snprintf(err, errlen, "cannot set up control groups: %s", strerror(-r));
		free(h);
		return r;
	}
	/* Start the uid search at a random place: two processes sharing the
	 * range then rarely race for the same lock. */
	unsigned rnd = 0;
	util_random(&rnd, sizeof(rnd));
	h->next = rnd % h->uid_count;
	h->io_honoured = vmcg_io_weight_honoured(c->disk_dir ? c->disk_dir : c->work_dir);
	h->enabled = 1;
	*out = h;
	return 0;
}

void jail_host_free(struct jail_host *h)
{
	free(h);
}

int jail_host_enabled(const struct jail_host *h)
{
	return h && h->enabled;
}

const struct vmcg_host *jail_host_cgroups(const struct jail_host *h)
{
	return &h->cg;
}

json_t *jail_host_describe(const struct jail_host *h)
{
	const struct vmcg_limits *l = &h->cg.can;
	int cg = h->enabled && h->cg.ndirs > 0;
	json_t *lim = json_pack("{s:b, s:b, s:b, s:b, s:b, s:b, s:b}", "memory", cg && l->memory,
				"swap", cg && l->swap, "pids", cg && l->pids, "cpu_quota",
				cg && l->cpu_quota, "cpu_weight", cg && l->cpu_weight, "io_weight",
				cg && l->io_weight && h->io_honoured, "disk", h->enabled);
	if (!lim)
		return NULL;
	char uids[48];
	snprintf(uids, sizeof(uids), "%u-%u", (unsigned)h->uid_first,
		 (unsigned)(h->uid_first + h->uid_count - 1));
	const char *ver = !cg ? "none" : (h->cg.version == VMCG_V2 ? "v2" : "v1");
	json_t *o = json_pack("{s:b, s:s, s:s, s:o}", "jail", h->enabled, "uids", uids, "cgroup",
			      ver, "limits", lim);
	if (o && !h->enabled)
		json_object_set_new(o, "reason", json_string(h->reason));
	return o;
}

static pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;
static struct jail_host *global_host;

int jail_setup(const struct jail_config *c, char *err, size_t errlen)
{
	pthread_mutex_lock(&global_lock);
	int r = -EALREADY;
	if (!global_host) {
		struct jail_host *h = NULL;
		r = jail_host_open(c, qemu_binary(), &h, err, errlen);
		if (r == 0)
			global_host = h;
	}
	pthread_mutex_unlock(&global_lock);
	return r;
}

const struct jail_host *jail_host_get(void)
{
	pthread_mutex_lock(&global_lock);
	if (!global_host) {
		char work[PATH_MAX], err[256] = "";
		snprintf(work, sizeof(work), "%s/jail", engine_cache_dir(NULL));
		struct jail_config c = {.work_dir = work};
		struct jail_host *h = NULL;
		int r = jail_host_open(&c, qemu_binary(), &h, err, sizeof(err));
		if (r < 0)
			log_kv(LOG_ERROR, "jail.setup_failed", "err=%s", err);
		else if (err[0])
			log_kv(LOG_WARN, "jail.off", "why=%s", err);
		global_host = h;
	}
	struct jail_host *h = global_host;
	pthread_mutex_unlock(&global_lock);
	return h;
}

/* --- one jail: plan ------------------------------------------------------ */

static int add_op(struct jail *j, enum op_kind k, const char *src, const char *dst_in_jail)
{
	if (j->nops >= JAIL_MAX_OPS)
		return -E2BIG;
	struct jail_op *o = &j->ops[j->nops];
	o->kind = k;
	if (snprintf(o->src, sizeof(o->src), "%s", src ? src : "") >= (int)sizeof(o->src) ||
	    snprintf(o->dst, sizeof(o->dst), "%s%s", j->root, dst_in_jail) >= (int)sizeof(o->dst))
		return -ENAMETOOLONG;
	j->nops++;
	return 0;
}

/* The parent folders of path (absolute), outermost first, as OP_MKDIR. */
static int add_parents(struct jail *j, const char *path)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		int seen = 0;
		for (int i = 0; i < j->nops; i++)
			if (j->ops[i].kind == OP_MKDIR &&
			    !strcmp(j->ops[i].dst + strlen(j->root), buf))
				seen = 1;
		int r = seen ? 0 : add_op(j, OP_MKDIR, NULL, buf);
		*p = '/';
		if (r < 0)
			return r;
	}
	return 0;
}

/* Mirror a top-level entry of the host's root (/lib, /bin...): the same
 * symlink when it is one (merged /usr), else a read-only bind. */
static int add_top(struct jail *j, const char *name)
{
	char host[64], target[PATH_MAX];
	snprintf(host, sizeof(host), "/%s", name);
	struct stat st;
	if (lstat(host, &st) < 0)
		return 0;
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlink(host, target, sizeof(target) - 1);
		if (n <= 0)
			return 0;
		target[n] = '\0';
		return add_op(j, OP_SYMLINK, target, host);
	}
	if (!S_ISDIR(st.st_mode))
		return 0;
	int r = add_op(j, OP_MKDIR, NULL, host);
	return r < 0 ? r : add_op(j, OP_BIND_RO_EXEC, host, host);
}

/* A file of the host bound at dst in the jail (kind: one of the binds). */
static int add_file(struct jail *j, const char *src, const char *dst, enum op_kind kind)
{
	int r = add_parents(j, dst);
	if (r == 0)
		r = add_op(j, OP_TOUCH, NULL, dst);
	if (r == 0)
		r = add_op(j, kind, src, dst);
	return r;
}

static int plan(struct jail *j, const struct jail_host *h, const struct jail_vm *vm)
{
	int r;
	static const char *const tops[] = {"lib", "lib64", "lib32", "libx32", "bin", "sbin"};
	if ((r = add_op(j, OP_MKDIR, NULL, "/usr")) < 0 ||
	    (r = add_op(j, OP_BIND_RO_EXEC, "/usr", "/usr")) < 0)
		return r;
	for (size_t i = 0; i < sizeof(tops) / sizeof(tops[0]); i++)
		if ((r = add_top(j, tops[i])) < 0)
			return r;
	/* The execute-only copy over the binary (after /usr is in place). */
	if ((r = add_file(j, h->qemu_copy, h->qemu_bin, OP_BIND_RO_EXEC)) < 0)
		return r;
	if (access("/etc/ld.so.cache", R_OK) == 0 &&
	    (r = add_file(j, "/etc/ld.so.cache", "/etc/ld.so.cache", OP_BIND_RO)) < 0)
		return r;
	static const char *const devs[] = {"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"};
	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++)
		if ((r = add_file(j, devs[i], devs[i], OP_BIND_RW)) < 0)
			return r;
	if (vm->kvm && (r = add_file(j, "/dev/kvm", "/dev/kvm", OP_BIND_RW)) < 0)
		return r;
	if ((r = add_op(j, OP_MKDIR, NULL, "/proc")) < 0 || (r = add_op(j, OP_PROC, NULL, "/proc")) < 0)
		return r;
	for (int i = 0; i < vm->ndisk_layers; i++)
		if ((r = add_file(j, vm->disk_layers[i], vm->disk_layers[i], OP_BIND_RO)) < 0)
			return r;
	if ((r = add_parents(j, vm->jail_dir)) < 0 || (r = add_op(j, OP_MKDIR, NULL, vm->jail_dir)) < 0)
		return r;
	return add_op(j, OP_BIND_RW, vm->jail_dir, vm->jail_dir);
}

/* Take the first free uid from h->next on: an exclusive lock on its file,
 * and no live control group of its name. */
static int take_uid(struct jail_host *h, struct jail *j, const struct jail_vm *vm)
{
	for (unsigned n = 0; n < h->uid_count; n++) {
		unsigned off = __atomic_fetch_add(&h->next, 1, __ATOMIC_RELAXED) % h->uid_count;
		uid_t uid = h->uid_first + off;
		char path[PATH_MAX];
		if (snprintf(path, sizeof(path), "%s/%u.lock", h->lock_dir, (unsigned)uid) >=
		    (int)sizeof(path))
			return -ENAMETOOLONG;
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return -errno;
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			close(fd);
			continue;
		}
		char name[32];
		snprintf(name, sizeof(name), "vm-%u", (unsigned)uid);
		struct vmcg_spec spec = {
			.memory_bytes = ((uint64_t)vm->memory_mib + h->mem_overhead_mib) << 20,
			.pids_max = h->pids_max,
			.cpu_quota_pct = 100u * (vm->vcpus ? vm->vcpus : 1) + JAIL_QEMU_THREADS_PCT,
			.cpu_weight = h->cpu_weight,
			.io_weight = h->cpu_weight,
		};
		int r = h->cg.ndirs ? vmcg_create(&h->cg, name, &spec, &j->cg) : 0;
		if (r == -EBUSY) {
			/* A QEMU of this uid lives on without its lock (its
			 * monitor was killed): never share the uid. */
			close(fd);
			continue;
		}
		if (r < 0) {
			close(fd);
			return r;
		}
		j->uid = uid;
		j->lock_fd = fd;
		return 0;
	}
	return -EAGAIN;
}

/* Give path (and, for a folder, the files directly in it) to uid. */
static int give(const char *path, uid_t uid)
{
	if (chown(path, uid, uid) < 0 || chmod(path, 0700) < 0)
		return -errno;
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	struct dirent *e;
	int r = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fchownat(dirfd(d), e->d_name, uid, uid, AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
			break;
		}
	}
	closedir(d);
	return r;
}

int jail_prepare(const struct jail_host *hc, const struct jail_vm *vm, struct jail **out)
{
	*out = NULL;
	struct jail_host *h = (struct jail_host *)hc; /* only h->next changes (atomically) */
	if (!jail_host_enabled(h) || !vm->jail_dir || vm->jail_dir[0] != '/' || vm->ndisk_layers < 1)
		return -EINVAL;
	for (int i = 0; i < vm->ndisk_layers; i++)
		if (!vm->disk_layers[i] || vm->disk_layers[i][0] != '/')
			return -EINVAL;
	struct jail *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->lock_fd = -1;
	j->netns_fd = vm->netns_fd;
	j->nofile = h->nofile;
	j->fsize_max = vm->disk_cap_bytes;
	for (int i = 0; i < VMCG_MAX_DIRS; i++)
		j->cg.procs_fd[i] = -1;
	/* The root's mount point sits beside the jail folder: <run>/root. */
	char run[PATH_MAX];
	snprintf(run, sizeof(run), "%s", vm->jail_dir);
	char *slash = strrchr(run, '/');
	if (!slash || slash == run) {
		free(j);
		return -EINVAL;
	}
	*slash = '\0';
	int r = 0;
	if (snprintf(j->root, sizeof(j->root), "%s/root", run) >= (int)sizeof(j->root) ||
	    snprintf(j->old, sizeof(j->old), "%s/.old", j->root) >= (int)sizeof(j->old))
		r = -ENAMETOOLONG;
	if (r == 0 && mkdir(j->root, 0755) < 0 && errno != EEXIST)
		r = -errno;
	if (r == 0)
		r = plan(j, h, vm);
	if (r == 0)
		r = take_uid(h, j, vm);
	if (r == 0 && (r = give(vm->jail_dir, j->uid)) < 0) {
		vmcg_close_fds(&j->cg);
		vmcg_remove(&j->cg);
		close(j->lock_fd);
	}
	if (r < 0) {
		log_kv(LOG_WARN, "jail.prepare_failed", "vm=%s err=%s", vm->name ? vm->name : "?",
		       strerror(-r));
		free(j);
		return r;
	}
	*out = j;
	return 0;
}

uid_t jail_uid(const struct jail *j)
{
	return j->uid;
}

const struct vmcg *jail_cgroup(const struct jail *j)
{
	return &j->cg;
}

int jail_lock_fd(const struct jail *j)
{
	return j->lock_fd;
}

int jail_netns_fd(const struct jail *j)
{
	return j->netns_fd;
}

void jail_release(struct jail *j, int abandon)
{
	if (!j)
		return;
	vmcg_close_fds(&j->cg);
	if (abandon)
		vmcg_remove(&j->cg);
	if (j->lock_fd >= 0)
		close(j->lock_fd);
	free(j);
}

/* --- one jail: in the child ---------------------------------------------- */

static int do_op(const struct jail_op *o)
{
	switch (o->kind) {
	case OP_MKDIR:
		return mkdir(o->dst, 0755) == 0 || errno == EEXIST ? 0 : -errno;
	case OP_TOUCH: {
		/* O_RDONLY: an existing file on a read-only mount is fine. */
		int fd = open(o->dst, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return -errno;
		close(fd);
		return 0;
	}
	case OP_SYMLINK:
		return symlink(o->src, o->dst) == 0 ? 0 : -errno;
	case OP_BIND_RO:
	case OP_BIND_RO_EXEC:
	case OP_BIND_RW: {
		if (mount(o->src, o->dst, NULL, MS_BIND, NULL) < 0)
			return -errno;
		unsigned long fl = MS_REMOUNT | MS_BIND | MS_NOSUID;
		if (o->kind != OP_BIND_RW)
			fl |= MS_RDONLY;
		if (o->kind != OP_BIND_RO_EXEC)
			fl |= MS_NOEXEC;
		/* Device nodes keep their device; everything else gets nodev. */
		if (strncmp(o->src, "/dev/", 5))
			fl |= MS_NODEV;
		return mount(NULL, o->dst, NULL, fl, NULL) == 0 ? 0 : -errno;
	}
	case OP_PROC:
		return mount("proc", o->dst, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0 ? 0
													   : -errno;
	}
	return -EINVAL;
}

static int set_limit(int res, uint64_t v)
{
	struct rlimit rl = {.rlim_cur = v, .rlim_max = v};
	return setrlimit(res, &rl) == 0 ? 0 : -errno;
}

int jail_enter(const struct jail *j)
{
	int r;
	if ((r = vmcg_join_self(&j->cg)) < 0)
		return r;
	if (j->netns_fd >= 0 ? setns(j->netns_fd, CLONE_NEWNET) < 0 : unshare(CLONE_NEWNET) < 0)
		return -errno;
	if (unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS) < 0)
		return -errno;
	/* Nothing of ours propagates back to the host. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	if (mount("tmpfs", j->root, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "size=1m,nr_inodes=256,mode=0755") < 0)
		return -errno;
	for (int i = 0; i < j->nops; i++)
		if ((r = do_op(&j->ops[i])) < 0)
			return r;
	if (mkdir(j->old, 0700) < 0)
		return -errno;
	if (syscall(SYS_pivot_root, j->root, j->old) < 0)
		return -errno;
	if (chdir("/") < 0)
		return -errno;
	if (umount2("/.old", MNT_DETACH) < 0 || rmdir("/.old") < 0)
		return -errno;
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return -errno;
	static const char host[] = "sandbox";
	if (sethostname(host, sizeof(host) - 1) < 0)
		return -errno;
	if ((r = set_limit(RLIMIT_CORE, 0)) < 0 || (r = set_limit(RLIMIT_NOFILE, j->nofile)) < 0)
		return r;
	if (j->fsize_max && (r = set_limit(RLIMIT_FSIZE, j->fsize_max)) < 0)
		return r;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	if (sigaction(SIGXFSZ, &sa, NULL) < 0)
		return -errno;
	for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	if (setgroups(0, NULL) < 0 || setresgid(j->uid, j->uid, j->uid) < 0 ||
	    setresuid(j->uid, j->uid, j->uid) < 0)
		return -errno;
	/* Changing uid cleared the permitted and effective sets; check. */
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[2];
	if (syscall(SYS_capget, &hdr, data) < 0)
		return -errno;
	if (data[0].effective || data[0].permitted || data[1].effective || data[1].permitted)
		return -EPERM;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 ||
	    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return -errno;
	return 0;
}
