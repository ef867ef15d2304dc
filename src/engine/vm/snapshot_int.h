/*
 * snapshot_int.h - inside a loaded snapshot, and the page work shared by
 * the capture (snapshot_capture.c), the restore and the merged memfd
 * (snapshot.c) and the flatten (snapshot_flatten.c).  Engine-internal.
 *
 * Pages are 4096 bytes; offsets are bytes from the start of guest RAM.
 * Kernel interfaces: proc(5) /proc/<pid>/maps, /proc/<pid>/pagemap
 * (Documentation/admin-guide/mm/pagemap.rst: bit 63 present, 62 swapped,
 * 61 file-page or shared-anon), /proc/<pid>/mem, process_vm_readv(2),
 * lseek(2) SEEK_DATA / SEEK_HOLE.  Reading or writing a jailed QEMU's
 * memory needs CAP_SYS_PTRACE (it is not dumpable): the daemon runs as
 * root.
 */
#ifndef PANDASTACK_ENGINE_SNAPSHOT_INT_H
#define PANDASTACK_ENGINE_SNAPSHOT_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/qemu/qcow2.h"
#include "engine/template/template.h"
#include "engine/vm/snapshot.h"

#define SNAP_PAGE 4096u
#define SNAPSHOT_FORMAT 1
#define SNAPSHOT_JSON_MAX (64u * 1024u)
/* Most levels of a chain the page code walks (a disk chain is shorter:
 * QCOW2_CHAIN_MAX). */
#define SNAP_CHAIN_MAX 32

/*
 * The memory file of a snapshot (`memory`): a header, the bitmap of the
 * RAM pages it holds, then those pages in RAM order (packed: written
 * sequentially, which a sparse file with scattered pages is not):
 *   0   8 bytes  SNAP_MEM_MAGIC
 *   8   u64 LE   RAM size, bytes (a multiple of SNAP_PAGE)
 *   16  u64 LE   pages held (the bitmap's population count)
 *   24  1 byte   flags: SNAP_MEM_INCOMPLETE or 0
 *   25  39 bytes zero
 *   64  u64 LE words: bit p of word p/64 set = page p is held
 *   data_off (the above rounded up to SNAP_PAGE): the pages
 * The file is outside input: snap_mem_check checks all of it but the
 * pages themselves.
 */
#define SNAP_MEM_MAGIC "PSMEM\0\0\1"
#define SNAP_MEM_HDR 64u
/* Not a whole capture: a capture's file until its pages are written, and
 * what vm_snapshot_settle keeps of one a crash cut short after the disk
 * was frozen.  Such a file holds no pages, so the level stands for its
 * parent's RAM image (a later capture of the VM compares against that and
 * stores what differs), and nothing may be restored from it: its device
 * state, if any, is not of that RAM.  A flatten keeps the flag. */
#define SNAP_MEM_INCOMPLETE 1u

/* snap_mem_data_off - where the pages start in a memory file for
 * ram_bytes of RAM. */
uint64_t snap_mem_data_off(uint64_t ram_bytes);

/*
 * snap_mem_check - check the first len bytes of a memory file of
 * file_size bytes against ram_bytes: magic, size, flags, bitmap (len must
 * cover it: snap_mem_data_off bytes) and page count.  0 with *npages and
 * *flags, or -EINVAL.  Pure.
 */
int snap_mem_check(const uint8_t *head, size_t len, uint64_t file_size, uint64_t ram_bytes,
		   uint64_t *npages, unsigned *flags);

/*
 * snap_mem_write_empty - make fd a memory file for ram_bytes that holds no
 * page, with flags (0 or SNAP_MEM_INCOMPLETE): truncated to its header,
 * which is written in place (a file whose header was written before needs
 * no new block, so this works on a full disk).  0 or -errno.
 */
int snap_mem_write_empty(int fd, uint64_t ram_bytes, unsigned flags);

struct snapshot {
	char dir[PATH_MAX];
	char key[SNAPSHOT_KEY_HEX + 1];
	char parent_key[SNAPSHOT_KEY_HEX + 1];  /* "" without a parent */
	char template_name[MANIFEST_NAME_MAX];
	char template_key[65];
	uint64_t ram_bytes;
	const struct snapshot *parent;          /* borrowed; NULL at depth 0 */
	int depth;
	char state[PATH_MAX];
	char memory[PATH_MAX];
	char disk[PATH_MAX];
	char seed[PATH_MAX];                    /* "" when missing */
	char disk_chain[QCOW2_CHAIN_MAX][PATH_MAX]; /* the layers below disk */
	int ndisk_chain;
	/* Its pages (snap_level_load): */
	int mem_file;                           /* memory, O_RDONLY, kept open */
	uint64_t *present;                      /* the bitmap */
	uint32_t *rank;                         /* pages held before each bitmap word */
	uint64_t npages;                        /* pages held */
	int incomplete;                         /* SNAP_MEM_INCOMPLETE: never restored */
	const unsigned char *data;              /* the pages, mapped read-only (NULL: none) */
	/* The merged image (snapshot_memory_fd): */
	pthread_mutex_t mem_lock;               /* guards making it */
	int mem_fd;                             /* the sealed memfd, or -1 */
	const unsigned char *merged;            /* its read-only mapping, or NULL */
};

/* snap_read_json - dir/snapshot.json's key (into key, keylen bytes) and
 * RAM size.  0 or -errno (-EINVAL: bad fields). */
int snap_read_json(const char *dir, char *key, size_t keylen, uint64_t *ram_bytes);

/*
 * snap_level_load - read s->mem_file (s->ram_bytes set): check it, load
 * its bitmap and rank table, map its pages.  0 or -errno (-EINVAL: not a
 * valid memory file).
 */
int snap_level_load(struct snapshot *s);

/* snap_level_free - what snap_level_load made. */
void snap_level_free(struct snapshot *s);

/*
 * snap_find_ram - the start address of pid's guest RAM mapping: the one
 * file-backed mapping of exactly ram_bytes at file offset 0 (QEMU maps the
 * template's memfd or memory file there).  0 with *start, -ENOENT (none),
 * -EEXIST (more than one), -errno reading maps.
 */
int snap_find_ram(pid_t pid, uint64_t ram_bytes, uint64_t *start);

/* snap_merged - s's merged image mapping, or NULL (read atomically: it is
 * set once, by snapshot_memory_fd, while other threads read). */
const unsigned char *snap_merged(const struct snapshot *s);

/*
 * snap_image_page - page p of the RAM image of s (NULL: the template's,
 * tpl: the template's memory file mapped read-only): the nearest level
 * holding it, a merged image, or the template.  Pure lookup.
 */
const unsigned char *snap_image_page(const struct snapshot *s, const unsigned char *tpl,
				     uint64_t p);

/* What snap_capture_pages found. */
struct snap_pages_stats {
	uint64_t private_pages, stored_pages;
	int64_t scan_us, copy_us;
	int64_t read_us, cmp_us, write_us; /* parts of copy_us */
};

/* Flags of snap_capture_pages. */
#define SNAP_CAPTURE_WRITEBACK 1u /* the caller will fsync out_fd: start each batch's
				     writeback as it is written (sync_file_range) */
#define SNAP_CAPTURE_WARMUP 2u    /* the VM still runs: a pass whose only use is to
				     bring its pages and the file's into memory */

/*
 * snap_capture_pages - with the VM pid stopped and its RAM at start
 * (ram_bytes long): every private page (present or swapped, not
 * file-backed, per /proc/<pid>/pagemap) that differs from the RAM image of
 * base (snap_image_page) is written into out_fd, a new memory file, which
 * ends after the last page written (ftruncate).  Reads on a thread it
 * starts and joins (two 8 MiB buffers in turn) while the calling thread
 * compares and writes.  flags: SNAP_CAPTURE_WRITEBACK overlaps the
 * writeback with the rest of the capture; SNAP_CAPTURE_WARMUP (the VM need
 * not be stopped) writes the pages but not the header, so a file created
 * incomplete (snap_mem_write_empty) stays so: the paused pass that must
 * follow rewrites the same file, and finds the pages it reads and writes
 * already in memory.  0 or -errno (-ENOSPC and friends from the writes).
 */
int snap_capture_pages(pid_t pid, uint64_t start, uint64_t ram_bytes,
		       const struct snapshot *base, const unsigned char *tpl, int out_fd,
		       unsigned flags, struct snap_pages_stats *st);

/*
 * snap_write_pages - write the pages of s's chain (levels at or below
 * `upto` skipped, NULL: none) into the RAM of process pid at start
 * (process_vm_writev): each page once, the nearest level's, so the RAM
 * ends as if every level were written root first.  *bytes gets how many
 * were written.  0 or -errno.
 */
int snap_write_pages(pid_t pid, uint64_t start, const struct snapshot *s,
		     const struct snapshot *upto, uint64_t *bytes);

/* snap_lay_chain - copy the pages of s's chain, root first, into ram (a
 * writable mapping of the RAM's size).  *copied counts bytes. */
void snap_lay_chain(const struct snapshot *s, unsigned char *ram, uint64_t *copied);

/*
 * snap_write_union - write into out_fd (a new file) a memory file holding
 * every page of s's chain (the nearest level's), so s needs no ancestor;
 * an incomplete s stays incomplete.  0 or -errno.
 */
int snap_write_union(const struct snapshot *s, int out_fd);

/*
 * snap_write_json - write dir/snapshot.json for key, parent_key ("" none),
 * template t (durable: temp file, fsync, rename).  0 or -errno.
 */
int snap_write_json(const char *dir, const char *key, const char *parent_key,
		    const struct template *t);

#endif
