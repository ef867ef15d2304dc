/*
 * bake.c - build a template (see template.h, template_bake):
 *
 *   manifest -> key (manifest key + QEMU version + machine args); up to date?
 *   <cache>/templates/.bake-<name>-<rand>/:
 *     disk.qcow2 = qcow2 overlay on the raw rootfs
 *     boot QEMU (memory file share=on) -> agent HELLO within BAKE_BOOT_MS,
 *       else kill and boot again (up to BAKE_BOOT_ATTEMPTS: ~1 in 5 TCG
 *       microvm boots hang)
 *     restore message, warm kernels (context_pool, the manifest's
 *       warm_kernels), close the agent connection
 *     x-ignore-shared, stop, migrate to state via fd:, quit
 *     template.json written last
 *   rename into place (an old template is moved aside and removed).
 */
#include "engine/template/template.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/log.h"
#include "common/util.h"
#include "engine/guest/guest_stream.h"
#include "engine/qemu/host_tsc.h"
#include "engine/qemu/migrate.h"
#include "engine/qemu/proc.h"
#include "engine/qemu/qmp.h"
#include "engine/qemu/spawn.h"
#include "engine/vm/bake.h"
#include "engine/vm/vm_int.h"

#define BAKE_BOOT_MS 40000
#define BAKE_HANG_MS 15000
#define BAKE_BOOT_ATTEMPTS 4
#define BAKE_WARM_MS 600000
#define BAKE_SAVE_MS 120000

struct bake {
	const char *name;
	template_progress_fn on_progress;
	void *arg;
	int64_t t0;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3)))
static void say(struct bake *b, const char *fmt, ...)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "bake %s [%5.1fs] ", b->name,
			 (double)(util_now_ms() - b->t0) / 1000.0);
	va_list ap;
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(line))
		vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (b->on_progress)
		b->on_progress(b->arg, line);
	log_kv(LOG_DEBUG, "template.bake_progress", "template=%s", b->name);
}

__attribute__((format(printf, 3, 4)))
static int fail(struct bake *b, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->err, b->errlen, fmt, ap);
	va_end(ap);
	return code;
}

/*
 * Leave kernels warm code-context kernels in the guest (the agent's
 * context_pool: each with numpy, pandas and pyplot imported where the
 * image has them, plus the template's warm code), so that the snapshot
 * holds them and every sandbox's first that many contexts answer at once.
 * Without warm code a template whose kernel cannot start (no python3) is
 * still baked, without one.
 */
static int warm(struct bake *b, struct guest_conn *a, const char *code, unsigned kernels)
{
	json_t *req = json_pack("{s:s, s:i}", "op", "context_pool", "kernels", (int)kernels);
	if (req && code[0])
		json_object_set_new(req, "code", json_string(code));
	if (!req)
		return fail(b, -ENOMEM, "out of memory");
	json_t *res = NULL;
	int r = guest_call(a, req, BAKE_WARM_MS, &res);
	json_decref(req);
	const char *state = json_string_value(json_object_get(res, "state"));
	const char *why = json_string_value(json_object_get(res, "error"));
	json_t *err = json_object_get(res, "error");
	if (r < 0 || json_is_object(err)) {
		const char *m = json_string_value(json_object_get(err, "message"));
		r = fail(b, r < 0 ? r : -EIO, "warm kernel: %s", m ? m : strerror(r < 0 ? -r : EIO));
	} else if (!state || strcmp(state, "ready") != 0) {
		if (code[0])
			r = fail(b, -EIO, "warm kernel failed: %.300s", why ? why : "?");
		else
			say(b, "no warm kernel: %.200s", why ? why : "?");
	} else {
		json_int_t ms = json_integer_value(json_object_get(res, "ms"));
		json_int_t n = json_integer_value(json_object_get(res, "kernels"));
		say(b, "%lld warm kernel%s ready after %.1f s", (long long)n, n == 1 ? "" : "s",
		    (double)ms / 1000.0);
		/* A template short of warm kernels makes every sandbox start one
		 * on its first contexts: refuse it rather than bake it silently. */
		if (code[0] && n < (json_int_t)kernels)
			r = fail(b, -EIO, "only %lld of %u warm kernels were ready", (long long)n,
				 kernels);
	}
	json_decref(res);
	return r;
}

static int make_disk(struct bake *b, const char *tmp, const struct manifest *m)
{
	char disk[PATH_MAX], out[512];
	engine_path_join(disk, tmp, "disk.qcow2");
	unlink(disk);
	char *argv[] = {"qemu-img", "create", "-q", "-f", "qcow2", "-b", (char *)m->rootfs,
			"-F", "raw", disk, NULL};
	int r = proc_run_ok(argv, 60000, out, sizeof(out));
	if (r < 0)
		return fail(b, r, "qemu-img create failed: %.300s", out);
	return 0;
}

void engine_boot_cmdline(const struct manifest *m, enum accel_kind accel, char *out,
			 size_t outlen)
{
	unsigned khz = 0;
	if (accel == ACCEL_TCG && !strstr(m->cmdline, "tsc_early_khz=") && host_tsc_khz(&khz) == 0)
		snprintf(out, outlen, "%s tsc_early_khz=%u", m->cmdline, khz);
	else
		snprintf(out, outlen, "%s", m->cmdline);
}

/* One boot: start QEMU, wait for the agent.  *v gets a struct vm for the
 * process (for kill and messages); *a the agent connection. */
static int boot_once(struct bake *b, const char *tmp, const struct manifest *m,
		     const char *cmdline, const struct machine_spec *spec, struct vm **vout,
		     struct guest_conn **a)
{
	char mem[PATH_MAX], disk[PATH_MAX], sock[PATH_MAX], con[PATH_MAX];
	struct vm *v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	vm_init_fields(v);
	snprintf(v->run_dir, sizeof(v->run_dir), "%s", tmp);
	snprintf(v->spawn_dir, sizeof(v->spawn_dir), "%s", tmp);
	*vout = v;
	if (vm_path(v, "memory", mem) < 0 || vm_path(v, "disk.qcow2", disk) < 0)
		return -ENAMETOOLONG;
	unlink(mem);
	int r = make_disk(b, tmp, m);
	if (r < 0)
		return r;
	/* The bake's guest has the same NIC as every clone (its device state
	 * is in the snapshot), in a namespace of its own. */
	char nerr[256];
	if ((r = netslot_create(&v->net, nerr, sizeof(nerr))) < 0)
		return fail(b, r, "%s", nerr);
	struct qemu_instance in = {
		.role = QEMU_ROLE_BAKE, .sock_dir = tmp, .mem_path = mem, .disk = disk,
		.kernel = m->kernel, .initrd = m->initramfs, .append = cmdline, .tap_fd = v->net.tap,
	};
	struct strv argv;
	strv_init(&argv);
	if ((r = qemu_command_line(qemu_binary(), spec, &in, &argv)) < 0) {
		strv_free(&argv);
		return fail(b, r, "cannot build the QEMU command line: %s", strerror(-r));
	}
	struct spawn_opts so = {.pass_fds = {v->net.tap}, .npass = 1};
	r = spawn_detached(argv.v, tmp, &so, &v->pid);
	strv_free(&argv);
	close(v->net.tap);
	v->net.tap = -1;
	if (r < 0)
		return fail(b, r, "cannot start %s: %s", qemu_binary(), strerror(-r));
	v->pidfd = (int)syscall(SYS_pidfd_open, v->pid, 0);
	int64_t deadline = util_now_ms() + BAKE_BOOT_MS;
	if ((r = vm_path(v, "qmp.sock", sock)) < 0 ||
	    (r = qmp_connect(sock, vm_left_ms(deadline), &v->qmp)) < 0) {
		struct vm_err e;
		vm_fail_msg(v, &e, "QMP did not answer", r);
		return fail(b, r, "%s", e.msg);
	}
	if ((r = vm_path(v, "agent.sock", sock)) < 0 || (r = vm_path(v, "console.log", con)) < 0)
		return r;
	/* Wait for the agent in short slices: a boot that printed nothing
	 * at all by BAKE_HANG_MS has hung (the kernel and the agent both
	 * write to the console early) and is retried without waiting more. */
	int64_t hang_at = util_now_ms() + BAKE_HANG_MS;
	for (;;) {
		r = guest_conn_open(sock, vm_left_ms(deadline) < 1000 ? vm_left_ms(deadline) : 1000, a);
		if (r == 0)
			return 0;
		*a = NULL;
		struct stat st;
		int silent = stat(con, &st) == 0 && st.st_size == 0;
		if (!vm_alive(v) || util_now_ms() >= deadline ||
		    (silent && util_now_ms() >= hang_at)) {
			struct vm_err e;
			vm_fail_msg(v, &e, silent ? "the boot hung (no console output)"
						  : "the agent did not answer", r == 0 ? -EIO : r);
			return fail(b, r == -ETIMEDOUT || silent ? -ETIMEDOUT : r, "%s", e.msg);
		}
		if (r != -ETIMEDOUT) {
			/* No socket yet or refused: QEMU is still starting. */
			struct timespec ts = {0, 50 * 1000000};
			nanosleep(&ts, NULL);
		}
	}
}

/* Stop the bake QEMU (quit, then SIGKILL) and free v without touching
 * the directory. */
static void bake_vm_end(struct vm *v)
{
	if (!v)
		return;
	if (v->qmp && vm_alive(v))
		qmp_call(v->qmp, "quit", NULL, 2000, NULL);
	if (v->pid > 0 && !vm_wait_exit(v, 3000)) {
		kill(v->pid, SIGKILL);
		vm_wait_exit(v, 5000);
	}
	vm_free(v);
}

static int write_template_json(const char *tmp, const struct manifest *m, const char *cmdline,
			       const struct machine_spec *spec, const struct strv *margs,
			       const char *ver, const char *key, int64_t bake_ms)
{
	char ts[32], path[PATH_MAX];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_t *arr = json_array();
	for (size_t i = 0; arr && i < margs->n; i++)
		json_array_append_new(arr, json_string(margs->v[i]));
	struct stat st;
	engine_path_join(path, tmp, "state");
	json_int_t state_bytes = stat(path, &st) == 0 ? (json_int_t)st.st_size : -1;
	json_t *o = json_pack(
		"{s:i, s:s, s:s, s:s, s:s, s:o, s:i, s:i, s:s, s:i, s:s, s:s, s:s, s:s, s:s, s:s, "
		"s:s, s:s, s:I, s:I}",
		"format", TEMPLATE_FORMAT, "name", m->name, "key", key, "manifest_key", m->key,
		"qemu_version", ver, "machine_args", arr, "memory_mib", (int)spec->memory_mib,
		"vcpus", (int)spec->vcpus, "accel", accel_name(spec->accel), "tb_size_mib",
		(int)spec->tb_size_mib, "kernel", m->kernel, "kernel_sha256", m->kernel_sha256,
		"initramfs", m->initramfs, "initramfs_sha256", m->initramfs_sha256, "rootfs",
		m->rootfs, "rootfs_key", m->rootfs_key, "cmdline", cmdline, "created_at", ts,
		"bake_ms", (json_int_t)bake_ms, "state_bytes", state_bytes);
	if (!o)
		return -ENOMEM;
	json_object_set_new(o, "warm", json_string(m->warm));
	json_object_set_new(o, "warm_kernels", json_integer(m->warm_kernels));
	if (m->disk_cap_mib)
		json_object_set_new(o, "disk_cap_mib", json_integer(m->disk_cap_mib));
	char *s = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(o);
	if (!s)
		return -ENOMEM;
	engine_path_join(path, tmp, "template.json");
	int r = util_write_file(path, s, strlen(s), 0644);
	free(s);
	return r;
}

/* Move tmp to final, replacing an older template there. */
static int install(struct bake *b, const char *tmp, const char *final)
{
	char old[PATH_MAX], rnd[6], hex[13];
	util_random(rnd, sizeof(rnd));
	util_hex(rnd, sizeof(rnd), hex);
	if (snprintf(old, sizeof(old), "%s.old-%s", final, hex) >= (int)sizeof(old))
		return -ENAMETOOLONG;
	int had_old = rename(final, old) == 0;
	if (rename(tmp, final) < 0) {
		int e = -errno;
		if (had_old)
			rename(old, final);
		return fail(b, e, "cannot rename %s to %s: %s", tmp, final, strerror(-e));
	}
	/* Running clones keep their open files; new ones use the new template. */
	if (had_old)
		util_rm_rf(old);
	return 0;
}

/*
 * What a bake of m makes under accel: the machine (*spec, *margs: the
 * caller frees margs), QEMU's version (ver) and the template key (key).
 * Returns 1 when the template there already has that key (and !force),
 * 0 to bake, or -errno with the reason told.
 */
static int bake_plan(struct bake *b, const char *cache_dir, const struct manifest *m,
		     enum accel_kind *accel, int force, struct machine_spec *spec,
		     struct strv *margs, char ver[QEMU_VERSION_MAX], char key[65])
{
	char why[320], old_key[65];
	int r;
	if (*accel == ACCEL_AUTO) {
		if ((r = accel_resolve(ACCEL_AUTO, accel, why, sizeof(why))) < 0)
			return fail(b, r, "%s", why);
		say(b, "accelerator %s", why);
	}
	if ((r = engine_qemu_version(ver, QEMU_VERSION_MAX)) < 0)
		return fail(b, r, "cannot run %s --version: %s", qemu_binary(), strerror(-r));
	engine_machine_spec(m->memory_mib, m->vcpus, *accel, spec);
	if ((r = qemu_machine_args(spec, margs)) < 0 ||
	    (r = template_key_compute(m->key, ver, margs, key)) < 0)
		return fail(b, r, "bad machine for %s: %s", b->name, strerror(-r));
	if (!force && template_read_key(cache_dir, b->name, old_key) == 0 && !strcmp(old_key, key)) {
		say(b, "up to date (key %.16s)", key);
		return 1;
	}
	return 0;
}

/* The folder the bake works in (tmp), beside where the template goes
 * (final), both under <cache>/templates.  0 or -errno, told. */
static int bake_stage(struct bake *b, const char *cache_dir, char tmp[PATH_MAX],
		      char final[PATH_MAX])
{
	char tdir[PATH_MAX], rnd[6], hex[13];
	int r;
	snprintf(tdir, sizeof(tdir), "%s/templates", cache_dir);
	if ((r = util_mkdir_p(tdir, 0755)) < 0)
		return fail(b, r, "%s: %s", tdir, strerror(-r));
	util_random(rnd, sizeof(rnd));
	util_hex(rnd, sizeof(rnd), hex);
	if (snprintf(final, PATH_MAX, "%s/%s", tdir, b->name) >= PATH_MAX ||
	    snprintf(tmp, PATH_MAX, "%s/.bake-%s-%s", tdir, b->name, hex) >= PATH_MAX - 32)
		return -ENAMETOOLONG;
	if (mkdir(tmp, 0755) < 0) {
		r = -errno;
		return fail(b, r, "%s: %s", tmp, strerror(-r));
	}
	return 0;
}

/* Boot m in tmp until its agent answers, BAKE_BOOT_ATTEMPTS times at most
 * (only a boot that hung is tried again).  0 with *v and *a, or -errno. */
static int boot_with_retries(struct bake *b, const char *tmp, const struct manifest *m,
			     const char *cmdline, const struct machine_spec *spec, struct vm **v,
			     struct guest_conn **a)
{
	int r = -EIO;
	for (int attempt = 1; attempt <= BAKE_BOOT_ATTEMPTS; attempt++) {
		say(b, "booting (attempt %d of %d)", attempt, BAKE_BOOT_ATTEMPTS);
		r = boot_once(b, tmp, m, cmdline, spec, v, a);
		if (r == 0)
			return 0;
		say(b, "boot failed: %s", b->err);
		if (*a)
			guest_conn_close(*a);
		*a = NULL;
		bake_vm_end(*v);
		*v = NULL;
		if (r != -ETIMEDOUT && r != -ECONNRESET && r != -EIO)
			break;
	}
	return r;
}

/* The booted guest's restore message and warm-up, then its state saved to
 * <tmp>/state with no host connected (every clone starts with its agent
 * waiting for its host).  Ends the agent link and the VM either way.  0 or
 * -errno, told. */
static int warm_and_save(struct bake *b, const struct manifest *m, const char *tmp,
			 struct vm *v, struct guest_conn *a)
{
	char path[PATH_MAX], msg[256];
	int r;
	say(b, "agent up; restore message");
	if ((r = guest_conn_restore(a, NULL, 30000)) < 0) {
		fail(b, r, "the agent's restore failed: %s", strerror(-r));
		goto end;
	}
	if (m->warm_kernels > 0) {
		say(b, "warming %u code-context kernel%s%s%.60s", m->warm_kernels,
		    m->warm_kernels == 1 ? "" : "s", m->warm[0] ? " with: " : "", m->warm);
		if ((r = warm(b, a, m->warm, m->warm_kernels)) < 0)
			goto end;
	}
	guest_conn_close(a);
	a = NULL;
	say(b, "saving state");
	if ((r = migrate_set_caps(v->qmp, 10000)) < 0 ||
	    (r = qmp_call(v->qmp, "stop", NULL, 10000, NULL)) < 0) {
		fail(b, r, "%s", qmp_last_error(v->qmp));
		goto end;
	}
	engine_path_join(path, tmp, "state");
	if ((r = migrate_save(v->qmp, path, BAKE_SAVE_MS, msg, sizeof(msg))) < 0)
		fail(b, r, "saving the state failed: %s", msg);
end:
	if (a)
		guest_conn_close(a);
	bake_vm_end(v);
	return r;
}

/* What the template keeps of the bake's folder: the disk layer frozen, the
 * console log under its bake name, the VM's sockets and logs gone. */
static void tidy_stage(const char *tmp)
{
	char path[PATH_MAX], keep[PATH_MAX];
	engine_path_join(path, tmp, "disk.qcow2");
	chmod(path, 0444);
	engine_path_join(path, tmp, "console.log");
	engine_path_join(keep, tmp, "bake-console.log");
	rename(path, keep);
	const char *drop[] = {"qmp.sock", "agent.sock", "qemu.pid", "qemu.exit", "qemu.log"};
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++) {
		engine_path_join(path, tmp, drop[i]);
		unlink(path);
	}
}

int template_bake(const char *cache_dir, const char *name, enum accel_kind accel,
		  int force, template_progress_fn progress, void *arg, char *err, size_t errlen)
{
	struct bake b = {name, progress, arg, util_now_ms(), err, errlen};
	struct manifest *m = calloc(1, sizeof(*m));
	char ver[QEMU_VERSION_MAX], key[65], tmp[PATH_MAX], final[PATH_MAX];
	char cmdline[MANIFEST_CMDLINE_MAX + 64];
	struct machine_spec spec;
	struct strv margs;
	strv_init(&margs);
	err[0] = '\0';
	if (!m)
		return -ENOMEM;
	int r = manifest_load(cache_dir, name, m, err, errlen);
	if (r < 0)
		goto out;
	r = bake_plan(&b, cache_dir, m, &accel, force, &spec, &margs, ver, key);
	if (r != 0) {
		r = r > 0 ? 0 : r; /* up to date: nothing to do */
		goto out;
	}
	if ((r = bake_stage(&b, cache_dir, tmp, final)) < 0)
		goto out;
	say(&b, "key %.16s, QEMU %s, %u MiB, %u vCPU, %s", key, ver, spec.memory_mib, spec.vcpus,
	    accel_name(accel));
	engine_boot_cmdline(m, accel, cmdline, sizeof(cmdline));
	struct vm *v = NULL;
	struct guest_conn *a = NULL;
	if ((r = boot_with_retries(&b, tmp, m, cmdline, &spec, &v, &a)) < 0 ||
	    (r = warm_and_save(&b, m, tmp, v, a)) < 0)
		goto fail_tmp;
	tidy_stage(tmp);
	if ((r = write_template_json(tmp, m, cmdline, &spec, &margs, ver, key,
				     util_now_ms() - b.t0)) < 0) {
		fail(&b, r, "cannot write template.json: %s", strerror(-r));
		goto fail_tmp;
	}
	if ((r = install(&b, tmp, final)) < 0)
		goto fail_tmp;
	say(&b, "done: %s", final);
	log_kv(LOG_INFO, "template.baked", "template=%s key=%.16s ms=%lld", name, key,
	       (long long)(util_now_ms() - b.t0));
	goto out;
fail_tmp:
	util_rm_rf(tmp);
out:
	strv_free(&margs);
	free(m);
	return r;
}
