/*
 * vm_int.h - inside a struct vm, and the steps of a restore shared by
 * vm.c (vm_restore) and pool.c (pre-started entries): launching a clone
 * QEMU that waits in -incoming defer, and finishing the restore.
 * Engine-internal; same threading rules as vm.h.
 */
#ifndef PANDASTACK_VM_INT_H
#define PANDASTACK_VM_INT_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/qemu/netslot.h"
#include "engine/qemu/qmp.h"
#include "engine/template/manifest.h"
#include "engine/template/template.h"
#include "engine/vm/vm.h"

/* Inside a run directory: the folder the jailed QEMU sees and writes (its
 * sockets and disk overlay, owned by the sandbox's uid); everything else of
 * the run directory (vm.json, logs, pid, deadline) is the host's. */
#define VM_JAIL_DIR "jail"
#define VM_QMP_SOCK VM_JAIL_DIR "/qmp.sock"
#define VM_AGENT_SOCK VM_JAIL_DIR "/agent.sock"
#define VM_OVERLAY VM_JAIL_DIR "/overlay.qcow2"
#define VM_JSON_FORMAT 2

/* How long vm_stop waits after `quit` before SIGKILL, ms. */
#define VM_QUIT_GRACE_MS 2000
#define VM_JSON_MAX (64u * 1024u)

/* How long each step of the restore that made a VM took, us; logged at
 * debug level as vm.restore_phases (docs/engine.md, "Where a create's time
 * goes").  The launch steps of a pool entry ran before the take. */
struct vm_phases {
	int64_t overlay, net, jail, spawn, qmp_connect, caps; /* vm_launch_clone */
	int64_t pages;                                      /* a snapshot's pages written */
	uint64_t pages_bytes;
	int64_t migrate_start, migrate_wait, cont;          /* vm_finish_restore */
	int64_t agent_connect, hello, restore_op, vm_json;
	unsigned hellos;                                    /* HELLO frames sent */
};

struct vm {
	char run_dir[PATH_MAX];      /* where it lives now */
	char log_label[GUEST_CONN_LABEL_MAX]; /* vm_set_log_label; "" until set */
	char spawn_dir[PATH_MAX];    /* where QEMU was started (a pool entry is renamed) */
	char template_name[MANIFEST_NAME_MAX];
	char template_bake[65];      /* template_bake_id of its template; "" if unknown */
	enum accel_kind accel;
	pid_t pid;
	uid_t uid;                   /* the jail's uid, 0 when not jailed */
	int lifeline_fd;             /* pool entries: the monitor's lifeline (spawn.h), -1 */
	struct netslot net;          /* its network namespace and the daemon's listeners
				      * there (tap -1 once QEMU has it) */
	unsigned long long start_ticks; /* /proc/<pid>/stat field 22: tells pid reuse apart */
	int pidfd;                   /* -1 if the kernel has none */
	struct qmp *qmp;             /* NULL once QEMU is gone */
	struct guest_conn *agent;    /* NULL until connected or after loss */
	char cg_cpu[PATH_MAX];       /* its control group's CPU folder (vmcg_cpu_dir),
				      * "" when not jailed or none */
	unsigned cg_weight;          /* that group's CPU weight at the start (file units) */
	char reason[320];            /* exit reason, filled on demand */
	struct vm_phases ph;         /* restore timings */
};

/* engine_path_join - <dir>/<name> into out (PATH_MAX bytes).  0 or
 * -ENAMETOOLONG (out is then cut). */
int engine_path_join(char *out, const char *dir, const char *name);

/* vm_path - <run_dir>/<name> into out (PATH_MAX bytes).  0 or -ENAMETOOLONG
 * (cannot happen for the short names used here: run_dir is capped). */
int vm_path(const struct vm *v, const char *name, char *out);

/* Remaining ms until deadline (monotonic ms), at least 0. */
int vm_left_ms(int64_t deadline);

/*
 * What a clone starts from besides its template (a snapshot, snapshot.h):
 * the disk layer its overlay sits on, with the layers below it (all shown
 * read-only in the jail), an empty overlay on that layer to copy, the RAM
 * to map instead of the template's memfd, and whether its device state
 * comes without QEMU's configuration section (xen-save-devices-state
 * writes none: -global migration.send-configuration=off).  Borrowed.
 */
struct vm_origin {
	const char *disk;                       /* the layer the overlay sits on */
	const char (*disk_chain)[PATH_MAX];     /* the layers below it */
	int ndisk_chain;
	const char *seed;                       /* "" or an empty overlay on disk */
	int mem_fd;                             /* -1: the template's RAM */
	int no_config;
};

/*
 * vm_launch_clone - create dir (must not exist), an overlay on t's disk
 * layer (or o's, when o is not NULL), the jail (jail.h; when this process
 * jails), start QEMU as a clone of t waiting in -incoming defer under its
 * monitor (which ends it at the deadline file's time and when dir is
 * removed; with lifeline, also when this process dies before
 * vm_handed_out), connect QMP and set the migration capabilities, all
 * before deadline.
 * Returns 0 with *out, or -errno with err->msg (nothing is left running
 * and dir is removed).
 */
int vm_launch_clone(const struct template *t, const char *dir, int lifeline, int64_t deadline,
		    struct vm **out, struct vm_err *err);
int vm_launch_from(const struct template *t, const struct vm_origin *o, const char *dir,
		   int lifeline, int64_t deadline, struct vm **out, struct vm_err *err);

/* vm_handed_out - a pool entry became a sandbox: release its lifeline, so
 * it outlives this process like any sandbox.  0 or -errno. */
int vm_handed_out(struct vm *v);

/*
 * vm_finish_restore - migrate t's state into the launched v, `cont`, open
 * the agent connection and send the restore message (with gopts, borrowed,
 * may be NULL), write vm.json.
 * Returns 0 or -errno with err->msg (v is left for the caller to discard).
 */
int vm_finish_restore(struct vm *v, const struct template *t,
		      const struct guest_restore_opts *gopts, int64_t deadline, struct vm_err *err);

/* vm_set_cpu_low - with low 1, QEMU's control group weighs a tenth of a
 * sandbox (VM_LOW_CPU_DIVISOR; pool entries until their hand-out: they get
 * CPU mostly when sandboxes in use leave some, but are never starved);
 * 0 gives it back the weight it started with.  0, -ENOENT (QEMU is not in
 * a group of its own, or it has no CPU controller) or -errno. */
int vm_set_cpu_low(struct vm *v, int low);

/* vm_write_json - write <run_dir>/vm.json (what vm_adopt needs) with the
 * creation time now.  0 or -errno. */
int vm_write_json(struct vm *v);

/* vm_finish_restore_state - the same with the device state from
 * state_path (a snapshot's; its RAM is already in place). */
int vm_finish_restore_state(struct vm *v, const char *state_path,
			    const struct guest_restore_opts *gopts, int64_t deadline,
			    struct vm_err *err);

/* vm_init_fields - the "nothing yet" values of a new struct vm (fds -1). */
void vm_init_fields(struct vm *v);

/* vm_discard - SIGKILL QEMU, wait for it, remove its run directory, free. */
void vm_discard(struct vm *v);

/* vm_proc_start_ticks - the start time of pid (/proc/<pid>/stat field 22),
 * or 0 if it cannot be read. */
unsigned long long vm_proc_start_ticks(pid_t pid);

/* vm_wait_exit - wait up to timeout_ms for QEMU to exit (pidfd or polling).
 * 1 if it exited, 0 if not. */
int vm_wait_exit(struct vm *v, int timeout_ms);

/* What QEMU writes to its log on every restore from a snapshot (the
 * device state has no vmdescription section): never the reason it ended.
 * A NULL-terminated list for spawn_log_tail. */
extern const char *const vm_qemu_log_noise[];

/* vm_fail_msg - fill err with what, QEMU's exit reason if it died, and the
 * last lines of its logs. */
void vm_fail_msg(struct vm *v, struct vm_err *err, const char *what, int code);

#endif
