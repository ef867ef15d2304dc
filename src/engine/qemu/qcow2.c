/*
 * qcow2.c - a qcow2 image's backing file name (see qcow2.h).
 */
#include "engine/qemu/qcow2.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static uint64_t be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int qcow2_parse_backing(const uint8_t *buf, size_t len, char *out, size_t outlen)
{
	if (outlen)
		out[0] = '\0';
	if (len < 20 || memcmp(buf, "QFI\xfb", 4) != 0)
		return 0;
	uint32_t version = be32(buf + 4);
	uint64_t off = be64(buf + 8);
	uint32_t size = be32(buf + 16);
	if (version < 2 || version > 3)
		return -EINVAL;
	if (off == 0)
		return 0;
	if (size == 0 || off > len || size > len - off || size >= outlen)
		return -EINVAL;
	if (memchr(buf + off, '\0', size))
		return -EINVAL;
	memcpy(out, buf + off, size);
	out[size] = '\0';
	/* "nbd:...", "json:{...}": not a file the jail could show. */
	const char *colon = strchr(out, ':'), *slash = strchr(out, '/');
	if (colon && (!slash || colon < slash)) {
		out[0] = '\0';
		return -EINVAL;
	}
	return 1;
}

int qcow2_backing_chain(const char *path, char (*chain)[4096])
{
	char cur[PATH_MAX];
	if (snprintf(cur, sizeof(cur), "%s", path) >= (int)sizeof(cur))
		return -ENAMETOOLONG;
	for (int n = 0;; n++) {
		int fd = open(cur, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		uint8_t buf[QCOW2_HEADER_READ];
		ssize_t got = pread(fd, buf, sizeof(buf), 0);
		int e = errno;
		close(fd);
		if (got < 0)
			return -e;
		char name[PATH_MAX];
		int r = qcow2_parse_backing(buf, (size_t)got, name, sizeof(name));
		if (r <= 0)
			return r < 0 ? r : n;
		if (n == QCOW2_CHAIN_MAX)
			return -ELOOP;
		if (name[0] == '/') {
			snprintf(chain[n], PATH_MAX, "%s", name);
		} else {
			const char *slash = strrchr(cur, '/');
			int dl = slash ? (int)(slash - cur) : 1;
			if (snprintf(chain[n], PATH_MAX, "%.*s/%s", dl, slash ? cur : ".", name) >= PATH_MAX)
				return -ENAMETOOLONG;
		}
		snprintf(cur, sizeof(cur), "%s", chain[n]);
	}
}
