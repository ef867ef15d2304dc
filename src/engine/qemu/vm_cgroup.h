/*
 * vm_cgroup.h - one control group per sandbox QEMU on the host, on cgroup v2
 * (production hosts) or v1 (per-controller hierarchies), with the limits
 * that keep one guest from taking the host: memory (guest RAM + QEMU's
 * overhead, no swap), pids, CPU (a quota of the template's vCPUs and a
 * weight below the daemon's) and, where the kernel offers it, an I/O weight.
 *
 * Layout: <mount>/<the caller's own group>/pandastack/<name> in every
 * hierarchy used (v1: memory, pids, cpu, blkio; v2: one tree).  On v2 the
 * caller's own group cannot hold processes and delegate controllers at once
 * (the "no internal processes" rule), so vmcg_host_open moves the calling
 * process into <own>/pandastack-daemon first when its group is not the
 * root.  The daemon's threads are never in a sandbox's group: only the
 * QEMU child joins it, between fork and exec (vmcg_join_self).
 *
 * Limits in force are reported per controller (vmcg_host_limits), so that
 * /healthz can say which ones this host applies.
 *
 * Threads: vmcg_host_open once; the rest from any thread (no shared
 * mutable state beyond the host description, which is read-only after
 * open).  vmcg_join_self and vmcg_remove are async-signal-safe.
 */
#ifndef PANDASTACK_ENGINE_VM_CGROUP_H
#define PANDASTACK_ENGINE_VM_CGROUP_H

#include <limits.h>
#include <stdint.h>

/* Hierarchies a group spans: one on v2, up to four on v1. */
#define VMCG_MAX_DIRS 4

enum vmcg_version { VMCG_NONE = 0, VMCG_V1 = 1, VMCG_V2 = 2 };

/* Which limits this host can apply (1) or not (0). */
struct vmcg_limits {
	int memory, swap, pids, cpu_quota, cpu_weight, io_weight;
};

/* The host's cgroup setup, found once. */
struct vmcg_host {
	enum vmcg_version version;
	/* Parent folders of the sandbox groups, one per hierarchy, and which
	 * controller each carries ("memory", "pids", "cpu", "blkio"; v2: "").
	 * ndirs 0 when no cgroup hierarchy could be used. */
	char parent[VMCG_MAX_DIRS][PATH_MAX];
	char ctrl[VMCG_MAX_DIRS][8];
	int ndirs;
	struct vmcg_limits can;
};

/* What one sandbox may use. */
struct vmcg_spec {
	uint64_t memory_bytes;   /* hard limit, RAM (no swap); 0: none */
	unsigned pids_max;       /* tasks (QEMU's threads); 0: none */
	unsigned cpu_quota_pct;  /* CPU time, % of one core (100 per vCPU); 0: none */
	unsigned cpu_weight;     /* v2 scale 1..10000 (100 = a default task); 0: default */
	unsigned io_weight;      /* v2 scale 1..10000; 0: default */
};

/* One sandbox's group. */
struct vmcg {
	char dir[VMCG_MAX_DIRS][PATH_MAX];
	int procs_fd[VMCG_MAX_DIRS];   /* cgroup.procs, O_WRONLY|O_CLOEXEC; -1 unused */
	int ndirs;
};

/*
 * vmcg_host_open - find the cgroup hierarchies mounted (/proc/self/mountinfo
 * and /proc/self/cgroup), create the "pandastack" parent folders under the
 * calling process's own groups, enable the v2 controllers there, give the
 * parent the CPU weight parent_cpu_weight (v2 scale, 100 = one default task;
 * 0 leaves it: all sandboxes together then weigh as much as one of the
 * host's tasks), and fill *h.  A host without usable cgroups gives 0 with h->ndirs == 0 (nothing
 * can be limited; callers report it).  Returns 0 or -errno (-EACCES when
 * not allowed to create groups).
 */
int vmcg_host_open(struct vmcg_host *h, unsigned parent_cpu_weight);

/*
 * vmcg_create - create the group <parent>/<name> in every hierarchy of h
 * (a stale empty group of that name is removed first), write the limits of
 * spec that h can apply, open each cgroup.procs.  name: [A-Za-z0-9_.-],
 * at most 64 bytes.  Returns 0 with *g filled, or -errno (-EINVAL bad name,
 * -EBUSY a live group of that name holds processes); nothing is left
 * behind on failure.
 */
int vmcg_create(const struct vmcg_host *h, const char *name, const struct vmcg_spec *spec,
		struct vmcg *g);

/* vmcg_join_self - move the calling process into g (writes "0" to every
 * cgroup.procs).  For the child between fork and exec.  Async-signal-safe.
 * Returns 0 or -errno. */
int vmcg_join_self(const struct vmcg *g);

/* vmcg_close_fds - close g's cgroup.procs descriptors (the groups stay). */
void vmcg_close_fds(struct vmcg *g);

/* vmcg_remove - remove g's folders (they must be empty of processes: call
 * after QEMU exited).  Async-signal-safe.  Returns 0 or the first -errno. */
int vmcg_remove(const struct vmcg *g);

/* vmcg_io_weight_honoured - 1 if the block device holding path schedules
 * with BFQ, the scheduler that honours per-group I/O weights (with another,
 * io_weight in vmcg_limits is written but does nothing). */
int vmcg_io_weight_honoured(const char *path);

/* vmcg_cpu_dir - the folder of g that holds its CPU controller's files
 * (v2: the group; v1: its folder in the cpu hierarchy), borrowed from g;
 * NULL when h has no CPU controller. */
const char *vmcg_cpu_dir(const struct vmcg_host *h, const struct vmcg *g);

/*
 * vmcg_cpu_weight_get / vmcg_cpu_weight_set - the CPU weight of the group
 * at cpu_dir (vmcg_cpu_dir) in its file's own units: v2 cpu.weight
 * (1..10000, 100 a default task), v1 cpu.shares (2..262144, 1024 a default
 * task).  The pool lowers its sandboxes' weight until their hand-out.
 * Return 0 or -errno (-ENOENT: no CPU controller there, -EINVAL: the file
 * holds no weight).
 */
int vmcg_cpu_weight_get(const char *cpu_dir, unsigned *out);
int vmcg_cpu_weight_set(const char *cpu_dir, unsigned raw);

/* vmcg_memory_peak - the group's memory high-water mark in bytes
 * (memory.max_usage_in_bytes / memory.peak), or -errno. */
int64_t vmcg_memory_peak(const struct vmcg *g);

#endif
