/*
 * test_snapshot.c - snapshots of running sandboxes on real guests: a fork
 * has the source's RAM (a file in /dev/shm, a process still running) and
 * disk at the capture; the source keeps running; writes stay in the
 * sandbox that made them; a fork of a fork of a fork; the merged memfd;
 * flattening; a snapshot of a stopped VM is refused.
 * Needs a baked template (make templates); see engine_test.h.
 */
#include "engine_test.h"

#include <sys/stat.h>

#include "engine/vm/snapshot.h"

static unsigned snap_seq;

/* A fresh snapshot folder path (not created). */
static void snap_dir(char out[PATH_MAX])
{
	snprintf(out, PATH_MAX, "%s/snap%u", et_base, ++snap_seq);
}

static struct snapshot *capture(struct vm *v, const struct snapshot *base,
				struct snapshot_stats *st)
{
	char dir[PATH_MAX], err[512];
	struct vm_err verr;
	struct snapshot_opts o = {.sync = 0};
	snap_dir(dir);
	int r = vm_snapshot(v, et_tpl, base, dir, &o, st, &verr);
	if (r < 0)
		fail_msg("vm_snapshot: %d %s", r, verr.msg);
	struct snapshot *s = NULL;
	if ((r = snapshot_open(dir, et_tpl, base, &s, err, sizeof(err))) < 0)
		fail_msg("snapshot_open: %d %s", r, err);
	return s;
}

static struct vm *fork_of(const struct snapshot *s)
{
	char dir[PATH_MAX];
	struct vm *v = NULL;
	struct vm_err err;
	et_run_dir(dir);
	int r = vm_restore_snapshot(et_tpl, s, dir, NULL, ET_RESTORE_MS, &v, &err);
	if (r < 0)
		fail_msg("vm_restore_snapshot: %d %s", r, err.msg);
	return v;
}

static void expect_out(struct vm *v, const char *cmd, const char *want)
{
	char *got = et_sh(v, cmd);
	if (strcmp(got, want) != 0)
		fail_msg("%s: got [%s], want [%s]", cmd, got, want);
	free(got);
}

static void test_fork_has_ram_and_disk(void **state)
{
	(void)state;
	ET_NEED_TEMPLATE();
	struct vm *src = et_restore();
	/* RAM: a tmpfs file and a process that keeps a value in memory only. */
	free(et_sh(src, "echo ram-state > /dev/shm/marker && echo disk-state > /root/marker && "
			"(sh -c 'v=kept-in-a-process; while sleep 1; do [ -e /tmp/ask ] && "
			"echo $v > /tmp/answer; done' > /dev/null 2>&1 &)"));
	struct snapshot_stats st;
	struct snapshot *s = capture(src, NULL, &st);
	assert_true(st.paused_us > 0);
	assert_true(st.private_pages >= st.stored_pages);
	assert_true(st.stored_pages > 0);
	fprintf(stderr, "capture: paused %.1f ms, private %.1f MiB, stored %.1f MiB, state %llu B\n",
		st.paused_us / 1e3, st.private_pages * 4096.0 / 1048576, st.stored_pages * 4096.0 / 1048576,
		(unsigned long long)st.state_bytes);
	/* The source goes on running, on a new overlay. */
	expect_out(src, "cat /dev/shm/marker /root/marker", "ram-state\ndisk-state\n");
	struct vm *f = fork_of(s);
	expect_out(f, "cat /dev/shm/marker /root/marker", "ram-state\ndisk-state\n");
	/* The process kept running in the fork and still holds its value. */
	expect_out(f, "touch /tmp/ask; for i in 1 2 3 4 5 6 7 8 9 10; do [ -s /tmp/answer ] && break; "
		      "sleep 1; done; cat /tmp/answer",
		   "kept-in-a-process\n");
	/* Writes after the capture stay where they were made. */
	free(et_sh(f, "echo fork > /root/marker && echo fork > /dev/shm/marker && sync"));
	free(et_sh(src, "echo source > /root/other && sync"));
	expect_out(src, "cat /dev/shm/marker /root/marker", "ram-state\ndisk-state\n");
	expect_out(f, "cat /root/other 2>/dev/null; true", "");
	/* Fork and source differ in their random bytes and clock is the host's. */
	char *ra = et_sh(src, "head -c 16 /dev/urandom | od -An -tx1");
	char *rb = et_sh(f, "head -c 16 /dev/urandom | od -An -tx1");
	assert_string_not_equal(ra, rb);
	free(ra);
	free(rb);
	/* The frozen layer is the daemon's: root-owned, read-only. */
	char layer[PATH_MAX];
	struct stat sb;
	snprintf(layer, sizeof(layer), "%s/disk.qcow2", snapshot_dir(s));
	assert_int_equal(stat(layer, &sb), 0);
	assert_int_equal(sb.st_uid, 0);
	assert_int_equal(sb.st_mode & 0777, 0444);
	et_stop(f);
	et_stop(src);
	snapshot_free(s);
}

static void test_chain_of_forks(void **state)
{
	(void)state;
	ET_NEED_TEMPLATE();
	struct vm *a = et_restore();
	free(et_sh(a, "echo a > /dev/shm/level && echo a > /root/level && sync"));
	struct snapshot *s1 = capture(a, NULL, NULL);
	struct vm *b = fork_of(s1);
	free(et_sh(b, "echo b >> /dev/shm/level && echo b >> /root/level && sync"));
	struct snapshot *s2 = capture(b, s1, NULL);
	struct vm *c = fork_of(s2);
	free(et_sh(c, "echo c >> /dev/shm/level && echo c >> /root/level && sync"));
	struct snapshot *s3 = capture(c, s2, NULL);
	assert_int_equal(snapshot_depth(s3), 2);
	/* Ending the middle sandbox breaks neither end. */
	et_stop(b);
	struct vm *d = fork_of(s3);
	expect_out(d, "cat /dev/shm/level /root/level", "a\nb\nc\na\nb\nc\n");
	expect_out(a, "cat /dev/shm/level", "a\n");
	expect_out(c, "cat /root/level", "a\nb\nc\n");
	/* A merged image of s3 serves the same fork without writing pages. */
	assert_true(snapshot_memory_fd(s3, et_tpl) >= 0);
	assert_true(snapshot_has_memory_fd(s3));
	struct vm *e = fork_of(s3);
	expect_out(e, "cat /dev/shm/level /root/level", "a\nb\nc\na\nb\nc\n");
	/* Flattening s3 drops its parents; a fork of it is the same. */
	char err[512];
	int r = snapshot_flatten(s3, et_tpl, err, sizeof(err));
	if (r < 0)
		fail_msg("snapshot_flatten: %d %s", r, err);
	struct snapshot *flat = NULL;
	if ((r = snapshot_open(snapshot_dir(s3), et_tpl, NULL, &flat, err, sizeof(err))) < 0)
		fail_msg("snapshot_open after flatten: %d %s", r, err);
	assert_int_equal(snapshot_depth(flat), 0);
	struct vm *g = fork_of(flat);
	expect_out(g, "cat /dev/shm/level /root/level", "a\nb\nc\na\nb\nc\n");
	et_stop(g);
	et_stop(e);
	et_stop(d);
	et_stop(c);
	et_stop(a);
	snapshot_free(flat);
	snapshot_free(s3);
	snapshot_free(s2);
	snapshot_free(s1);
}

static void test_stopped_vm_refused(void **state)
{
	(void)state;
	ET_NEED_TEMPLATE();
	struct vm *v = et_restore();
	char dir[PATH_MAX];
	struct vm_err err;
	assert_int_equal(vm_stop(v), 0);
	snap_dir(dir);
	assert_int_equal(vm_snapshot(v, et_tpl, NULL, dir, NULL, NULL, &err), -ESRCH);
	struct stat sb;
	assert_int_equal(stat(dir, &sb), -1);
	vm_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fork_has_ram_and_disk),
		cmocka_unit_test(test_chain_of_forks),
		cmocka_unit_test(test_stopped_vm_refused),
	};
	return cmocka_run_group_tests(tests, et_setup, et_teardown);
}
