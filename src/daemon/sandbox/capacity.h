/*
 * capacity.h - what this host has left, and the admission check of a
 * create: a create is refused (503 host_full) when free disk under the data
 * directory, after the new sandbox's disk cap, or MemAvailable, after its
 * guest RAM and QEMU's overhead, would fall below the configured reserves.
 * The figures are read at each call (statvfs(3), /proc/meminfo); nothing is
 * cached.
 *
 * Threads: any.
 */
#ifndef PANDASTACK_DAEMON_CAPACITY_H
#define PANDASTACK_DAEMON_CAPACITY_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct daemon;

struct capacity {
	uint64_t disk_free_bytes;        /* available to an unprivileged writer */
	uint64_t disk_reserve_bytes;
	uint64_t memory_available_bytes; /* MemAvailable */
	uint64_t memory_reserve_bytes;
};

/* capacity_read - fill *c for d's data directory.  0 or -errno. */
int capacity_read(const struct daemon *d, struct capacity *c);

/*
 * capacity_admit - may a sandbox that may grow to disk_bytes of disk and
 * memory_bytes of host memory be created now?  Returns 0, or -ENOSPC with
 * why (whylen bytes) naming the resource and the figures (no paths).
 * -errno when the figures cannot be read.
 */
int capacity_admit(const struct daemon *d, uint64_t disk_bytes, uint64_t memory_bytes,
		   char *why, size_t whylen);

/* capacity_json - a new object {"disk_free_bytes", "disk_reserve_bytes",
 * "memory_available_bytes", "memory_reserve_bytes"}; NULL on error. */
json_t *capacity_json(const struct daemon *d);

#endif
