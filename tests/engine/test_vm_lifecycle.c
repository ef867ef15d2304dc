/*
 * test_vm_lifecycle.c - sandboxes as whole VMs: clones of one template are
 * unique (random bytes) and on the host's wall clock, isolated from each
 * other and from the template, ten run at once; pause/resume; adopt after
 * the handle is dropped; a killed QEMU is noticed through vm_exit_fd with
 * a reason; the pool of ready sandboxes; refusal of stale templates and of a run
 * directory that exists.
 * Needs a baked template (make templates); see engine_test.h.
 */
#include "engine_test.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>

#include <openssl/evp.h>

#include "engine/vm/pool.h"

static void test_clones_differ_and_keep_host_time(void **state)
{
	(void)state;
	ET_NEED_TEMPLATE();
	struct vm *a = et_restore(), *b = et_restore();
	char *ra = et_sh(a, "head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'");
	char *rb = et_sh(b, "head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'");
	assert_int_equal(strlen(ra), 64);
	assert_string_not_equal(ra, rb);
	/* Python's own generator is reseeded too (it is what user code uses). */
	char *pa = et_sh(a, "python3 -c 'import random; print(random.getrandbits(64))'");
	char *pb = et_sh(b, "python3 -c 'import random; print(random.getrandbits(64))'");
	assert_string_not_equal(pa, pb);
	struct vm *vs[2] = {a, b};
	for (int i = 0; i < 2; i++) {
		uint64_t before = util_wall_ns();
		char *t = et_sh(vs[i], "date +%s.%N");
		uint64_t after = util_wall_ns();
		double guest = strtod(t, NULL);
		double lo = (double)before / 1e9 - 1.0, hi = (double)after / 1e9 + 1.0;
		if (guest < lo || guest > hi)
			fail_msg("guest clock %.3f outside host [%.3f, %.3f]", guest, lo, hi);
		free(t);
	}
	free(ra);
	free(rb);
	free(pa);
	free(pb);
	et_stop(a);
	et_stop(b);
}

static void file_sha(const char *path, char out[65])
{
	char *data = NULL;
	size_t len = 0;
	assert_int_equal(util_read_file(path, 64u << 20, &data, &len), 0);
	unsigned char md[32];
	unsigned n = 0;
	EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
	util_hex(md, 32, out);
	free(data);
}

static void test_writes_stay_in_their_sandbox(void **state)
{
	(void)state;
	ET_NEED_TEMPLATE();
	char disk[PATH_MAX], before[65], after[65];
	assert_true(snprintf(disk, sizeof(disk), "%s/disk.qcow2", template_dir(et_tpl)) < (int)sizeof(disk));
	file_sha(disk, before);
	struct vm *a = et_restore(), *b = et_restore();
	free(et_sh(a, "echo secret > /root/marker && sync"));
	free(et_sh(a, "echo tmp > /tmp/marker"));
	char *seen = et_sh(b, "cat /root/marker /tmp/marker 2>/dev/null; true");
	assert_string_equal(seen, "");
	free(seen);
	et_stop(a);
	struct vm *c = et_restore();
	seen = et_sh(c, "cat /root/marker 2>/dev/null; true");
	assert_string_equal(seen, "");
	free(seen);
	et_stop(b);
	et_stop(c);
	file_sha(disk, after);
	assert_string_equal(before, after);
}

static void test_ten_at_once(void **state)
{
	(void)state;
	ET_NEED_TEMPLATE();
	enum { N = 10 };
	struct vm *v[N];
	for (int i = 0; i < N; i++)
		v[i] = et_restore();
	for (int i = 0; i < N; i++) {
		assert_true(vm_alive(v[i]));
		char cmd[64], want[32];
		assert_true(snprintf(cmd, sizeof(cmd), "echo sandbox %d", i) < (int)sizeof(cmd));
		assert_true(snprintf(want, sizeof(want), "sandbox %d\n", i) < (int)sizeof(want));
		char *out = et_sh(v[i], cmd);
		assert_string_equal(out, want);
		free(out);
	}
	for (int i = 0; i < N; i++)
		et_stop(v[i]);
}

static void test_pause_resume(void **state)
{
	(void)state;
	ET_NEED_TEMPLATE();
	struct vm *v = et_restore();
	char st[32];
	assert_int_equal(vm_status(v, st, sizeof(st)), 0);
	assert_string_equal(st, "running");
	assert_int_equal(vm_pause(v), 0);
	assert_int_equal(vm_status(v, st, sizeof(st)), 0);
	assert_string_equal(st, "paused");
	/* A paused guest runs nothing: the exec only finishes after resume. */
	json_t *req = json_pack("{s:s, s:s}", "op", "exec", "cmd", "echo later");
	struct guest_run_opts o = {.kind = GUEST_RUN_EXEC, .deadline_ms = 120000};
	struct guest_run *x = NULL;
	assert_int_equal(guest_run_open(vm_agent(v), req, &o, &x), 0);
	json_decref(req);
	struct guest_event ev;
	assert_int_equal(guest_run_next(x, &ev, 700), -ETIMEDOUT);
	assert_int_equal(vm_resume(v), 0);
	assert_int_equal(vm_status(v, st, sizeof(st)), 0);
	assert_string_equal(st, "running");
	struct guest_run_result res;
	assert_int_equal(guest_run_collect(x, &res, 60000, NULL, NULL), 0);
	int got_out = res.out_len == 6 && !memcmp(res.out, "later\n", 6);
	guest_run_result_free(&res);
	guest_run_close(x);
	assert_true(got_out);
	et_stop(v);
}

static void test_adopt_after_handle_dropped(void **state)
{
	(void)state;
	ET_NEED_TEMPLATE();
	struct vm *v = et_restore();
	char dir[PATH_MAX];
	assert_true(snprintf(dir, sizeof(dir), "%s", vm_run_dir(v)) < (int)sizeof(dir));
	pid_t pid = vm_pid(v);
	free(et_sh(v, "echo kept > /root/adopt"));
	vm_free(v); /* as if the daemon died: QEMU goes on */
	assert_int_equal(kill(pid, 0), 0);
	struct vm *w = NULL;
	struct vm_err err;
	int r = vm_adopt(dir, 30000, &w, &err);
	if (r < 0)
		fail_msg("vm_adopt: %d %s", r, err.msg);
	assert_int_equal(vm_pid(w), pid);
	assert_string_equal(vm_template_name(w), template_name(et_tpl));
	char *out = et_sh(w, "cat /root/adopt");
	assert_string_equal(out, "kept\n");
	free(out);
	et_stop(w);
	/* Gone: adopting again is refused. */
	assert_true(vm_adopt(dir, 1000, &w, &err) < 0);
}

static void test_killed_qemu_is_noticed(void **state)
{
	(void)state;
	ET_NEED_TEMPLATE();
	struct vm *v = et_restore();
	int fd = vm_exit_fd(v);
	assert_true(fd >= 0);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 0), 0);
	assert_true(vm_alive(v));
	int64_t t0 = util_now_ms();
	assert_int_equal(kill(vm_pid(v), SIGKILL), 0);
	assert_int_equal(poll(&p, 1, 5000), 1);
	assert_true(util_now_ms() - t0 < 5000);
	assert_false(vm_alive(v));
	const char *why = vm_exit_reason(v);
	assert_non_null(strstr(why, "SIGKILL"));
	assert_int_equal(vm_stop(v), 0);
	vm_free(v);
}

static void test_pool_take_and_refill(void **state)
{
	(void)state;
	ET_NEED_TEMPLATE();
	char pdir[PATH_MAX], run[PATH_MAX];
	assert_true(snprintf(pdir, sizeof(pdir), "%s/pool", et_base) < (int)sizeof(pdir));
	struct pool *p = NULL;
	assert_int_equal(pool_new(et_tpl, pdir, 2, &p), 0);
	/* each entry is restored and warmed at a low CPU weight: minutes on a
	 * loaded TCG host */
	int64_t deadline = util_now_ms() + 300000;
	while (pool_ready(p) < 2 && util_now_ms() < deadline)
		usleep(50 * 1000);
	assert_int_equal(pool_ready(p), 2);
	et_run_dir(run);
	struct vm *v = NULL;
	struct vm_err err;
	int r = pool_take(p, run, NULL, ET_RESTORE_MS, &v, &err);
	if (r < 0)
		fail_msg("pool_take: %d %s", r, err.msg);
	assert_string_equal(vm_run_dir(v), run);
	char *out = et_sh(v, "echo from the pool");
	assert_string_equal(out, "from the pool\n");
	free(out);
	/* The entry was moved, and the pool refills behind it. */
	struct stat st;
	char sock[PATH_MAX + 16];
	assert_true(snprintf(sock, sizeof(sock), "%s/jail/agent.sock", run) < (int)sizeof(sock));
	assert_int_equal(stat(sock, &st), 0);
	deadline = util_now_ms() + 300000;
	while (pool_ready(p) < 2 && util_now_ms() < deadline)
		usleep(50 * 1000);
	assert_int_equal(pool_ready(p), 2);
	et_stop(v);
	pool_free(p);
	/* pool_free leaves no entries behind: the folder is empty. */
	assert_int_equal(rmdir(pdir), 0);

	/* Size 0: the pool is off. */
	assert_int_equal(pool_new(et_tpl, pdir, 0, &p), 0);
	et_run_dir(run);
	assert_int_equal(pool_take(p, run, NULL, 1000, &v, &err), -EAGAIN);
	pool_free(p);
}

static void test_stale_template_refused(void **state)
{
	(void)state;
	ET_NEED_TEMPLATE();
	char cache[PATH_MAX], dir[PATH_MAX], src[PATH_MAX], dst[PATH_MAX], err[1024];
	assert_true(snprintf(cache, sizeof(cache), "%s/stale-cache", et_base) < (int)sizeof(cache));
	assert_true(snprintf(dir, sizeof(dir), "%s/templates/%s", cache, template_name(et_tpl)) < (int)sizeof(dir));
	assert_int_equal(util_mkdir_p(dir, 0755), 0);
	assert_true(snprintf(src, sizeof(src), "%s/template.json", template_dir(et_tpl)) < (int)sizeof(src));
	assert_true(snprintf(dst, sizeof(dst), "%s/template.json", dir) < (int)sizeof(dst));
	char *data = NULL;
	size_t len = 0;
	assert_int_equal(util_read_file(src, 1 << 20, &data, &len), 0);
	json_t *o = json_loads(data, 0, NULL);
	free(data);
	assert_non_null(o);
	/* Another QEMU version. */
	json_object_set_new(o, "qemu_version", json_string("1.0.0 (elsewhere)"));
	char *s = json_dumps(o, 0);
	assert_int_equal(util_write_file(dst, s, strlen(s), 0644), 0);
	free(s);
	struct template *t = NULL;
	assert_int_equal(template_open(cache, template_name(et_tpl), template_accel(et_tpl), &t,
				       err, sizeof(err)), -ESTALE);
	assert_non_null(strstr(err, "1.0.0 (elsewhere)"));
	/* Other machine arguments (the recorded memory size changed). */
	assert_int_equal(util_read_file(src, 1 << 20, &data, &len), 0);
	json_t *src_o = json_loads(data, 0, NULL);
	free(data);
	json_array_set_new(json_object_get(src_o, "machine_args"), 3, json_string("4096M"));
	s = json_dumps(src_o, 0);
	assert_int_equal(util_write_file(dst, s, strlen(s), 0644), 0);
	free(s);
	assert_int_equal(template_open(cache, template_name(et_tpl), template_accel(et_tpl), &t,
				       err, sizeof(err)), -ESTALE);
	assert_non_null(strstr(err, "4096M"));
	/* Garbage is -EINVAL, never a crash. */
	assert_int_equal(util_write_file(dst, "{\"format\": \"x\"", 14, 0644), 0);
	assert_int_equal(template_open(cache, template_name(et_tpl), template_accel(et_tpl), &t,
				       err, sizeof(err)), -EINVAL);
	json_decref(o);
	json_decref(src_o);
}

static void test_existing_run_dir_refused(void **state)
{
	(void)state;
	ET_NEED_TEMPLATE();
	char dir[PATH_MAX];
	et_run_dir(dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	struct vm *v = NULL;
	struct vm_err err;
	assert_int_equal(vm_restore(et_tpl, dir, NULL, 10000, &v, &err), -EEXIST);
	assert_null(v);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clones_differ_and_keep_host_time),
		cmocka_unit_test(test_writes_stay_in_their_sandbox),
		cmocka_unit_test(test_ten_at_once),
		cmocka_unit_test(test_pause_resume),
		cmocka_unit_test(test_adopt_after_handle_dropped),
		cmocka_unit_test(test_killed_qemu_is_noticed),
		cmocka_unit_test(test_pool_take_and_refill),
		cmocka_unit_test(test_stale_template_refused),
		cmocka_unit_test(test_existing_run_dir_refused),
	};
	return cmocka_run_group_tests(tests, et_setup, et_teardown);
}
