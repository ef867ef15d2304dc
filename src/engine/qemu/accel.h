/*
 * accel.h - choosing QEMU's accelerator.
 *
 * auto: KVM only when /dev/kvm is hardware-backed (the CPU flags show vmx or
 * svm and the provider is not kvm_pvm) and a probe guest boots within a few
 * seconds; else TCG.  kvm and tcg force the choice.
 * Threads: accel_resolve may be called from any thread; it caches nothing.
 */
#ifndef PANDASTACK_ACCEL_H
#define PANDASTACK_ACCEL_H

#include <stddef.h>

enum accel_kind {
	ACCEL_AUTO = 0,
	ACCEL_KVM = 1,
	ACCEL_TCG = 2,
};

/* accel_name - "auto", "kvm" or "tcg". */
const char *accel_name(enum accel_kind k);

/* accel_parse - name to kind.  Returns 0 or -EINVAL. */
int accel_parse(const char *name, enum accel_kind *out);

/*
 * accel_resolve - turn want into KVM or TCG.  For ACCEL_AUTO the probe may
 * take up to a few seconds (it boots a tiny guest under KVM).  why receives
 * a one-line reason ("kvm: /dev/kvm is kvm_pvm", ...).
 * Returns 0 with *got set, or -ENODEV when kvm is forced and unusable.
 */
int accel_resolve(enum accel_kind want, enum accel_kind *got, char *why, size_t whylen);

#endif
