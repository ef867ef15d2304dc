/*
 * template.c - loading and checking baked templates, the template key, the
 * QEMU version, and overlays on a template's disk layer (see template.h
 * and template_int.h).  The bake itself is in bake.c.
 *
 * template.json is outside input (a file on disk anyone with write access
 * to the cache could change): every field is type-checked and capped.
 */
#include "engine/template/template_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "common/json_get.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"
#include "engine/qemu/jail.h"
#include "engine/qemu/proc.h"

static char qemu_version_cache[QEMU_VERSION_MAX];
static int qemu_version_err;
static pthread_once_t qemu_version_once = PTHREAD_ONCE_INIT;

static void qemu_version_probe(void)
{
	char out[1024];
	char *argv[] = {(char *)qemu_binary(), "--version", NULL};
	int r = proc_run_ok(argv, 10000, out, sizeof(out));
	if (r < 0) {
		qemu_version_err = r;
		return;
	}
	/* "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)" */
	const char *p = strstr(out, "version ");
	if (!p) {
		qemu_version_err = -EPROTO;
		return;
	}
	p += strlen("version ");
	size_t n = strcspn(p, "\r\n");
	if (n == 0 || n >= sizeof(qemu_version_cache)) {
		qemu_version_err = -EPROTO;
		return;
	}
	memcpy(qemu_version_cache, p, n);
	qemu_version_cache[n] = '\0';
}

int engine_qemu_version(char *buf, size_t buflen)
{
	pthread_once(&qemu_version_once, qemu_version_probe);
	if (qemu_version_err)
		return qemu_version_err;
	if (snprintf(buf, buflen, "%s", qemu_version_cache) >= (int)buflen)
		return -ENAMETOOLONG;
	return 0;
}

void engine_machine_spec(unsigned memory_mib, unsigned vcpus, enum accel_kind accel,
			 struct machine_spec *out)
{
	unsigned tb = QEMU_DEFAULT_TB_MIB;
	const char *env = getenv("PANDASTACK_TB_MIB");
	if (env && env[0]) {
		char *end = NULL;
		unsigned long v = strtoul(env, &end, 10);
		if (end && *end == '\0' && v <= 4096)
			tb = (unsigned)v;
	}
	out->memory_mib = memory_mib;
	out->vcpus = vcpus;
	out->accel = accel;
	out->tb_size_mib = accel == ACCEL_TCG ? tb : 0;
}

/* Feed one length-prefixed part ("<len>:<bytes>\n") to the digest. */
static void digest_part(struct sha256 *h, const char *s)
{
	char pre[32];
	int n = snprintf(pre, sizeof(pre), "%zu:", strlen(s));
	sha256_update(h, pre, (size_t)n);
	sha256_update(h, s, strlen(s));
	sha256_update(h, "\n", 1);
}

int template_key_compute(const char *manifest_key, const char *qemu_version,
			 const struct strv *machine_args, char out[65])
{
	struct sha256 h;
	int r = sha256_init(&h);
	if (r < 0)
		return r;
	digest_part(&h, "template-v1");
	digest_part(&h, manifest_key);
	digest_part(&h, qemu_version);
	for (size_t i = 0; i < machine_args->n; i++)
		digest_part(&h, machine_args->v[i]);
	return sha256_final_hex(&h, out);
}

static int path_in(char *out, const char *dir, const char *name)
{
	return snprintf(out, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX ? -ENAMETOOLONG : 0;
}

/* Make sure <dir>/overlay-seed.qcow2 exists and points at this disk path
 * (recorded in overlay-seed.backing); leaves t->seed "" if it cannot. */
static void seed_prepare(struct template *t)
{
	char seed[PATH_MAX], side[PATH_MAX], tmp[PATH_MAX];
	t->seed[0] = '\0';
	if (path_in(seed, t->dir, "overlay-seed.qcow2") < 0 ||
	    path_in(side, t->dir, "overlay-seed.backing") < 0)
		return;
	char *rec = NULL;
	size_t len = 0;
	if (util_read_file(side, PATH_MAX, &rec, &len) == 0 && !strcmp(rec, t->disk) &&
	    access(seed, R_OK) == 0) {
		free(rec);
		snprintf(t->seed, sizeof(t->seed), "%s", seed);
		return;
	}
	free(rec);
	char rnd[8], hex[17];
	util_random(rnd, sizeof(rnd));
	util_hex(rnd, sizeof(rnd), hex);
	if (snprintf(tmp, sizeof(tmp), "%s/.seed-%s.qcow2", t->dir, hex) >= (int)sizeof(tmp))
		return;
	char *argv[] = {"qemu-img", "create", "-q", "-f", "qcow2", "-b", t->disk, "-F", "qcow2",
			tmp, NULL};
	char out[512];
	if (proc_run_ok(argv, 30000, out, sizeof(out)) < 0 ||
	    util_write_file(side, t->disk, strlen(t->disk), 0644) < 0 || rename(tmp, seed) < 0) {
		unlink(tmp);
		log_kv(LOG_WARN, "template.seed_failed", "template=%s", t->name);
		return;
	}
	snprintf(t->seed, sizeof(t->seed), "%s", seed);
}

int template_overlay_create(const struct template *t, const char *path)
{
	return engine_overlay_create(t->seed, t->disk, path);
}

int engine_copy_file(const char *from, const char *to, unsigned mode)
{
	int in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (out < 0) {
		int e = -errno;
		close(in);
		return e;
	}
	struct stat st;
	int r = fstat(in, &st) < 0 ? -errno : 0;
	if (r == 0)
		r = util_copy_range(in, out, (uint64_t)st.st_size);
	close(in);
	if (close(out) < 0 && r == 0)
		r = -errno;
	if (r < 0)
		unlink(to);
	return r;
}

int engine_overlay_create(const char *seed, const char *disk, const char *path)
{
	if (seed && seed[0]) {
		int r = engine_copy_file(seed, path, 0640);
		if (r == 0 || r == -EEXIST)
			return r;
	}
	char *argv[] = {"qemu-img", "create", "-q", "-f", "qcow2", "-b", (char *)disk, "-F",
			"qcow2", (char *)path, NULL};
	char out[512];
	return proc_run_ok(argv, 30000, out, sizeof(out));
}

static int json_uint(json_t *o, const char *key, unsigned lo, unsigned hi, unsigned *out)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return -EINVAL;
	*out = (unsigned)json_integer_value(v);
	return 0;
}

/* Load <dir>/template.json into a new object (checked types). */
static int load_json(const char *dir, json_t **out, char *err, size_t errlen)
{
	char path[PATH_MAX];
	if (path_in(path, dir, "template.json") < 0)
		return -ENAMETOOLONG;
	char *data = NULL;
	size_t len = 0;
	int r = util_read_file(path, TEMPLATE_JSON_MAX, &data, &len);
	if (r < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return r == -EFBIG ? -EINVAL : r;
	}
	json_error_t jerr;
	json_t *o = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
	free(data);
	if (!json_is_object(o)) {
		snprintf(err, errlen, "%s: not a JSON object", path);
		json_decref(o);
		return -EINVAL;
	}
	*out = o;
	return 0;
}

int template_read_key(const char *cache_dir, const char *name, char out[65])
{
	char dir[PATH_MAX], err[256];
	if (!manifest_name_ok(name))
		return -EINVAL;
	if (snprintf(dir, sizeof(dir), "%s/templates/%s", cache_dir, name) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	json_t *o = NULL;
	int r = load_json(dir, &o, err, sizeof(err));
	if (r < 0)
		return r;
	r = json_get_str(o, "key", out, 65);
	json_decref(o);
	return r;
}

/* SHA-256 hex of a file of at most cap bytes into out (65 bytes). */
static int file_sha256(const char *path, size_t cap, char out[65])
{
	char *data = NULL;
	size_t len = 0;
	int r = util_read_file(path, cap, &data, &len);
	if (r < 0)
		return r;
	r = sha256_hex(data, len, out);
	free(data);
	return r;
}

static int check_file(const char *path, off_t min_size, char *err, size_t errlen)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		int e = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-e));
		return e == -ENOENT ? -ENOENT : e;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < min_size) {
		snprintf(err, errlen, "%s: not a regular file of at least %lld bytes", path,
			 (long long)min_size);
		return -EINVAL;
	}
	return 0;
}

/* Read <t->dir>/template.json into t (name, key, QEMU version, machine,
 * disk cap).  0 or -errno with err. */
static int read_manifest(struct template *t, char *err, size_t errlen)
{
	json_t *o = NULL;
	int r = load_json(t->dir, &o, err, errlen);
	if (r < 0)
		return r;
	char accel_s[8], rec_name[MANIFEST_NAME_MAX];
	unsigned fmt = 0, tb = 0, cap_mib = JAIL_DEFAULT_DISK_CAP_MIB;
	enum accel_kind rec_accel;
	json_t *margs = json_object_get(o, "machine_args");
	r = -EINVAL;
	if (json_uint(o, "format", TEMPLATE_FORMAT, TEMPLATE_FORMAT, &fmt) < 0 ||
	    json_get_str(o, "name", rec_name, sizeof(rec_name)) < 0 ||
	    strcmp(rec_name, t->name) != 0 || json_get_str(o, "key", t->key, sizeof(t->key)) < 0 ||
	    json_get_str(o, "qemu_version", t->qemu_version, sizeof(t->qemu_version)) < 0 ||
	    json_uint(o, "memory_mib", 16, QEMU_MAX_MEMORY_MIB, &t->spec.memory_mib) < 0 ||
	    json_uint(o, "vcpus", 1, QEMU_MAX_VCPUS, &t->spec.vcpus) < 0 ||
	    json_uint(o, "tb_size_mib", 0, 4096, &tb) < 0 ||
	    json_get_str(o, "accel", accel_s, sizeof(accel_s)) < 0 ||
	    accel_parse(accel_s, &rec_accel) < 0 || rec_accel == ACCEL_AUTO ||
	    !json_is_array(margs) || json_array_size(margs) > STRV_MAX_ITEMS) {
		snprintf(err, errlen, "%s/template.json: missing or bad fields", t->dir);
		goto out;
	}
	size_t i;
	json_t *a;
	json_array_foreach(margs, i, a) {
		if (!json_is_string(a) || strlen(json_string_value(a)) != json_string_length(a) ||
		    strv_add(&t->machine_args, json_string_value(a)) < 0) {
			snprintf(err, errlen, "%s/template.json: bad machine_args", t->dir);
			goto out;
		}
	}
	if (json_object_get(o, "disk_cap_mib") &&
	    json_uint(o, "disk_cap_mib", 64, 1024u * 1024u, &cap_mib) < 0) {
		snprintf(err, errlen, "%s/template.json: bad disk_cap_mib", t->dir);
		goto out;
	}
	t->disk_cap_bytes = (uint64_t)cap_mib << 20;
	t->spec.accel = rec_accel;
	t->spec.tb_size_mib = tb;
	r = 0;
out:
	json_decref(o);
	return r;
}

/* The machine this engine would run now under accel must be the one t was
 * baked for (QEMU's version and the machine arguments): then t->spec
 * becomes it.  0, or -ESTALE (or -errno) with err. */
static int check_machine(struct template *t, enum accel_kind accel, char *err, size_t errlen)
{
	char ver[QEMU_VERSION_MAX];
	int r = engine_qemu_version(ver, sizeof(ver));
	if (r < 0) {
		snprintf(err, errlen, "cannot run %s --version: %s", qemu_binary(), strerror(-r));
		return r;
	}
	if (strcmp(ver, t->qemu_version) != 0) {
		snprintf(err, errlen, "template %s was baked with QEMU %s but this is QEMU %s; rebake it "
			 "(make templates)", t->name, t->qemu_version, ver);
		return -ESTALE;
	}
	struct machine_spec now;
	struct strv now_args;
	strv_init(&now_args);
	engine_machine_spec(t->spec.memory_mib, t->spec.vcpus, accel, &now);
	if ((r = qemu_machine_args(&now, &now_args)) < 0) {
		strv_free(&now_args);
		return r;
	}
	if (!strv_equal(&now_args, &t->machine_args)) {
		char *was = strv_join(&t->machine_args, " ");
		char *is = strv_join(&now_args, " ");
		snprintf(err, errlen, "template %s was baked with machine arguments [%s] but this "
			 "engine uses [%s]; rebake it (make templates)", t->name, was ? was : "?",
			 is ? is : "?");
		free(was);
		free(is);
		r = -ESTALE;
	}
	strv_free(&now_args);
	if (r == 0)
		t->spec = now;
	return r;
}

/* t's files: there, of the right sizes, the bake's identity (the state's
 * hash) and the layers below its disk.  0 or -errno with err. */
static int check_files(struct template *t, char *err, size_t errlen)
{
	int r;
	/* the identity first: a bake replacing the folder from here on shows
	 * as a change, never as this one */
	if (stat(t->state, &t->state_st) < 0)
		memset(&t->state_st, 0, sizeof(t->state_st));
	if ((r = check_file(t->memory, (off_t)t->spec.memory_mib << 20, err, errlen)) < 0 ||
	    (r = check_file(t->state, 1, err, errlen)) < 0 ||
	    (r = check_file(t->disk, 1, err, errlen)) < 0)
		return r;
	if ((r = file_sha256(t->state, TEMPLATE_STATE_MAX, t->bake_id)) < 0) {
		snprintf(err, errlen, "%s: %s", t->state, strerror(-r));
		return r == -EFBIG ? -EINVAL : r;
	}
	/* The layers below disk.qcow2, which a jailed QEMU must see too. */
	if ((r = qcow2_backing_chain(t->disk, t->disk_chain)) < 0) {
		snprintf(err, errlen, "%s: cannot read its backing chain: %s", t->disk, strerror(-r));
		return r == -ENOENT ? -ENOENT : -EINVAL;
	}
	t->ndisk_chain = r;
	return 0;
}

int template_open(const char *cache_dir, const char *name, enum accel_kind accel,
		  struct template **out, char *err, size_t errlen)
{
	char why[256];
	int r;
	err[0] = '\0';
	if (!manifest_name_ok(name)) {
		snprintf(err, errlen, "bad template name");
		return -EINVAL;
	}
	if (accel == ACCEL_AUTO && (r = accel_resolve(ACCEL_AUTO, &accel, why, sizeof(why))) < 0)
		return r;
	struct template *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	strv_init(&t->machine_args);
	t->mem_fd = -1;
	pthread_mutex_init(&t->mem_lock, NULL);
	snprintf(t->name, sizeof(t->name), "%s", name);
	if (snprintf(t->dir, sizeof(t->dir), "%s/templates/%s", cache_dir, name) >= (int)sizeof(t->dir) ||
	    path_in(t->memory, t->dir, "memory") < 0 || path_in(t->state, t->dir, "state") < 0 ||
	    path_in(t->disk, t->dir, "disk.qcow2") < 0)
		r = -ENAMETOOLONG;
	else if ((r = read_manifest(t, err, errlen)) == 0 &&
		 (r = check_machine(t, accel, err, errlen)) == 0)
		r = check_files(t, err, errlen);
	if (r < 0) {
		template_free(t);
		return r;
	}
	seed_prepare(t);
	*out = t;
	return 0;
}

void template_free(struct template *t)
{
	if (!t)
		return;
	strv_free(&t->machine_args);
	if (t->mem_fd >= 0)
		close(t->mem_fd);
	pthread_mutex_destroy(&t->mem_lock);
	free(t);
}

const char *template_name(const struct template *t)
{
	return t->name;
}

const char *template_dir(const struct template *t)
{
	return t->dir;
}

const char *template_bake_id(const struct template *t)
{
	return t->bake_id;
}

int template_changed_on_disk(const struct template *t)
{
	struct stat st;
	if (stat(t->state, &st) < 0)
		return errno == ENOENT || errno == ENOTDIR;
	const struct stat *o = &t->state_st;
	return st.st_dev != o->st_dev || st.st_ino != o->st_ino || st.st_size != o->st_size ||
	       st.st_mtim.tv_sec != o->st_mtim.tv_sec || st.st_mtim.tv_nsec != o->st_mtim.tv_nsec ||
	       st.st_ctim.tv_sec != o->st_ctim.tv_sec || st.st_ctim.tv_nsec != o->st_ctim.tv_nsec;
}

uint64_t template_disk_cap_bytes(const struct template *t)
{
	return t->disk_cap_bytes;
}

unsigned template_memory_mib(const struct template *t)
{
	return t->spec.memory_mib;
}

unsigned template_vcpus(const struct template *t)
{
	return t->spec.vcpus;
}

enum accel_kind template_accel(const struct template *t)
{
	return t->spec.accel;
}

const struct machine_spec *template_spec(const struct template *t)
{
	return &t->spec;
}

const char *template_memory_path(const struct template *t)
{
	return t->memory;
}

const char *template_state_path(const struct template *t)
{
	return t->state;
}

const char *template_disk_path(const struct template *t)
{
	return t->disk;
}

int template_disk_chain_len(const struct template *t)
{
	return t->ndisk_chain;
}

const char *template_disk_layer(const struct template *t, int i)
{
	return i >= 0 && i < t->ndisk_chain ? t->disk_chain[i] : NULL;
}

const char *template_qemu_version(const struct template *t)
{
	return t->qemu_version;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int template_list(const char *cache_dir, char ***names)
{
	char dir[PATH_MAX];
	if (snprintf(dir, sizeof(dir), "%s/templates", cache_dir) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	size_t n = 0, cap = 8;
	char **v = calloc(cap + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	DIR *d = opendir(dir);
	if (!d) {
		int e = errno;
		if (e == ENOENT) {
			*names = v;
			return 0;
		}
		free(v);
		return -e;
	}
	struct dirent *de;
	int r = 0;
	while ((de = readdir(d)) && n < 1024) {
		char path[PATH_MAX];
		if (!manifest_name_ok(de->d_name))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s/template.json", dir, de->d_name) >= (int)sizeof(path) ||
		    access(path, R_OK) != 0)
			continue;
		if (n == cap) {
			char **nv = realloc(v, (cap * 2 + 1) * sizeof(*v));
			if (!nv) {
				r = -ENOMEM;
				break;
			}
			v = nv;
			cap *= 2;
		}
		if (!(v[n] = strdup(de->d_name))) {
			r = -ENOMEM;
			break;
		}
		v[++n] = NULL;
	}
	closedir(d);
	if (r < 0) {
		for (size_t i = 0; i < n; i++)
			free(v[i]);
		free(v);
		return r;
	}
	qsort(v, n, sizeof(*v), cmp_names);
	*names = v;
	return (int)n;
}
