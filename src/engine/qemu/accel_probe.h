/*
 * accel_probe.h - the accelerator probe guest: a flat multiboot image
 * (QEMU's -kernel loads it on -M pc) that counts down a 20-million-step
 * loop and writes 0x21 to an isa-debug-exit port at 0xf4, so QEMU exits
 * with status ACCEL_PROBE_EXIT.  Hardware virtualization finishes in
 * milliseconds; an instruction emulator takes far longer.
 * Pure computation; any thread.
 */
#ifndef PANDASTACK_ACCEL_PROBE_H
#define PANDASTACK_ACCEL_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "engine/qemu/accel.h"

/* Size of the image, bytes (a buffer of this size always fits it). */
#define ACCEL_PROBE_IMAGE_MAX 64u

/* QEMU's exit status when the probe finished: (0x21 << 1) | 1. */
#define ACCEL_PROBE_EXIT 0x43

/* accel_probe_image - write the image into buf (cap bytes).  Returns its
 * length, or 0 if cap is too small. */
size_t accel_probe_image(uint8_t *buf, size_t cap);

/*
 * accel_probe_guest - boot the probe under accelerator k (KVM or TCG)
 * with QEMU, waiting up to timeout_ms.  why gets a one-line outcome.
 * Returns 0 if it ran to its exit, -ETIMEDOUT, -EIO (QEMU failed), -errno.
 */
int accel_probe_guest(enum accel_kind k, int timeout_ms, char *why, size_t whylen);

#endif
