/*
 * op_file.c - file_write and file_read (docs/agent-protocol.md): whole files
 * streamed as raw DATA under the credit window.
 *
 * file_write writes into a temporary file next to the target
 * (".<name>.pandastack-<n>", or ".pandastack-write-<n>" for a name near
 * NAME_MAX; mode 0600 while open) and renames it over the
 * target at EOF, so readers see the old file or the new one, never a part.
 * The mode is applied with fchmod (the umask does not apply).  A cancel, an
 * error or the host's departure removes the temporary file.
 *
 * file_write refuses a target that exists and is not a regular file (after
 * following symlinks, as the folder check does): renaming over /dev/null, a
 * FIFO or a socket would replace the node every later command relies on.
 * A target whose last component is "." or ".." names a directory: refused
 * before any parent is made.  An existing file of procfs or sysfs
 * (/proc/sys/kernel/hostname) cannot have a temporary file beside it: it is
 * written in place (truncated, then written; its mode is not changed), as a
 * shell's `>` would.
 *
 * file_read streams a regular file (other types are refused: a FIFO or a
 * device could block the loop or never end).  Disk reads and writes are
 * synchronous; each is at most 64 KiB, so the loop stays responsive.  A file
 * whose st_size does not tell its length (st_size 0: procfs, an empty file;
 * a small sysfs file, which reports 4096) is read whole into memory first, up
 * to FR_SLURP_CAP (over it: EFBIG), so the size announced in the stat event
 * is the true one.  A procfs or sysfs file that reports more than
 * FR_PSEUDO_MAX (/proc/kcore: the whole address space, 128 TiB) is refused
 * with EFBIG rather than streamed without end.
 *
 * Threads: the loop thread only.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "agent/astream.h"
#include "common/util.h"

#define READS_PER_PUMP 8
/* Largest file read whole before its size is announced (see above), bytes.
 * procfs and sysfs files are far smaller. */
#define FR_SLURP_CAP (1u << 20)
/* Largest procfs or sysfs file streamed by its reported size, bytes:
 * sysfs binary attributes (firmware tables, PCI config) are far smaller. */
#define FR_PSEUDO_MAX (64ull << 20)

/* --- file_write --------------------------------------------------------------- */

struct fw_op {
	int fd;
	char *path;      /* owned */
	char tmp[PATH_MAX]; /* "" when writing in place (procfs, sysfs) */
	unsigned mode;
	uint64_t size;
};

static void fw_discard(struct fw_op *w)
{
	if (w->fd >= 0) {
		close(w->fd);
		w->fd = -1;
		if (w->tmp[0])
			unlink(w->tmp);
	}
}

static int fw_input(struct astream *s, const uint8_t *p, uint32_t len)
{
	struct fw_op *w = s->op;
	if (w->fd < 0)
		return -EBADF;
	int r = util_write_all(w->fd, p, len);
	if (r < 0)
		return r; /* the session cancels (removes tmp) and ends with r */
	w->size += len;
	astream_consumed(s, len);
	return 0;
}

static int fw_input_eof(struct astream *s)
{
	struct fw_op *w = s->op;
	if (w->fd < 0)
		return -EBADF;
	int r = 0;
	if (w->tmp[0] && fchmod(w->fd, w->mode) < 0)
		r = -errno;
	if (close(w->fd) < 0 && !r)
		r = -errno;
	w->fd = -1;
	if (!r && w->tmp[0] && rename(w->tmp, w->path) < 0)
		r = -errno;
	if (r < 0) {
		if (w->tmp[0])
			unlink(w->tmp);
		astream_end_err(s, r, "writing %s: %s", w->path, strerror(-r));
		return 0;
	}
	json_t *o = json_object();
	if (o)
		json_object_set_new(o, "size", json_integer((json_int_t)w->size));
	astream_end(s, o);
	return 0;
}

static void fw_cancel(struct astream *s)
{
	fw_discard(s->op);
}

static void fw_destroy(struct astream *s)
{
	struct fw_op *w = s->op;
	fw_discard(w);
	free(w->path);
	free(w);
	s->op = NULL;
}

static const struct op_ops file_write_ops = {
	.name = "file_write",
	.input = fw_input,
	.input_eof = fw_input_eof,
	.cancel = fw_cancel,
	.destroy = fw_destroy,
};

/* 1 if path is an existing file of procfs or sysfs: written in place. */
static int in_place(const char *path)
{
	struct stat st;
	struct statfs sf;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && statfs(path, &sf) == 0 &&
	       (sf.f_type == PROC_SUPER_MAGIC || sf.f_type == SYSFS_MAGIC);
}

int op_file_write_start(struct astream *s, struct agent_req *req)
{
	const char *path = req->path;
	size_t len = strlen(path);
	if (path[len - 1] == '/') {
		astream_end_err(s, EISDIR, "%s: names a directory", path);
		return 0;
	}
	const char *slash = strrchr(path, '/');
	if (!strcmp(slash + 1, ".") || !strcmp(slash + 1, "..")) {
		astream_end_err(s, EISDIR, "%s: names a directory", path);
		return 0;
	}
	char dir[PATH_MAX];
	size_t dl = slash == path ? 1 : (size_t)(slash - path);
	memcpy(dir, path, dl);
	dir[dl] = '\0';
	if (req->parents) {
		int r = util_mkdir_p(dir, 0755);
		if (r < 0) {
			astream_end_err(s, r, "creating %s: %s", dir, strerror(-r));
			return 0;
		}
	}
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		astream_end_err(s, EISDIR, "%s: is a directory", path);
		return 0;
	}
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		astream_end_err(s, EINVAL, "%s: not a regular file (a device, FIFO or socket "
				"is not replaced)", path);
		return 0;
	}
	struct fw_op *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = -1;
	w->mode = req->mode;
	if (in_place(path)) {
		w->fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	} else {
		/* A name near NAME_MAX leaves no room for the decoration: then the
		 * temporary file goes without the target's name. */
		unsigned long long seq = (unsigned long long)++s->env->seq;
		int n = strlen(slash + 1) + 40 <= NAME_MAX
				? snprintf(w->tmp, sizeof(w->tmp), "%s/.%s.pandastack-%llu",
					   dl == 1 ? "" : dir, slash + 1, seq)
				: snprintf(w->tmp, sizeof(w->tmp), "%s/.pandastack-write-%llu",
					   dl == 1 ? "" : dir, seq);
		if (n >= (int)sizeof(w->tmp)) {
			free(w);
			return -ENAMETOOLONG;
		}
		w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	}
	if (w->fd < 0) {
		int e = errno;
		free(w);
		astream_end_err(s, e, "%s: %s", path, strerror(e));
		return 0;
	}
	w->path = req->path;
	req->path = NULL;
	s->op = w;
	s->ops = &file_write_ops;
	return 0;
}

/* --- file_read ------------------------------------------------------------------ */

struct fr_op {
	int fd;          /* streaming from the file; -1 when slurped or done */
	uint8_t *buf;    /* slurped content (owned), sent from off; NULL when streaming */
	size_t len, off;
	uint64_t sent;
};

static void fr_finish(struct astream *s)
{
	struct fr_op *f = s->op;
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	free(f->buf);
	f->buf = NULL;
	astream_eof(s, PROTO_CH_STDOUT);
	json_t *o = json_object();
	if (o)
		json_object_set_new(o, "size", json_integer((json_int_t)f->sent));
	astream_end(s, o);
}

/* Send slurped bytes within the room. */
static void fr_pump_buf(struct astream *s)
{
	struct fr_op *f = s->op;
	for (int i = 0; i < READS_PER_PUMP && f->off < f->len; i++) {
		uint32_t room = astream_room(s);
		if (room == 0)
			return; /* WINDOW or a written frame calls us again */
		size_t n = f->len - f->off;
		if (n > room)
			n = room;
		if (n > PROTO_MAX_DATA)
			n = PROTO_MAX_DATA;
		astream_data(s, PROTO_CH_STDOUT, f->buf + f->off, (uint32_t)n);
		f->off += n;
		f->sent += n;
	}
	if (f->off == f->len)
		fr_finish(s);
	else
		astream_kick(s);
}

static void fr_pump(struct astream *s)
{
	static uint8_t buf[PROTO_MAX_DATA];
	struct fr_op *f = s->op;
	if (f->buf) {
		fr_pump_buf(s);
		return;
	}
	for (int i = 0; i < READS_PER_PUMP && f->fd >= 0; i++) {
		uint32_t room = astream_room(s);
		if (room == 0)
			return; /* WINDOW or a written frame calls us again */
		size_t want = room < sizeof(buf) ? room : sizeof(buf);
		ssize_t n = read(f->fd, buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			astream_end_err(s, e, "read: %s", strerror(e));
			return;
		}
		if (n == 0) {
			fr_finish(s);
			return;
		}
		astream_data(s, PROTO_CH_STDOUT, buf, (uint32_t)n);
		f->sent += (uint64_t)n;
	}
	astream_kick(s); /* more to read: come back after other work */
}

static void fr_destroy(struct astream *s)
{
	struct fr_op *f = s->op;
	if (f->fd >= 0)
		close(f->fd);
	free(f->buf);
	free(f);
	s->op = NULL;
}

static const struct op_ops file_read_ops = {
	.name = "file_read",
	.pump = fr_pump,
	.destroy = fr_destroy,
};

/* Whether fd's file lives in procfs or sysfs: the kernel's own files. */
static int on_pseudo_fs(int fd)
{
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0)
		return 0;
	return sf.f_type == SYSFS_MAGIC || sf.f_type == PROC_SUPER_MAGIC;
}

/* Whether st_size says nothing about the content: 0 (procfs files, or a
 * truly empty file: reading it whole costs nothing) or a sysfs/procfs file
 * (pseudo) of at most FR_SLURP_CAP (sysfs text attributes report 4096).
 * Larger pseudo files (sysfs binary attributes report their real size)
 * stream. */
static int size_unreliable(const struct stat *st, int pseudo)
{
	if (st->st_size == 0)
		return 1;
	return pseudo && st->st_size <= (off_t)FR_SLURP_CAP;
}

int op_file_read_start(struct astream *s, struct agent_req *req)
{
	int fd = open(req->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		astream_end_err(s, e, "%s: %s", req->path, strerror(e));
		return 0;
	}
	struct stat st;
	int e = fstat(fd, &st) < 0 ? errno : 0;
	if (!e && S_ISDIR(st.st_mode))
		e = EISDIR;
	else if (!e && !S_ISREG(st.st_mode))
		e = EINVAL;
	if (e) {
		close(fd);
		astream_end_err(s, e, "%s: %s", req->path,
				e == EINVAL ? "not a regular file" : strerror(e));
		return 0;
	}
	int pseudo = on_pseudo_fs(fd);
	if (pseudo && (uint64_t)st.st_size > FR_PSEUDO_MAX) {
		close(fd);
		astream_end_err(s, EFBIG, "%s: a kernel file that reports %llu bytes; such files "
				"are read up to %llu bytes", req->path,
				(unsigned long long)st.st_size, FR_PSEUDO_MAX);
		return 0;
	}
	struct fr_op *f = calloc(1, sizeof(*f));
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	uint64_t size = (uint64_t)st.st_size;
	if (size_unreliable(&st, pseudo)) {
		char *data = NULL;
		int r = util_read_fd(fd, FR_SLURP_CAP, &data, &f->len);
		f->buf = (uint8_t *)data;
		close(fd);
		fd = -1;
		if (r < 0) {
			free(f);
			if (r == -ENOMEM)
				return r;
			if (r == -EFBIG)
				astream_end_err(s, EFBIG, "%s: its size is not known in advance and it "
						"is over %u bytes", req->path, FR_SLURP_CAP);
			else
				astream_end_err(s, -r, "%s: %s", req->path, strerror(-r));
			return 0;
		}
		size = f->len; /* f->buf is non-NULL: the slurped mode */
	}
	f->fd = fd;
	s->op = f;
	s->ops = &file_read_ops;
	json_t *ev = json_object();
	if (ev) {
		json_object_set_new(ev, "event", json_string("stat"));
		json_object_set_new(ev, "size", json_integer((json_int_t)size));
		json_object_set_new(ev, "mode", json_integer(st.st_mode & 07777));
		astream_event(s, ev);
	}
	astream_kick(s);
	return 0;
}
