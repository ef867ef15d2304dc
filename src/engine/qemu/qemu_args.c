/*
 * qemu_args.c - QEMU command lines for bake, clone and pool (see
 * qemu_args.h).
 */
#include "engine/qemu/qemu_args.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int qemu_opt_escape(const char *in, char *out, size_t outlen)
{
	size_t o = 0;
	if (outlen == 0)
		return -E2BIG;
	for (const char *p = in; *p; p++) {
		size_t need = (*p == ',') ? 2 : 1;
		if (o + need >= outlen) {
			out[0] = '\0';
			return -E2BIG;
		}
		out[o++] = *p;
		if (*p == ',')
			out[o++] = ',';
	}
	out[o] = '\0';
	return (int)o;
}

int qemu_machine_args(const struct machine_spec *m, struct strv *out)
{
	if (m->memory_mib < 16 || m->memory_mib > QEMU_MAX_MEMORY_MIB ||
	    m->vcpus < 1 || m->vcpus > QEMU_MAX_VCPUS || m->tb_size_mib > 4096)
		return -EINVAL;
	if (m->accel != ACCEL_KVM && m->accel != ACCEL_TCG)
		return -EINVAL;
	/* pit=off: Linux never uses the PIT here (the LAPIC timer, and the TSC
	 * rate comes from tsc_early_khz), but the firmware leaves channel 0 in
	 * mode 3, and under TCG QEMU's main loop then woke at each of its edges,
	 * 36 times a second in every idle sandbox. */
	strv_add(out, "-M");
	strv_add(out, "microvm,x-option-roms=off,pit=off,memory-backend=mem");
	strv_add(out, "-m");
	strv_addf(out, "%uM", m->memory_mib);
	strv_add(out, "-smp");
	strv_addf(out, "%u", m->vcpus);
	strv_add(out, "-accel");
	if (m->accel == ACCEL_KVM)
		strv_add(out, "kvm");
	else if (m->tb_size_mib)
		strv_addf(out, "tcg,tb-size=%u", m->tb_size_mib);
	else
		strv_add(out, "tcg");
	/* TCG: "max" (the default qemu64 lacks instructions the guest's
	 * matplotlib/libpng code uses: savefig died with SIGILL on it). */
	strv_add(out, "-cpu");
	strv_add(out, m->accel == ACCEL_KVM ? "host" : "max");
	strv_add(out, "-nodefaults");
	strv_add(out, "-no-user-config");
	strv_add(out, "-no-reboot");
	strv_add(out, "-display");
	strv_add(out, "none");
	/* Devices, in a fixed order: virtio-mmio slots are handed out in
	 * creation order and the migration stream names them by slot. */
	strv_add(out, "-serial");
	strv_add(out, "chardev:con");
	strv_add(out, "-device");
	strv_add(out, "virtio-blk-device,drive=root");
	strv_add(out, "-device");
	strv_add(out, "virtio-serial-device,id=vser");
	strv_add(out, "-device");
	strv_add(out, "virtserialport,bus=vser.0,chardev=agent,name=" QEMU_AGENT_PORT_NAME);
	strv_add(out, "-device");
	strv_add(out, "virtio-rng-device");
	/* The NIC: every template has one (the migration stream fixes the
	 * device set; "no network" is a policy), always the same MAC. */
	strv_add(out, "-device");
	strv_add(out, "virtio-net-device,netdev=net0,mac=" QEMU_GUEST_MAC);
	return out->err;
}

/* Append "prefix<escaped path>suffix" as one argument. */
static int add_path_opt(struct strv *out, const char *prefix, const char *path,
			const char *suffix)
{
	char esc[2 * PATH_MAX + 1];
	if (!path || path[0] != '/')
		return -EINVAL;
	if (strlen(path) >= PATH_MAX || qemu_opt_escape(path, esc, sizeof(esc)) < 0)
		return -E2BIG;
	return strv_addf(out, "%s%s%s", prefix, esc, suffix);
}

int qemu_command_line(const char *qemu_bin, const struct machine_spec *m,
		      const struct qemu_instance *inst, struct strv *out)
{
	char sock[PATH_MAX];
	int r;
	if (!qemu_bin || !inst->sock_dir || !inst->mem_path || !inst->disk || inst->tap_fd < 0)
		return -EINVAL;
	if (inst->role != QEMU_ROLE_BAKE && inst->role != QEMU_ROLE_CLONE)
		return -EINVAL;
	if (inst->role == QEMU_ROLE_BAKE && (!inst->kernel || !inst->initrd || !inst->append))
		return -EINVAL;
	strv_add(out, qemu_bin);
	if ((r = qemu_machine_args(m, out)) < 0)
		return r;
	strv_add(out, "-sandbox");
	strv_add(out, "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny");
	strv_add(out, "-object");
	char tail[64];
	snprintf(tail, sizeof(tail), ",share=%s,size=%uM",
		 inst->role == QEMU_ROLE_BAKE ? "on" : "off", m->memory_mib);
	if ((r = add_path_opt(out, "memory-backend-file,id=mem,mem-path=", inst->mem_path, tail)) < 0)
		return r;
	strv_add(out, "-blockdev");
	if ((r = add_path_opt(out, "driver=qcow2,node-name=root,file.driver=file,file.filename=",
			      inst->disk, ",discard=unmap")) < 0)
		return r;
	strv_add(out, "-netdev");
	strv_addf(out, "tap,id=net0,fd=%d", inst->tap_fd);
	strv_add(out, "-chardev");
	strv_add(out, "stdio,id=con,signal=off");
	if (snprintf(sock, sizeof(sock), "%s/qmp.sock", inst->sock_dir) >= (int)sizeof(sock))
		return -E2BIG;
	strv_add(out, "-chardev");
	if ((r = add_path_opt(out, "socket,id=qmp,server=on,wait=off,path=", sock, "")) < 0)
		return r;
	strv_add(out, "-mon");
	strv_add(out, "chardev=qmp,mode=control");
	if (snprintf(sock, sizeof(sock), "%s/agent.sock", inst->sock_dir) >= (int)sizeof(sock))
		return -E2BIG;
	strv_add(out, "-chardev");
	if ((r = add_path_opt(out, "socket,id=agent,server=on,wait=off,path=", sock, "")) < 0)
		return r;
	if (inst->role == QEMU_ROLE_BAKE) {
		/* -kernel, -initrd and -append are taken verbatim (no option
		 * parsing), so they need no escaping. */
		if (inst->kernel[0] != '/' || inst->initrd[0] != '/')
			return -EINVAL;
		strv_add(out, "-kernel");
		strv_add(out, inst->kernel);
		strv_add(out, "-initrd");
		strv_add(out, inst->initrd);
		strv_add(out, "-append");
		strv_add(out, inst->append);
	} else {
		strv_add(out, "-incoming");
		strv_add(out, "defer");
		/* A snapshot's device state (xen-save-devices-state) has no
		 * configuration section, which QEMU otherwise requires. */
		if (inst->no_send_config) {
			strv_add(out, "-global");
			strv_add(out, "migration.send-configuration=off");
		}
	}
	return out->err;
}

static char qemu_path[PATH_MAX];
static pthread_once_t qemu_once = PTHREAD_ONCE_INIT;

static void qemu_find(void)
{
	const char *env = getenv("PANDASTACK_QEMU");
	if (env && env[0] && strlen(env) < sizeof(qemu_path)) {
		snprintf(qemu_path, sizeof(qemu_path), "%s", env);
		return;
	}
	snprintf(qemu_path, sizeof(qemu_path), "/usr/bin/qemu-system-x86_64");
	const char *path = getenv("PATH");
	if (!path)
		return;
	const char *p = path;
	while (*p) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char cand[PATH_MAX];
		if (len > 0 && len + sizeof("/qemu-system-x86_64") < sizeof(cand)) {
			memcpy(cand, p, len);
			snprintf(cand + len, sizeof(cand) - len, "/qemu-system-x86_64");
			if (access(cand, X_OK) == 0) {
				snprintf(qemu_path, sizeof(qemu_path), "%s", cand);
				return;
			}
		}
		if (!end)
			break;
		p = end + 1;
	}
}

const char *qemu_binary(void)
{
	pthread_once(&qemu_once, qemu_find);
	return qemu_path;
}
