/*
 * test_jail.c - every sandbox QEMU runs in its own jail (engine/qemu/jail.h),
 * read from the host's /proc and tried from inside as an escaped QEMU
 * would be:
 *   - uid and gid not 0 and different between two live sandboxes; no
 *     capabilities; no_new_privs; seccomp filtering; an empty environment;
 *     not dumpable;
 *   - its root is the jail: the other sandbox's files, the host's /etc,
 *     /root, /tmp and /var are not there;
 *   - its own control group with a memory and a pids limit;
 *   - a helper in the same namespaces with the same uid and no
 *     capabilities cannot write the template's disk layer, /usr, or the
 *     jail's root, and can write its own folder (the positive control);
 *   - a write through every descriptor QEMU holds on template data fails
 *     (the sealed memory memfd, the read-only disk layer), even as root.
 * Needs root and a baked template (make templates); see engine_test.h.
 */
#include "engine_test.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "engine/qemu/jail.h"

#ifndef F_GET_SEALS
#define F_GET_SEALS 1034
#endif
#ifndef F_SEAL_WRITE
#define F_SEAL_WRITE 0x0008
#endif

#define NEED_JAIL()                                                                \
	do {                                                                       \
		ET_NEED_TEMPLATE();                                                \
		if (!jail_host_enabled(jail_host_get()))                           \
			skip();                                                    \
	} while (0)

/* The value of "Key:" in /proc/<pid>/status (first field), malloc'd. */
static char *status_field(pid_t pid, const char *key)
{
	char path[64], *data = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	assert_int_equal(util_read_file(path, 1 << 16, &data, &len), 0);
	char *p = strstr(data, key);
	assert_non_null(p);
	p += strlen(key);
	while (*p == ' ' || *p == '\t')
		p++;
	size_t n = strcspn(p, "\n");
	char *v = strndup(p, n);
	free(data);
	return v;
}

static int exists_in_root(pid_t pid, const char *path)
{
	char p[PATH_MAX + 64];
	snprintf(p, sizeof(p), "/proc/%d/root%s", (int)pid, path);
	struct stat st;
	return lstat(p, &st) == 0;
}

static void test_process_credentials(void **state)
{
	(void)state;
	NEED_JAIL();
	struct vm *a = et_restore(), *b = et_restore();
	struct vm *vs[2] = {a, b};
	unsigned uids[2];
	for (int i = 0; i < 2; i++) {
		pid_t pid = vm_pid(vs[i]);
		char *uid = status_field(pid, "Uid:"), *gid = status_field(pid, "Gid:");
		unsigned u[4], g[4];
		assert_int_equal(sscanf(uid, "%u %u %u %u", &u[0], &u[1], &u[2], &u[3]), 4);
		assert_int_equal(sscanf(gid, "%u %u %u %u", &g[0], &g[1], &g[2], &g[3]), 4);
		for (int k = 0; k < 4; k++) {
			assert_int_not_equal(u[k], 0);
			assert_int_equal(u[k], u[0]);
			assert_int_equal(g[k], u[0]);
		}
		assert_int_equal(u[0], vm_uid(vs[i]));
		uids[i] = u[0];
		char *groups = status_field(pid, "Groups:");
		assert_string_equal(groups, "");
		char *capeff = status_field(pid, "CapEff:"), *capprm = status_field(pid, "CapPrm:");
		char *capbnd = status_field(pid, "CapBnd:");
		assert_string_equal(capeff, "0000000000000000");
		assert_string_equal(capprm, "0000000000000000");
		assert_string_equal(capbnd, "0000000000000000");
		char *nnp = status_field(pid, "NoNewPrivs:"), *sec = status_field(pid, "Seccomp:");
		assert_string_equal(nnp, "1");
		assert_string_equal(sec, "2");
		/* Not dumpable: its /proc files belong to root, not to its uid. */
		char p[64];
		struct stat st;
		snprintf(p, sizeof(p), "/proc/%d/mem", (int)pid);
		assert_int_equal(stat(p, &st), 0);
		assert_int_equal(st.st_uid, 0);
		/* An empty environment. */
		char *env = NULL;
		size_t len = 1;
		snprintf(p, sizeof(p), "/proc/%d/environ", (int)pid);
		assert_int_equal(util_read_file(p, 1 << 16, &env, &len), 0);
		assert_int_equal(len, 0);
		free(env);
		free(uid);
		free(gid);
		free(groups);
		free(capeff);
		free(capprm);
		free(capbnd);
		free(nnp);
		free(sec);
	}
	assert_int_not_equal(uids[0], uids[1]);
	/* Positive control for the root checks: QEMU sees its own folder. */
	char jail_a[PATH_MAX], jail_b[PATH_MAX];
	snprintf(jail_a, sizeof(jail_a), "%s/jail/qmp.sock", vm_run_dir(a));
	snprintf(jail_b, sizeof(jail_b), "%s/jail/qmp.sock", vm_run_dir(b));
	assert_true(exists_in_root(vm_pid(a), jail_a));
	assert_true(exists_in_root(vm_pid(b), jail_b));
	/* ...and not the other's, nor the host's things. */
	assert_false(exists_in_root(vm_pid(a), jail_b));
	assert_false(exists_in_root(vm_pid(b), jail_a));
	char vmjson[PATH_MAX];
	snprintf(vmjson, sizeof(vmjson), "%s/vm.json", vm_run_dir(a));
	assert_false(exists_in_root(vm_pid(a), vmjson));
	/* The folders above the jail's own files exist (their paths are
	 * mirrored), nothing else of the host's does: a file beside the run
	 * directories (positive control: it exists on the host). */
	char marker[PATH_MAX];
	snprintf(marker, sizeof(marker), "%s/host-marker", et_base);
	assert_int_equal(util_write_file(marker, "x", 1, 0600), 0);
	assert_int_equal(access(marker, F_OK), 0);
	assert_false(exists_in_root(vm_pid(a), marker));
	static const char *const absent[] = {"/etc/passwd", "/etc/shadow", "/root", "/home",
					     "/boot", "/sys/kernel", "/var/log", "/run/pandastack"};
	for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++)
		if (exists_in_root(vm_pid(a), absent[i]))
			fail_msg("%s is visible in the jail", absent[i]);
	assert_true(exists_in_root(vm_pid(a), "/usr/bin"));
	et_stop(a);
	et_stop(b);
}

static void test_own_cgroup_with_limits(void **state)
{
	(void)state;
	NEED_JAIL();
	const struct vmcg_host *h = jail_host_cgroups(jail_host_get());
	if (h->ndirs == 0)
		skip();
	struct vm *a = et_restore();
	char want[64], path[64], *data = NULL;
	size_t len = 0;
	snprintf(want, sizeof(want), "/pandastack/vm-%u", (unsigned)vm_uid(a));
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)vm_pid(a));
	assert_int_equal(util_read_file(path, 1 << 16, &data, &len), 0);
	assert_non_null(strstr(data, want));
	free(data);
	for (int i = 0; i < h->ndirs; i++) {
		char dir[PATH_MAX + 64], f[PATH_MAX + 128];
		snprintf(dir, sizeof(dir), "%s/vm-%u", h->parent[i], (unsigned)vm_uid(a));
		const char *file = NULL;
		if (h->version == VMCG_V2 || !strcmp(h->ctrl[i], "memory"))
			file = h->version == VMCG_V2 ? "memory.max" : "memory.limit_in_bytes";
		if (file) {
			snprintf(f, sizeof(f), "%s/%s", dir, file);
			assert_int_equal(util_read_file(f, 64, &data, &len), 0);
			unsigned long long lim = strtoull(data, NULL, 10);
			free(data);
			/* Guest RAM plus QEMU's overhead, not "max". */
			assert_true(lim >= (unsigned long long)template_memory_mib(et_tpl) << 20);
			assert_true(lim < 1ull << 40);
		}
		if (h->version == VMCG_V2 || !strcmp(h->ctrl[i], "pids")) {
			snprintf(f, sizeof(f), "%s/pids.max", dir);
			assert_int_equal(util_read_file(f, 64, &data, &len), 0);
			assert_true(strtoul(data, NULL, 10) > 0);
			free(data);
		}
	}
	/* The group goes with its QEMU. */
	char gone[PATH_MAX + 64];
	snprintf(gone, sizeof(gone), "%s/vm-%u", h->parent[0], (unsigned)vm_uid(a));
	et_stop(a);
	for (int t = 0; t < 100 && access(gone, F_OK) == 0; t++)
		usleep(20000);
	assert_int_not_equal(access(gone, F_OK), 0);
}

/* In the forked helper: join QEMU's namespaces, become its uid. */
static int enter_like_qemu(pid_t pid, uid_t uid)
{
	/* All opened first: after joining the mount namespace, /proc is the
	 * jail's. */
	static const char *const ns[] = {"ipc", "uts", "net", "mnt"};
	int fds[4];
	for (size_t i = 0; i < 4; i++) {
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d/ns/%s", (int)pid, ns[i]);
		if ((fds[i] = open(p, O_RDONLY | O_CLOEXEC)) < 0)
			return 10 + (int)i;
	}
	for (size_t i = 0; i < 4; i++)
		if (setns(fds[i], 0) < 0)
			return 14 + (int)i;
	if (chdir("/") < 0 || setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
	    setresuid(uid, uid, uid) < 0)
		return 20;
	return 0;
}

/* What an escaped QEMU could do, tried by a helper in its place.  The
 * child exits with 0 when every check held, else the number of the first
 * that did not. */
static int escaped_helper(pid_t pid, uid_t uid, const char *own_jail, const char *other_jail,
			  const char *tpl_disk)
{
	int r = enter_like_qemu(pid, uid);
	if (r)
		return r;
	char p[PATH_MAX + 32];
	/* 1: the positive control: its own folder is writable. */
	snprintf(p, sizeof(p), "%s/escape-probe", own_jail);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, "x", 1) != 1)
		return 1;
	close(fd);
	unlink(p);
	/* 2: the template's disk layer is visible but not writable. */
	if (access(tpl_disk, R_OK) != 0)
		return 2;
	fd = open(tpl_disk, O_RDWR | O_CLOEXEC);
	if (fd >= 0 || (errno != EROFS && errno != EACCES))
		return 3;
	/* 4: the other sandbox's folder is not there at all. */
	struct stat st;
	if (stat(other_jail, &st) == 0 || errno != ENOENT)
		return 4;
	/* 5: /usr and the jail's root are read-only. */
	fd = open("/usr/escape-probe", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		return 5;
	fd = open("/escape-probe", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		return 6;
	/* 7: QEMU itself (PID 1 here) is not dumpable: its descriptors and
	 * memory are out of reach of its own uid. */
	if (open("/proc/1/mem", O_RDONLY | O_CLOEXEC) >= 0)
		return 7;
	DIR *d = opendir("/proc/1/fd");
	if (d) {
		closedir(d);
		return 8;
	}
	/* 9: the host's files. */
	static const char *const host[] = {"/etc/shadow", "/root", "/var/log", "/home"};
	for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++)
		if (stat(host[i], &st) == 0)
			return 9;
	return 0;
}

static void test_escaped_qemu_view(void **state)
{
	(void)state;
	NEED_JAIL();
	struct vm *a = et_restore(), *b = et_restore();
	char own[PATH_MAX], other[PATH_MAX], disk[PATH_MAX];
	snprintf(own, sizeof(own), "%s/jail", vm_run_dir(a));
	snprintf(other, sizeof(other), "%s/jail", vm_run_dir(b));
	snprintf(disk, sizeof(disk), "%s/disk.qcow2", template_dir(et_tpl));
	pid_t c = fork();
	assert_true(c >= 0);
	if (c == 0)
		_exit(escaped_helper(vm_pid(a), vm_uid(a), own, other, disk));
	int ws = 0;
	assert_int_equal(waitpid(c, &ws, 0), c);
	assert_true(WIFEXITED(ws));
	if (WEXITSTATUS(ws) != 0)
		fail_msg("escaped-QEMU check %d did not hold", WEXITSTATUS(ws));
	et_stop(a);
	et_stop(b);
}

static void test_template_descriptors_refuse_writes(void **state)
{
	(void)state;
	NEED_JAIL();
	struct vm *a = et_restore();
	pid_t pid = vm_pid(a);
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	assert_true(pfd >= 0);
	char fddir[64], disk[PATH_MAX], memname[128];
	snprintf(fddir, sizeof(fddir), "/proc/%d/fd", (int)pid);
	snprintf(disk, sizeof(disk), "%s/disk.qcow2", template_dir(et_tpl));
	snprintf(memname, sizeof(memname), "/memfd:pandastack-%s", template_name(et_tpl));
	DIR *d = opendir(fddir);
	assert_non_null(d);
	struct dirent *e;
	int mem_seen = 0, disk_seen = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char link[PATH_MAX + 64], target[PATH_MAX];
		snprintf(link, sizeof(link), "%s/%s", fddir, e->d_name);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		int is_mem = !strncmp(target, memname, strlen(memname));
		int is_disk = !strcmp(target, disk);
		if (!is_mem && !is_disk)
			continue;
		/* QEMU's very descriptor, duplicated into this process. */
		int fd = (int)syscall(SYS_pidfd_getfd, pfd, atoi(e->d_name), 0);
		assert_true(fd >= 0);
		errno = 0;
		assert_int_equal(pwrite(fd, "x", 1, 0), -1);
		assert_true(errno == EPERM || errno == EBADF);
		if (is_mem) {
			assert_true(fcntl(fd, F_GET_SEALS) & F_SEAL_WRITE);
			mem_seen++;
		} else {
			disk_seen++;
		}
		close(fd);
		/* Opened anew through /proc, as root: refused as well. */
		fd = open(link, O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			errno = 0;
			assert_int_equal(write(fd, "x", 1), -1);
			assert_int_equal(errno, EPERM);
			close(fd);
		} else {
			assert_true(errno == EROFS || errno == EPERM || errno == EACCES);
		}
	}
	closedir(d);
	close(pfd);
	/* The probe saw the template's data (it would have checked nothing
	 * otherwise). */
	assert_true(mem_seen >= 1);
	assert_true(disk_seen >= 1);
	et_stop(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_process_credentials),
		cmocka_unit_test(test_own_cgroup_with_limits),
		cmocka_unit_test(test_escaped_qemu_view),
		cmocka_unit_test(test_template_descriptors_refuse_writes),
	};
	return cmocka_run_group_tests(tests, et_setup, et_teardown);
}
