/*
 * test_qemu_args.c - QEMU command lines for bake, clone and pool entries:
 * machine arguments, memory, vCPUs, accelerator, sandbox flags, memory
 * sharing, -incoming, and commas in paths doubled as QEMU requires.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/qemu/accel_probe.h"
#include "engine/qemu/qemu_args.h"

static const struct machine_spec spec_tcg = {
	.memory_mib = 1024, .vcpus = 2, .accel = ACCEL_TCG, .tb_size_mib = 64,
};

/* Index of the argument equal to s, or -1. */
static int find(const struct strv *v, const char *s)
{
	for (size_t i = 0; i < v->n; i++)
		if (!strcmp(v->v[i], s))
			return (int)i;
	return -1;
}

/* The value following flag, or NULL. */
static const char *after(const struct strv *v, const char *flag)
{
	int i = find(v, flag);
	return (i >= 0 && (size_t)i + 1 < v->n) ? v->v[i + 1] : NULL;
}

/* The first value following flag that starts with prefix, or NULL. */
static const char *after_prefix(const struct strv *v, const char *flag, const char *prefix)
{
	for (size_t i = 0; i + 1 < v->n; i++)
		if (!strcmp(v->v[i], flag) && !strncmp(v->v[i + 1], prefix, strlen(prefix)))
			return v->v[i + 1];
	return NULL;
}

static void test_machine_args(void **state)
{
	(void)state;
	struct strv v;
	strv_init(&v);
	assert_int_equal(qemu_machine_args(&spec_tcg, &v), 0);
	assert_string_equal(after(&v, "-M"), "microvm,x-option-roms=off,pit=off,memory-backend=mem");
	assert_string_equal(after(&v, "-m"), "1024M");
	assert_string_equal(after(&v, "-smp"), "2");
	assert_string_equal(after(&v, "-accel"), "tcg,tb-size=64");
	assert_true(find(&v, "-nodefaults") >= 0);
	assert_true(find(&v, "-no-user-config") >= 0);
	assert_string_equal(after(&v, "-display"), "none");
	assert_non_null(after_prefix(&v, "-device", "virtio-blk-device,drive=root"));
	assert_non_null(after_prefix(&v, "-device", "virtio-rng-device"));
	/* the NIC, after every other device, with the MAC of every sandbox */
	assert_string_equal(after_prefix(&v, "-device", "virtio-net-device"),
			    "virtio-net-device,netdev=net0,mac=52:54:00:12:34:56");
	assert_true(find(&v, "virtio-net-device,netdev=net0,mac=52:54:00:12:34:56") >
		    find(&v, "virtio-rng-device"));
	const char *port = after_prefix(&v, "-device", "virtserialport");
	assert_non_null(port);
	assert_non_null(strstr(port, "name=org.pandastack.agent"));
	assert_non_null(strstr(port, "chardev=agent"));
	/* The machine part names no path: it must be equal for every instance. */
	for (size_t i = 0; i < v.n; i++)
		assert_null(strchr(v.v[i], '/'));
	strv_free(&v);

	struct machine_spec kvm = spec_tcg;
	kvm.accel = ACCEL_KVM;
	kvm.memory_mib = 512;
	kvm.vcpus = 1;
	assert_int_equal(qemu_machine_args(&kvm, &v), 0);
	assert_string_equal(after(&v, "-accel"), "kvm");
	assert_string_equal(after(&v, "-m"), "512M");
	assert_string_equal(after(&v, "-smp"), "1");
	strv_free(&v);

	struct machine_spec dflt = spec_tcg;
	dflt.tb_size_mib = 0;
	assert_int_equal(qemu_machine_args(&dflt, &v), 0);
	assert_string_equal(after(&v, "-accel"), "tcg");
	strv_free(&v);
}

static void test_machine_args_rejects_bad_specs(void **state)
{
	(void)state;
	struct strv v;
	strv_init(&v);
	struct machine_spec bad = spec_tcg;
	bad.memory_mib = 0;
	assert_int_equal(qemu_machine_args(&bad, &v), -EINVAL);
	bad = spec_tcg;
	bad.memory_mib = QEMU_MAX_MEMORY_MIB + 1;
	assert_int_equal(qemu_machine_args(&bad, &v), -EINVAL);
	bad = spec_tcg;
	bad.vcpus = 0;
	assert_int_equal(qemu_machine_args(&bad, &v), -EINVAL);
	bad = spec_tcg;
	bad.vcpus = QEMU_MAX_VCPUS + 1;
	assert_int_equal(qemu_machine_args(&bad, &v), -EINVAL);
	bad = spec_tcg;
	bad.accel = ACCEL_AUTO;
	assert_int_equal(qemu_machine_args(&bad, &v), -EINVAL);
	strv_free(&v);
}

static void test_bake_command_line(void **state)
{
	(void)state;
	struct qemu_instance in = {
		.role = QEMU_ROLE_BAKE,
		.sock_dir = "/c/templates/.bake-x",
		.mem_path = "/c/templates/.bake-x/memory",
		.disk = "/c/templates/.bake-x/disk.qcow2",
		.kernel = "/c/images/k/vmlinux",
		.initrd = "/c/images/k/initrd",
		.append = "console=ttyS0 quiet panic=-1",
		.tap_fd = 7,
	};
	struct strv v;
	strv_init(&v);
	assert_int_equal(qemu_command_line("/usr/bin/qemu-system-x86_64", &spec_tcg, &in, &v), 0);
	assert_string_equal(v.v[0], "/usr/bin/qemu-system-x86_64");
	assert_null(v.v[v.n]);
	assert_string_equal(after(&v, "-sandbox"),
			    "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny");
	assert_string_equal(after(&v, "-object"),
			    "memory-backend-file,id=mem,mem-path=/c/templates/.bake-x/memory,share=on,size=1024M");
	assert_string_equal(after(&v, "-kernel"), "/c/images/k/vmlinux");
	assert_string_equal(after(&v, "-initrd"), "/c/images/k/initrd");
	assert_string_equal(after(&v, "-append"), "console=ttyS0 quiet panic=-1");
	assert_int_equal(find(&v, "-incoming"), -1);
	assert_non_null(after_prefix(&v, "-chardev", "socket,id=qmp,"));
	assert_non_null(strstr(after_prefix(&v, "-chardev", "socket,id=qmp,"),
			       "path=/c/templates/.bake-x/qmp.sock"));
	assert_non_null(strstr(after_prefix(&v, "-chardev", "socket,id=agent,"),
			       "path=/c/templates/.bake-x/agent.sock"));
	assert_non_null(strstr(after(&v, "-blockdev"), "file.filename=/c/templates/.bake-x/disk.qcow2"));
	assert_string_equal(after(&v, "-mon"), "chardev=qmp,mode=control");
	assert_string_equal(after(&v, "-netdev"), "tap,id=net0,fd=7");
	strv_free(&v);

	/* A NIC needs its tap. */
	in.tap_fd = -1;
	assert_int_equal(qemu_command_line("/q", &spec_tcg, &in, &v), -EINVAL);
	strv_free(&v);
	in.tap_fd = 7;

	/* A bake needs its boot payload. */
	in.kernel = NULL;
	assert_int_equal(qemu_command_line("/q", &spec_tcg, &in, &v), -EINVAL);
	strv_free(&v);
}

static void test_clone_and_pool_command_lines(void **state)
{
	(void)state;
	struct qemu_instance in = {
		.role = QEMU_ROLE_CLONE,
		.sock_dir = "/c/sandboxes/sbx_1",
		.mem_path = "/c/templates/ci/memory",
		.disk = "/c/sandboxes/sbx_1/overlay.qcow2",
		.tap_fd = 9,
	};
	struct strv clone, pool, mach;
	strv_init(&clone);
	strv_init(&pool);
	strv_init(&mach);
	assert_int_equal(qemu_command_line("/q", &spec_tcg, &in, &clone), 0);
	assert_string_equal(after(&clone, "-object"),
			    "memory-backend-file,id=mem,mem-path=/c/templates/ci/memory,share=off,size=1024M");
	assert_string_equal(after(&clone, "-incoming"), "defer");
	/* A restore never boots: no kernel, initrd or command line. */
	assert_int_equal(find(&clone, "-kernel"), -1);
	assert_int_equal(find(&clone, "-initrd"), -1);
	assert_int_equal(find(&clone, "-append"), -1);

	/* A pool entry is a clone in another folder: same machine part. */
	in.sock_dir = "/c/pool/ci/e-1";
	in.disk = "/c/pool/ci/e-1/overlay.qcow2";
	assert_int_equal(qemu_command_line("/q", &spec_tcg, &in, &pool), 0);
	assert_int_equal(qemu_machine_args(&spec_tcg, &mach), 0);
	for (size_t i = 0; i < mach.n; i++) {
		assert_string_equal(clone.v[1 + i], mach.v[i]);
		assert_string_equal(pool.v[1 + i], mach.v[i]);
	}
	assert_non_null(strstr(after_prefix(&pool, "-chardev", "socket,id=qmp,"),
			       "path=/c/pool/ci/e-1/qmp.sock"));
	strv_free(&clone);
	strv_free(&pool);
	strv_free(&mach);
}

static void test_paths_with_commas_are_doubled(void **state)
{
	(void)state;
	char out[64];
	assert_int_equal(qemu_opt_escape("/a,b,,c", out, sizeof(out)), 10);
	assert_string_equal(out, "/a,,b,,,,c");
	assert_int_equal(qemu_opt_escape("", out, sizeof(out)), 0);
	assert_string_equal(out, "");
	/* Too small: an error, never a cut path. */
	assert_int_equal(qemu_opt_escape("/a,b", out, 5), -E2BIG);
	assert_string_equal(out, "");
	assert_int_equal(qemu_opt_escape("/abc", out, 5), 4);

	struct qemu_instance in = {
		.role = QEMU_ROLE_CLONE,
		.sock_dir = "/data/run,1",
		.mem_path = "/data/t,x/memory",
		.disk = "/data/run,1/overlay.qcow2",
		.tap_fd = 3,
	};
	struct strv v;
	strv_init(&v);
	assert_int_equal(qemu_command_line("/q", &spec_tcg, &in, &v), 0);
	assert_string_equal(after(&v, "-object"),
			    "memory-backend-file,id=mem,mem-path=/data/t,,x/memory,share=off,size=1024M");
	assert_non_null(strstr(after(&v, "-blockdev"), "file.filename=/data/run,,1/overlay.qcow2,"));
	assert_non_null(strstr(after_prefix(&v, "-chardev", "socket,id=qmp,"),
			       "path=/data/run,,1/qmp.sock"));
	assert_non_null(strstr(after_prefix(&v, "-chardev", "socket,id=agent,"),
			       "path=/data/run,,1/agent.sock"));
	strv_free(&v);
}

static void test_relative_and_long_paths_rejected(void **state)
{
	(void)state;
	struct qemu_instance in = {
		.role = QEMU_ROLE_CLONE,
		.sock_dir = "/r",
		.mem_path = "relative/memory",
		.disk = "/r/overlay.qcow2",
		.tap_fd = 3,
	};
	struct strv v;
	strv_init(&v);
	assert_int_equal(qemu_command_line("/q", &spec_tcg, &in, &v), -EINVAL);
	strv_free(&v);
	char *lng = malloc(5000);
	memset(lng, 'a', 4999);
	lng[0] = '/';
	lng[4999] = '\0';
	in.mem_path = lng;
	assert_int_equal(qemu_command_line("/q", &spec_tcg, &in, &v), -E2BIG);
	strv_free(&v);
	free(lng);
}

static void test_strv_caps_and_join(void **state)
{
	(void)state;
	struct strv v, w;
	strv_init(&v);
	strv_init(&w);
	for (unsigned i = 0; i < STRV_MAX_ITEMS; i++)
		assert_int_equal(strv_addf(&v, "%u", i), 0);
	assert_int_equal(strv_add(&v, "one too many"), -E2BIG);
	assert_int_equal(v.err, -E2BIG);
	assert_int_equal(v.n, STRV_MAX_ITEMS);
	strv_free(&v);
	strv_add(&v, "a");
	strv_add(&v, "b c");
	char *j = strv_join(&v, " ");
	assert_string_equal(j, "a b c");
	free(j);
	strv_extend(&w, &v);
	assert_true(strv_equal(&v, &w));
	strv_add(&w, "d");
	assert_false(strv_equal(&v, &w));
	strv_free(&v);
	strv_free(&w);
}

static void test_probe_image_is_multiboot(void **state)
{
	(void)state;
	uint8_t img[ACCEL_PROBE_IMAGE_MAX];
	size_t n = accel_probe_image(img, sizeof(img));
	assert_true(n > 32);
	uint32_t magic, flags, sum;
	memcpy(&magic, img, 4);
	memcpy(&flags, img + 4, 4);
	memcpy(&sum, img + 8, 4);
	assert_int_equal(magic, 0x1BADB002u);
	assert_int_equal((uint32_t)(magic + flags + sum), 0);
	assert_int_equal(accel_probe_image(img, 8), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_machine_args),
		cmocka_unit_test(test_machine_args_rejects_bad_specs),
		cmocka_unit_test(test_bake_command_line),
		cmocka_unit_test(test_clone_and_pool_command_lines),
		cmocka_unit_test(test_paths_with_commas_are_doubled),
		cmocka_unit_test(test_relative_and_long_paths_rejected),
		cmocka_unit_test(test_strv_caps_and_join),
		cmocka_unit_test(test_probe_image_is_multiboot),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
