/*
 * snapshot_pages.c - guest RAM pages for snapshots (see snapshot_int.h):
 * the memory file's format, finding a QEMU's RAM mapping, reading its
 * private pages, comparing them with a snapshot's RAM image, writing a
 * chain of memory files into a new QEMU.
 *
 * Pages move in batches: one process_vm_readv / process_vm_writev carries
 * up to IOV_BATCH scattered runs of pages, one pwritev up to IOV_BATCH
 * runs of the buffer, so the system calls stay few however scattered the
 * guest's writes were.  A capture reads on a thread of its own while the
 * caller compares and writes the batch read before (struct reader).
 */
#include "engine/vm/snapshot_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/util.h"

#define PM_PRESENT (1ull << 63)
#define PM_SWAP (1ull << 62)
#define PM_FILE (1ull << 61)

/* Pagemap entries read at once (8 bytes each). */
#define SCAN_BATCH 65536u
/* Runs per vectored call (the kernel's UIO_MAXIOV is 1024). */
#define IOV_BATCH 1024u
/* Bytes moved per vectored call. */
#define MOVE_BATCH (8u << 20)
/* Largest RAM a memory file may describe (QEMU_MAX_MEMORY_MIB). */
#define RAM_MAX ((uint64_t)QEMU_MAX_MEMORY_MIB << 20)

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static void bit_set(uint64_t *b, uint64_t i)
{
	b[i / 64] |= 1ull << (i % 64);
}

static int bit_get(const uint64_t *b, uint64_t i)
{
	return (int)((b[i / 64] >> (i % 64)) & 1);
}

/* No bit at or after i in i's word: the next candidate is the next word. */
static int word_done(const uint64_t *b, uint64_t i)
{
	return (b[i / 64] >> (i % 64)) == 0;
}

uint64_t snap_mem_data_off(uint64_t ram_bytes)
{
	uint64_t words = (ram_bytes / SNAP_PAGE + 63) / 64;
	return (SNAP_MEM_HDR + words * 8 + SNAP_PAGE - 1) & ~(uint64_t)(SNAP_PAGE - 1);
}

int snap_mem_check(const uint8_t *head, size_t len, uint64_t file_size, uint64_t ram_bytes,
		   uint64_t *npages, unsigned *flags)
{
	if (ram_bytes == 0 || ram_bytes % SNAP_PAGE || ram_bytes > RAM_MAX)
		return -EINVAL;
	uint64_t off = snap_mem_data_off(ram_bytes), pages = ram_bytes / SNAP_PAGE;
	uint64_t words = (pages + 63) / 64;
	if (len < off || memcmp(head, SNAP_MEM_MAGIC, 8) != 0 || le64(head + 8) != ram_bytes)
		return -EINVAL;
	for (size_t i = 25; i < SNAP_MEM_HDR; i++)
		if (head[i])
			return -EINVAL;
	uint64_t n = le64(head + 16), count = 0;
	if (n > pages || head[24] > SNAP_MEM_INCOMPLETE)
		return -EINVAL;
	for (uint64_t w = 0; w < words; w++) {
		uint64_t v = le64(head + SNAP_MEM_HDR + w * 8);
		if (w == words - 1 && pages % 64 && (v >> (pages % 64)))
			return -EINVAL; /* bits past the RAM's end */
		count += (uint64_t)__builtin_popcountll(v);
	}
	if (count != n || file_size != off + n * SNAP_PAGE)
		return -EINVAL;
	*npages = n;
	*flags = head[24];
	return 0;
}

int snap_level_load(struct snapshot *s)
{
	struct stat st;
	if (fstat(s->mem_file, &st) < 0)
		return -errno;
	uint64_t off = snap_mem_data_off(s->ram_bytes), pages = s->ram_bytes / SNAP_PAGE;
	uint64_t words = (pages + 63) / 64;
	uint8_t *head = malloc(off);
	if (!head)
		return -ENOMEM;
	ssize_t got = pread(s->mem_file, head, off, 0);
	unsigned flags = 0;
	int r = got == (ssize_t)off ? snap_mem_check(head, off, (uint64_t)st.st_size, s->ram_bytes,
						   &s->npages, &flags)
				    : (got < 0 ? -errno : -EINVAL);
	s->incomplete = (flags & SNAP_MEM_INCOMPLETE) != 0;
	if (r == 0) {
		s->present = malloc(words * sizeof(uint64_t));
		s->rank = malloc(words * sizeof(uint32_t));
		if (!s->present || !s->rank)
			r = -ENOMEM;
	}
	uint64_t sum = 0;
	for (uint64_t w = 0; r == 0 && w < words; w++) {
		s->present[w] = le64(head + SNAP_MEM_HDR + w * 8);
		s->rank[w] = (uint32_t)sum;
		sum += (uint64_t)__builtin_popcountll(s->present[w]);
	}
	free(head);
	if (r == 0 && s->npages) {
		void *m = mmap(NULL, s->npages * SNAP_PAGE, PROT_READ, MAP_SHARED, s->mem_file,
			       (off_t)off);
		if (m == MAP_FAILED)
			r = -errno;
		else
			s->data = m;
	}
	return r;
}

void snap_level_free(struct snapshot *s)
{
	if (s->data)
		munmap((void *)s->data, s->npages * SNAP_PAGE);
	s->data = NULL;
	free(s->present);
	free(s->rank);
	s->present = NULL;
	s->rank = NULL;
}

/* Where page p (held by s) is in s->data. */
static const unsigned char *level_page(const struct snapshot *s, uint64_t p)
{
	uint64_t below = s->present[p / 64] & ((1ull << (p % 64)) - 1);
	return s->data + ((uint64_t)s->rank[p / 64] + (uint64_t)__builtin_popcountll(below)) * SNAP_PAGE;
}

int snap_find_ram(pid_t pid, uint64_t ram_bytes, uint64_t *start)
{
	char path[64], *maps = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	int r = util_read_file(path, 16u << 20, &maps, &len);
	if (r < 0)
		return r;
	int found = 0;
	for (char *line = maps, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		unsigned long long lo, hi, off, ino;
		char perms[8], dev[16];
		int name_at = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %15s %llu %n", &lo, &hi, perms, &off, dev, &ino,
			   &name_at) < 6)
			continue;
		/* A file (or memfd) mapping, not QEMU's anonymous buffers. */
		if (hi - lo != ram_bytes || off != 0 || ino == 0 || !name_at || line[name_at] != '/')
			continue;
		if (found++)
			break;
		*start = lo;
	}
	free(maps);
	return found == 1 ? 0 : (found ? -EEXIST : -ENOENT);
}

const unsigned char *snap_merged(const struct snapshot *s)
{
	return __atomic_load_n(&s->merged, __ATOMIC_ACQUIRE);
}

const unsigned char *snap_image_page(const struct snapshot *s, const unsigned char *tpl,
				     uint64_t p)
{
	for (const struct snapshot *c = s; c; c = c->parent) {
		const unsigned char *m = snap_merged(c);
		if (m)
			return m + p * SNAP_PAGE;
		if (bit_get(c->present, p))
			return level_page(c, p);
	}
	return tpl + p * SNAP_PAGE;
}

static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

/* pwritev all of iov (n entries; changed in place) at off. */
static int pwritev_full(int fd, struct iovec *iov, int n, uint64_t off)
{
	while (n > 0) {
		ssize_t w = pwritev(fd, iov, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		off += (uint64_t)w;
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* Header and bitmap of a memory file (bits NULL: no page), written at
 * offset 0. */
static int write_head(int fd, uint64_t ram_bytes, uint64_t npages, const uint64_t *bits,
		      unsigned flags)
{
	uint64_t off = snap_mem_data_off(ram_bytes), words = (ram_bytes / SNAP_PAGE + 63) / 64;
	uint8_t *head = calloc(1, off);
	if (!head)
		return -ENOMEM;
	memcpy(head, SNAP_MEM_MAGIC, 8);
	put_le64(head + 8, ram_bytes);
	put_le64(head + 16, npages);
	head[24] = (uint8_t)flags;
	for (uint64_t w = 0; bits && w < words; w++)
		put_le64(head + SNAP_MEM_HDR + w * 8, bits[w]);
	struct iovec iov = {head, off};
	int r = pwritev_full(fd, &iov, 1, 0);
	free(head);
	return r;
}

int snap_mem_write_empty(int fd, uint64_t ram_bytes, unsigned flags)
{
	if (ftruncate(fd, (off_t)snap_mem_data_off(ram_bytes)) < 0)
		return -errno;
	return write_head(fd, ram_bytes, 0, NULL, flags);
}

/* Pages of the data area queued for one pwritev. */
struct out_queue {
	int fd;
	int kick;              /* start each write's writeback (sync_file_range) */
	uint64_t pos;          /* file offset of the next byte */
	struct iovec iov[IOV_BATCH];
	int n;
};

static int out_flush(struct out_queue *q)
{
	uint64_t len = 0;
	for (int i = 0; i < q->n; i++)
		len += q->iov[i].iov_len;
	int r = q->n ? pwritev_full(q->fd, q->iov, q->n, q->pos) : 0;
	/* Advisory: the caller's fsync reports what fails. */
	if (r == 0 && q->kick && len)
		sync_file_range(q->fd, (off_t)q->pos, (off_t)len, SYNC_FILE_RANGE_WRITE);
	q->pos += len;
	q->n = 0;
	return r;
}

/* Queue one page (p is valid until the next flush). */
static int out_page(struct out_queue *q, const unsigned char *p)
{
	if (q->n > 0 && (const unsigned char *)q->iov[q->n - 1].iov_base + q->iov[q->n - 1].iov_len == p) {
		q->iov[q->n - 1].iov_len += SNAP_PAGE;
		return 0;
	}
	if (q->n == (int)IOV_BATCH) {
		int r = out_flush(q);
		if (r < 0)
			return r;
	}
	q->iov[q->n].iov_base = (void *)p;
	q->iov[q->n].iov_len = SNAP_PAGE;
	q->n++;
	return 0;
}

/* Scan pid's pagemap over [start, start + npages pages) into priv. */
static int scan_private(pid_t pid, uint64_t start, uint64_t npages, uint64_t *priv,
			uint64_t *count)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	int pm = open(path, O_RDONLY | O_CLOEXEC);
	if (pm < 0)
		return -errno;
	uint64_t *ent = malloc(SCAN_BATCH * sizeof(uint64_t));
	int r = ent ? 0 : -ENOMEM;
	for (uint64_t p = 0; r == 0 && p < npages; p += SCAN_BATCH) {
		uint64_t n = npages - p < SCAN_BATCH ? npages - p : SCAN_BATCH;
		r = pread_full(pm, ent, (size_t)n * 8, (start / SNAP_PAGE + p) * 8);
		for (uint64_t i = 0; r == 0 && i < n; i++) {
			if ((ent[i] & (PM_PRESENT | PM_SWAP)) && !(ent[i] & PM_FILE)) {
				bit_set(priv, p + i);
				(*count)++;
			}
		}
	}
	free(ent);
	close(pm);
	return r;
}

/* One batch of a capture: up to IOV_BATCH runs of private pages, at most
 * MOVE_BATCH bytes, read into buf. */
struct read_batch {
	unsigned char *buf;
	struct iovec remote[IOV_BATCH];
	uint64_t first[IOV_BATCH];      /* each run's first page */
	int nrun;
	size_t used;
	int r;                          /* the read's result */
};

/*
 * The capture's reader: a thread that reads batch after batch of the
 * stopped VM's private pages (process_vm_readv) into two buffers in turn,
 * while the calling thread compares and writes the one read before, so
 * the read overlaps the comparing and writing instead of adding to them.
 */
struct reader {
	pid_t pid;
	uint64_t start, npages;
	const uint64_t *priv;
	struct read_batch b[2];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int filled[2];                  /* b[i] holds a batch for the writer */
	int done;                       /* no batch will come after these */
	int stop;                       /* the writer failed: stop reading */
	int64_t read_us;
};

/* Plan the batch that starts at or after *p into b; *p moves past it. */
static void plan_batch(const struct reader *rd, uint64_t *pp, struct read_batch *b)
{
	uint64_t p = *pp, npages = rd->npages;
	b->nrun = 0;
	b->used = 0;
	while (p < npages && b->nrun < (int)IOV_BATCH && b->used < MOVE_BATCH) {
		if (word_done(rd->priv, p)) {
			p = (p / 64 + 1) * 64;
			continue;
		}
		if (!bit_get(rd->priv, p)) {
			p++;
			continue;
		}
		uint64_t e = p;
		while (e < npages && bit_get(rd->priv, e) &&
		       b->used + (e - p + 1) * SNAP_PAGE <= MOVE_BATCH)
			e++;
		b->remote[b->nrun].iov_base = (void *)(uintptr_t)(rd->start + p * SNAP_PAGE);
		b->remote[b->nrun].iov_len = (size_t)(e - p) * SNAP_PAGE;
		b->first[b->nrun++] = p;
		b->used += (size_t)(e - p) * SNAP_PAGE;
		p = e;
	}
	*pp = p;
}

static void read_batch(struct reader *rd, struct read_batch *b)
{
	struct iovec local = {b->buf, b->used};
	int64_t t0 = util_now_us();
	ssize_t got = process_vm_readv(rd->pid, &local, 1, b->remote, (unsigned long)b->nrun, 0);
	b->r = got < 0 ? -errno : (size_t)got != b->used ? -EIO : 0;
	rd->read_us += util_now_us() - t0;
}

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	uint64_t p = 0;
	for (int k = 0;; k ^= 1) {
		pthread_mutex_lock(&rd->mu);
		while (rd->filled[k] && !rd->stop)
			pthread_cond_wait(&rd->cv, &rd->mu);
		int stop = rd->stop;
		pthread_mutex_unlock(&rd->mu);
		struct read_batch *b = &rd->b[k];
		if (!stop) {
			plan_batch(rd, &p, b);
			if (b->nrun)
				read_batch(rd, b);
		}
		pthread_mutex_lock(&rd->mu);
		int last = stop || b->nrun == 0 || b->r < 0;
		if (!stop && b->nrun)
			rd->filled[k] = 1;
		rd->done = last;
		pthread_cond_broadcast(&rd->cv);
		pthread_mutex_unlock(&rd->mu);
		if (last)
			return NULL;
	}
}

/* The writer's side of batch b: keep the pages that differ from the base
 * image (bits in kept), queue them and write them. */
static int keep_batch(const struct read_batch *b, const struct snapshot *base,
		      const unsigned char *tpl, struct out_queue *q, uint64_t *kept,
		      struct snap_pages_stats *st)
{
	int64_t t0 = util_now_us();
	const unsigned char *at = b->buf;
	int r = 0;
	for (int i = 0; r == 0 && i < b->nrun; i++) {
		uint64_t len = b->remote[i].iov_len / SNAP_PAGE;
		for (uint64_t k = 0; r == 0 && k < len; k++, at += SNAP_PAGE) {
			uint64_t pg = b->first[i] + k;
			if (!memcmp(at, snap_image_page(base, tpl, pg), SNAP_PAGE))
				continue;
			bit_set(kept, pg);
			st->stored_pages++;
			r = out_page(q, at);
		}
	}
	int64_t t1 = util_now_us();
	st->cmp_us += t1 - t0;
	if (r == 0)
		r = out_flush(q); /* b->buf is read into again after this */
	st->write_us += util_now_us() - t1;
	return r;
}

int snap_capture_pages(pid_t pid, uint64_t start, uint64_t ram_bytes,
		       const struct snapshot *base, const unsigned char *tpl, int out_fd,
		       unsigned flags, struct snap_pages_stats *st)
{
	memset(st, 0, sizeof(*st));
	uint64_t npages = ram_bytes / SNAP_PAGE, words = (npages + 63) / 64;
	uint64_t *priv = calloc(words, sizeof(uint64_t)), *kept = calloc(words, sizeof(uint64_t));
	struct reader *rd = calloc(1, sizeof(*rd));
	struct out_queue *q = malloc(sizeof(*q));
	int r = priv && kept && rd && q ? 0 : -ENOMEM;
	for (int i = 0; r == 0 && i < 2; i++)
		if (!(rd->b[i].buf = malloc(MOVE_BATCH)))
			r = -ENOMEM;
	int64_t t0 = util_now_us();
	if (r == 0)
		r = scan_private(pid, start, npages, priv, &st->private_pages);
	int64_t t1 = util_now_us();
	st->scan_us = t1 - t0;
	if (r == 0) {
		*q = (struct out_queue){.fd = out_fd,
					.kick = !!(flags & SNAP_CAPTURE_WRITEBACK),
					.pos = snap_mem_data_off(ram_bytes)};
		rd->pid = pid;
		rd->start = start;
		rd->npages = npages;
		rd->priv = priv;
		pthread_mutex_init(&rd->mu, NULL);
		pthread_cond_init(&rd->cv, NULL);
		pthread_t th;
		int threaded = pthread_create(&th, NULL, reader_main, rd) == 0;
		/* Without a thread, read and write in turn on this one. */
		for (uint64_t p = 0; r == 0 && !threaded;) {
			plan_batch(rd, &p, &rd->b[0]);
			if (!rd->b[0].nrun)
				break;
			read_batch(rd, &rd->b[0]);
			r = rd->b[0].r < 0 ? rd->b[0].r : keep_batch(&rd->b[0], base, tpl, q, kept, st);
		}
		for (int k = 0; r == 0 && threaded; k ^= 1) {
			pthread_mutex_lock(&rd->mu);
			while (!rd->filled[k] && !rd->done)
				pthread_cond_wait(&rd->cv, &rd->mu);
			int have = rd->filled[k];
			pthread_mutex_unlock(&rd->mu);
			if (!have) {
				r = rd->b[k].r; /* the reader's failure, or 0 at the end */
				break;
			}
			r = rd->b[k].r < 0 ? rd->b[k].r : keep_batch(&rd->b[k], base, tpl, q, kept, st);
			pthread_mutex_lock(&rd->mu);
			rd->filled[k] = 0;
			if (r < 0)
				rd->stop = 1;
			pthread_cond_broadcast(&rd->cv);
			pthread_mutex_unlock(&rd->mu);
		}
		if (threaded) {
			pthread_mutex_lock(&rd->mu);
			rd->stop = 1;
			pthread_cond_broadcast(&rd->cv);
			pthread_mutex_unlock(&rd->mu);
			pthread_join(th, NULL);
		}
		pthread_cond_destroy(&rd->cv);
		pthread_mutex_destroy(&rd->mu);
		st->read_us = rd->read_us;
	}
	/* A warm-up pass may have left a longer file. */
	if (r == 0 && ftruncate(out_fd, (off_t)q->pos) < 0)
		r = -errno;
	if (r == 0 && !(flags & SNAP_CAPTURE_WARMUP))
		r = write_head(out_fd, ram_bytes, st->stored_pages, kept, 0);
	st->copy_us = util_now_us() - t1;
	free(priv);
	free(kept);
	if (rd)
		for (int i = 0; i < 2; i++)
			free(rd->b[i].buf);
	free(rd);
	free(q);
	return r;
}

/* Runs of pages queued for one process_vm_writev: the guest's side
 * (remote) and ours (local) each merge what is contiguous on its side. */
struct in_queue {
	pid_t pid;
	uint64_t start;
	struct iovec remote[IOV_BATCH], local[IOV_BATCH];
	int nremote, nlocal;
	size_t used;
};

static int in_flush(struct in_queue *q, uint64_t *bytes)
{
	if (q->used) {
		ssize_t w = process_vm_writev(q->pid, q->local, (unsigned long)q->nlocal, q->remote,
					      (unsigned long)q->nremote, 0);
		if (w < 0)
			return -errno;
		if ((size_t)w != q->used)
			return -EIO;
		*bytes += q->used;
	}
	q->nremote = q->nlocal = 0;
	q->used = 0;
	return 0;
}

/* Queue page p of the guest's RAM, its bytes at from. */
static int in_page(struct in_queue *q, uint64_t p, const unsigned char *from, uint64_t *bytes)
{
	uintptr_t to = (uintptr_t)(q->start + p * SNAP_PAGE);
	struct iovec *r = q->nremote ? &q->remote[q->nremote - 1] : NULL;
	struct iovec *l = q->nlocal ? &q->local[q->nlocal - 1] : NULL;
	int join_r = r && (uintptr_t)r->iov_base + r->iov_len == to;
	int join_l = l && (const unsigned char *)l->iov_base + l->iov_len == from;
	if (q->used >= MOVE_BATCH || (!join_r && q->nremote == (int)IOV_BATCH) ||
	    (!join_l && q->nlocal == (int)IOV_BATCH)) {
		int e = in_flush(q, bytes);
		if (e < 0)
			return e;
		join_r = join_l = 0;
	}
	if (join_r)
		q->remote[q->nremote - 1].iov_len += SNAP_PAGE;
	else
		q->remote[q->nremote++] = (struct iovec){(void *)to, SNAP_PAGE};
	if (join_l)
		q->local[q->nlocal - 1].iov_len += SNAP_PAGE;
	else
		q->local[q->nlocal++] = (struct iovec){(void *)from, SNAP_PAGE};
	q->used += SNAP_PAGE;
	return 0;
}

/*
 * Each page of the chain is written once, from the nearest level holding
 * it: a chain of forks of one sandbox holds many pages at several levels,
 * and writing every level root first wrote those pages again each time.
 */
int snap_write_pages(pid_t pid, uint64_t start, const struct snapshot *s,
		     const struct snapshot *upto, uint64_t *bytes)
{
	*bytes = 0;
	const struct snapshot *chain[SNAP_CHAIN_MAX];
	int n = 0;
	for (const struct snapshot *c = s; c && c != upto; c = c->parent) {
		if (n == SNAP_CHAIN_MAX)
			return -ELOOP;
		chain[n++] = c;
	}
	if (n == 0)
		return 0;
	uint64_t pages = s->ram_bytes / SNAP_PAGE, words = (pages + 63) / 64;
	uint64_t *all = n > 1 ? calloc(words, sizeof(uint64_t)) : NULL;
	struct in_queue *q = malloc(sizeof(*q));
	int r = q && (n == 1 || all) ? 0 : -ENOMEM;
	const uint64_t *present = n == 1 ? s->present : all;
	for (int i = 0; r == 0 && n > 1 && i < n; i++)
		for (uint64_t w = 0; w < words; w++)
			all[w] |= chain[i]->present[w];
	if (q)
		*q = (struct in_queue){.pid = pid, .start = start};
	for (uint64_t p = 0; r == 0 && p < pages; p++) {
		if (word_done(present, p)) {
			p = (p / 64 + 1) * 64 - 1;
			continue;
		}
		if (!bit_get(present, p))
			continue;
		int i = 0;
		while (!bit_get(chain[i]->present, p))
			i++;
		r = in_page(q, p, level_page(chain[i], p), bytes);
	}
	if (r == 0)
		r = in_flush(q, bytes);
	free(all);
	free(q);
	return r;
}

void snap_lay_chain(const struct snapshot *s, unsigned char *ram, uint64_t *copied)
{
	const struct snapshot *chain[SNAP_CHAIN_MAX];
	int n = 0;
	for (const struct snapshot *c = s; c && n < SNAP_CHAIN_MAX; c = c->parent)
		chain[n++] = c;
	while (n > 0) {
		const struct snapshot *c = chain[--n];
		uint64_t pages = c->ram_bytes / SNAP_PAGE;
		for (uint64_t p = 0; p < pages; p++) {
			if (word_done(c->present, p)) {
				p = (p / 64 + 1) * 64 - 1;
				continue;
			}
			if (bit_get(c->present, p)) {
				memcpy(ram + p * SNAP_PAGE, level_page(c, p), SNAP_PAGE);
				*copied += SNAP_PAGE;
			}
		}
	}
}

int snap_write_union(const struct snapshot *s, int out_fd)
{
	uint64_t pages = s->ram_bytes / SNAP_PAGE, words = (pages + 63) / 64, count = 0;
	uint64_t *all = calloc(words, sizeof(uint64_t));
	struct out_queue *q = malloc(sizeof(*q));
	int r = all && q ? 0 : -ENOMEM;
	for (const struct snapshot *c = s; r == 0 && c; c = c->parent)
		for (uint64_t w = 0; w < words; w++)
			all[w] |= c->present[w];
	if (q) {
		q->fd = out_fd;
		q->kick = 0;
		q->pos = snap_mem_data_off(s->ram_bytes);
		q->n = 0;
	}
	for (uint64_t p = 0; r == 0 && p < pages; p++) {
		if (!bit_get(all, p))
			continue;
		const struct snapshot *c = s;
		while (!bit_get(c->present, p))
			c = c->parent;
		r = out_page(q, level_page(c, p));
		count++;
	}
	if (r == 0)
		r = out_flush(q);
	if (r == 0)
		r = write_head(out_fd, s->ram_bytes, count, all,
			       s->incomplete ? SNAP_MEM_INCOMPLETE : 0);
	free(all);
	free(q);
	return r;
}
