/*
 * init.c - PID 1 duties (see init.h): from the initramfs to a running root
 * disk, and the mounts and settings a sandbox expects.
 *
 * The switch of root follows what switch_root(8) does: move /dev, /proc and
 * /sys under the new root, delete the initramfs contents (only files on the
 * initramfs itself, never crossing into another mount), move the new root
 * onto / and chroot into it.  Threads: the main thread, before the loop.
 */
#include "agent/init.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/cgroup.h"
#include "agent/netconf.h"
#include "common/log.h"
#include "common/util.h"

#define NEWROOT "/newroot"
#define MODULE_LIST_CAP (64u * 1024u)

static void note(struct init_report *rep, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Log a failed step; keep the first one in rep->error. */
static void note(struct init_report *rep, int err, const char *fmt, ...)
{
	char msg[128], q[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_kv(LOG_ERROR, "agent.init_failed", "step=%s errno=%s", log_quote(msg, q, sizeof(q)),
	       strerrorname_np(err < 0 ? -err : err) ? strerrorname_np(err < 0 ? -err : err)
						     : "?");
	if (!rep->error[0])
		snprintf(rep->error, sizeof(rep->error), "%s: %s", msg,
			 strerror(err < 0 ? -err : err));
}

void init_console_line(const char *line)
{
	size_t n = strlen(line);
	if (util_write_all(STDOUT_FILENO, line, n) < 0)
		return;
	if (n == 0 || line[n - 1] != '\n')
		util_write_all(STDOUT_FILENO, "\n", 1);
}

/* mkdir + mount; EBUSY (already mounted) is fine. */
static int mount_at(const char *src, const char *dst, const char *type, unsigned long flags,
		    const char *opts)
{
	mkdir(dst, 0755);
	if (mount(src, dst, type, flags, opts) < 0 && errno != EBUSY)
		return -errno;
	return 0;
}

/* Give PID 1 the console as stdin/stdout/stderr if the kernel could not. */
static void open_console(void)
{
	if (fcntl(STDOUT_FILENO, F_GETFD) >= 0 && fcntl(STDERR_FILENO, F_GETFD) >= 0)
		return;
	int fd = open("/dev/console", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return;
	for (int i = 0; i < 3; i++)
		if (fcntl(i, F_GETFD) < 0)
			dup2(fd, i);
	if (fd > 2)
		close(fd);
}

static void load_modules(struct init_report *rep)
{
	char *list = NULL;
	size_t len = 0;
	int r = util_read_file(INIT_MODULES_LIST, MODULE_LIST_CAP, &list, &len);
	if (r < 0) {
		if (r != -ENOENT)
			note(rep, r, "reading %s", INIT_MODULES_LIST);
		return;
	}
	char *save = NULL;
	for (char *line = strtok_r(list, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		while (*line == ' ' || *line == '\t')
			line++;
		size_t n = strlen(line);
		while (n && (line[n - 1] == ' ' || line[n - 1] == '\r' || line[n - 1] == '\t'))
			line[--n] = '\0';
		if (!n || line[0] == '#')
			continue;
		int fd = open(line, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			rep->modules_failed++;
			note(rep, errno, "opening module %s", line);
			continue;
		}
		if (syscall(SYS_finit_module, fd, "", 0) == 0 || errno == EEXIST) {
			rep->modules_loaded++;
		} else {
			rep->modules_failed++;
			note(rep, errno, "loading module %s", line);
		}
		close(fd);
	}
	free(list);
}

static int wait_for(const char *path, int timeout_ms)
{
	int64_t end = util_now_ms() + timeout_ms;
	struct stat st;
	while (stat(path, &st) < 0) {
		if (util_now_ms() >= end)
			return -ETIMEDOUT;
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* Delete everything under dirfd that lives on device dev (the initramfs);
 * other mounts (the new root) are left alone.  Closes dirfd. */
static void delete_same_dev(int dirfd, dev_t dev)
{
	DIR *d = fdopendir(dirfd);
	if (!d) {
		close(dirfd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != dev)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				delete_same_dev(sub, dev);
			unlinkat(dirfd, de->d_name, AT_REMOVEDIR);
		} else {
			unlinkat(dirfd, de->d_name, 0);
		}
	}
	closedir(d);
}

static int switch_root(struct init_report *rep)
{
	/* noatime: the first read of each file after a restore would otherwise
	 * write its inode, and a journal commit and writeback follow seconds
	 * later in a guest that is otherwise idle. */
	int r = mount_at(INIT_ROOT_DEV, NEWROOT, "ext4", MS_NOATIME, NULL);
	if (r < 0) {
		note(rep, r, "mounting %s", INIT_ROOT_DEV);
		return r;
	}
	static const char *const moved[] = {"/dev", "/proc", "/sys"};
	for (size_t i = 0; i < sizeof(moved) / sizeof(moved[0]); i++) {
		char dst[64];
		snprintf(dst, sizeof(dst), NEWROOT "%s", moved[i]);
		mkdir(dst, 0755);
		if (mount(moved[i], dst, NULL, MS_MOVE, NULL) < 0) {
			r = -errno;
			note(rep, r, "moving %s", moved[i]);
			return r;
		}
	}
	struct statfs sf;
	struct stat rootst;
	if (statfs("/", &sf) == 0 && (sf.f_type == RAMFS_MAGIC || sf.f_type == TMPFS_MAGIC) &&
	    stat("/", &rootst) == 0) {
		int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0)
			delete_same_dev(fd, rootst.st_dev);
	}
	if (chdir(NEWROOT) < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0 ||
	    chdir("/") < 0) {
		r = -errno;
		note(rep, r, "switching root");
		return r;
	}
	return 0;
}

static void set_hostname(struct init_report *rep)
{
	char *txt = NULL;
	size_t len = 0;
	char name[65] = "pandastack";
	if (util_read_file("/etc/hostname", 4096, &txt, &len) == 0) {
		size_t n = strcspn(txt, " \t\r\n");
		if (n > 0 && n < sizeof(name)) {
			memcpy(name, txt, n);
			name[n] = '\0';
		}
		free(txt);
	}
	if (sethostname(name, strlen(name)) < 0)
		note(rep, errno, "sethostname");
}

/* lo, IPv6 off, the sandbox's NIC (netconf.h).  No NIC is not an error:
 * a guest started without one (an old template) still works offline. */
static void network_up(struct init_report *rep, int64_t t0)
{
	struct netconf_report nr;
	int r = netconf_apply(&netconf_sandbox, &nr);
	rep->net_ms = util_now_ms() - t0;
	rep->nic_up = nr.nic_up;
	rep->nic_found = nr.nic_found;
	if (r == -ENODEV)
		log_kv(LOG_INFO, "agent.network", "nic=absent ifname=%s lo_up=%d ipv6_off=%d",
		       netconf_sandbox.ifname, nr.lo_up, nr.ipv6_off);
	else if (r < 0)
		note(rep, r, "network (%s)", nr.error);
	else
		log_kv(LOG_INFO, "agent.network", "nic=up ifname=%s", netconf_sandbox.ifname);
}

static void root_stage(struct init_report *rep, int64_t t0)
{
	int r;
	set_hostname(rep);
	network_up(rep, t0);
	struct {
		const char *src, *dst, *type;
		unsigned long flags;
		const char *opts;
	} m[] = {
		{"tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"},
		{"tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=755"},
		{"tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"},
		{"devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "gid=5,mode=620,ptmxmode=666"},
		{"cgroup2", "/sys/fs/cgroup", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL},
	};
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if ((r = mount_at(m[i].src, m[i].dst, m[i].type, m[i].flags, m[i].opts)) < 0)
			note(rep, r, "mounting %s", m[i].dst);
	static const char *const links[][2] = {
		{"/proc/self/fd", "/dev/fd"},
		{"/proc/self/fd/0", "/dev/stdin"},
		{"/proc/self/fd/1", "/dev/stdout"},
		{"/proc/self/fd/2", "/dev/stderr"},
	};
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		if (symlink(links[i][0], links[i][1]) < 0 && errno != EEXIST)
			note(rep, errno, "linking %s", links[i][1]);
	/* pids and cpu for the exec folder (the root may hold processes) */
	if ((r = cgroup_enable_controllers("/sys/fs/cgroup")) < 0)
		note(rep, r, "enabling cgroup controllers");
	r = cgroup_prepare(INIT_CGROUP_DIR);
	rep->cgroup_ok = r == 0;
	if (r < 0)
		note(rep, r, "exec cgroup folder");
	if ((r = util_mkdir_p(INIT_WORKDIR, 0755)) < 0)
		note(rep, r, "creating %s", INIT_WORKDIR);
}

int init_system(int64_t t0, struct init_report *rep)
{
	memset(rep, 0, sizeof(*rep));
	int r;
	if ((r = mount_at("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755")) < 0)
		note(rep, r, "mounting /dev");
	open_console();
	if ((r = mount_at("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL)) < 0)
		note(rep, r, "mounting /proc");
	if ((r = mount_at("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL)) < 0)
		note(rep, r, "mounting /sys");
	load_modules(rep);
	rep->modules_ms = util_now_ms() - t0;
	r = wait_for(INIT_ROOT_DEV, INIT_ROOT_WAIT_MS);
	if (r < 0)
		note(rep, r, "waiting for %s", INIT_ROOT_DEV);
	else if (switch_root(rep) == 0)
		rep->root_switched = 1;
	rep->root_ms = util_now_ms() - t0;
	if (rep->root_switched)
		root_stage(rep, t0);
	rep->done_ms = util_now_ms() - t0;
	return rep->error[0] ? -EIO : 0;
}
