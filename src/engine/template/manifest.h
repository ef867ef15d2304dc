/*
 * manifest.h - the image manifest <cache>/images/<name>.json written by
 * `make images` (images/README.md, images/build.sh): where the kernel,
 * initramfs and root image of a template are, the machine size, the
 * warm-up code and the recipe key.  The file is outside input: every
 * field is type-checked and capped.
 * Threads: any; a loaded manifest is owned by its caller.
 */
#ifndef PANDASTACK_MANIFEST_H
#define PANDASTACK_MANIFEST_H

#include <limits.h>
#include <stddef.h>

/* Template names: [a-z0-9][a-z0-9-]{0,62} (same rule as images/build.sh). */
#define MANIFEST_NAME_MAX 64
#define MANIFEST_CMDLINE_MAX 2048
#define MANIFEST_WARM_MAX 16384
#define MANIFEST_FILE_MAX (256u * 1024u)
/* Most warm code-context kernels a template may hold (the agent's limit). */
#define MANIFEST_WARM_KERNELS_MAX 8

struct manifest {
	char name[MANIFEST_NAME_MAX];
	char key[65];              /* SHA-256 hex of the recipe */
	char kernel[PATH_MAX];     /* absolute path of vmlinux */
	char kernel_sha256[65];
	char initramfs[PATH_MAX];
	char initramfs_sha256[65];
	char rootfs[PATH_MAX];     /* raw ext4 image */
	char rootfs_key[65];
	char cmdline[MANIFEST_CMDLINE_MAX];
	char warm[MANIFEST_WARM_MAX]; /* Python code to run before the snapshot, or "" */
	unsigned warm_kernels;     /* warm kernels in the snapshot (0..8; absent: 1) */
	unsigned memory_mib;
	unsigned vcpus;
	unsigned disk_cap_mib;     /* what a sandbox's overlay may grow to (absent: 0, the default) */
};

/* manifest_name_ok - 1 if name follows the template name rule. */
int manifest_name_ok(const char *name);

/*
 * manifest_load - read and check <cache_dir>/images/<name>.json into *m.
 * Returns 0, -ENOENT (no manifest: run `make images`), -EINVAL (bad
 * name, bad JSON, a field missing, of the wrong type, too long or out of
 * range; err says which), -EFBIG (file over MANIFEST_FILE_MAX).
 */
int manifest_load(const char *cache_dir, const char *name, struct manifest *m,
		  char *err, size_t errlen);

#endif
