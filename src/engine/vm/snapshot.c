/*
 * snapshot.c - loading snapshots, restoring VMs from them, and a
 * snapshot's merged RAM image (see snapshot.h).  The capture is in
 * snapshot_capture.c, the page work in snapshot_pages.c.
 *
 * snapshot.json is outside input (a file on disk): every field is
 * type-checked and capped.
 */
#include "engine/vm/snapshot_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/json_get.h"
#include "common/log.h"
#include "common/util.h"
#include "engine/vm/vm_int.h"

static int key_ok(const char *k)
{
	if (strlen(k) != SNAPSHOT_KEY_HEX)
		return 0;
	for (const char *p = k; *p; p++)
		if (util_hexval(*p) < 0 || (*p >= 'A' && *p <= 'F'))
			return 0;
	return 1;
}

int snap_write_json(const char *dir, const char *key, const char *parent_key,
		    const struct template *t)
{
	char path[PATH_MAX], ts[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_t *o = json_pack("{s:i, s:s, s:s, s:s, s:i, s:s}", "format", SNAPSHOT_FORMAT, "key",
			      key, "template", template_name(t), "template_bake", template_bake_id(t), "memory_mib",
			      (int)template_memory_mib(t), "created_at", ts);
	if (!o)
		return -ENOMEM;
	json_object_set_new(o, "parent", parent_key[0] ? json_string(parent_key) : json_null());
	char *s = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(o);
	if (!s)
		return -ENOMEM;
	int r = engine_path_join(path, dir, "snapshot.json");
	if (r == 0)
		r = util_write_file(path, s, strlen(s), 0444);
	free(s);
	return r;
}

/* Copy string field key of o into out (cap bytes); -EINVAL if absent,
 * not a string, too long or holding a NUL. */
/* Load dir/snapshot.json: key, parent key, template name and key, RAM. */
static int load_json(const char *dir, struct snapshot *s, char *err, size_t errlen)
{
	char path[PATH_MAX], *data = NULL;
	size_t len = 0;
	int r = engine_path_join(path, dir, "snapshot.json");
	if (r == 0)
		r = util_read_file(path, SNAPSHOT_JSON_MAX, &data, &len);
	if (r < 0) {
		snprintf(err, errlen, "snapshot.json: %s", strerror(-r));
		return r == -EFBIG ? -EINVAL : r;
	}
	json_t *o = json_loadb(data, len, JSON_REJECT_DUPLICATES, NULL);
	free(data);
	json_t *fmt = json_object_get(o, "format"), *mib = json_object_get(o, "memory_mib");
	json_t *par = json_object_get(o, "parent");
	s->parent_key[0] = '\0';
	if (!json_is_object(o) || !json_is_integer(fmt) || json_integer_value(fmt) != SNAPSHOT_FORMAT ||
	    json_get_str(o, "key", s->key, sizeof(s->key)) < 0 || !key_ok(s->key) ||
	    json_get_str(o, "template", s->template_name, sizeof(s->template_name)) < 0 ||
	    json_get_str(o, "template_bake", s->template_key, sizeof(s->template_key)) < 0 ||
	    !json_is_integer(mib) || json_integer_value(mib) < 16 ||
	    json_integer_value(mib) > QEMU_MAX_MEMORY_MIB ||
	    (par && !json_is_null(par) &&
	     (json_get_str(o, "parent", s->parent_key, sizeof(s->parent_key)) < 0 ||
	      !key_ok(s->parent_key)))) {
		snprintf(err, errlen, "snapshot.json: missing or bad fields");
		json_decref(o);
		return -EINVAL;
	}
	s->ram_bytes = (uint64_t)json_integer_value(mib) << 20;
	json_decref(o);
	return 0;
}

int snap_read_json(const char *dir, char *key, size_t keylen, uint64_t *ram_bytes)
{
	struct snapshot *s = calloc(1, sizeof(*s));
	char err[64];
	if (!s)
		return -ENOMEM;
	int r = load_json(dir, s, err, sizeof(err));
	if (r == 0) {
		snprintf(key, keylen, "%s", s->key);
		*ram_bytes = s->ram_bytes;
	}
	free(s);
	return r;
}

int snapshot_read_parent_key(const char *dir, char *out, size_t outlen)
{
	struct snapshot *s = calloc(1, sizeof(*s));
	char err[128];
	if (!s)
		return -ENOMEM;
	int r = load_json(dir, s, err, sizeof(err));
	if (r == 0 && snprintf(out, outlen, "%s", s->parent_key) >= (int)outlen)
		r = -ENAMETOOLONG;
	free(s);
	return r;
}

int snapshot_open(const char *dir, const struct template *t, const struct snapshot *parent,
		  struct snapshot **out, char *err, size_t errlen)
{
	err[0] = '\0';
	if (!dir || dir[0] != '/' || strlen(dir) >= PATH_MAX - 32) {
		snprintf(err, errlen, "a snapshot's folder must be an absolute path");
		return -EINVAL;
	}
	struct snapshot *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->mem_file = s->mem_fd = -1;
	pthread_mutex_init(&s->mem_lock, NULL);
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	int r = load_json(dir, s, err, errlen);
	if (r < 0)
		goto fail;
	if (strcmp(s->template_name, template_name(t)) != 0) {
		snprintf(err, errlen, "the snapshot is of template %s, not %s", s->template_name,
			 template_name(t));
		r = -EINVAL;
		goto fail;
	}
	if (strcmp(s->template_key, template_bake_id(t)) != 0 || s->ram_bytes != (uint64_t)template_memory_mib(t) << 20) {
		snprintf(err, errlen, "template %s was baked again since the snapshot was taken",
			 template_name(t));
		r = -ESTALE;
		goto fail;
	}
	if ((parent == NULL) != (s->parent_key[0] == '\0') ||
	    (parent && (strcmp(parent->key, s->parent_key) != 0 ||
			parent->ram_bytes != s->ram_bytes))) {
		snprintf(err, errlen, "the snapshot's parent is not the one given");
		r = -EINVAL;
		goto fail;
	}
	s->parent = parent;
	s->depth = parent ? parent->depth + 1 : 0;
	if (s->depth >= SNAP_CHAIN_MAX) {
		snprintf(err, errlen, "the snapshot's chain is too long");
		r = -ELOOP;
		goto fail;
	}
	if ((r = engine_path_join(s->state, dir, "state")) < 0 ||
	    (r = engine_path_join(s->memory, dir, "memory")) < 0 ||
	    (r = engine_path_join(s->disk, dir, "disk.qcow2")) < 0 ||
	    (r = engine_path_join(s->seed, dir, "overlay-seed.qcow2")) < 0)
		goto fail;
	if (access(s->seed, R_OK) != 0)
		s->seed[0] = '\0';
	s->mem_file = open(s->memory, O_RDONLY | O_CLOEXEC);
	if (s->mem_file < 0) {
		r = -errno;
		snprintf(err, errlen, "the snapshot's files: %s", strerror(-r));
		goto fail;
	}
	if ((r = snap_level_load(s)) < 0) {
		snprintf(err, errlen, "the snapshot's memory file: %s",
			 r == -EINVAL ? "not valid" : strerror(-r));
		goto fail;
	}
	/* An incomplete level is never restored: it may lack its state. */
	if (!s->incomplete && access(s->state, R_OK) != 0) {
		r = -errno;
		snprintf(err, errlen, "the snapshot's files: %s", strerror(-r));
		goto fail;
	}
	if ((r = qcow2_backing_chain(s->disk, s->disk_chain)) < 0) {
		snprintf(err, errlen, "the snapshot's disk layer: %s", strerror(-r));
		r = r == -ENOENT ? -ENOENT : -EINVAL;
		goto fail;
	}
	s->ndisk_chain = r;
	*out = s;
	return 0;
fail:
	snapshot_free(s);
	return r;
}

void snapshot_free(struct snapshot *s)
{
	if (!s)
		return;
	snap_level_free(s);
	if (s->mem_file >= 0)
		close(s->mem_file);
	if (s->merged)
		munmap((void *)s->merged, s->ram_bytes);
	if (s->mem_fd >= 0)
		close(s->mem_fd);
	pthread_mutex_destroy(&s->mem_lock);
	free(s);
}

const char *snapshot_dir(const struct snapshot *s)
{
	return s->dir;
}

const char *snapshot_key(const struct snapshot *s)
{
	return s->key;
}

const struct snapshot *snapshot_parent(const struct snapshot *s)
{
	return s->parent;
}

int snapshot_depth(const struct snapshot *s)
{
	return s->depth;
}

int snapshot_size(const struct snapshot *s, uint64_t *bytes)
{
	const char *files[] = {s->memory, s->state, s->disk};
	uint64_t sum = 0;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct stat st;
		if (stat(files[i], &st) < 0)
			return -errno;
		sum += (uint64_t)st.st_blocks * 512u;
	}
	*bytes = sum;
	return 0;
}

int snapshot_has_memory_fd(const struct snapshot *s)
{
	return snap_merged(s) != NULL;
}

int snapshot_memory_fd(struct snapshot *s, const struct template *t)
{
	pthread_mutex_lock(&s->mem_lock);
	if (s->mem_fd >= 0) {
		int fd = s->mem_fd;
		pthread_mutex_unlock(&s->mem_lock);
		return fd;
	}
	int64_t t0 = util_now_ms();
	char name[64];
	snprintf(name, sizeof(name), "pandastack-snap-%.12s", s->key);
	int fd = engine_memfd_new(name, s->ram_bytes);
	int tpl = fd >= 0 ? open(template_memory_path(t), O_RDONLY | O_CLOEXEC) : -1;
	uint64_t copied = 0;
	int r = fd < 0 ? fd : tpl < 0 ? -errno : 0;
	if (r == 0)
		r = engine_copy_nonzero(tpl, fd, (off_t)s->ram_bytes, &copied);
	if (tpl >= 0)
		close(tpl);
	/* The chain's pages over the template's, root first; then seal
	 * (which needs no writable mapping left) and keep a read-only one. */
	void *ram = r == 0 ? mmap(NULL, s->ram_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
			   : MAP_FAILED;
	if (r == 0 && ram == MAP_FAILED)
		r = -errno;
	if (r == 0) {
		snap_lay_chain(s, ram, &copied);
		munmap(ram, s->ram_bytes);
		r = engine_memfd_seal(fd);
	}
	void *ro = r == 0 ? mmap(NULL, s->ram_bytes, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
	if (r == 0 && ro == MAP_FAILED)
		r = -errno;
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		pthread_mutex_unlock(&s->mem_lock);
		return r;
	}
	s->mem_fd = fd;
	__atomic_store_n(&s->merged, (const unsigned char *)ro, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&s->mem_lock);
	log_kv(LOG_INFO, "snapshot.memfd", "key=%.12s size_mib=%llu copied_mib=%llu ms=%lld", s->key,
	       (unsigned long long)(s->ram_bytes >> 20), (unsigned long long)(copied >> 20),
	       (long long)(util_now_ms() - t0));
	return fd;
}

int vm_restore_snapshot(const struct template *t, const struct snapshot *s, const char *run_dir,
			const struct guest_restore_opts *gopts, int timeout_ms, struct vm **out,
			struct vm_err *err)
{
	int64_t t0 = util_now_ms(), deadline = t0 + timeout_ms;
	err->msg[0] = '\0';
	if (strcmp(s->template_key, template_bake_id(t)) != 0) {
		snprintf(err->msg, sizeof(err->msg), "the snapshot is not of this template's bake");
		return -ESTALE;
	}
	if (s->incomplete) {
		snprintf(err->msg, sizeof(err->msg),
			 "the snapshot is what a crash left of a capture: it cannot be restored");
		return -ESTALE;
	}
	/* The nearest level with a merged image maps it; levels above it
	 * have their pages written. */
	const struct snapshot *merged = NULL;
	for (const struct snapshot *c = s; c && !merged; c = c->parent)
		if (snap_merged(c))
			merged = c;
	struct vm_origin o = {
		.disk = s->disk, .disk_chain = (const char (*)[PATH_MAX])s->disk_chain,
		.ndisk_chain = s->ndisk_chain, .seed = s->seed,
		.mem_fd = merged ? merged->mem_fd : -1, .no_config = 1,
	};
	struct vm *v = NULL;
	int r = vm_launch_from(t, &o, run_dir, 0, deadline, &v, err);
	if (r < 0)
		return r;
	int64_t ts = util_now_us();
	uint64_t start = 0, bytes = 0;
	if (merged != s) {
		if ((r = snap_find_ram(v->pid, s->ram_bytes, &start)) < 0)
			vm_fail_msg(v, err, "cannot find the new VM's RAM", r);
		else if ((r = snap_write_pages(v->pid, start, s, merged, &bytes)) < 0)
			vm_fail_msg(v, err, "cannot write the snapshot's pages", r);
	}
	v->ph.pages = util_now_us() - ts;
	v->ph.pages_bytes = bytes;
	if (r == 0)
		r = vm_finish_restore_state(v, s->state, gopts, deadline, err);
	if (r < 0) {
		log_kv(LOG_WARN, "vm.restore_snapshot_failed", "key=%.12s pid=%d err=%d", s->key,
		       (int)v->pid, r);
		vm_discard(v);
		return r;
	}
	log_kv(LOG_DEBUG, "vm.restore_snapshot", "key=%.12s pid=%d merged=%d pages_mib=%.1f total_ms=%lld",
	       s->key, (int)v->pid, merged != NULL, (double)bytes / 1048576.0,
	       (long long)(util_now_ms() - t0));
	*out = v;
	return 0;
}
