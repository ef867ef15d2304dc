/*
 * util.c - clocks, randomness, hex, files and folders (see util.h).
 */
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/dynbuf.h"

int64_t util_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t util_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

uint64_t util_wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int util_random(void *buf, size_t n)
{
	uint8_t *p = buf;
	while (n) {
		ssize_t r = getrandom(p, n, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

char *util_hex(const void *buf, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	const uint8_t *p = buf;
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
	return out;
}

int util_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int util_unhex(const char *s, void *out, size_t n)
{
	uint8_t *o = out;
	if (!s || strlen(s) != 2 * n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		int hi = util_hexval((unsigned char)s[2 * i]);
		int lo = util_hexval((unsigned char)s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		o[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

int util_mkdir_p(const char *path, unsigned mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);
	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (size_t i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		char saved = buf[i];
		buf[i] = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		buf[i] = saved;
	}
	struct stat st;
	if (stat(path, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* Remove name in parent; dev is the file system removal stays on. */
static int rm_at(int parent, const char *name, dev_t dev)
{
	struct stat st;
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(parent, name, 0) == 0 || errno == ENOENT ? 0 : -errno;
	if (st.st_dev != dev)
		return -EBUSY; /* another file system's mount point */
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	/* the directory opened must be the one looked at (not a mount or a
	 * swap made meanwhile) */
	struct stat fst;
	if (fstat(fd, &fst) < 0 || fst.st_dev != dev || fst.st_ino != st.st_ino) {
		close(fd);
		return -EBUSY;
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = -errno;
		close(fd);
		return e;
	}
	int err = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		int r = rm_at(dirfd(d), de->d_name, dev);
		if (r < 0 && !err)
			err = r;
	}
	closedir(d);
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT && !err)
		err = -errno;
	return err;
}

int util_rm_rf(const char *path)
{
	/* the file system of path's parent: "a/b" -> "a", "b" -> ".", "/x" -> "/" */
	char parent[PATH_MAX];
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof(parent))
		return n ? -ENAMETOOLONG : -ENOENT;
	memcpy(parent, path, n + 1);
	while (n > 1 && parent[n - 1] == '/')
		parent[--n] = '\0';
	char *slash = strrchr(parent, '/');
	if (!slash)
		snprintf(parent, sizeof(parent), ".");
	else if (slash == parent)
		parent[1] = '\0';
	else
		*slash = '\0';
	struct stat st;
	if (stat(parent, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	return rm_at(AT_FDCWD, path, st.st_dev);
}

int util_read_fd(int fd, size_t cap, char **out, size_t *len)
{
	struct dynbuf b;
	/* one byte past the cap tells "larger" from "exactly cap" */
	dynbuf_init(&b, cap < SIZE_MAX ? cap + 1 : cap);
	for (;;) {
		size_t room = b.cap - b.len;
		size_t want = room < 65536 ? room : 65536;
		if (want == 0) {
			dynbuf_free(&b);
			return -EFBIG;
		}
		int r = dynbuf_reserve(&b, want);
		if (r < 0) {
			dynbuf_free(&b);
			return r;
		}
		ssize_t n = read(fd, b.p + b.len, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = -errno;
			dynbuf_free(&b);
			return e;
		}
		if (n == 0)
			break;
		dynbuf_commit(&b, (size_t)n);
	}
	*out = dynbuf_take(&b, len);
	return *out ? 0 : -ENOMEM;
}

int util_read_file(const char *path, size_t cap, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = util_read_fd(fd, cap, out, len);
	close(fd);
	return r;
}

int util_file_private(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return -errno;
	return st.st_mode & 077 ? -EPERM : 0;
}

int util_read_secret_line(const char *path, char *out, size_t cap, size_t *len)
{
	*len = 0;
	if (cap)
		out[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	char *s = NULL;
	size_t n = 0;
	int r = fstat(fd, &st) < 0 ? -errno : st.st_mode & 077 ? -EPERM : 0;
	if (!r)
		r = util_read_fd(fd, 64 * 1024, &s, &n);
	close(fd);
	if (r)
		return r;
	size_t line = strcspn(s, "\r\n");
	if (line == 0 || line >= cap) {
		r = -EINVAL;
	} else {
		memcpy(out, s, line);
		out[line] = '\0';
		*len = line;
	}
	explicit_bzero(s, n);
	free(s);
	return r;
}

int util_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int util_copy_range(int in, int out, uint64_t len)
{
	while (len > 0) {
		size_t step = len > (uint64_t)SSIZE_MAX ? (size_t)SSIZE_MAX : (size_t)len;
		ssize_t n = copy_file_range(in, NULL, out, NULL, step, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		len -= (uint64_t)n;
	}
	return 0;
}

ssize_t util_read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

int util_write_file_opt(const char *path, const void *buf, size_t len, unsigned mode,
			unsigned flags)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	if (flags & UTIL_FILE_PARENTS) {
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s", path);
		char *slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = '\0';
			int r = util_mkdir_p(dir, 0755);
			if (r < 0)
				return r;
		}
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return -errno;
	int err = util_write_all(fd, buf, len);
	if (!err && (flags & UTIL_FILE_SYNC) && fsync(fd) < 0)
		err = -errno;
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

int util_write_file(const char *path, const void *buf, size_t len, unsigned mode)
{
	return util_write_file_opt(path, buf, len, mode, UTIL_FILE_SYNC);
}

void util_iso_time(int64_t ms, char out[32])
{
	if (ms < 0)
		ms = 0;
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	char date[24];
	if (!gmtime_r(&s, &tm) || strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		snprintf(date, sizeof(date), "1970-01-01T00:00:00");
	snprintf(out, 32, "%.19s.%03uZ", date, (unsigned)(ms % 1000));
}
