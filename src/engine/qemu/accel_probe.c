/*
 * accel_probe.c - the probe guest image (see accel_probe.h).  The layout
 * follows the Multiboot 0.6.96 header with the address fields (flag bit
 * 16), which lets a flat binary be loaded without ELF.
 */
#include "engine/qemu/accel_probe.h"

#include <string.h>

#include "common/proto.h"

#define MB_MAGIC 0x1BADB002u
#define MB_FLAGS 0x00010000u
#define LOAD_ADDR 0x100000u
#define CODE_OFF 32u

size_t accel_probe_image(uint8_t *buf, size_t cap)
{
	static const uint8_t code[] = {
		0xB9, 0x00, 0x2D, 0x31, 0x01, /* mov ecx, 20000000 */
		0x49,                         /* dec ecx */
		0x75, 0xFD,                   /* jnz -3 */
		0xB0, 0x21,                   /* mov al, 0x21 */
		0xE6, 0xF4,                   /* out 0xf4, al */
		0xF4,                         /* hlt */
		0xEB, 0xFD,                   /* jmp hlt */
	};
	size_t len = CODE_OFF + sizeof(code);
	if (cap < len || len > ACCEL_PROBE_IMAGE_MAX)
		return 0;
	memset(buf, 0, len);
	proto_put_u32(buf + 0, MB_MAGIC);
	proto_put_u32(buf + 4, MB_FLAGS);
	proto_put_u32(buf + 8, (uint32_t)(0u - MB_MAGIC - MB_FLAGS));
	proto_put_u32(buf + 12, LOAD_ADDR);            /* header_addr */
	proto_put_u32(buf + 16, LOAD_ADDR);            /* load_addr */
	proto_put_u32(buf + 20, LOAD_ADDR + (uint32_t)len); /* load_end_addr */
	proto_put_u32(buf + 24, LOAD_ADDR + (uint32_t)len); /* bss_end_addr */
	proto_put_u32(buf + 28, LOAD_ADDR + CODE_OFF); /* entry_addr */
	memcpy(buf + CODE_OFF, code, sizeof(code));
	return len;
}
