/*
 * qcow2.h - the one thing the engine reads from a qcow2 header: the name of
 * its backing file, so that the jail can make every layer of a template's
 * disk chain visible (read-only) to QEMU.  Format: QEMU's
 * docs/interop/qcow2.txt ("Header": magic "QFI\xfb", version, then
 * backing_file_offset (u64, big endian) and backing_file_size (u32)).
 *
 * The header is outside input (a file in the cache): every field is
 * checked; a fuzz target covers qcow2_parse_backing.  Pure functions plus
 * one file read; any thread.
 */
#ifndef PANDASTACK_ENGINE_QCOW2_H
#define PANDASTACK_ENGINE_QCOW2_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of the header read: the backing file name must lie within them. */
#define QCOW2_HEADER_READ 4096u
/* Most layers followed below an image. */
#define QCOW2_CHAIN_MAX 8

/*
 * qcow2_parse_backing - from the first len bytes of a file: 1 with the
 * backing file's name in out (outlen bytes, NUL-terminated) when it is a
 * qcow2 image with one, 0 when it is not qcow2 (a raw layer) or has none.
 * -EINVAL for a qcow2 header whose name is empty, holds a NUL, does not fit
 * in len or in out (outlen), or is a "protocol:" URL.
 */
int qcow2_parse_backing(const uint8_t *buf, size_t len, char *out, size_t outlen);

/*
 * qcow2_backing_chain - the files below path: chain[0] is path's backing
 * file (absolute: a relative name is taken relative to path's folder), then
 * its backing file, and so on.  chain is QCOW2_CHAIN_MAX names of PATH_MAX
 * bytes.  Returns how many (0 for a raw file), -ELOOP (deeper than
 * QCOW2_CHAIN_MAX), -EINVAL (bad header), or -errno of open/read.
 */
int qcow2_backing_chain(const char *path, char (*chain)[4096]);

#endif
