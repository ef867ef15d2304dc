/*
 * init.h - what the agent does as PID 1 before it serves the host: the
 * initramfs stage (mount /dev /proc /sys, load the listed kernel modules,
 * wait for the root disk, mount it and switch root to it) and the root
 * stage (hostname, the network (netconf.h: lo, the sandbox's NIC), tmpfs
 * on /tmp /run /dev/shm, devpts, cgroup2, /workspace).
 *
 * Nothing here may end PID 1: every step logs its failure and the agent
 * goes on serving the port with what it has (a guest whose root disk is
 * missing still answers, so the host sees a clear error instead of a hang).
 *
 * Threads: the main thread, before the event loop starts.
 */
#ifndef PANDASTACK_AGENT_INIT_H
#define PANDASTACK_AGENT_INIT_H

#include <stdint.h>

/* The initramfs file listing module paths, one per line, in load order. */
#define INIT_MODULES_LIST "/etc/pandastack/modules"
/* The root disk and how long to wait for it to appear, ms. */
#define INIT_ROOT_DEV "/dev/vda"
#define INIT_ROOT_WAIT_MS 10000
/* The exec cgroup folder and the default working directory. */
#define INIT_CGROUP_DIR "/sys/fs/cgroup/pandastack"
#define INIT_WORKDIR "/workspace"

/* Timings (CLOCK_MONOTONIC ms since the agent started) and outcome. */
struct init_report {
	int64_t modules_ms;     /* modules loaded */
	int64_t root_ms;        /* root switched */
	int64_t net_ms;         /* network configured (or found absent) */
	int64_t done_ms;        /* root stage done */
	unsigned modules_loaded, modules_failed;
	int root_switched;      /* 1 if running on the root disk */
	int cgroup_ok;          /* 1 if INIT_CGROUP_DIR supports cgroup.kill */
	int nic_found;          /* 1 if the guest has the sandbox NIC (eth0) */
	int nic_up;             /* 1 if it is configured (netconf.h) */
	char error[160];        /* first failure, "" if none */
};

/*
 * init_system - run both stages.  t0 is the agent's start (ms).  Always
 * returns; rep says what worked.  Returns 0, or the first -errno.
 */
int init_system(int64_t t0, struct init_report *rep);

/* init_console_line - print one line on the console (stdout of PID 1). */
void init_console_line(const char *line);

#endif
