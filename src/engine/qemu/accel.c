/*
 * accel.c - choose KVM or TCG (see accel.h).
 *
 * KVM is used only when it is hardware-backed: the host CPU shows vmx or
 * svm, /dev/kvm opens, the provider is not kvm_pvm (it runs only guest
 * kernels built for PVM: a stock Debian kernel under it is instruction-
 * emulated: over a minute in the decompressor, then an emulation failure),
 * and a probe guest runs a 20-million-iteration loop and exits through
 * isa-debug-exit within ACCEL_PROBE_MS (hardware does it in milliseconds,
 * instruction emulation does not finish).
 */
#include "engine/qemu/accel.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "engine/qemu/accel_probe.h"
#include "engine/qemu/proc.h"
#include "engine/qemu/qemu_args.h"

#define ACCEL_PROBE_MS 5000

const char *accel_name(enum accel_kind k)
{
	switch (k) {
	case ACCEL_AUTO: return "auto";
	case ACCEL_KVM: return "kvm";
	case ACCEL_TCG: return "tcg";
	}
	return "?";
}

int accel_parse(const char *name, enum accel_kind *out)
{
	if (!name)
		return -EINVAL;
	if (!strcmp(name, "auto"))
		*out = ACCEL_AUTO;
	else if (!strcmp(name, "kvm"))
		*out = ACCEL_KVM;
	else if (!strcmp(name, "tcg"))
		*out = ACCEL_TCG;
	else
		return -EINVAL;
	return 0;
}

/* 1 if /proc/cpuinfo's flags name vmx or svm. */
static int cpu_has_virt(void)
{
	char *data = NULL;
	size_t len = 0;
	if (util_read_file("/proc/cpuinfo", 16u * 1024 * 1024, &data, &len) < 0)
		return 0;
	int found = 0;
	for (char *line = data; line && *line && !found;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (!strncmp(line, "flags", 5)) {
			char *save = NULL;
			for (char *t = strtok_r(line, " \t:", &save); t; t = strtok_r(NULL, " \t:", &save))
				if (!strcmp(t, "vmx") || !strcmp(t, "svm"))
					found = 1;
		}
		line = nl ? nl + 1 : NULL;
	}
	free(data);
	return found;
}

int accel_probe_guest(enum accel_kind k, int timeout_ms, char *why, size_t whylen)
{
	char path[] = "/tmp/pandastack-probe-XXXXXX";
	uint8_t img[ACCEL_PROBE_IMAGE_MAX];
	size_t n = accel_probe_image(img, sizeof(img));
	int fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	int r = util_write_all(fd, img, n);
	close(fd);
	if (r < 0) {
		unlink(path);
		return r;
	}
	char *argv[] = {(char *)qemu_binary(), "-M", "pc", "-accel",
			k == ACCEL_KVM ? "kvm" : "tcg", "-nodefaults", "-no-user-config",
			"-display", "none", "-m", "32M", "-device",
			"isa-debug-exit,iobase=0xf4,iosize=4", "-kernel", path, NULL};
	char out[512];
	int st = 0;
	r = proc_run(argv, timeout_ms, out, sizeof(out), &st);
	unlink(path);
	if (r == -ETIMEDOUT) {
		snprintf(why, whylen, "probe guest did not finish within %d ms", timeout_ms);
		return r;
	}
	if (r < 0) {
		snprintf(why, whylen, "cannot run %s: %s", argv[0], strerror(-r));
		return r;
	}
	/* isa-debug-exit: status (0x21 << 1) | 1. */
	if (WIFEXITED(st) && WEXITSTATUS(st) == ACCEL_PROBE_EXIT) {
		snprintf(why, whylen, "probe guest ran");
		return 0;
	}
	for (char *p = out; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	snprintf(why, whylen, "probe guest failed (status %d): %.200s",
		 WIFEXITED(st) ? WEXITSTATUS(st) : -1, out);
	return -EIO;
}

/* Why KVM is unusable here, or 0 with why empty if it may be. */
static int kvm_check(char *why, size_t whylen)
{
	struct stat st;
	if (stat("/sys/module/kvm_pvm", &st) == 0) {
		snprintf(why, whylen, "/dev/kvm is kvm_pvm (runs PVM guest kernels only)");
		return -ENODEV;
	}
	if (!cpu_has_virt()) {
		snprintf(why, whylen, "the CPU flags show neither vmx nor svm");
		return -ENODEV;
	}
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		int e = -errno;
		snprintf(why, whylen, "cannot open /dev/kvm: %s", strerror(-e));
		return -ENODEV;
	}
	close(fd);
	char probe[256];
	int r = accel_probe_guest(ACCEL_KVM, ACCEL_PROBE_MS, probe, sizeof(probe));
	if (r < 0) {
		snprintf(why, whylen, "%s", probe);
		return -ENODEV;
	}
	why[0] = '\0';
	return 0;
}

int accel_resolve(enum accel_kind want, enum accel_kind *got, char *why, size_t whylen)
{
	char reason[320];
	if (want == ACCEL_TCG) {
		*got = ACCEL_TCG;
		snprintf(why, whylen, "tcg: forced");
		return 0;
	}
	if (want != ACCEL_KVM && want != ACCEL_AUTO)
		return -EINVAL;
	int r = kvm_check(reason, sizeof(reason));
	if (r == 0) {
		*got = ACCEL_KVM;
		snprintf(why, whylen, "kvm: hardware virtualization, probe guest ran");
		return 0;
	}
	if (want == ACCEL_KVM) {
		snprintf(why, whylen, "kvm unusable: %s", reason);
		return -ENODEV;
	}
	*got = ACCEL_TCG;
	snprintf(why, whylen, "tcg: kvm unusable: %s", reason);
	return 0;
}
