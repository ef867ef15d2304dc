/*
 * snapshot_flatten.c - making a snapshot stand alone, so chains stay short
 * (see snapshot_flatten in snapshot.h).
 *
 * The memory file gets every level of the chain laid over each other (root
 * first, the snapshot's own pages last), the disk layer every cluster the
 * ancestors' layers held: a copy rebased onto the template's disk with
 * `qemu-img rebase` (safe mode: clusters that differ between the old chain
 * and the new backing are copied into the layer; QEMU's docs/tools/
 * qemu-img.rst).  Each new file replaces the old by rename, snapshot.json
 * last: a crash in between leaves a snapshot that loads either way.
 */
#include "engine/vm/snapshot_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "engine/qemu/proc.h"
#include "engine/vm/vm_int.h"

#define REBASE_TIMEOUT_MS (10 * 60 * 1000)

static int flatten_memory(const struct snapshot *s, char *err, size_t errlen)
{
	char tmp[PATH_MAX];
	if (engine_path_join(tmp, s->dir, ".memory.flat") < 0)
		return -ENAMETOOLONG;
	unlink(tmp);
	int out = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	int r = out < 0 ? -errno : snap_write_union(s, out);
	if (r == 0 && fsync(out) < 0)
		r = -errno;
	if (out >= 0)
		close(out);
	if (r == 0 && rename(tmp, s->memory) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		snprintf(err, errlen, "flattening the memory: %s", strerror(-r));
	}
	return r;
}

static int flatten_disk(const struct snapshot *s, const struct template *t, char *err,
			size_t errlen)
{
	char tmp[PATH_MAX], out[512];
	if (engine_path_join(tmp, s->dir, ".disk.flat.qcow2") < 0)
		return -ENAMETOOLONG;
	unlink(tmp);
	int r = engine_copy_file(s->disk, tmp, 0600);
	char *argv[] = {"qemu-img", "rebase", "-q", "-f", "qcow2", "-b", (char *)template_disk_path(t), "-F",
			"qcow2", tmp, NULL};
	if (r == 0 && (r = proc_run_ok(argv, REBASE_TIMEOUT_MS, out, sizeof(out))) < 0)
		snprintf(err, errlen, "qemu-img rebase: %.200s", r == -EIO ? out : strerror(-r));
	int fd = r == 0 ? open(tmp, O_RDONLY | O_CLOEXEC) : -1;
	if (r == 0 && (fd < 0 || fsync(fd) < 0 || chown(tmp, 0, 0) < 0 || chmod(tmp, 0444) < 0 ||
		       rename(tmp, s->disk) < 0)) {
		r = -errno;
		snprintf(err, errlen, "flattening the disk layer: %s", strerror(-r));
	}
	if (fd >= 0)
		close(fd);
	if (r < 0)
		unlink(tmp);
	return r;
}

int snapshot_flatten(const struct snapshot *s, const struct template *t, char *err,
		     size_t errlen)
{
	err[0] = '\0';
	if (strcmp(s->template_key, template_bake_id(t)) != 0) {
		snprintf(err, errlen, "the snapshot is not of this template's bake");
		return -ESTALE;
	}
	if (!s->parent)
		return 0;
	int64_t t0 = util_now_ms();
	int r = flatten_memory(s, err, errlen);
	if (r == 0)
		r = flatten_disk(s, t, err, errlen);
	if (r == 0 && (r = snap_write_json(s->dir, s->key, "", t)) < 0)
		snprintf(err, errlen, "rewriting snapshot.json: %s", strerror(-r));
	log_kv(r ? LOG_WARN : LOG_INFO, "snapshot.flatten", "key=%.12s depth=%d err=%d ms=%lld",
	       s->key, s->depth, r, (long long)(util_now_ms() - t0));
	return r;
}
