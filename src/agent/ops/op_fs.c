/*
 * op_fs.c - the one-shot filesystem operations stat, list, remove and mkdir
 * (docs/agent-protocol.md).  Each answers END at once.
 *
 * Errors keep the kernel's errno, so ENOENT, ENOTDIR, EISDIR, EACCES,
 * EEXIST and ENOTEMPTY reach the host as distinct codes.  list returns at
 * most LIST_MAX entries, the first ones by name (byte order), with
 * "truncated" set when the folder holds more; it keeps at most
 * 2 * LIST_MAX names in memory however large the folder is.  Names that
 * are not UTF-8 are reported with U+FFFD in place of the bad bytes.
 *
 * Threads: the loop thread only.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/astream.h"
#include "common/utf8.h"
#include "common/util.h"

#define LIST_MAX 10000u

static const char *type_name(mode_t m)
{
	if (S_ISREG(m))
		return "file";
	if (S_ISDIR(m))
		return "dir";
	if (S_ISLNK(m))
		return "symlink";
	return "other";
}

/* {"name","path","type","size","mode","mtime_ms"} for st. */
static json_t *stat_json(const char *name, const char *path, const struct stat *st)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "name", utf8_json_lossy(name, strlen(name)));
	json_object_set_new(o, "path", utf8_json_lossy(path, strlen(path)));
	json_object_set_new(o, "type", json_string(type_name(st->st_mode)));
	json_object_set_new(o, "size", json_integer((json_int_t)st->st_size));
	json_object_set_new(o, "mode", json_integer(st->st_mode & 07777));
	json_object_set_new(o, "mtime_ms",
			    json_integer((json_int_t)st->st_mtim.tv_sec * 1000 +
					 st->st_mtim.tv_nsec / 1000000));
	return o;
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return (b && b[1]) ? b + 1 : path;
}

static void do_stat(struct astream *s, const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0) {
		int e = errno;
		astream_end_err(s, e, "%s: %s", path, strerror(e));
		return;
	}
	astream_end(s, stat_json(base_name(path), path, &st));
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Keep the LIST_MAX smallest of n names (sorted); frees the rest. */
static size_t trim_names(char **names, size_t n)
{
	qsort(names, n, sizeof(char *), cmp_names);
	for (size_t i = LIST_MAX; i < n; i++)
		free(names[i]);
	return n < LIST_MAX ? n : LIST_MAX;
}

static void do_list(struct astream *s, const char *path)
{
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		int e = errno;
		astream_end_err(s, e, "%s: %s", path, strerror(e));
		return;
	}
	DIR *d = fdopendir(dfd);
	char **names = d ? malloc(2 * LIST_MAX * sizeof(char *)) : NULL;
	if (!names) {
		if (d)
			closedir(d);
		else
			close(dfd);
		astream_end_err(s, ENOMEM, "out of memory");
		return;
	}
	size_t n = 0, total = 0;
	struct dirent *de;
	int err = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		total++;
		if (n == 2 * LIST_MAX)
			n = trim_names(names, n);
		if (!(names[n] = strdup(de->d_name))) {
			err = ENOMEM;
			break;
		}
		n++;
	}
	n = trim_names(names, n);
	json_t *entries = json_array();
	int sep = strcmp(path, "/") != 0;
	for (size_t i = 0; i < n && entries && !err; i++) {
		struct stat st;
		if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* removed meanwhile */
		char full[PATH_MAX + 256];
		snprintf(full, sizeof(full), "%s%s%s", path, sep ? "/" : "", names[i]);
		if (json_array_append_new(entries, stat_json(names[i], full, &st)) < 0)
			err = ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	if (err || !entries) {
		json_decref(entries);
		astream_end_err(s, ENOMEM, "out of memory");
		return;
	}
	json_t *o = json_object();
	if (o) {
		json_object_set_new(o, "entries", entries);
		json_object_set_new(o, "truncated", json_boolean(total > LIST_MAX));
	} else {
		json_decref(entries);
	}
	astream_end(s, o);
}

static void do_remove(struct astream *s, const char *path, int recursive)
{
	struct stat st;
	int r = 0;
	if (lstat(path, &st) < 0)
		r = -errno;
	else if (!S_ISDIR(st.st_mode))
		r = unlink(path) < 0 ? -errno : 0;
	else if (!recursive)
		r = rmdir(path) < 0 ? -errno : 0;
	else
		r = util_rm_rf(path);
	if (r == -EEXIST)
		r = -ENOTEMPTY; /* rmdir may say either for a non-empty folder */
	if (r == -EBUSY) {
		astream_end_err(s, r,
				"%s is, or holds, the mount point of another file system (such as "
				"/proc, /sys or /dev), which is not removed",
				path);
		return;
	}
	if (r < 0) {
		astream_end_err(s, r, "%s: %s", path, strerror(-r));
		return;
	}
	astream_end(s, NULL);
}

static void do_mkdir(struct astream *s, const char *path, unsigned mode, int parents)
{
	struct stat st;
	int r;
	if (parents) {
		if (lstat(path, &st) == 0 && !S_ISDIR(st.st_mode))
			r = -EEXIST;
		else
			r = util_mkdir_p(path, mode);
	} else {
		r = mkdir(path, mode) < 0 ? -errno : 0;
	}
	if (r < 0) {
		astream_end_err(s, r, "%s: %s", path, strerror(-r));
		return;
	}
	astream_end(s, NULL);
}

int op_fs_start(struct astream *s, struct agent_req *req)
{
	switch (req->op) {
	case AGENT_OP_STAT:
		do_stat(s, req->path);
		return 0;
	case AGENT_OP_LIST:
		do_list(s, req->path);
		return 0;
	case AGENT_OP_REMOVE:
		do_remove(s, req->path, req->recursive);
		return 0;
	case AGENT_OP_MKDIR:
		do_mkdir(s, req->path, req->mode, req->parents);
		return 0;
	default:
		return -EINVAL;
	}
}
