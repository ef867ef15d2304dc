/*
 * test_agent_contexts.c - the agent's code-context operations
 * (docs/agent-protocol.md, "Code contexts"), end to end on the host: the
 * agent in --listen mode (agent_harness.h) driven through guest_conn, with
 * the host's python3 and its ipykernel.  Skipped (as a whole) when the
 * host's /usr/bin/python3 has no ipykernel.
 *
 * Covered: create (and its errors), run (values, stdout, errors, state),
 * the queue of a busy context, timeouts that keep the state, a dying
 * kernel, CANCEL of a run, delete, list, the idle reaper, the host
 * leaving and coming back, the warm pool (context_pool) and the reseed
 * that restore queues in it.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent_harness.h"

/* Generous: ipykernel takes a second or two to start on a busy host. */
#define CREATE_MS 120000
#define RUN_MS 60000

/* Everything one context_run produced. */
struct run {
	char *out, *err;     /* stdout / stderr text, NUL-terminated */
	size_t outlen, errlen;
	json_t *results;     /* array of result events */
	json_t *end;         /* END (done) or ERROR object */
};

static void run_clear(struct run *r)
{
	free(r->out);
	free(r->err);
	json_decref(r->results);
	json_decref(r->end);
	memset(r, 0, sizeof(*r));
}

static int have_ipykernel(void)
{
	return system("/usr/bin/python3 -c 'import ipykernel' >/dev/null 2>&1") == 0;
}

/* context_create id with extra fields (stolen, may be NULL); the END. */
static json_t *create_ctx(struct guest_conn *c, const char *id, json_t *extra)
{
	json_t *req = json_pack("{s:s, s:s}", "op", "context_create", "id", id);
	if (extra) {
		json_object_update(req, extra);
		json_decref(extra);
	}
	json_t *res = NULL;
	int r = guest_call(c, req, CREATE_MS, &res);
	json_decref(req);
	assert_true(r == 0 || r == -EPROTO);
	return res;
}

/* Open a context_run request (borrowed) as a run read by the cell reader
 * (guest_run), bounded by RUN_MS.  Returns 0 or -errno. */
static int open_run(struct guest_conn *c, json_t *req, struct guest_run **x)
{
	struct guest_run_opts o = {.kind = GUEST_RUN_CELL, .deadline_ms = RUN_MS};
	return guest_run_open(c, req, &o, x);
}

/* Collect a run to its end: 0 with r->end the done object or the agent's
 * error answer, or -errno. */
static int collect_run(struct guest_run *x, struct run *r)
{
	memset(r, 0, sizeof(*r));
	struct guest_run_result res;
	int k = guest_run_collect(x, &res, -1, NULL, NULL);
	r->out = res.out;
	r->outlen = res.out_len;
	r->err = res.err;
	r->errlen = res.err_len;
	r->results = res.results ? res.results : json_array();
	r->end = res.end;
	return k == -EPROTO && r->end ? 0 : k;
}

static json_t *run_req(const char *id, const char *code, int timeout_ms)
{
	return json_pack("{s:s, s:s, s:s, s:i}", "op", "context_run", "id", id, "code", code,
			 "timeout_ms", timeout_ms);
}

/* Run code in context id and collect everything; asserts the stream. */
static void run_code(struct guest_conn *c, const char *id, const char *code, int timeout_ms,
		     struct run *r)
{
	struct guest_run *s;
	json_t *req = run_req(id, code, timeout_ms);
	assert_int_equal(open_run(c, req, &s), 0);
	json_decref(req);
	assert_int_equal(collect_run(s, r), 0);
	guest_run_close(s);
}

/* The main result's text; without one, a description of what came back
 * instead (so that a comparison fails with it rather than crashing). */
static const char *main_text(struct run *r)
{
	static char missing[1024];
	size_t i;
	json_t *res;
	json_array_foreach(r->results, i, res)
		if (json_is_true(json_object_get(res, "is_main_result"))) {
			const char *t = json_string_value(json_object_get(res, "text"));
			return t ? t : "(a main result without text)";
		}
	char *results = json_dumps(r->results, JSON_COMPACT), *end = json_dumps(r->end, JSON_COMPACT);
	snprintf(missing, sizeof(missing),
		 "(no main result: results %.300s, end %.300s, %zu bytes of stdout ending %.100s)",
		 results ? results : "?", end ? end : "none", r->outlen,
		 r->outlen > 100 ? r->out + r->outlen - 100 : r->out ? r->out : "");
	free(results);
	free(end);
	return missing;
}

static const char *error_name(json_t *end)
{
	return json_string_value(json_object_get(json_object_get(end, "error"), "name"));
}

static const char *error_value(json_t *end)
{
	return json_string_value(json_object_get(json_object_get(end, "error"), "value"));
}

/* --- tests ------------------------------------------------------------------ */

static void test_create_run_state_and_errors(void **state)
{
	struct agent_fixture *f = *state;
	json_t *end = create_ctx(f->c, "ctx_a", NULL);
	assert_null(end_error(end));
	assert_string_equal(json_string_value(json_object_get(end, "id")), "ctx_a");
	assert_string_equal(json_string_value(json_object_get(end, "kernel")), "jupyter");
	assert_string_equal(json_string_value(json_object_get(end, "language")), "python");
	assert_true(json_is_true(json_object_get(end, "ready")));
	assert_true(json_integer_value(json_object_get(end, "pid")) > 0);
	json_decref(end);

	struct run r;
	run_code(f->c, "ctx_a", "sum(range(101))", 0, &r);
	assert_null(error_name(r.end));
	assert_string_equal(main_text(&r), "5050");
	assert_int_equal(r.outlen, 0);
	assert_true(json_integer_value(json_object_get(r.end, "execution_count")) >= 1);
	assert_true(json_is_false(json_object_get(r.end, "timed_out")));
	run_clear(&r);

	run_code(f->c, "ctx_a", "print('hi'); 7", 0, &r);
	assert_string_equal(r.out, "hi\n");
	assert_string_equal(main_text(&r), "7");
	run_clear(&r);

	run_code(f->c, "ctx_a", "x = 41\n1/0", 0, &r);
	assert_string_equal(error_name(r.end), "ZeroDivisionError");
	const char *tb = json_string_value(
		json_object_get(json_object_get(r.end, "error"), "traceback"));
	assert_non_null(tb);
	assert_null(strchr(tb, '\033')); /* no ANSI colour codes */
	run_clear(&r);

	run_code(f->c, "ctx_a", "x + 1", 0, &r); /* usable, and x survived */
	assert_null(error_name(r.end));
	assert_string_equal(main_text(&r), "42");
	run_clear(&r);

	run_code(f->c, "ctx_a", "input('name? ')", 0, &r); /* fails at once */
	assert_non_null(error_name(r.end));
	run_clear(&r);

	/* the id is taken; the agent's default cwd is the context's */
	end = create_ctx(f->c, "ctx_a", NULL);
	assert_string_equal(end_error(end), "EEXIST");
	json_decref(end);
	run_code(f->c, "ctx_a", "import os; os.getcwd()", 0, &r);
	assert_string_equal(main_text(&r), f->a.ws);
	run_clear(&r);
}

static void test_create_errors(void **state)
{
	struct agent_fixture *f = *state;
	json_t *end = create_ctx(f->c, "ctx_b", json_pack("{s:s}", "cwd", "/nonexistent/dir"));
	assert_string_equal(end_error(end), "ENOENT");
	json_decref(end);
	end = create_ctx(f->c, "ctx_b", json_pack("{s:s}", "cwd", "/etc/hostname"));
	assert_string_equal(end_error(end), "ENOTDIR");
	json_decref(end);
	end = create_ctx(f->c, "ctx_b", json_pack("{s:s}", "language", "ruby"));
	assert_string_equal(end_error(end), "EINVAL");
	json_decref(end);
	end = create_ctx(f->c, "bad id!", NULL);
	assert_string_equal(end_error(end), "EINVAL");
	json_decref(end);
	/* a run, delete or interrupt of an unknown context */
	json_t *res = harness_call(f->c, run_req("ctx_none", "1", 0));
	assert_string_equal(end_error(res), "ENOENT");
	json_decref(res);
	res = harness_call(f->c, json_pack("{s:s, s:s}", "op", "context_delete", "id", "ctx_none"));
	assert_string_equal(end_error(res), "ENOENT");
	json_decref(res);
	/* nothing was left behind */
	res = harness_call(f->c, json_pack("{s:s}", "op", "context_list"));
	assert_int_equal(json_array_size(json_object_get(res, "contexts")), 0);
	json_decref(res);
}

static void test_env_and_cwd(void **state)
{
	struct agent_fixture *f = *state;
	json_t *end = create_ctx(f->c, "ctx_env",
				 json_pack("{s:s, s:{s:s}}", "cwd", "/tmp", "env", "GREETING",
					   "it's \"quoted\""));
	assert_null(end_error(end));
	assert_string_equal(json_string_value(json_object_get(end, "cwd")), "/tmp");
	json_decref(end);
	struct run r;
	run_code(f->c, "ctx_env",
		 "import os; print(os.getcwd()); print(os.environ['GREETING']); "
		 "print(os.environ['HOME'])",
		 0, &r);
	assert_string_equal(r.out, "/tmp\nit's \"quoted\"\n/root\n");
	run_clear(&r);
}

/*
 * A thread that prints after its cell ended, and a cell run at once after
 * it: every line reaches the caller, in order, in the cell that was current
 * when it was printed or else the context's next run (kernel_late.h).
 */
static void test_output_after_the_cell_ended(void **state)
{
	struct agent_fixture *f = *state;
	json_t *end = create_ctx(f->c, "ctx_late", NULL);
	assert_null(end_error(end));
	json_decref(end);
	struct run r[3];
	run_code(f->c, "ctx_late",
		 "import threading, time\n"
		 "def talk():\n"
		 "    for i in range(3):\n"
		 "        time.sleep(0.4)\n"
		 "        print('late', i, flush=True)\n"
		 "threading.Thread(target=talk).start()\n",
		 0, &r[0]);
	run_code(f->c, "ctx_late", "1 + 1", 0, &r[1]);
	/* control: the lines were not yet printed when both cells ended */
	assert_null(strstr(r[0].out, "late 2"));
	assert_null(strstr(r[1].out, "late 2"));
	usleep(2500 * 1000);
	run_code(f->c, "ctx_late", "print('next')", 0, &r[2]);
	char all[512];
	snprintf(all, sizeof(all), "%s%s%s", r[0].out, r[1].out, r[2].out);
	assert_string_equal(all, "late 0\nlate 1\nlate 2\nnext\n");
	for (int i = 0; i < 3; i++)
		run_clear(&r[i]);
}

/*
 * The context's notebook file: 3 cells (text, a display, an error) open
 * with nbformat and validate against its schema, with their outputs.
 * Control: before the first cell ends there is no file.
 */
static void test_notebook_file(void **state)
{
	struct agent_fixture *f = *state;
	char path[64];
	snprintf(path, sizeof(path), "/tmp/pandastack-test-%d.ipynb", (int)getpid());
	unlink(path);
	json_t *end = create_ctx(f->c, "ctx_nb", json_pack("{s:s}", "notebook", path));
	assert_null(end_error(end));
	assert_string_equal(json_string_value(json_object_get(end, "notebook")), path);
	json_decref(end);
	assert_int_not_equal(access(path, F_OK), 0);
	struct run r;
	run_code(f->c, "ctx_nb", "print('one')\n6 * 7", 0, &r);
	run_clear(&r);
	run_code(f->c, "ctx_nb",
		 "from IPython.display import display, HTML\ndisplay(HTML('<b>two</b>'))", 0, &r);
	run_clear(&r);
	run_code(f->c, "ctx_nb", "1 / 0", 0, &r);
	run_clear(&r);
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
		 "/usr/bin/python3 -c \"import nbformat, sys\n"
		 "nb = nbformat.read(sys.argv[1], as_version=4)\n"
		 "nbformat.validate(nb)\n"
		 "c = nb.cells\n"
		 "assert [x.source for x in c] == ['print(\\'one\\')\\n6 * 7', "
		 "'from IPython.display import display, HTML\\ndisplay(HTML(\\'<b>two</b>\\'))', "
		 "'1 / 0'], c\n"
		 "assert c[0].outputs[0].text == 'one\\n' and c[0].outputs[1].data['text/plain'] == '42'\n"
		 "assert c[1].outputs[0].data['text/html'] == '<b>two</b>'\n"
		 "assert c[2].outputs[0].ename == 'ZeroDivisionError'\n"
		 "\" %s",
		 path);
	assert_int_equal(system(cmd), 0);
	unlink(path);
}

static void test_busy_context_queues(void **state)
{
	struct agent_fixture *f = *state;
	json_t *end = create_ctx(f->c, "ctx_q", NULL);
	assert_null(end_error(end));
	json_decref(end);
	/* the second run is sent while the first sleeps: it waits its turn */
	struct guest_run *s1, *s2;
	json_t *q1 = run_req("ctx_q", "import time; time.sleep(1); order = ['first']", 0);
	json_t *q2 = run_req("ctx_q", "order.append('second'); order", 0);
	assert_int_equal(open_run(f->c, q1, &s1), 0);
	assert_int_equal(open_run(f->c, q2, &s2), 0);
	json_decref(q1);
	json_decref(q2);
	struct run r1, r2;
	assert_int_equal(collect_run(s2, &r2), 0);
	assert_int_equal(collect_run(s1, &r1), 0);
	assert_null(error_name(r1.end));
	assert_null(error_name(r2.end));
	assert_string_equal(main_text(&r2), "['first', 'second']");
	/* the list shows it, idle again */
	json_t *res = harness_call(f->c, json_pack("{s:s}", "op", "context_list"));
	json_t *one = json_array_get(json_object_get(res, "contexts"), 0);
	assert_string_equal(json_string_value(json_object_get(one, "id")), "ctx_q");
	assert_true(json_is_false(json_object_get(one, "busy")));
	json_decref(res);
	run_clear(&r1);
	run_clear(&r2);
	guest_run_close(s1);
	guest_run_close(s2);
}

static void test_timeout_keeps_state(void **state)
{
	struct agent_fixture *f = *state;
	json_t *end = create_ctx(f->c, "ctx_t", NULL);
	assert_null(end_error(end));
	json_decref(end);
	struct run r;
	run_code(f->c, "ctx_t", "keep = 'still here'", 0, &r);
	run_clear(&r);
	int64_t t0 = util_now_ms();
	run_code(f->c, "ctx_t", "import time; time.sleep(100)", 1000, &r);
	assert_true(util_now_ms() - t0 < 30000);
	assert_string_equal(error_name(r.end), "TimeoutError");
	assert_true(json_is_true(json_object_get(r.end, "timed_out")));
	run_clear(&r);
	run_code(f->c, "ctx_t", "keep", 0, &r);
	assert_string_equal(main_text(&r), "still here");
	run_clear(&r);
}

static void test_dead_kernel_restarts(void **state)
{
	struct agent_fixture *f = *state;
	json_t *end = create_ctx(f->c, "ctx_d", NULL);
	assert_null(end_error(end));
	json_decref(end);
	struct run r;
	run_code(f->c, "ctx_d", "import os; os._exit(3)", 0, &r);
	assert_string_equal(error_name(r.end), "DeadKernelError");
	assert_non_null(strstr(error_value(r.end), "3"));
	run_clear(&r);
	run_code(f->c, "ctx_d", "6 * 7", 0, &r);
	assert_null(error_name(r.end));
	assert_string_equal(main_text(&r), "42");
	run_clear(&r);
	json_t *res = harness_call(f->c, json_pack("{s:s}", "op", "context_list"));
	json_t *one = json_array_get(json_object_get(res, "contexts"), 0);
	assert_true(json_integer_value(json_object_get(one, "restarts")) >= 1);
	assert_non_null(json_string_value(json_object_get(one, "last_restart")));
	json_decref(res);
}

static void test_cancel_run(void **state)
{
	struct agent_fixture *f = *state;
	json_t *end = create_ctx(f->c, "ctx_c", NULL);
	assert_null(end_error(end));
	json_decref(end);
	struct run r;
	run_code(f->c, "ctx_c", "kept = 5", 0, &r);
	run_clear(&r);
	struct guest_run *s;
	json_t *req = run_req("ctx_c", "import time; time.sleep(100)", 0);
	assert_int_equal(open_run(f->c, req, &s), 0);
	json_decref(req);
	usleep(500 * 1000);
	assert_int_equal(guest_run_cancel(s), 0);
	assert_int_equal(collect_run(s, &r), 0);
	assert_string_equal(end_error(r.end), "ECANCELED");
	run_clear(&r);
	guest_run_close(s);
	run_code(f->c, "ctx_c", "kept", 0, &r); /* interrupted, not killed */
	assert_string_equal(main_text(&r), "5");
	run_clear(&r);
}

/* The host closes a run it stopped waiting for (its client left) without
 * collecting it: the cell is interrupted and the context takes the next
 * run at once, for a quiet cell and for one flooding output (which ran
 * into its output cap: a backlog the agent parsed in full held the next
 * run up for minutes). */
static void test_close_interrupts(void **state)
{
	struct agent_fixture *f = *state;
	json_t *end = create_ctx(f->c, "ctx_q", NULL);
	assert_null(end_error(end));
	json_decref(end);
	static const char *const cells[] = {
		"import time\nwhile True: time.sleep(0.5)",
		"i=0\nwhile True:\n  print(i, 'z'*1000); i+=1",
	};
	for (size_t k = 0; k < 2; k++) {
		struct guest_run *s;
		json_t *req = run_req("ctx_q", cells[k], 0);
		assert_int_equal(open_run(f->c, req, &s), 0);
		json_decref(req);
		/* long enough for the flood to pass the 16 MiB cap many times */
		for (int64_t until = util_now_ms() + 6000; util_now_ms() < until;)
			usleep(100 * 1000);
		guest_run_close(s);
		struct run r;
		run_code(f->c, "ctx_q", "2+2", 20000, &r);
		assert_null(end_error(r.end));
		assert_string_equal(main_text(&r), "4");
		/* what the closed cell printed after its end is not this run's */
		assert_null(r.out ? strstr(r.out, "zzzz") : NULL);
		run_clear(&r);
	}
}

/* One output message over the link's frame cap (ipykernel sends a flood
 * in such pieces): libzmq drops the link and the agent makes it again.
 * What the kernel sent while the link was down is lost (the cell's own
 * result among it, depending on timing), so the cell's answer is not
 * compared; the next cell must answer (with the previous agent, every
 * later cell of the kernel came back empty). */
static void test_output_over_the_frame_cap(void **state)
{
	struct agent_fixture *f = *state;
	json_t *end = create_ctx(f->c, "ctx_big", NULL);
	assert_null(end_error(end));
	json_decref(end);
	struct run r;
	run_code(f->c, "ctx_big",
		 "import sys\nsys.stdout.write('x' * (80 << 20)); sys.stdout.flush()\n'done'", 60000,
		 &r);
	assert_null(end_error(r.end));
	run_clear(&r);
	run_code(f->c, "ctx_big", "2+2", 20000, &r);
	assert_null(end_error(r.end));
	assert_string_equal(main_text(&r), "4");
	run_clear(&r);
}

static void test_delete_and_interrupt(void **state)
{
	struct agent_fixture *f = *state;
	json_t *end = create_ctx(f->c, "ctx_x", NULL);
	assert_null(end_error(end));
	long pid = (long)json_integer_value(json_object_get(end, "pid"));
	json_decref(end);
	/* interrupt a running cell */
	struct guest_run *s;
	json_t *req = run_req("ctx_x", "import time; time.sleep(100)", 0);
	assert_int_equal(open_run(f->c, req, &s), 0);
	json_decref(req);
	usleep(500 * 1000);
	json_t *res = harness_call(f->c, json_pack("{s:s, s:s}", "op", "context_interrupt", "id",
						   "ctx_x"));
	assert_null(end_error(res));
	json_decref(res);
	struct run r;
	assert_int_equal(collect_run(s, &r), 0);
	assert_string_equal(error_name(r.end), "KeyboardInterrupt");
	run_clear(&r);
	guest_run_close(s);
	/* delete with a run queued: the run ends, the kernel goes */
	req = run_req("ctx_x", "import time; time.sleep(100)", 0);
	assert_int_equal(open_run(f->c, req, &s), 0);
	json_decref(req);
	usleep(300 * 1000);
	res = harness_call(f->c, json_pack("{s:s, s:s}", "op", "context_delete", "id", "ctx_x"));
	assert_null(end_error(res));
	json_decref(res);
	assert_int_equal(collect_run(s, &r), 0);
	assert_string_equal(end_error(r.end), "ECANCELED");
	run_clear(&r);
	guest_run_close(s);
	int64_t until = util_now_ms() + 10000;
	while (kill((pid_t)pid, 0) == 0 && util_now_ms() < until)
		usleep(50 * 1000);
	assert_int_not_equal(kill((pid_t)pid, 0), 0);
	res = harness_call(f->c, run_req("ctx_x", "1", 0));
	assert_string_equal(end_error(res), "ENOENT");
	json_decref(res);
}

static void test_idle_reaper(void **state)
{
	struct agent_fixture *f = *state;
	json_t *end = create_ctx(f->c, "ctx_idle", json_pack("{s:i}", "idle_timeout_ms", 1500));
	assert_null(end_error(end));
	json_decref(end);
	/* a run keeps it alive: the idle time counts from its end */
	struct run r;
	run_code(f->c, "ctx_idle", "import time; time.sleep(2)", 0, &r);
	assert_null(error_name(r.end));
	run_clear(&r);
	run_code(f->c, "ctx_idle", "1", 0, &r);
	assert_null(error_name(r.end));
	run_clear(&r);
	int64_t until = util_now_ms() + 15000;
	size_t n = 1;
	while (n > 0 && util_now_ms() < until) {
		usleep(200 * 1000);
		json_t *res = harness_call(f->c, json_pack("{s:s}", "op", "context_list"));
		n = json_array_size(json_object_get(res, "contexts"));
		json_decref(res);
	}
	assert_int_equal(n, 0);
	json_t *res = harness_call(f->c, run_req("ctx_idle", "1", 0));
	assert_string_equal(end_error(res), "ENOENT");
	json_decref(res);
}

static void test_contexts_survive_the_host(void **state)
{
	struct agent_fixture *f = *state;
	json_t *end = create_ctx(f->c, "ctx_h", NULL);
	assert_null(end_error(end));
	json_decref(end);
	struct run r;
	run_code(f->c, "ctx_h", "survivor = 'yes'", 0, &r);
	run_clear(&r);
	/* a run in flight when the host leaves is cancelled; the context stays */
	struct guest_run *s;
	json_t *req = run_req("ctx_h", "import time; time.sleep(100)", 0);
	assert_int_equal(open_run(f->c, req, &s), 0);
	json_decref(req);
	usleep(300 * 1000);
	guest_run_close(s);
	guest_conn_close(f->c);
	assert_int_equal(guest_conn_open(f->a.sock, 5000, &f->c), 0);
	run_code(f->c, "ctx_h", "survivor", 0, &r);
	assert_string_equal(main_text(&r), "yes");
	run_clear(&r);
}

static void test_pool_and_reseed(void **state)
{
	struct agent_fixture *f = *state;
	json_t *res = NULL;
	/* two warm kernels, as code-interpreter's template has */
	json_t *req = json_pack("{s:s, s:s, s:i}", "op", "context_pool", "code", "warm_marker = 1",
				"kernels", 2);
	assert_int_equal(guest_call(f->c, req, CREATE_MS, &res), 0);
	json_decref(req);
	assert_string_equal(json_string_value(json_object_get(res, "state")), "ready");
	assert_int_equal(json_integer_value(json_object_get(res, "kernels")), 2);
	json_decref(res);
	/* restore queues a reseed in every spare */
	static const char entropy[] =
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
		"202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f";
	res = harness_call(f->c, json_pack("{s:s, s:s, s:s}", "op", "restore", "wall_clock_ns",
					   "1000000000", "entropy", entropy));
	assert_null(end_error(res));
	assert_int_equal(json_integer_value(json_object_get(res, "kernels_reseeded")), 2);
	json_decref(res);
	/* two contexts in a row each take a warm spare: the warm code ran in
	 * both, and the default cwd needs no setup */
	json_t *end = create_ctx(f->c, "ctx_p1", NULL);
	assert_null(end_error(end));
	long p1 = (long)json_integer_value(json_object_get(end, "pid"));
	json_decref(end);
	end = create_ctx(f->c, "ctx_p2", json_pack("{s:s}", "cwd", "/tmp"));
	assert_null(end_error(end));
	long p2 = (long)json_integer_value(json_object_get(end, "pid"));
	json_decref(end);
	assert_true(p1 > 0 && p2 > 0 && p1 != p2);
	struct run r;
	run_code(f->c, "ctx_p1", "import os\n('pandas' in __import__('sys').modules, warm_marker, "
				 "os.getcwd())", 0, &r);
	assert_null(error_name(r.end));
	char want[PATH_MAX + 64];
	snprintf(want, sizeof(want), "(True, 1, '%s')", f->a.ws);
	assert_string_equal(main_text(&r), want);
	run_clear(&r);
	run_code(f->c, "ctx_p2", "import os\n(warm_marker, os.getcwd())", 0, &r);
	assert_string_equal(main_text(&r), "(1, '/tmp')");
	run_clear(&r);
	/* the pool fills up again once the contexts are quiet */
	req = json_pack("{s:s, s:s, s:i}", "op", "context_pool", "code", "warm_marker = 2",
			"kernels", 2);
	assert_int_equal(guest_call(f->c, req, CREATE_MS, &res), 0);
	json_decref(req);
	assert_string_equal(json_string_value(json_object_get(res, "state")), "ready");
	assert_int_equal(json_integer_value(json_object_get(res, "kernels")), 2);
	json_decref(res);
	/* a pool over the limit is refused */
	res = harness_call(f->c, json_pack("{s:s, s:i}", "op", "context_pool", "kernels", 9));
	assert_string_equal(end_error(res), "EINVAL");
	json_decref(res);
}

static void test_agent_exit_stops_kernels(void **state)
{
	(void)state;
	struct agent_fixture f = {0};
	assert_int_equal(harness_start(&f.a), 0);
	assert_int_equal(guest_conn_open(f.a.sock, 5000, &f.c), 0);
	json_t *end = create_ctx(f.c, "ctx_exit", NULL);
	assert_null(end_error(end));
	pid_t pid = (pid_t)json_integer_value(json_object_get(end, "pid"));
	json_decref(end);
	assert_true(pid > 0);
	assert_int_equal(kill(pid, 0), 0);
	guest_conn_close(f.c);
	assert_int_equal(harness_stop(&f.a), 0);
	/* the agent waited for its kernels: none outlives it */
	int64_t until = util_now_ms() + 5000;
	while (kill(pid, 0) == 0 && util_now_ms() < until)
		usleep(20 * 1000);
	assert_int_not_equal(kill(pid, 0), 0);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	if (!have_ipykernel()) {
		printf("# SKIP test_agent_contexts: /usr/bin/python3 has no ipykernel\n");
		return 0;
	}
	const struct CMUnitTest tests[] = {
		AGENT_TEST(test_create_run_state_and_errors),
		AGENT_TEST(test_create_errors),
		AGENT_TEST(test_env_and_cwd),
		AGENT_TEST(test_busy_context_queues),
		AGENT_TEST(test_output_after_the_cell_ended),
		AGENT_TEST(test_notebook_file),
		AGENT_TEST(test_timeout_keeps_state),
		AGENT_TEST(test_dead_kernel_restarts),
		AGENT_TEST(test_cancel_run),
		AGENT_TEST(test_close_interrupts),
		AGENT_TEST(test_output_over_the_frame_cap),
		AGENT_TEST(test_delete_and_interrupt),
		AGENT_TEST(test_idle_reaper),
		AGENT_TEST(test_contexts_survive_the_host),
		AGENT_TEST(test_pool_and_reseed),
		cmocka_unit_test(test_agent_exit_stops_kernels),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
