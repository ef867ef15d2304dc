/*
 * snapshot_capture.c - capturing a running VM into a snapshot folder
 * (vm_snapshot, see snapshot.h for the steps).
 *
 * Paths given to QEMU are in QEMU's view: a jailed QEMU sees its jail
 * folder at the host path it had when it was started (v->spawn_dir; a
 * pool entry was renamed since), an unjailed one the host's.  The daemon
 * reaches the same files through v->run_dir.
 *
 * QMP commands used (QEMU 7.2 qapi): stop, xen-save-devices-state
 * {filename, live: false} (every non-RAM section of the migration stream),
 * query-block, blockdev-add {driver: qcow2, node-name, file, backing: null},
 * blockdev-snapshot {node, overlay} (the overlay's header keeps the
 * backing name it was created with), blockdev-del, cont.
 */
#include "engine/vm/snapshot_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <jansson.h>

#include "common/log.h"
#include "common/util.h"
#include "engine/qemu/proc.h"
#include "engine/vm/vm_int.h"

#define QMP_STEP_MS 10000

/* The VM's active disk node: its node name, its file (QEMU's view), its
 * backing's file ("" without one) and its virtual size, from query-block
 * (inserted.node-name, .file, .image.backing-image.filename,
 * .image.virtual-size). */
struct active_disk {
	char node[64];
	char file[PATH_MAX];
	char backing[PATH_MAX];
	uint64_t vsize;
};

static int query_active_disk(struct vm *v, struct active_disk *d)
{
	json_t *ret = NULL;
	int r = qmp_call(v->qmp, "query-block", NULL, QMP_STEP_MS, &ret);
	if (r < 0)
		return r;
	r = -ENODEV;
	size_t i;
	json_t *dev;
	json_array_foreach(ret, i, dev) {
		json_t *in = json_object_get(dev, "inserted");
		const char *node = json_string_value(json_object_get(in, "node-name"));
		const char *file = json_string_value(json_object_get(in, "file"));
		json_t *vs = json_object_get(json_object_get(in, "image"), "virtual-size");
		if (!node || !file || !json_is_integer(vs) || json_integer_value(vs) <= 0)
			continue;
		const char *backing = json_string_value(json_object_get(
			json_object_get(json_object_get(in, "image"), "backing-image"), "filename"));
		if (snprintf(d->node, sizeof(d->node), "%s", node) >= (int)sizeof(d->node) ||
		    snprintf(d->file, sizeof(d->file), "%s", file) >= (int)sizeof(d->file) ||
		    snprintf(d->backing, sizeof(d->backing), "%s", backing ? backing : "") >=
			    (int)sizeof(d->backing)) {
			r = -ENAMETOOLONG;
			break;
		}
		d->vsize = (uint64_t)json_integer_value(vs);
		r = 0;
		break;
	}
	json_decref(ret);
	return r;
}

/* The jail folder as QEMU sees it. */
static int qemu_view(const struct vm *v, const char *name, char *out)
{
	const char *base = v->uid ? v->spawn_dir : v->run_dir;
	return snprintf(out, PATH_MAX, "%s/" VM_JAIL_DIR "/%s", base, name) >= PATH_MAX
		       ? -ENAMETOOLONG
		       : 0;
}

/* A file of the jail folder as the daemon sees it. */
static int host_view(const struct vm *v, const char *name, char *out)
{
	return snprintf(out, PATH_MAX, "%s/" VM_JAIL_DIR "/%s", v->run_dir, name) >= PATH_MAX
		       ? -ENAMETOOLONG
		       : 0;
}

/* 1 when the filesystem of path has less than 1 MiB left for us. */
static int nearly_full(const char *path)
{
	struct statvfs sv;
	return statvfs(path, &sv) == 0 && (uint64_t)sv.f_bavail * sv.f_frsize < (1u << 20);
}

/* Make a file the daemon's alone: root-owned, read-only. */
static int freeze_file(const char *path)
{
	if (chown(path, 0, 0) < 0 || chmod(path, 0444) < 0)
		return -errno;
	return 0;
}

/*
 * Make the snapshot durable: the memory file (mem_fd), state, layer, then
 * the folder.  Every file's writeback is started before the first fsync
 * waits, so their writes go to the disk together rather than one file
 * after another.  0 or -errno.
 */
static int sync_snapshot(int mem_fd, const char *state, const char *layer, const char *dir)
{
	int fds[3] = {mem_fd, open(state, O_RDONLY | O_CLOEXEC), open(layer, O_RDONLY | O_CLOEXEC)};
	int r = fds[1] < 0 || fds[2] < 0 ? -errno : 0;
	for (int i = 0; r == 0 && i < 3; i++)
		sync_file_range(fds[i], 0, 0, SYNC_FILE_RANGE_WRITE); /* advisory */
	for (int i = 0; r == 0 && i < 3; i++)
		if (fsync(fds[i]) < 0)
			r = -errno;
	for (int i = 1; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	int dfd = r == 0 ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (r == 0 && (dfd < 0 || fsync(dfd) < 0))
		r = -errno;
	if (dfd >= 0)
		close(dfd);
	return r;
}

/*
 * The VM's next overlay and the snapshot's seed (a copy of it), made on a
 * helper thread while the guest is paused for its pages: qemu-img takes
 * 15-30 ms, mostly its own start-up, which the capture no longer waits
 * for before the pause.
 */
struct overlay_job {
	char layer[PATH_MAX], seed[PATH_MAX], host[PATH_MAX], size[32];
	uid_t uid;
	int r;
	char msg[sizeof(((struct vm_err *)0)->msg)];
	pthread_t th;
	int started;
};

static void *overlay_job_main(void *arg)
{
	struct overlay_job *j = arg;
	char *argv[] = {"qemu-img", "create", "-q", "-f", "qcow2", "-u", "-b", j->layer, "-F",
			"qcow2", j->host, j->size, NULL};
	char out[512];
	int r = proc_run_ok(argv, 30000, out, sizeof(out));
	if (r < 0) {
		snprintf(j->msg, sizeof(j->msg), "cannot create the next disk overlay: %.180s",
			 r == -EIO ? out : strerror(-r));
	} else if ((r = engine_copy_file(j->host, j->seed, 0444)) < 0 ||
		   (j->uid && chown(j->host, j->uid, j->uid) < 0 && (r = -errno)) ||
		   (chmod(j->host, 0600) < 0 && (r = -errno))) {
		snprintf(j->msg, sizeof(j->msg), "cannot prepare the next disk overlay: %s",
			 strerror(-r));
	}
	j->r = r;
	return NULL;
}

/* What a capture holds while it runs, for the cleanup. */
struct capture {
	struct vm *v;
	const char *dir;
	char key[SNAPSHOT_KEY_HEX + 1];
	char new_host[PATH_MAX], new_qemu[PATH_MAX], new_node[40];
	char state_host[PATH_MAX], state_qemu[PATH_MAX];
	char memory[PATH_MAX];
	struct active_disk cur;
	int mem_out;
	const unsigned char *tpl;        /* the template's RAM, mapped read-only */
	uint64_t tpl_len;
	int stopped, node_added, disk_moved;
	struct overlay_job ov;
};

/* Wait for the overlay job; 0 or its -errno with err filled. */
static int overlay_wait(struct capture *c, struct vm_err *err)
{
	if (!c->ov.started)
		return 0;
	pthread_join(c->ov.th, NULL);
	c->ov.started = 0;
	if (c->ov.r < 0)
		snprintf(err->msg, sizeof(err->msg), "%s", c->ov.msg);
	return c->ov.r;
}

/* Before the pause: the new overlay and the seed started (overlay_job),
 * the memory file, snapshot.json. */
static int prepare(struct capture *c, const struct template *t, const struct snapshot *base,
		   struct vm_err *err)
{
	struct vm *v = c->v;
	struct overlay_job *j = &c->ov;
	char rnd[16], hex[16];
	int r;
	util_random(rnd, sizeof(rnd));
	util_hex(rnd, sizeof(rnd), c->key);
	snprintf(hex, sizeof(hex), "%.8s", c->key);
	if ((r = query_active_disk(v, &c->cur)) < 0) {
		snprintf(err->msg, sizeof(err->msg), "cannot query the VM's disk: %s",
			 r == -EIO ? qmp_last_error(v->qmp) : strerror(-r));
		return r;
	}
	snprintf(c->new_node, sizeof(c->new_node), "d%s", hex);
	char name[64];
	snprintf(name, sizeof(name), "overlay-%s.qcow2", hex);
	if ((r = host_view(v, name, c->new_host)) < 0 || (r = qemu_view(v, name, c->new_qemu)) < 0 ||
	    (r = engine_path_join(j->layer, c->dir, "disk.qcow2")) < 0 ||
	    (r = engine_path_join(j->seed, c->dir, "overlay-seed.qcow2")) < 0 ||
	    (r = engine_path_join(c->memory, c->dir, "memory")) < 0)
		return r;
	snprintf(name, sizeof(name), "state-%s.tmp", hex);
	if ((r = host_view(v, name, c->state_host)) < 0 || (r = qemu_view(v, name, c->state_qemu)) < 0)
		return r;
	/* The VM's next overlay: its header names the frozen layer's final
	 * place (created unsafe: that file appears only at the capture). */
	snprintf(j->size, sizeof(j->size), "%llu", (unsigned long long)c->cur.vsize);
	snprintf(j->host, sizeof(j->host), "%s", c->new_host);
	j->uid = v->uid;
	if (pthread_create(&j->th, NULL, overlay_job_main, j) == 0)
		j->started = 1;
	else
		overlay_job_main(j);
	if (!j->started && j->r < 0) {
		snprintf(err->msg, sizeof(err->msg), "%s", j->msg);
		return j->r;
	}
	if ((r = snap_write_json(c->dir, c->key, base ? base->key : "", t)) < 0) {
		snprintf(err->msg, sizeof(err->msg), "cannot write snapshot.json: %s", strerror(-r));
		return r;
	}
	c->mem_out = open(c->memory, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	/* A header marked incomplete until the pages' own replaces it: a
	 * capture a crash cut short is never taken for a whole one
	 * (vm_snapshot_settle). */
	r = c->mem_out < 0 ? -errno
			   : snap_mem_write_empty(c->mem_out, (uint64_t)template_memory_mib(t) << 20,
						  SNAP_MEM_INCOMPLETE);
	if (r < 0) {
		snprintf(err->msg, sizeof(err->msg), "cannot create the memory file: %s",
			 strerror(-r));
		return r;
	}
	/* The template's RAM from its memfd (in memory: the file's pages may
	 * have left the page cache, and comparing would read them back). */
	int tfd = template_memory_fd(t);
	c->tpl_len = (uint64_t)template_memory_mib(t) << 20;
	void *m = tfd >= 0 ? mmap(NULL, c->tpl_len, PROT_READ, MAP_SHARED, tfd, 0) : MAP_FAILED;
	r = tfd < 0 ? tfd : m == MAP_FAILED ? -errno : 0;
	if (r < 0) {
		snprintf(err->msg, sizeof(err->msg), "cannot map the template's memory: %s",
			 strerror(-r));
		return r;
	}
	c->tpl = m;
	return 0;
}

/* The disk step: the new overlay goes over the current node. */
static int swap_disk(struct capture *c, struct vm_err *err)
{
	struct vm *v = c->v;
	json_t *args = json_pack("{s:s, s:s, s:{s:s, s:s}, s:n}", "driver", "qcow2", "node-name",
				 c->new_node, "file", "driver", "file", "filename", c->new_qemu,
				 "backing");
	if (!args)
		return -ENOMEM;
	int r = qmp_call(v->qmp, "blockdev-add", args, QMP_STEP_MS, NULL);
	json_decref(args);
	if (r < 0) {
		snprintf(err->msg, sizeof(err->msg), "blockdev-add: %s", qmp_last_error(v->qmp));
		return r;
	}
	c->node_added = 1;
	args = json_pack("{s:s, s:s}", "node", c->cur.node, "overlay", c->new_node);
	if (!args)
		return -ENOMEM;
	r = qmp_call(v->qmp, "blockdev-snapshot", args, QMP_STEP_MS, NULL);
	json_decref(args);
	if (r < 0) {
		snprintf(err->msg, sizeof(err->msg), "blockdev-snapshot: %s", qmp_last_error(v->qmp));
		return r;
	}
	c->disk_moved = 1;
	return 0;
}

/* Undo what a failed capture did; the VM runs again. */
static void abandon(struct capture *c)
{
	struct vm *v = c->v;
	struct vm_err ignored;
	overlay_wait(c, &ignored);
	if (c->node_added && !c->disk_moved && v->qmp) {
		json_t *a = json_pack("{s:s}", "node-name", c->new_node);
		if (a)
			qmp_call(v->qmp, "blockdev-del", a, QMP_STEP_MS, NULL);
		json_decref(a);
	}
	if (c->stopped && v->qmp && qmp_call(v->qmp, "cont", NULL, QMP_STEP_MS, NULL) < 0)
		log_kv(LOG_ERROR, "snapshot.cont_failed", "pid=%d err=%s", (int)v->pid,
		       qmp_last_error(v->qmp));
	unlink(c->state_host);
	if (!c->disk_moved) {
		unlink(c->new_host);
		util_rm_rf(c->dir);
	}
}

/*
 * The host path of the VM's active overlay: the one overlay*.qcow2 of its
 * jail folder that QEMU's name for the active node mentions (QEMU names a
 * node added with options, as the next overlay is, "json:{...}", which
 * holds the file's path).  0 or -ENOENT.
 */
static int find_old_overlay(const struct capture *c, char *out)
{
	char jail[PATH_MAX];
	int r = vm_path(c->v, VM_JAIL_DIR, jail);
	if (r < 0)
		return r;
	DIR *d = opendir(jail);
	if (!d)
		return -errno;
	struct dirent *de;
	int found = 0;
	const char *new_base = strrchr(c->new_host, '/') + 1;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (strncmp(de->d_name, "overlay", 7) != 0 || n < 13 ||
		    strcmp(de->d_name + n - 6, ".qcow2") != 0 || !strcmp(de->d_name, new_base))
			continue;
		char needle[NAME_MAX + 8];
		snprintf(needle, sizeof(needle), "/%s", de->d_name);
		if (!strstr(c->cur.file, needle))
			continue;
		if (found++ || host_view(c->v, de->d_name, out) < 0) {
			found = 2;
			break;
		}
	}
	closedir(d);
	return found == 1 ? 0 : -ENOENT;
}

/* Once the disk was swapped: the frozen overlay moves into the snapshot
 * as its disk.qcow2, the daemon's and read-only. */
static int move_layer(struct capture *c, struct vm_err *err)
{
	char layer[PATH_MAX], old_host[PATH_MAX];
	int r;
	if ((r = find_old_overlay(c, old_host)) < 0) {
		snprintf(err->msg, sizeof(err->msg), "the VM's disk is not in its folder");
		return -EIO;
	}
	if ((r = engine_path_join(layer, c->dir, "disk.qcow2")) < 0)
		return r;
	if (rename(old_host, layer) < 0) {
		r = -errno;
		snprintf(err->msg, sizeof(err->msg), "cannot move the frozen layer: %s", strerror(-r));
		return r;
	}
	if ((r = freeze_file(layer)) < 0) {
		snprintf(err->msg, sizeof(err->msg), "cannot freeze the layer: %s", strerror(-r));
		return r;
	}
	return 0;
}

/* The state file moves into the snapshot. */
static int move_state(struct capture *c, char *state, struct vm_err *err)
{
	int r = engine_path_join(state, c->dir, "state");
	if (r == 0 && rename(c->state_host, state) < 0)
		r = -errno;
	if (r == 0)
		r = freeze_file(state);
	if (r < 0)
		snprintf(err->msg, sizeof(err->msg), "cannot move the device state: %s",
			 strerror(-r));
	return r;
}

/* After cont: the frozen overlay and the state move into the snapshot. */
static int finish(struct capture *c, const struct snapshot_opts *opts, struct snapshot_stats *st,
		  struct vm_err *err)
{
	char layer[PATH_MAX], state[PATH_MAX];
	int r;
	if ((r = move_layer(c, err)) < 0)
		return r;
	if ((r = engine_path_join(layer, c->dir, "disk.qcow2")) < 0 ||
	    (r = move_state(c, state, err)) < 0)
		return r;
	if (opts && opts->sync && (r = sync_snapshot(c->mem_out, state, layer, c->dir)) < 0) {
		snprintf(err->msg, sizeof(err->msg), "cannot sync the snapshot: %s", strerror(-r));
		return r;
	}
	struct stat sb;
	if (fstat(c->mem_out, &sb) == 0)
		st->memory_bytes = (uint64_t)sb.st_blocks * 512u;
	if (stat(state, &sb) == 0)
		st->state_bytes = (uint64_t)sb.st_size;
	if (stat(layer, &sb) == 0)
		st->disk_bytes = (uint64_t)sb.st_blocks * 512u;
	return 0;
}

int vm_snapshot(struct vm *v, const struct template *t, const struct snapshot *base,
		const char *dir, const struct snapshot_opts *opts, struct snapshot_stats *stp,
		struct vm_err *err)
{
	struct snapshot_stats st_local, *st = stp ? stp : &st_local;
	memset(st, 0, sizeof(*st));
	err->msg[0] = '\0';
	if (base && strcmp(base->template_key, template_bake_id(t)) != 0) {
		snprintf(err->msg, sizeof(err->msg), "the VM's snapshot is not of this template");
		return -EINVAL;
	}
	if (!vm_alive(v) || !v->qmp) {
		snprintf(err->msg, sizeof(err->msg), "the VM is not running");
		return -ESRCH;
	}
	if (!dir || dir[0] != '/' || strlen(dir) >= PATH_MAX - 32)
		return -EINVAL;
	uint64_t ram = (uint64_t)template_memory_mib(t) << 20, start = 0;
	struct capture c = {.v = v, .dir = dir, .mem_out = -1};
	int64_t t0 = util_now_us(), ts, tn;
	if (mkdir(dir, 0750) < 0) {
		int e = -errno;
		snprintf(err->msg, sizeof(err->msg), "cannot create the snapshot's folder: %s",
			 strerror(-e));
		return e;
	}
	int r = prepare(&c, t, base, err);
	if (r == 0 && (r = snap_find_ram(v->pid, ram, &start)) < 0)
		snprintf(err->msg, sizeof(err->msg), "cannot find the VM's RAM: %s", strerror(-r));
	tn = util_now_us();
	st->prepare_us = tn - t0;
	ts = tn;
	if (r == 0 && opts && opts->precopy) {
		struct snap_pages_stats ps;
		if ((r = snap_capture_pages(v->pid, start, ram, base, c.tpl, c.mem_out,
					    SNAP_CAPTURE_WARMUP, &ps)) < 0)
			snprintf(err->msg, sizeof(err->msg), "copying the VM's memory: %s",
				 strerror(-r));
		tn = util_now_us();
		st->precopy_us = tn - ts;
		ts = tn;
	}
	if (r == 0 && (r = qmp_call(v->qmp, "stop", NULL, QMP_STEP_MS, NULL)) < 0)
		snprintf(err->msg, sizeof(err->msg), "stop: %s", qmp_last_error(v->qmp));
	int64_t pause0 = ts;
	if (r == 0) {
		c.stopped = 1;
		tn = util_now_us();
		st->stop_us = tn - ts;
		ts = tn;
		json_t *args = json_pack("{s:s, s:b}", "filename", c.state_qemu, "live", 0);
		r = args ? qmp_call(v->qmp, "xen-save-devices-state", args, QMP_STEP_MS, NULL)
			 : -ENOMEM;
		json_decref(args);
		if (r < 0) {
			/* QEMU says only "An IO error has occurred". */
			snprintf(err->msg, sizeof(err->msg), "saving the device state: %s",
				 qmp_last_error(v->qmp));
			if (nearly_full(dir))
				r = -ENOSPC;
		}
		tn = util_now_us();
		st->state_us = tn - ts;
		ts = tn;
	}
	if (r == 0) {
		struct snap_pages_stats ps;
		r = snap_capture_pages(v->pid, start, ram, base, c.tpl, c.mem_out,
				       opts && opts->sync ? SNAP_CAPTURE_WRITEBACK : 0, &ps);
		st->private_pages = ps.private_pages;
		st->stored_pages = ps.stored_pages;
		st->scan_us = ps.scan_us;
		st->copy_us = ps.copy_us;
		log_kv(LOG_DEBUG, "snapshot.copy", "read_ms=%.1f cmp_ms=%.1f write_ms=%.1f",
		       ps.read_us / 1e3, ps.cmp_us / 1e3, ps.write_us / 1e3);
		if (r < 0)
			snprintf(err->msg, sizeof(err->msg), "copying the VM's memory: %s",
				 strerror(-r));
		ts = util_now_us();
	}
	if (r == 0 && (r = overlay_wait(&c, err)) == 0) {
		r = swap_disk(&c, err);
		tn = util_now_us();
		st->disk_us = tn - ts;
		ts = tn;
	}
	if (r == 0 && opts && opts->leave_paused) {
		c.stopped = 0;
		st->paused_us = util_now_us() - pause0;
	} else if (r == 0) {
		if ((r = qmp_call(v->qmp, "cont", NULL, QMP_STEP_MS, NULL)) < 0)
			snprintf(err->msg, sizeof(err->msg), "cont: %s", qmp_last_error(v->qmp));
		else
			c.stopped = 0;
		tn = util_now_us();
		st->cont_us = tn - ts;
		st->paused_us = tn - pause0;
		ts = tn;
	}
	if (r == 0)
		r = finish(&c, opts, st, err);
	st->finish_us = util_now_us() - ts;
	if (r < 0) {
		if (!err->msg[0])
			snprintf(err->msg, sizeof(err->msg), "%s", strerror(-r));
		abandon(&c);
		if (!vm_alive(v))
			r = -ESRCH;
	}
	if (c.mem_out >= 0)
		close(c.mem_out);
	if (c.tpl)
		munmap((void *)c.tpl, c.tpl_len);
	log_kv(r ? LOG_WARN : LOG_INFO, "snapshot.capture",
	       "pid=%d key=%.12s err=%d paused_ms=%.1f prepare_ms=%.1f precopy_ms=%.1f stop_ms=%.1f "
	       "state_ms=%.1f scan_ms=%.1f copy_ms=%.1f disk_ms=%.1f cont_ms=%.1f finish_ms=%.1f "
	       "private_mib=%.1f stored_mib=%.1f",
	       (int)v->pid, c.key, r, st->paused_us / 1e3, st->prepare_us / 1e3,
	       st->precopy_us / 1e3, st->stop_us / 1e3,
	       st->state_us / 1e3, st->scan_us / 1e3, st->copy_us / 1e3, st->disk_us / 1e3,
	       st->cont_us / 1e3, st->finish_us / 1e3, st->private_pages * 4096.0 / 1048576.0,
	       st->stored_pages * 4096.0 / 1048576.0);
	return r;
}

/* 1 when the memory file at path is a whole level (valid, not incomplete). */
static int memory_whole(const char *path, uint64_t ram_bytes)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct snapshot *s = calloc(1, sizeof(*s));
	int whole = 0;
	if (s) {
		s->mem_file = fd;
		s->ram_bytes = ram_bytes;
		whole = snap_level_load(s) == 0 && !s->incomplete;
		snap_level_free(s);
		free(s);
	}
	close(fd);
	return whole;
}

int vm_snapshot_settle(struct vm *v, const char *dir, struct vm_err *err)
{
	char key[SNAPSHOT_KEY_HEX + 1], hex[16], node[40], name[64], path[PATH_MAX];
	char layer[PATH_MAX], state[PATH_MAX], memory[PATH_MAX];
	uint64_t ram = 0;
	err->msg[0] = '\0';
	int r = snap_read_json(dir, key, sizeof(key), &ram);
	if (r < 0) {
		snprintf(err->msg, sizeof(err->msg), "its snapshot.json: %s", strerror(-r));
		return r;
	}
	snprintf(hex, sizeof(hex), "%.8s", key);
	snprintf(node, sizeof(node), "d%s", hex);
	struct capture c = {.v = v, .dir = dir, .mem_out = -1};
	if (!v->qmp || (r = query_active_disk(v, &c.cur)) < 0) {
		snprintf(err->msg, sizeof(err->msg), "cannot query the VM's disk");
		return r < 0 ? r : -ESRCH;
	}
	if (strcmp(c.cur.node, node) != 0)
		return 0; /* the swap never happened: nothing sits on dir */
	/* find_old_overlay looks for the old overlay's name in cur.file: after
	 * the swap that is the new node's backing's file. */
	snprintf(c.cur.file, sizeof(c.cur.file), "%s", c.cur.backing);
	if ((r = engine_path_join(layer, dir, "disk.qcow2")) < 0 ||
	    (r = engine_path_join(state, dir, "state")) < 0 ||
	    (r = engine_path_join(memory, dir, "memory")) < 0)
		return r;
	snprintf(name, sizeof(name), "overlay-%s.qcow2", hex);
	if ((r = host_view(v, name, c.new_host)) < 0)
		return r;
	/* The old overlay, now the new one's backing, into the snapshot. */
	if (access(layer, F_OK) != 0 && (r = move_layer(&c, err)) < 0)
		return r;
	snprintf(name, sizeof(name), "state-%s.tmp", hex);
	if (access(state, F_OK) != 0 && host_view(v, name, path) == 0 && access(path, F_OK) == 0) {
		snprintf(c.state_host, sizeof(c.state_host), "%s", path);
		if ((r = move_state(&c, path, err)) < 0)
			return r;
	}
	/* Whole if the pages and the state were both done; else incomplete. */
	if (access(state, F_OK) == 0 && memory_whole(memory, ram))
		return 1;
	int fd = open(memory, O_RDWR | O_CREAT | O_CLOEXEC, 0444);
	r = fd < 0 ? -errno : snap_mem_write_empty(fd, ram, SNAP_MEM_INCOMPLETE);
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		snprintf(err->msg, sizeof(err->msg), "cannot write its memory file: %s", strerror(-r));
		return r;
	}
	return 1;
}
