/*
 * util.h - small helpers every part uses: clocks, randomness, hex, files and
 * folders.  All return 0 or -errno unless said otherwise; any thread.
 */
#ifndef PANDASTACK_UTIL_H
#define PANDASTACK_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* util_now_ms - CLOCK_MONOTONIC in ms. */
int64_t util_now_ms(void);

/* util_now_us - CLOCK_MONOTONIC in microseconds (phase timings). */
int64_t util_now_us(void);

/* util_wall_ns - CLOCK_REALTIME in ns. */
uint64_t util_wall_ns(void);

/* util_random - n bytes from getrandom(2) into buf.  0 or -errno. */
int util_random(void *buf, size_t n);

/* util_hex - lowercase hex of n bytes into out (2n+1 bytes).  Returns out. */
char *util_hex(const void *buf, size_t n, char *out);

/* util_hexval - the value 0..15 of hex digit c (either case), or -1. */
int util_hexval(int c);

/* util_unhex - parse exactly 2n hex digits from s into out (n bytes).
 * 0 or -EINVAL. */
int util_unhex(const char *s, void *out, size_t n);

/* util_mkdir_p - create path and its parents with mode (existing is fine). */
int util_mkdir_p(const char *path, unsigned mode);

/*
 * util_rm_rf - remove path recursively (missing is fine; never follows
 * symlinks out of the tree).  Stays on the file system that holds path's
 * parent, as `rm --one-file-system` does: path itself, or a directory in
 * it, that is the mount point of another file system (/proc, a bind mount)
 * is left with what it holds, and the call then returns -EBUSY after
 * removing everything else.  Returns 0 or the first -errno met.
 */
int util_rm_rf(const char *path);

/*
 * util_read_file - read a whole file of at most cap bytes into a new
 * NUL-terminated buffer (*out, owned by the caller; *len, if not NULL,
 * without the NUL).  -EFBIG if larger than cap, else as open(2)/read(2).
 */
int util_read_file(const char *path, size_t cap, char **out, size_t *len);

/*
 * util_file_private - 0 when the file at path (symbolic links followed)
 * gives no permission to its group or others (mode 0600, 0400), -EPERM
 * when it does, else -errno of stat(2).  For files that hold secrets.
 */
int util_file_private(const char *path);

/*
 * util_read_secret_line - the first line of the secret file at path
 * (without its "\r\n"), 1 to cap - 1 bytes, NUL-terminated into out (cap
 * bytes) and its length into *len.  The file must pass util_file_private
 * (-EPERM otherwise) and hold at most 64 KiB; -EINVAL for an empty or too
 * long line, else as open(2)/read(2).  Every copy of the file's bytes but
 * out is wiped before it is freed, and out is wiped on failure.
 */
int util_read_secret_line(const char *path, char *out, size_t cap, size_t *len);

/*
 * util_read_fd - the same for what is left to read on fd (not closed).  On a
 * nonblocking fd that has no data yet it returns -EAGAIN.
 */
int util_read_fd(int fd, size_t cap, char **out, size_t *len);

/* util_write_file - write len bytes to path atomically (temp + fsync +
 * rename) with mode.  0 or -errno. */
int util_write_file(const char *path, const void *buf, size_t len, unsigned mode);

/* Flags of util_write_file_opt. */
#define UTIL_FILE_SYNC 1u    /* fsync before the rename (util_write_file) */
#define UTIL_FILE_PARENTS 2u /* make path's missing parent folders (0755) */

/*
 * util_write_file_opt - util_write_file with flags: replace path with len
 * bytes of buf, atomically (a temporary file beside it, renamed over it;
 * removed again on failure; a link in its place is not followed).  0 or
 * -errno.
 */
int util_write_file_opt(const char *path, const void *buf, size_t len, unsigned mode,
			unsigned flags);

/* util_write_all / util_read_full - loop over EINTR and short counts.
 * read_full returns bytes read (< n only at EOF) or -errno. */
int util_write_all(int fd, const void *buf, size_t n);
ssize_t util_read_full(int fd, void *buf, size_t n);

/* util_copy_range - copy len bytes from in's offset to out's (both files;
 * in-kernel, with copy_file_range, which shares extents where the file
 * system can).  0; -EIO when in ends first; -errno. */
int util_copy_range(int in, int out, uint64_t len);

/* util_iso_time - wall-clock ms since the epoch as "2026-11-30T02:18:52.123Z"
 * (UTC; out: 32 bytes; a negative ms is the epoch).  Any thread. */
void util_iso_time(int64_t ms, char out[32]);

#endif
