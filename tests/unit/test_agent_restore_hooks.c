/*
 * test_agent_restore_hooks.c - the after-restore hooks of the agent's
 * restore op (docs/agent-protocol.md, "restore"; src/agent/ops/restore_hooks.c),
 * end to end on the host: the agent in --listen mode with --hooks-dir and
 * --hooks-report in its temporary folder, driven through guest_conn.
 *
 * Covered: hooks run in name order with PANDASTACK_SANDBOX_ID, only on a
 * restore that names a sandbox (the probe file shows both); what is not a
 * hook is left alone; a failing hook is reported and the next one runs; the
 * report file; a hook over its time is killed with its tree and reported;
 * the output cap; a folder found empty and remembered still shows a hook
 * added later; hooks past RESTORE_HOOKS_MAX are skipped; a second restore
 * while hooks run is refused; a sandbox id that is not an id is refused on
 * both sides.  In code contexts (the host's python3, images/guest on its
 * PYTHONPATH for pandastack_restore): the functions a kernel registered run
 * at once, in order, with the id, failures reported; a kernel without any
 * stays asleep and reseeds lazily (OpenSSL included: _ssl.RAND_add runs);
 * a function that hangs is interrupted at its bound; a restarted kernel has
 * none.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "agent/ops/restore_hooks.h"
#include "agent_harness.h"

static const char entropy[] =
	"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	"202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f";

/* A test with an agent whose hooks' folder exists. */
#define HOOKS_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, agent_fixture_teardown)

static int setup(void **state)
{
	if (agent_fixture_setup(state) != 0)
		return -1;
	struct agent_fixture *f = *state;
	return mkdir(f->a.hooks_dir, 0755);
}

/* Write a hook (a shell script body) named name with mode. */
static void put_hook(struct agent_fixture *f, const char *name, int mode, const char *body)
{
	char path[PATH_MAX + 300];
	snprintf(path, sizeof(path), "%s/%s", f->a.hooks_dir, name);
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fprintf(fp, "#!/bin/sh\n%s\n", body);
	fclose(fp);
	assert_int_equal(chmod(path, (mode_t)mode), 0);
}

/* The restore request, with sandbox_id when not NULL. */
static json_t *restore_req(const char *sandbox_id)
{
	json_t *req = json_pack("{s:s, s:s, s:s}", "op", "restore", "wall_clock_ns", "1000000000",
				"entropy", entropy);
	if (sandbox_id)
		json_object_set_new(req, "sandbox_id", json_string(sandbox_id));
	return req;
}

/* A file's content ("" when absent), NUL-terminated. */
static char *slurp(const char *path)
{
	char *txt = NULL;
	int r = util_read_file(path, 1 << 20, &txt, NULL);
	if (r == -ENOENT)
		return strdup("");
	assert_int_equal(r, 0);
	return txt;
}

/* The hook named name in an END's "hooks". */
static json_t *hook_named(json_t *end, const char *name)
{
	size_t i;
	json_t *h;
	json_array_foreach(json_object_get(end, "hooks"), i, h) {
		if (strcmp(json_string_value(json_object_get(h, "name")), name) == 0)
			return h;
	}
	return NULL;
}

static void test_hooks_run_in_order_with_the_id(void **state)
{
	struct agent_fixture *f = *state;
	char probe[PATH_MAX + 32];
	snprintf(probe, sizeof(probe), "%s/probe", f->a.dir);
	char body[2 * PATH_MAX];
	snprintf(body, sizeof(body), "echo \"b $PANDASTACK_SANDBOX_ID $(pwd)\" >> %s", probe);
	put_hook(f, "20-second", 0755, body);
	snprintf(body, sizeof(body), "echo \"a $PANDASTACK_SANDBOX_ID\" >> %s\necho said-a", probe);
	put_hook(f, "10-first", 0755, body);
	put_hook(f, "15-fails", 0755, "echo oops >&2; exit 3");
	/* not hooks: hidden, not executable, a name outside the rules */
	snprintf(body, sizeof(body), "echo bad >> %s", probe);
	put_hook(f, ".hidden", 0755, body);
	put_hook(f, "30-not-executable", 0644, body);
	put_hook(f, "40 spaced", 0755, body);

	/* positive control: a restore that hands nothing out runs nothing */
	json_t *end = harness_call(f->c, restore_req(NULL));
	assert_null(end_error(end));
	assert_null(json_object_get(end, "hooks"));
	/* ... but says how many it would run (a pool's hand-out waits for them) */
	assert_int_equal(end_int(end, "hooks_found"), 3);
	json_decref(end);
	assert_int_equal(guest_conn_restore(f->c, NULL, 5000), 0);
	assert_int_equal(guest_conn_restore_hooks_found(f->c), 3);
	char *txt = slurp(probe);
	assert_string_equal(txt, "");
	free(txt);

	end = harness_call(f->c, restore_req("sbx_first"));
	assert_non_null(end);
	assert_null(end_error(end));
	txt = slurp(probe);
	char want[PATH_MAX + 64];
	snprintf(want, sizeof(want), "a sbx_first\nb sbx_first %s\n", f->a.ws);
	assert_string_equal(txt, want);
	free(txt);
	json_t *hooks = json_object_get(end, "hooks");
	assert_int_equal(json_array_size(hooks), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(hooks, 0), "name")),
			    "10-first");
	assert_string_equal(json_string_value(json_object_get(json_array_get(hooks, 2), "name")),
			    "20-second");
	json_t *h = hook_named(end, "10-first");
	assert_int_equal(end_int(h, "exit_code"), 0);
	assert_string_equal(json_string_value(json_object_get(h, "output")), "said-a\n");
	h = hook_named(end, "15-fails");
	assert_int_equal(end_int(h, "exit_code"), 3);
	assert_true(json_is_false(json_object_get(h, "timed_out")));
	assert_string_equal(json_string_value(json_object_get(h, "output")), "oops\n");
	assert_int_equal(end_int(end, "hooks_failed"), 1);
	json_decref(end);

	/* the report a user reads in the guest */
	txt = slurp(f->a.hooks_report);
	json_t *rep = json_loads(txt, 0, NULL);
	free(txt);
	assert_non_null(rep);
	assert_string_equal(json_string_value(json_object_get(rep, "sandbox_id")), "sbx_first");
	assert_int_equal(json_array_size(json_object_get(rep, "hooks")), 3);
	json_decref(rep);

	/* through the host's call: the id travels, the agent has the feature */
	assert_int_equal(unlink(probe), 0);
	struct guest_restore_opts o = {.sandbox_id = "sbx_second"};
	assert_int_equal(guest_conn_restore(f->c, &o, 30000), 0);
	txt = slurp(probe);
	assert_non_null(strstr(txt, "a sbx_second\n"));
	free(txt);
	/* an id that is not one: refused by the host, and by the agent */
	o.sandbox_id = "sbx bad";
	assert_int_equal(guest_conn_restore(f->c, &o, 5000), -EINVAL);
	end = harness_call(f->c, restore_req("sbx bad"));
	assert_string_equal(end_error(end), "EINVAL");
	json_decref(end);
}

/* A folder found empty is remembered by its times (one stat per restore):
 * a hook put there later still runs, also one made and then chmod +x'd. */
static void test_hook_added_to_a_folder_found_empty(void **state)
{
	struct agent_fixture *f = *state;
	sleep(2); /* the folder (made by setup) must look quiet to be remembered */
	for (int i = 0; i < 2; i++) {
		json_t *end = harness_call(f->c, restore_req("sbx_empty"));
		assert_null(end_error(end));
		assert_int_equal(json_array_size(json_object_get(end, "hooks")), 0);
		json_decref(end);
	}
	put_hook(f, "10-late", 0644, "echo late");
	json_t *end = harness_call(f->c, restore_req("sbx_late"));
	assert_int_equal(json_array_size(json_object_get(end, "hooks")), 0); /* not executable */
	json_decref(end);
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/10-late", f->a.hooks_dir);
	assert_int_equal(chmod(path, 0755), 0);
	end = harness_call(f->c, restore_req("sbx_late"));
	json_t *h = hook_named(end, "10-late");
	assert_non_null(h);
	assert_string_equal(json_string_value(json_object_get(h, "output")), "late\n");
	json_decref(end);
}

static void test_hung_hook_is_killed_and_output_capped(void **state)
{
	struct agent_fixture *f = *state;
	char pidfile[PATH_MAX + 32], body[2 * PATH_MAX];
	snprintf(pidfile, sizeof(pidfile), "%s/bg.pid", f->a.dir);
	/* a child of its own and the hook both hang */
	snprintf(body, sizeof(body), "sleep 1000 & echo $! > %s\nexec sleep 1000", pidfile);
	put_hook(f, "10-hangs", 0755, body);
	put_hook(f, "20-chatty", 0755, "head -c 100000 /dev/zero | tr '\\0' x");
	json_t *end = harness_call(f->c, restore_req("sbx_hang"));
	assert_non_null(end);
	assert_null(end_error(end));
	json_t *h = hook_named(end, "10-hangs");
	assert_true(json_is_true(json_object_get(h, "timed_out")));
	assert_int_equal(end_int(h, "exit_code"), 128 + 9);
	assert_true(end_int(h, "ms") >= RESTORE_HOOK_TIMEOUT_MS);
	/* the tree went with it */
	char *txt = slurp(pidfile);
	pid_t bg = (pid_t)atol(txt);
	free(txt);
	assert_true(bg > 0);
	int64_t until = util_now_ms() + 5000;
	while (kill(bg, 0) == 0 && util_now_ms() < until)
		usleep(20 * 1000);
	assert_int_not_equal(kill(bg, 0), 0);
	/* the next hook still ran; its output is cut at the cap */
	h = hook_named(end, "20-chatty");
	assert_int_equal(end_int(h, "exit_code"), 0);
	assert_int_equal(strlen(json_string_value(json_object_get(h, "output"))),
			 RESTORE_HOOK_OUTPUT_MAX);
	assert_true(json_is_true(json_object_get(h, "output_truncated")));
	assert_int_equal(end_int(end, "hooks_failed"), 1);
	json_decref(end);
}

static void test_too_many_hooks_and_one_restore_at_a_time(void **state)
{
	struct agent_fixture *f = *state;
	for (int i = 0; i < RESTORE_HOOKS_MAX + 2; i++) {
		char name[32];
		snprintf(name, sizeof(name), "h%03d", i);
		put_hook(f, name, 0755, i == 0 ? "sleep 1" : "true");
	}
	json_t *req = restore_req("sbx_many");
	struct guest_stream *s;
	assert_int_equal(guest_stream_open(f->c, req, &s), 0);
	json_decref(req);
	/* while its hooks run, another restore is refused */
	usleep(300 * 1000);
	json_t *end = harness_call(f->c, restore_req("sbx_other"));
	assert_string_equal(end_error(end), "EBUSY");
	json_decref(end);
	struct exec_result r = {0};
	assert_int_equal(harness_collect(s, &r, 30000), 0);
	guest_stream_close(s);
	assert_null(end_error(r.end));
	json_t *hooks = json_object_get(r.end, "hooks");
	assert_int_equal(json_array_size(hooks), RESTORE_HOOKS_MAX + 2);
	for (size_t i = 0; i < json_array_size(hooks); i++) {
		int skipped = json_is_true(json_object_get(json_array_get(hooks, i), "skipped"));
		assert_int_equal(skipped, i >= RESTORE_HOOKS_MAX);
	}
	exec_result_clear(&r);
}

/* --- code contexts ------------------------------------------------------------ */

static json_t *ctx_call(struct agent_fixture *f, const char *op, const char *id, const char *code)
{
	json_t *req = json_pack("{s:s, s:s}", "op", op, "id", id);
	if (code)
		json_object_set_new(req, "code", json_string(code));
	json_t *end = harness_call(f->c, req);
	assert_non_null(end);
	return end;
}

/* Run code in context id; fails on an error. */
static void ctx_run(struct agent_fixture *f, const char *id, const char *code)
{
	json_t *end = ctx_call(f, "context_run", id, code);
	if (end_error(end) || !json_is_null(json_object_get(end, "error"))) {
		char *t = json_dumps(end, 0);
		fail_msg("run in %s: %s", id, t);
	}
	json_decref(end);
}

/* idle_ms of context id (context_list). */
static json_int_t ctx_idle_ms(struct agent_fixture *f, const char *id)
{
	json_t *end = harness_call(f->c, json_pack("{s:s}", "op", "context_list"));
	size_t i;
	json_t *c;
	json_int_t idle = -1;
	json_array_foreach(json_object_get(end, "contexts"), i, c) {
		if (strcmp(json_string_value(json_object_get(c, "id")), id) == 0)
			idle = json_integer_value(json_object_get(c, "idle_ms"));
	}
	json_decref(end);
	assert_true(idle >= 0);
	return idle;
}

static void test_kernel_functions(void **state)
{
	struct agent_fixture *f = *state;
	char probe[PATH_MAX + 32], code[4 * PATH_MAX];
	snprintf(probe, sizeof(probe), "%s/kprobe", f->a.dir);
	json_t *end = ctx_call(f, "context_create", "ctx_hooks", NULL);
	assert_null(end_error(end));
	json_decref(end);
	end = ctx_call(f, "context_create", "ctx_plain", NULL);
	assert_null(end_error(end));
	json_decref(end);
	/* the probe's path as a Python literal */
	char lit[sizeof(probe) + 8];
	snprintf(lit, sizeof(lit), "'%s'", probe);
	snprintf(code, sizeof(code),
		 "import os, _ssl, pandastack_restore\n"
		 "PROBE = %s\n"
		 "calls = []\n"
		 "_orig = _ssl.RAND_add\n"
		 "_ssl.RAND_add = lambda b, e: (calls.append(len(b)), _orig(b, e))[1]\n"
		 "@pandastack_restore.register_after_restore\n"
		 "def note(tag='hook'):\n"
		 "    open(PROBE, 'a').write('%%s %%s\\n' %% (tag, pandastack_restore.sandbox_id()))\n"
		 "def bad():\n"
		 "    raise ValueError('nope')\n"
		 "pandastack_restore.register_after_restore(bad)\n"
		 "pandastack_restore.register_after_restore(note, tag='again')\n",
		 lit);
	ctx_run(f, "ctx_hooks", code);
	usleep(1200 * 1000);
	json_int_t plain_idle = ctx_idle_ms(f, "ctx_plain");
	assert_true(plain_idle >= 1000);

	end = harness_call(f->c, restore_req("sbx_k1"));
	assert_null(end_error(end));
	json_t *kh = json_object_get(end, "kernel_hooks");
	assert_int_equal(end_int(kh, "ran"), 1);
	assert_int_equal(end_int(kh, "failed"), 1);
	assert_int_equal(end_int(kh, "unfinished"), 0);
	const char *err = json_string_value(
		json_object_get(json_array_get(json_object_get(kh, "errors"), 0), "error"));
	assert_non_null(err);
	assert_non_null(strstr(err, "bad: ValueError: nope"));
	json_decref(end);
	/* they ran before the END, in order, the failing one in between */
	char *txt = slurp(probe);
	assert_string_equal(txt, "hook sbx_k1\nagain sbx_k1\n");
	free(txt);
	/* the kernel without functions was left asleep (the probe sees the
	 * other one's job), and reseeds ahead of its next run */
	assert_true(ctx_idle_ms(f, "ctx_plain") >= plain_idle);
	assert_true(ctx_idle_ms(f, "ctx_hooks") < plain_idle);
	snprintf(code, sizeof(code),
		 "import os\nopen(%s, 'a').write('plain %%s\\n' %% "
		 "os.environ.get('PANDASTACK_SANDBOX_ID'))\n", lit);
	ctx_run(f, "ctx_plain", code);
	/* OpenSSL was reseeded in the marked kernel (one RAND_add of 64 bytes) */
	ctx_run(f, "ctx_hooks",
		"open(PROBE, 'a').write('calls %s %s\\n' % "
		"(calls, os.environ['PANDASTACK_SANDBOX_ID']))\n");
	txt = slurp(probe);
	assert_string_equal(txt, "hook sbx_k1\nagain sbx_k1\nplain sbx_k1\ncalls [64] sbx_k1\n");
	free(txt);

	/* a function that hangs is interrupted at its bound; the kernel keeps
	 * its state */
	ctx_run(f, "ctx_hooks", "import time\npandastack_restore.unregister_after_restore(bad)\n"
				 "pandastack_restore.register_after_restore(time.sleep, 1000)\n");
	end = harness_call(f->c, restore_req("sbx_k2"));
	assert_null(end_error(end));
	kh = json_object_get(end, "kernel_hooks");
	assert_int_equal(end_int(kh, "ran"), 1);
	assert_int_equal(end_int(kh, "failed"), 1);
	err = json_string_value(
		json_object_get(json_array_get(json_object_get(kh, "errors"), 0), "error"));
	assert_non_null(strstr(err, "TimeoutError"));
	json_decref(end);
	ctx_run(f, "ctx_hooks", "assert len(calls) == 2 and PROBE");

	/* a restarted kernel has registered nothing */
	end = ctx_call(f, "context_restart", "ctx_hooks", NULL);
	assert_null(end_error(end));
	json_decref(end);
	ctx_run(f, "ctx_hooks", "1");
	end = harness_call(f->c, restore_req("sbx_k3"));
	assert_null(end_error(end));
	assert_int_equal(end_int(json_object_get(end, "kernel_hooks"), "ran"), 0);
	json_decref(end);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	/* the guest's module, as the images install it */
	char mod[PATH_MAX];
	assert_non_null(realpath("images/guest", mod));
	setenv("PYTHONPATH", mod, 1);
	const struct CMUnitTest tests[] = {
		HOOKS_TEST(test_hooks_run_in_order_with_the_id),
		HOOKS_TEST(test_hook_added_to_a_folder_found_empty),
		HOOKS_TEST(test_hung_hook_is_killed_and_output_capped),
		HOOKS_TEST(test_too_many_hooks_and_one_restore_at_a_time),
		HOOKS_TEST(test_kernel_functions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
