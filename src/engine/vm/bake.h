/*
 * bake.h - making a template: boot an image, warm it, save its RAM, device
 * state and disk as <cache>/templates/<name>/ (the format: template.h).
 * Threads: any, one bake of a name at a time.
 */
#ifndef PANDASTACK_ENGINE_BAKE_H
#define PANDASTACK_ENGINE_BAKE_H

#include <stddef.h>

#include "engine/qemu/accel.h"
#include "engine/template/manifest.h"

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

/*
 * engine_boot_cmdline - the kernel command line a cold boot of manifest m
 * uses under accel: the manifest's, plus tsc_early_khz=<host rate> under
 * TCG (see host_tsc.h).  out gets outlen bytes (MANIFEST_CMDLINE_MAX + 64
 * always fits).
 */
void engine_boot_cmdline(const struct manifest *m, enum accel_kind accel, char *out,
			 size_t outlen);

#endif
