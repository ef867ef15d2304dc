/*
 * qemu_args.h - QEMU command lines for the engine: the machine arguments
 * (what must be identical between a bake and every restore of its
 * template, since the migration stream only fits the same machine) and the
 * per-instance arguments (paths, sockets, memory sharing, -incoming).
 *
 * Shape (docs/engine.md "Command line" explains the choices):
 *   machine:  -M microvm,x-option-roms=off,memory-backend=mem -m N[M] -smp N
 *             -accel tcg,tb-size=N | -accel kvm  -cpu ...  -nodefaults
 *             -no-user-config -no-reboot -display none, the -device list
 *   instance: -sandbox on,obsolete=deny,...  -object memory-backend-file
 *             (share=on for a bake, share=off for clones) -blockdev (disk)
 *             -netdev tap,fd=N (the NIC's backend)
 *             -chardev socket (QMP, agent) -chardev stdio (console)
 *             -kernel/-initrd/-append (bake only: a restore never boots)
 *             -incoming defer (clones), and for a clone of a snapshot
 *             -global migration.send-configuration=off
 * Paths are written into QEMU option strings with commas doubled, which is
 * how QEMU's option parser escapes them.
 *
 * Pure computation: no I/O; any thread.
 */
#ifndef PANDASTACK_QEMU_ARGS_H
#define PANDASTACK_QEMU_ARGS_H

#include <stddef.h>

#include "engine/qemu/accel.h"
#include "engine/qemu/strv.h"

/* The guest NIC's MAC, the same in every sandbox (netslot.h). */
#define QEMU_GUEST_MAC "52:54:00:12:34:56"

/* The virtio-serial port name the agent listens on (guest side). */
#define QEMU_AGENT_PORT_NAME "org.pandastack.agent"

/* Default TCG translation buffer, MiB (QEMU's own default is 1 GiB of
 * address space that fills as code is translated; see bench/ figures). */
#define QEMU_DEFAULT_TB_MIB 64u

/* Limits on what a manifest may ask for. */
#define QEMU_MAX_MEMORY_MIB (64u * 1024u)
#define QEMU_MAX_VCPUS 64u

/* What the guest machine is: everything that must match at restore. */
struct machine_spec {
	unsigned memory_mib;     /* guest RAM, MiB (1..QEMU_MAX_MEMORY_MIB) */
	unsigned vcpus;          /* 1..QEMU_MAX_VCPUS */
	enum accel_kind accel;   /* ACCEL_KVM or ACCEL_TCG (not AUTO) */
	unsigned tb_size_mib;    /* TCG translation buffer, MiB; 0 = QEMU's default */
};

enum qemu_role {
	QEMU_ROLE_BAKE = 0,      /* cold boot, memory file share=on */
	QEMU_ROLE_CLONE = 1,     /* restore target: share=off, -incoming defer */
};

/* Where one QEMU process keeps its things (borrowed strings). */
struct qemu_instance {
	enum qemu_role role;
	const char *sock_dir;    /* qmp.sock and agent.sock are made here */
	const char *mem_path;    /* the template's memory file (/proc/self/fd/N for a memfd) */
	const char *disk;        /* bake: disk.qcow2; clone: overlay.qcow2 */
	int tap_fd;              /* the NIC's tap (netslot.h), inherited by QEMU; >= 0 */
	int no_send_config;      /* clone: its state has no configuration section (a
				  * snapshot's device state, snapshot.h) */
	const char *kernel;      /* bake only: vmlinux (PVH) */
	const char *initrd;      /* bake only: initramfs */
	const char *append;      /* bake only: kernel command line */
};

/*
 * qemu_machine_args - append the machine arguments for m to out.
 * Returns 0, -EINVAL (memory, vcpus or accel out of range), -ENOMEM.
 */
int qemu_machine_args(const struct machine_spec *m, struct strv *out);

/*
 * qemu_command_line - the whole argv: qemu_bin, the machine arguments,
 * then the instance arguments.  Returns 0, -EINVAL (missing path for the
 * role, relative path), -E2BIG (a path over PATH_MAX), -ENOMEM.
 */
int qemu_command_line(const char *qemu_bin, const struct machine_spec *m,
		      const struct qemu_instance *inst, struct strv *out);

/*
 * qemu_opt_escape - in with every ',' doubled into out (outlen bytes,
 * NUL-terminated).  Returns the length written, or -E2BIG if it does not
 * fit (out is then "").
 */
int qemu_opt_escape(const char *in, char *out, size_t outlen);

/*
 * qemu_binary - the QEMU executable: $PANDASTACK_QEMU if set, else the
 * first qemu-system-x86_64 on PATH, else "/usr/bin/qemu-system-x86_64".
 * Returns a borrowed string valid for the process's life.  Any thread.
 */
const char *qemu_binary(void);

#endif
