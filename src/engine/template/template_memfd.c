/*
 * template_memfd.c - a template's guest RAM as a sealed memfd (see
 * template_memory_fd in template_int.h).
 *
 * QEMU 7.2 opens a memory-backend-file's mem-path read-write even for a
 * private (share=off) mapping, so a jailed QEMU given the template's file
 * could write into the RAM every later sandbox maps.  A memfd sealed with
 * F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL refuses every
 * write (write(2) and shared writable mappings fail with EPERM, for root
 * too) while private copy-on-write mappings work as with the file; its
 * pages are shared by every sandbox of the template.  Kernel interface:
 * memfd_create(2), fcntl(2) "File Sealing".
 *
 * The memfd is populated in full (fallocate, then the non-zero pages
 * copied in): a fault on a hole of a shmem file allocates a page there,
 * even for a private mapping that then copies it, and that page would be
 * charged to the faulting sandbox's cgroup and pinned (shmem is not
 * reclaimable without swap): a guest writing its free RAM would pay twice
 * and meet its memory limit at half of what it was given.  Populated, the
 * template's RAM costs its size once per daemon, shared by every sandbox.
 */
#include "engine/template/template_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

#define COPY_CHUNK (1u << 20)
#define PAGE 4096u

static int all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i += sizeof(uint64_t)) {
		uint64_t v;
		memcpy(&v, p + i, sizeof(v));
		if (v)
			return 0;
	}
	return 1;
}

int engine_copy_nonzero(int in, int out, off_t size, uint64_t *copied)
{
	unsigned char *buf = malloc(COPY_CHUNK);
	if (!buf)
		return -ENOMEM;
	int r = 0;
	off_t pos = 0;
	while (pos < size) {
		off_t data = lseek(in, pos, SEEK_DATA);
		if (data < 0) {
			r = errno == ENXIO ? 0 : -errno;
			break;
		}
		off_t hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0) {
			r = -errno;
			break;
		}
		for (off_t at = data; at < hole && r == 0;) {
			size_t want = (size_t)(hole - at < COPY_CHUNK ? hole - at : COPY_CHUNK);
			ssize_t n = pread(in, buf, want, at);
			if (n <= 0) {
				r = n < 0 ? -errno : -EIO;
				break;
			}
			for (ssize_t o = 0; o < n; o += PAGE) {
				size_t len = (size_t)(n - o) < PAGE ? (size_t)(n - o) : PAGE;
				if (len == PAGE && all_zero(buf + o, PAGE))
					continue;
				if (pwrite(out, buf + o, len, at + o) != (ssize_t)len) {
					r = -errno;
					break;
				}
				*copied += len;
			}
			at += n;
		}
		pos = hole;
	}
	free(buf);
	return r;
}

int engine_memfd_new(const char *name, uint64_t size)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (fallocate(fd, 0, 0, (off_t)size) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

int engine_memfd_seal(int fd)
{
	return fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0
		       ? -errno
		       : 0;
}

static int make_memfd(const struct template *t, int *out)
{
	int in = open(t->memory, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	struct stat st;
	if (fstat(in, &st) < 0) {
		int e = -errno;
		close(in);
		return e;
	}
	if ((uint64_t)st.st_size != (uint64_t)t->spec.memory_mib << 20) {
		close(in);
		return -EINVAL; /* not the RAM the template says it has */
	}
	char name[MANIFEST_NAME_MAX + 16];
	snprintf(name, sizeof(name), "pandastack-%s", t->name);
	int64_t t0 = util_now_ms();
	int fd = engine_memfd_new(name, (uint64_t)st.st_size);
	if (fd < 0) {
		close(in);
		return fd;
	}
	uint64_t copied = 0;
	int r = engine_copy_nonzero(in, fd, st.st_size, &copied);
	close(in);
	if (r == 0)
		r = engine_memfd_seal(fd);
	if (r < 0) {
		close(fd);
		return r;
	}
	log_kv(LOG_INFO, "template.memfd", "template=%s size_mib=%llu copied_mib=%llu ms=%lld",
	       t->name, (unsigned long long)(st.st_size >> 20), (unsigned long long)(copied >> 20),
	       (long long)(util_now_ms() - t0));
	*out = fd;
	return 0;
}

int template_memory_fd(const struct template *tc)
{
	struct template *t = (struct template *)tc; /* the lazily made fd only */
	pthread_mutex_lock(&t->mem_lock);
	int r = t->mem_fd;
	if (r < 0) {
		int fd = -1;
		r = make_memfd(t, &fd);
		if (r == 0)
			r = t->mem_fd = fd;
	}
	pthread_mutex_unlock(&t->mem_lock);
	return r;
}
