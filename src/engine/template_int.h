/*
 * template_int.h - the engine's view inside a loaded template (shared by
 * template.c, bake.c, vm_launch.c and pool.c; not for other parts).
 */
#ifndef PANDASTACK_TEMPLATE_INT_H
#define PANDASTACK_TEMPLATE_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "engine/manifest.h"
#include "engine/qcow2.h"
#include "engine/qemu_args.h"
#include "engine/strv.h"
#include "engine/template.h"

/* Format number written in template.json. */
#define TEMPLATE_FORMAT 1
#define TEMPLATE_JSON_MAX (256u * 1024u)
#define QEMU_VERSION_MAX 128
/* The largest state file accepted (a few hundred KiB in practice). */
#define TEMPLATE_STATE_MAX (16u * 1024u * 1024u)

struct template {
	char name[MANIFEST_NAME_MAX];
	char dir[PATH_MAX];          /* <cache>/templates/<name> */
	char key[65];
	char bake_id[65];            /* SHA-256 of state: this bake (template_bake_id) */
	struct stat state_st;        /* state's identity when opened (template_changed_on_disk) */
	char qemu_version[QEMU_VERSION_MAX];
	struct machine_spec spec;    /* memory, vCPUs, accel, tb size */
	struct strv machine_args;    /* as recorded (equal to the current ones) */
	char memory[PATH_MAX];       /* <dir>/memory */
	char state[PATH_MAX];        /* <dir>/state */
	char disk[PATH_MAX];         /* <dir>/disk.qcow2 */
	char seed[PATH_MAX];         /* <dir>/overlay-seed.qcow2, "" if none */
	char disk_chain[QCOW2_CHAIN_MAX][PATH_MAX]; /* the files below disk.qcow2 */
	int ndisk_chain;
	uint64_t disk_cap_bytes;     /* what a sandbox's overlay may grow to */
	pthread_mutex_t mem_lock;    /* guards mem_fd */
	int mem_fd;                  /* sealed copy of memory, -1 until first asked */
};

/*
 * template_memory_fd - the template's guest RAM as a sealed memfd
 * (template_memfd.c), made at the first call (the non-zero pages of
 * <dir>/memory are copied: about a second per GiB written) and kept until
 * template_free.  The descriptor is CLOEXEC and owned by t.  Any thread.
 * Returns the descriptor, or -errno (-EINVAL: the file's size is not the
 * template's RAM).
 */
int template_memory_fd(const struct template *t);

/*
 * engine_memfd_new - a new memfd named name (CLOEXEC, sealable) with size
 * bytes allocated (fallocate: see template_memfd.c for why a RAM image is
 * populated in full).  Returns the descriptor or -errno.
 */
int engine_memfd_new(const char *name, uint64_t size);

/* engine_memfd_seal - F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK |
 * F_SEAL_SEAL on fd: nothing can write it any more.  0 or -errno. */
int engine_memfd_seal(int fd);

/*
 * engine_copy_nonzero - copy the non-zero pages of in's data extents (size
 * bytes) into out at their offsets; holes and zero pages are skipped.
 * *copied counts bytes written.  0 or -errno.
 */
int engine_copy_nonzero(int in, int out, off_t size, uint64_t *copied);

/*
 * engine_qemu_version - "7.2.22 (Debian 1:7.2+dfsg-...)" of the QEMU this
 * engine runs (from `qemu --version`, run once per process and cached).
 * Returns 0 or -errno.  Any thread.
 */
int engine_qemu_version(char *buf, size_t buflen);

/*
 * engine_machine_spec - the machine this engine uses now for a template of
 * memory_mib and vcpus under accel (KVM or TCG): adds the TCG
 * translation-buffer size ($PANDASTACK_TB_MIB, default QEMU_DEFAULT_TB_MIB).
 */
void engine_machine_spec(unsigned memory_mib, unsigned vcpus, enum accel_kind accel,
			 struct machine_spec *out);

/*
 * template_key_compute - the template key: SHA-256 hex over the image
 * manifest key, the QEMU version and the machine arguments, so a change
 * of any makes the template stale.  out is 65 bytes.  0 or -errno.
 */
int template_key_compute(const char *manifest_key, const char *qemu_version,
			 const struct strv *machine_args, char out[65]);

/*
 * template_overlay_create - make path a new empty qcow2 overlay on the
 * template's disk layer: a copy of the overlay seed when there is one,
 * else `qemu-img create -b`.  Returns 0 or -errno.
 */
int template_overlay_create(const struct template *t, const char *path);

/* engine_copy_file - copy the file from into to (created with mode; must
 * not exist; removed again on failure).  0 or -errno. */
int engine_copy_file(const char *from, const char *to, unsigned mode);

/*
 * engine_overlay_create - make path a new empty qcow2 overlay on the layer
 * disk: a copy of seed (an empty overlay on disk made earlier; NULL or ""
 * when there is none), else `qemu-img create -b disk`.  0 or -errno.
 */
int engine_overlay_create(const char *seed, const char *disk, const char *path);

/*
 * engine_boot_cmdline - the kernel command line a cold boot of manifest m
 * uses under accel: the manifest's, plus tsc_early_khz=<host rate> under
 * TCG (see host_tsc.h).  out gets outlen bytes (MANIFEST_CMDLINE_MAX + 64
 * always fits).
 */
void engine_boot_cmdline(const struct manifest *m, enum accel_kind accel, char *out,
			 size_t outlen);

/* template_read_key - the "key" of an existing template.json (for bake-all's
 * staleness check) into out (65 bytes).  0, -ENOENT, -EINVAL. */
int template_read_key(const char *cache_dir, const char *name, char out[65]);

#endif
