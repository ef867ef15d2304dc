/*
 * fuzz_engine_qcow2.c - libFuzzer target for the qcow2 header reader
 * (engine/qemu/qcow2.h): any bytes give 0, 1 or -EINVAL, never a read past the
 * buffer, and a name found is NUL-terminated within the output.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/qemu/qcow2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[256];
	int r = qcow2_parse_backing(data, size, out, sizeof(out));
	if (r == 1 && (strlen(out) == 0 || strlen(out) >= sizeof(out)))
		abort();
	if (r != 0 && r != 1 && r != -22)
		abort();
	return 0;
}
