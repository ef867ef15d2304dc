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

#include "engine/accel.h"

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

/*
 * template_list - names of baked templates under cache_dir (directories
 * with a template.json).  *names is a NULL-terminated array owned by the
 * caller (free each, then the array).  Returns the count or -errno.
 */
int template_list(const char *cache_dir, char ***names);

/* Progress lines of a bake ("booting", "warming", ...) go here. */
typedef void (*template_progress_fn)(void *arg, const char *line);

/*
 * template_bake - build <cache>/templates/<name>/ from the image
 * <cache>/images/<name>.json (written by `make images`): boot with guest
 * RAM in a share=on memory file, wait for the agent, restore message, warm
 * (the manifest's "warm" Python code run as `python3 -c` through an exec, so
 * its pages are in the snapshot; code-interpreter imports pandas and
 * matplotlib.pyplot; keeping a Jupyter kernel warm is a later step),
 * x-ignore-shared, stop, migrate the state to a file, freeze the disk layer,
 * write template.json last (a half-baked template is never loadable).
 * A boot that hangs is retried up to 3 times.  Under TCG the kernel command
 * line gets tsc_early_khz=<host TSC rate> (host_tsc.h).  Skips the work and
 * returns 0 if an up-to-date template (same key) exists unless force.
 * progress gets one line per step (may be NULL).
 * Returns 0 or -errno with err filled.
 */
int template_bake(const char *cache_dir, const char *name, enum accel_kind accel,
		  int force, template_progress_fn progress, void *arg,
		  char *err, size_t errlen);

#endif
