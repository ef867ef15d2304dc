/*
 * template.h - baked templates: the directory <cache>/templates/<name>/ with
 *   memory         raw guest RAM (memory-backend-file, shared by clones)
 *   state          QEMU migration stream without RAM (x-ignore-shared)
 *   disk.qcow2     the frozen disk layer the guest saw
 *   template.json  QEMU version, machine arguments, memory size, vCPUs,
 *                  kernel/initramfs/rootfs hashes, recipe key, created at
 * and the bake that makes one (boot, wait for the agent, warm, migrate).
 *
 * Threads: a loaded struct template is immutable and may be shared by any
 * number of threads.  template_bake runs on one thread and takes minutes.
 */
#ifndef PANDASTACK_TEMPLATE_H
#define PANDASTACK_TEMPLATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/qemu/accel.h"
#include "engine/qemu/qemu_args.h" /* struct machine_spec */
#include "engine/qemu/strv.h"
#include "engine/template/manifest.h"

struct template;

/*
 * template_open - load and check <cache>/templates/<name>/template.json.
 * The template's recorded QEMU version and machine arguments must equal the
 * ones this engine would use now with accelerator accel (ACCEL_AUTO is
 * resolved with accel_resolve first).
 * Returns 0 with *out (free with template_free), -ENOENT (not baked),
 * -EINVAL (bad or hostile template.json; err says what), -ESTALE (baked by
 * another QEMU version or with other machine arguments: err names both).
 */
int template_open(const char *cache_dir, const char *name, enum accel_kind accel,
		  struct template **out, char *err, size_t errlen);

void template_free(struct template *t);

/* Accessors (borrowed strings, valid while t lives). */
const char *template_name(const struct template *t);
const char *template_dir(const struct template *t);
/* The bake's identity (64 hex digits): SHA-256 of its state file, which
 * differs between any two bakes, even of the same inputs.  Snapshots of a
 * template's sandboxes are tied to it (their pages sit on that bake's
 * RAM). */
const char *template_bake_id(const struct template *t);

/*
 * template_changed_on_disk - 1 if the bake in t's folder is no longer the
 * one t was opened from (its state file was replaced, changed or removed:
 * a bake outside this process, such as `make templates` beside a running
 * daemon), else 0.  One stat(2); an error other than a missing file reads
 * as no change.  Any thread.
 */
int template_changed_on_disk(const struct template *t);
unsigned template_memory_mib(const struct template *t);
/* What one sandbox's disk overlay may grow to, bytes (template.json
 * "disk_cap_mib", default JAIL_DEFAULT_DISK_CAP_MIB). */
uint64_t template_disk_cap_bytes(const struct template *t);
unsigned template_vcpus(const struct template *t);
enum accel_kind template_accel(const struct template *t);
/* The machine it was baked for (memory, vCPUs, accelerator, TB size). */
const struct machine_spec *template_spec(const struct template *t);
/* Its files: RAM (mapped private by every sandbox of it), device state, and
 * the frozen disk layer with the layers below it (0..QCOW2_CHAIN_MAX, i <
 * template_disk_chain_len). */
const char *template_memory_path(const struct template *t);
const char *template_state_path(const struct template *t);
const char *template_disk_path(const struct template *t);
int template_disk_chain_len(const struct template *t);
const char *template_disk_layer(const struct template *t, int i);
/* The QEMU version that baked it. */
const char *template_qemu_version(const struct template *t);

/*
 * template_list - names of baked templates under cache_dir (directories
 * with a template.json).  *names is a NULL-terminated array owned by the
 * caller (free each, then the array).  Returns the count or -errno.
 */
int template_list(const char *cache_dir, char ***names);

/* Format number written in template.json. */
#define TEMPLATE_FORMAT 1
/* Longest QEMU version string kept (template_qemu_version). */
#define QEMU_VERSION_MAX 128

/* ---- the template format and its files, for the parts that make and use
 * templates (the bake, VM launches, snapshots) ------------------------------ */
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


/* template_read_key - the "key" of an existing template.json (for bake-all's
 * staleness check) into out (65 bytes).  0, -ENOENT, -EINVAL. */
int template_read_key(const char *cache_dir, const char *name, char out[65]);

#endif
