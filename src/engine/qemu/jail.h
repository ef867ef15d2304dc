/*
 * jail.h - the jail every sandbox QEMU runs in (Firecracker's jailer is the
 * model; DESIGN.md "Principles", docs/security.md).
 *
 * Between fork and exec, the QEMU child (jail_enter):
 *   - joins its own control group (vm_cgroup.h: memory, pids, CPU limits);
 *   - enters new mount, IPC and UTS namespaces and its sandbox's network
 *     namespace (netslot.h: only its tap and the daemon's listeners are
 *     there); its PID namespace is made by its parent, the per-VM monitor,
 *     so QEMU is PID 1 there;
 *   - builds a root on a small tmpfs holding only what QEMU needs:
 *       /usr (read-only; the QEMU binary itself a root-owned execute-only
 *       copy, so the process is not dumpable), the /lib* and /bin links,
 *       /etc/ld.so.cache, /dev/{null,zero,random,urandom} (and /dev/kvm
 *       only on KVM), a fresh /proc for this PID namespace, the template's
 *       disk layers read-only at their host paths, and the sandbox's own
 *       <run>/jail folder (overlay, QMP and agent sockets) read-write at its
 *       host path; then pivot_root, the old root detached, / read-only;
 *   - sets RLIMIT_CORE 0, RLIMIT_NOFILE, RLIMIT_FSIZE (the overlay's cap:
 *     QEMU writes no other file), SIGXFSZ ignored;
 *   - drops every capability from the bounding set, clears supplementary
 *     groups, becomes the sandbox's own uid/gid (from the configured range,
 *     never 0, never shared by two live sandboxes), PR_SET_NO_NEW_PRIVS,
 *     PR_SET_PDEATHSIG SIGKILL (QEMU never outlives its monitor);
 *   - execs QEMU with an empty environment; QEMU then applies its own
 *     -sandbox seccomp filter.
 * The template's memory is not in the jail at all: QEMU maps a sealed memfd
 * (template_memory_fd) that no descriptor can write; it and the tap reach
 * QEMU as inherited descriptors (spawn_opts.pass_fds).
 *
 * A uid is taken by an exclusive flock on <lock dir>/<uid>.lock; the lock's
 * descriptor is handed to the per-VM monitor, which holds it until QEMU has
 * exited, so uids stay unique across daemon restarts and across every
 * process of the host that uses the same lock dir.
 *
 * Threads: jail_host_open once per process; jail_prepare / jail_release from
 * any thread; jail_enter only in a forked child (async-signal-safe).
 */
#ifndef PANDASTACK_ENGINE_JAIL_H
#define PANDASTACK_ENGINE_JAIL_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "engine/qemu/vm_cgroup.h"

/* Defaults of struct jail_config. */
#define JAIL_DEFAULT_UID_FIRST 1500000000u
#define JAIL_DEFAULT_UID_COUNT 65536u
#define JAIL_DEFAULT_LOCK_DIR "/run/pandastack/uids"
#define JAIL_DEFAULT_MEM_OVERHEAD_MIB 384u
#define JAIL_DEFAULT_PIDS_MAX 256u
#define JAIL_DEFAULT_CPU_WEIGHT 100u    /* v2 scale: each sandbox among the others */
/* All sandboxes together weigh as much as this many default tasks per CPU
 * of the host: busy guests share the machine with the host's own work, and
 * the daemon, woken, still runs at once. */
#define JAIL_DEFAULT_GROUP_TASKS_PER_CPU 1u
/* QEMU's own threads (I/O, the main loop) beside its vCPUs, % of a core. */
#define JAIL_QEMU_THREADS_PCT 50u
#define JAIL_DEFAULT_NOFILE 4096u
#define JAIL_DEFAULT_DISK_CAP_MIB 2048u

/* How this process jails QEMU.  Zeros mean the defaults above. */
struct jail_config {
	uid_t uid_first;             /* first uid (and gid) of the range; never 0 */
	unsigned uid_count;          /* size of the range */
	const char *lock_dir;        /* uid locks, shared by every user of the range */
	const char *work_dir;        /* where the execute-only QEMU copy is kept */
	const char *disk_dir;        /* where overlays live (is the I/O weight honoured there?) */
	unsigned mem_overhead_mib;   /* cgroup memory = guest RAM + this */
	unsigned pids_max;
	unsigned cpu_weight;         /* one sandbox among the others, 1..10000 (v2 scale) */
	unsigned nofile;             /* RLIMIT_NOFILE */
	int disable;                 /* 1: run QEMU unjailed (development only) */
};

struct jail_host;

/*
 * jail_host_open - check that jails can be made here (root, namespaces),
 * find the cgroup setup (vmcg_host_open), and make the execute-only copy of
 * qemu_bin under work_dir (reused while the binary is unchanged).  When the
 * process is not root or c->disable is set, *out is a host that jails
 * nothing (jail_host_enabled 0) and the reason is in err.
 * Returns 0 with *out (free with jail_host_free), or -errno with err.
 */
int jail_host_open(const struct jail_config *c, const char *qemu_bin, struct jail_host **out,
		   char *err, size_t errlen);

void jail_host_free(struct jail_host *h);

/*
 * jail_setup - open the process's jail host with c (once, before the first
 * VM; a second call is -EALREADY).  err says why QEMU runs unjailed when it
 * does.  Returns 0 or -errno (then VMs cannot be started).
 */
int jail_setup(const struct jail_config *c, char *err, size_t errlen);

/*
 * jail_host_get - the process's jail host: the one jail_setup opened, else
 * one opened with the defaults at the first call (work_dir <cache>/jail,
 * cache_dir as engine_cache_dir(NULL)).  NULL only if that failed (logged).
 * Any thread.
 */
const struct jail_host *jail_host_get(void);

/* jail_host_enabled - 1 when QEMU processes are jailed. */
int jail_host_enabled(const struct jail_host *h);

/* jail_host_cgroups - the host's cgroup description (borrowed). */
const struct vmcg_host *jail_host_cgroups(const struct jail_host *h);

/*
 * jail_host_describe - what is in force, for /healthz: a new JSON object
 * {"jail": bool, "reason"?: str, "uids": "first-last", "cgroup": "v1"|"v2"|"none",
 *  "limits": {"memory", "swap", "pids", "cpu_quota", "cpu_weight", "io_weight":
 *  bool}}.  NULL when out of memory.
 */
json_t *jail_host_describe(const struct jail_host *h);

/* What one QEMU needs in its jail. */
struct jail_vm {
	const char *name;            /* for logs only */
	const char *jail_dir;        /* <run>/jail: made read-write in the jail */
	const char *const *disk_layers; /* the template's disk chain: read-only in the
					 * jail, each at its own path */
	int ndisk_layers;
	int netns_fd;                /* the network namespace to join (netslot.h), or -1: a new, empty one */
	unsigned memory_mib;         /* guest RAM */
	unsigned vcpus;
	uint64_t disk_cap_bytes;     /* RLIMIT_FSIZE; 0: none */
	int kvm;                     /* bind /dev/kvm */
};

/* One prepared jail (opaque; its plan is fixed before fork). */
struct jail;

/*
 * jail_prepare - take a free uid, create the sandbox's control group with
 * its limits, give jail_dir and the files in it to that uid (mode 0700),
 * and write down the mount plan.  h must be enabled.
 * Returns 0 with *out (free with jail_release after the child was started;
 * the monitor keeps what it needs), -EAGAIN (every uid of the range is
 * taken), -ENAMETOOLONG, or another -errno.  Nothing is left behind on
 * failure.
 */
int jail_prepare(const struct jail_host *h, const struct jail_vm *vm, struct jail **out);

/* jail_uid - the uid (and gid) the QEMU runs as. */
uid_t jail_uid(const struct jail *j);

/* jail_cgroup - the control group (borrowed). */
const struct vmcg *jail_cgroup(const struct jail *j);

/* jail_lock_fd - the uid lock's descriptor (the monitor keeps it open for
 * QEMU's life). */
int jail_lock_fd(const struct jail *j);

/* jail_netns_fd - the network namespace QEMU joins, or -1 (the monitor keeps
 * it open until QEMU has started; QEMU does not inherit it). */
int jail_netns_fd(const struct jail *j);

/*
 * jail_enter - in the forked QEMU child, already in the new PID namespace:
 * everything listed at the top of this file, up to (not including) exec.
 * Async-signal-safe: only system calls on the prepared plan.
 * Returns 0 or -errno of the first step that failed (the child then exits).
 */
int jail_enter(const struct jail *j);

/* jail_release - close the parent's descriptors (uid lock, cgroup.procs)
 * and free.  The uid stays taken while the monitor holds its copy of the
 * lock.  abandon: no QEMU was started in it, remove its control group too.
 * NULL is a no-op. */
void jail_release(struct jail *j, int abandon);

#endif
