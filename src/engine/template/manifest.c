/*
 * manifest.c - load and check image manifests (see manifest.h).
 */
#include "engine/template/manifest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/util.h"
#include "engine/qemu/qemu_args.h"

int manifest_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n >= MANIFEST_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && i > 0);
		if (!ok)
			return 0;
	}
	return 1;
}

/* Copy string field key of o into out (cap bytes); 0 or -EINVAL. */
static int get_str(json_t *o, const char *key, char *out, size_t cap, int required,
		   char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);
	if (!v && !required) {
		out[0] = '\0';
		return 0;
	}
	if (!json_is_string(v)) {
		snprintf(err, errlen, "manifest field '%s' missing or not a string", key);
		return -EINVAL;
	}
	size_t len = json_string_length(v);
	const char *s = json_string_value(v);
	if (len >= cap || strlen(s) != len) {
		snprintf(err, errlen, "manifest field '%s' too long or has NUL bytes", key);
		return -EINVAL;
	}
	memcpy(out, s, len + 1);
	return 0;
}

static int get_path(json_t *o, const char *key, char *out, size_t cap, char *err, size_t errlen)
{
	int r = get_str(o, key, out, cap, 1, err, errlen);
	if (r < 0)
		return r;
	if (out[0] != '/' || strstr(out, "/../") || strchr(out, '\n')) {
		snprintf(err, errlen, "manifest field '%s' is not an absolute path", key);
		return -EINVAL;
	}
	return 0;
}

static int get_hex64(json_t *o, const char *key, char out[65], char *err, size_t errlen)
{
	int r = get_str(o, key, out, 65, 1, err, errlen);
	if (r < 0)
		return r;
	uint8_t tmp[32];
	if (util_unhex(out, tmp, 32) < 0) {
		snprintf(err, errlen, "manifest field '%s' is not 64 hex digits", key);
		return -EINVAL;
	}
	return 0;
}

static int get_uint(json_t *o, const char *key, unsigned lo, unsigned hi, unsigned *out,
		    char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
		snprintf(err, errlen, "manifest field '%s' must be an integer in %u..%u", key, lo, hi);
		return -EINVAL;
	}
	*out = (unsigned)json_integer_value(v);
	return 0;
}

int manifest_load(const char *cache_dir, const char *name, struct manifest *m,
		  char *err, size_t errlen)
{
	char path[PATH_MAX];
	if (!manifest_name_ok(name)) {
		snprintf(err, errlen, "bad template name");
		return -EINVAL;
	}
	if (snprintf(path, sizeof(path), "%s/images/%s.json", cache_dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	char *data = NULL;
	size_t len = 0;
	int r = util_read_file(path, MANIFEST_FILE_MAX, &data, &len);
	if (r < 0) {
		snprintf(err, errlen, "%s: %s%s", path, strerror(-r),
			 r == -ENOENT ? " (run `make images`)" : "");
		return r;
	}
	json_error_t jerr;
	json_t *o = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
	free(data);
	if (!json_is_object(o)) {
		snprintf(err, errlen, "%s: not a JSON object (%s)", path, jerr.text);
		json_decref(o);
		return -EINVAL;
	}
	memset(m, 0, sizeof(*m));
	if ((r = get_str(o, "name", m->name, sizeof(m->name), 1, err, errlen)) < 0 ||
	    (r = get_hex64(o, "key", m->key, err, errlen)) < 0 ||
	    (r = get_path(o, "kernel", m->kernel, sizeof(m->kernel), err, errlen)) < 0 ||
	    (r = get_hex64(o, "kernel_sha256", m->kernel_sha256, err, errlen)) < 0 ||
	    (r = get_path(o, "initramfs", m->initramfs, sizeof(m->initramfs), err, errlen)) < 0 ||
	    (r = get_hex64(o, "initramfs_sha256", m->initramfs_sha256, err, errlen)) < 0 ||
	    (r = get_path(o, "rootfs", m->rootfs, sizeof(m->rootfs), err, errlen)) < 0 ||
	    (r = get_hex64(o, "rootfs_key", m->rootfs_key, err, errlen)) < 0 ||
	    (r = get_str(o, "cmdline", m->cmdline, sizeof(m->cmdline), 1, err, errlen)) < 0 ||
	    (r = get_str(o, "warm", m->warm, sizeof(m->warm), 0, err, errlen)) < 0 ||
	    (r = get_uint(o, "memory_mib", 64, QEMU_MAX_MEMORY_MIB, &m->memory_mib, err, errlen)) < 0 ||
	    (r = get_uint(o, "vcpus", 1, QEMU_MAX_VCPUS, &m->vcpus, err, errlen)) < 0) {
		json_decref(o);
		return r;
	}
	m->warm_kernels = 1; /* manifests written before the field existed */
	if (json_object_get(o, "warm_kernels") &&
	    (r = get_uint(o, "warm_kernels", 0, MANIFEST_WARM_KERNELS_MAX, &m->warm_kernels, err,
			  errlen)) < 0) {
		json_decref(o);
		return r;
	}
	m->disk_cap_mib = 0;
	if (json_object_get(o, "disk_cap_mib") &&
	    (r = get_uint(o, "disk_cap_mib", 64, 1024u * 1024u, &m->disk_cap_mib, err, errlen)) < 0) {
		json_decref(o);
		return r;
	}
	json_decref(o);
	if (strcmp(m->name, name) != 0) {
		snprintf(err, errlen, "%s names template '%s'", path, m->name);
		return -EINVAL;
	}
	return 0;
}
