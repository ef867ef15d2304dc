/*
 * template_int.h - a loaded template's fields (template.c, template_memfd.c);
 * every other part uses template.h's accessors.
 */
#ifndef PANDASTACK_TEMPLATE_INT_H
#define PANDASTACK_TEMPLATE_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "engine/qemu/qcow2.h"
#include "engine/qemu/qemu_args.h"
#include "engine/qemu/strv.h"
#include "engine/template/manifest.h"
#include "engine/template/template.h"

#define TEMPLATE_JSON_MAX (256u * 1024u)
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

#endif
