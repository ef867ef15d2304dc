/*
 * capacity.c - free disk and memory, and the admission check (see
 * capacity.h).  /proc/meminfo's MemAvailable is proc(5).
 */
#include "daemon/sandbox/capacity.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "common/util.h"
#include "daemon/daemon.h"

#define MEMINFO_MAX (64u * 1024u)

static int mem_available(uint64_t *out)
{
	char *data = NULL;
	size_t len = 0;
	int r = util_read_file("/proc/meminfo", MEMINFO_MAX, &data, &len);
	if (r < 0)
		return r;
	const char *p = strstr(data, "MemAvailable:");
	unsigned long long kib = 0;
	r = p && sscanf(p, "MemAvailable: %llu kB", &kib) == 1 ? 0 : -ENODATA;
	free(data);
	*out = (uint64_t)kib * 1024u;
	return r;
}

int capacity_read(const struct daemon *d, struct capacity *c)
{
	memset(c, 0, sizeof(*c));
	struct statvfs sv;
	if (statvfs(d->cfg.data_dir, &sv) < 0)
		return -errno;
	c->disk_free_bytes = (uint64_t)sv.f_bavail * sv.f_frsize;
	c->disk_reserve_bytes = (uint64_t)d->cfg.reserve_disk_mib << 20;
	c->memory_reserve_bytes = (uint64_t)d->cfg.reserve_memory_mib << 20;
	return mem_available(&c->memory_available_bytes);
}

int capacity_admit(const struct daemon *d, uint64_t disk_bytes, uint64_t memory_bytes,
		   char *why, size_t whylen)
{
	struct capacity c;
	int r = capacity_read(d, &c);
	if (r < 0) {
		snprintf(why, whylen, "cannot read the host's capacity");
		return r;
	}
	if (c.disk_free_bytes < disk_bytes + c.disk_reserve_bytes) {
		snprintf(why, whylen,
			 "the host is full: %" PRIu64 " MiB of disk free, a sandbox may use %" PRIu64
			 " MiB and %" PRIu64 " MiB are kept in reserve",
			 c.disk_free_bytes >> 20, disk_bytes >> 20, c.disk_reserve_bytes >> 20);
		return -ENOSPC;
	}
	if (c.memory_available_bytes < memory_bytes + c.memory_reserve_bytes) {
		snprintf(why, whylen,
			 "the host is full: %" PRIu64 " MiB of memory available, a sandbox may use %" PRIu64
			 " MiB and %" PRIu64 " MiB are kept in reserve",
			 c.memory_available_bytes >> 20, memory_bytes >> 20,
			 c.memory_reserve_bytes >> 20);
		return -ENOSPC;
	}
	return 0;
}

json_t *capacity_json(const struct daemon *d)
{
	struct capacity c;
	if (capacity_read(d, &c) < 0)
		return NULL;
	return json_pack("{s:I, s:I, s:I, s:I}", "disk_free_bytes", (json_int_t)c.disk_free_bytes,
			 "disk_reserve_bytes", (json_int_t)c.disk_reserve_bytes,
			 "memory_available_bytes", (json_int_t)c.memory_available_bytes,
			 "memory_reserve_bytes", (json_int_t)c.memory_reserve_bytes);
}
