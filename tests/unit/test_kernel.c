/*
 * test_kernel.c - code contexts driven through the public API (kernel.h)
 * against real kernels: ipykernel (skipped, with a message, when
 * PANDASTACK_TEST_PYTHON - default /usr/bin/python3 - cannot import it)
 * and the plain-Python fallback kernel (always).
 *
 * Deadlines are generous (a run may take up to RUN_DEADLINE_MS); timings
 * are measured in bench/, not asserted here, except that a 2 s timeout
 * must end a 100 s sleep well before the sleep would.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "agent/kernel/kernel.h"
#include "agent/kernel/kernel_proc.h"
#include "common/util.h"

#define RUN_DEADLINE_MS 120000
#define POOL_DEADLINE_MS 240000

static const char *python;
static int have_ipykernel;
static char test_dir[64];

/* Context events (exec id 0) seen while waiting, per context. */
struct ctx_box {
	struct kernel_ctx *c;
	json_t *ctx_events;
};

struct run {
	json_t *events;  /* every event of the run, done last */
	json_t *done;    /* borrowed from events */
	int64_t ms;      /* wall time from run to done */
};

static const char *str(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static void run_clear(struct run *r)
{
	json_decref(r->events);
	memset(r, 0, sizeof(*r));
}

/* Wait for events until exec id's done (or any ctx event when id == 0
 * and want names a type).  Returns 0 or -ETIMEDOUT. */
static int pump(struct ctx_box *b, uint64_t id, const char *want, json_t *into, int64_t deadline_ms)
{
	int64_t end = util_now_ms() + deadline_ms;
	while (util_now_ms() < end) {
		struct pollfd p = { .fd = kernel_ctx_fd(b->c), .events = POLLIN };
		poll(&p, 1, 200);
		uint64_t eid;
		json_t *ev;
		while (kernel_ctx_next_event(b->c, &eid, &ev) == 0) {
			int hit = 0;
			if (eid == 0) {
				json_array_append(b->ctx_events, ev);
				hit = want && strcmp(str(ev, "type"), want) == 0;
			} else if (eid == id) {
				json_array_append(into, ev);
				hit = strcmp(str(ev, "type"), "done") == 0;
			}
			json_decref(ev);
			if (hit)
				return 0;
		}
	}
	return -ETIMEDOUT;
}

static void run_code(struct ctx_box *b, const char *code, int64_t timeout_ms, struct run *r)
{
	uint64_t id;
	r->events = json_array();
	int64_t t0 = util_now_ms();
	assert_int_equal(kernel_ctx_run(b->c, code, strlen(code), timeout_ms, &id), 0);
	assert_int_equal(pump(b, id, NULL, r->events, RUN_DEADLINE_MS), 0);
	r->ms = util_now_ms() - t0;
	r->done = json_array_get(r->events, json_array_size(r->events) - 1);
	assert_string_equal(str(r->done, "type"), "done");
}

/* The n-th event of type in the run (NULL if none). */
static json_t *nth(const struct run *r, const char *type, size_t n)
{
	size_t i;
	json_t *ev;
	json_array_foreach(r->events, i, ev)
		if (strcmp(str(ev, "type"), type) == 0 && n-- == 0)
			return ev;
	return NULL;
}

static size_t count(const struct run *r, const char *type)
{
	size_t k = 0, i;
	json_t *ev;
	json_array_foreach(r->events, i, ev)
		k += strcmp(str(ev, "type"), type) == 0;
	return k;
}

/* All text of one stream joined into out (n bytes). */
static const char *stream_text(const struct run *r, const char *type, char *out, size_t n)
{
	size_t i, off = 0;
	json_t *ev;
	out[0] = '\0';
	json_array_foreach(r->events, i, ev)
		if (strcmp(str(ev, "type"), type) == 0)
			off += (size_t)snprintf(out + off, off < n ? n - off : 0, "%s", str(ev, "text"));
	return out;
}

static const json_t *error_of(const struct run *r)
{
	const json_t *e = json_object_get(r->done, "error");
	return json_is_object(e) ? e : NULL;
}

static void assert_ok(const struct run *r)
{
	const json_t *e = error_of(r);
	if (e)
		fail_msg("unexpected error %s: %s\n%s", str(e, "name"), str(e, "value"),
			 str(e, "traceback"));
}

/* Run code, expect no error and a main result whose text is want. */
static void expect_text(struct ctx_box *b, const char *code, const char *want)
{
	struct run r;
	run_code(b, code, 0, &r);
	assert_ok(&r);
	json_t *res = nth(&r, "result", 0);
	assert_non_null(res);
	assert_true(json_is_true(json_object_get(res, "is_main_result")));
	assert_string_equal(str(res, "text"), want);
	run_clear(&r);
}

static int box_open(struct ctx_box *b, enum kernel_kind kind, size_t cap, const char *const *env,
		    const char *cwd)
{
	struct kernel_opts o = {
		.kind = kind, .python = python, .run_dir = test_dir, .output_cap = cap,
		.env = env, .cwd = cwd, .interrupt_grace_ms = 5000,
	};
	b->ctx_events = json_array();
	int r = kernel_ctx_create(&o, &b->c);
	if (r == 0) {
		json_t *tmp = json_array();
		r = pump(b, (uint64_t)-1, "ready", tmp, RUN_DEADLINE_MS);
		json_decref(tmp);
	}
	return r;
}

static void box_close(struct ctx_box *b)
{
	kernel_ctx_destroy(b->c);
	json_decref(b->ctx_events);
	b->c = NULL;
	b->ctx_events = NULL;
}

/* --- shared cases: both kernels must pass these -------------------------*/

static void case_sum(struct ctx_box *b)
{
	struct run r;
	run_code(b, "sum(range(101))", 0, &r);
	assert_ok(&r);
	assert_int_equal(count(&r, "result"), 1);
	json_t *res = nth(&r, "result", 0);
	assert_string_equal(str(res, "text"), "5050");
	assert_true(json_is_true(json_object_get(res, "is_main_result")));
	assert_true(json_is_integer(json_object_get(r.done, "execution_count")));
	assert_false(json_is_true(json_object_get(r.done, "timed_out")));
	run_clear(&r);
}

static void case_print_and_value(struct ctx_box *b)
{
	struct run r;
	run_code(b, "print('hi'); 7", 0, &r);
	assert_ok(&r);
	assert_int_equal(json_array_size(r.events), 3);
	assert_string_equal(str(json_array_get(r.events, 0), "type"), "stdout");
	assert_string_equal(str(json_array_get(r.events, 0), "text"), "hi\n");
	assert_string_equal(str(json_array_get(r.events, 1), "text"), "7");
	run_clear(&r);
}

static void case_error_then_works(struct ctx_box *b)
{
	struct run r;
	run_code(b, "1/0", 0, &r);
	const json_t *e = error_of(&r);
	assert_non_null(e);
	assert_string_equal(str(e, "name"), "ZeroDivisionError");
	assert_string_equal(str(e, "value"), "division by zero");
	assert_non_null(strstr(str(e, "traceback"), "ZeroDivisionError"));
	assert_null(strchr(str(e, "traceback"), '\x1b'));
	assert_int_equal(count(&r, "result"), 0);
	run_clear(&r);
	expect_text(b, "2 + 2", "4");
}

static void case_state_persists(struct ctx_box *b)
{
	struct run r;
	run_code(b, "x = 41\ndef f(v):\n    return v + 1", 0, &r);
	assert_ok(&r);
	assert_int_equal(count(&r, "result"), 0);
	run_clear(&r);
	expect_text(b, "f(x)", "42");
}

static void case_quotes(struct ctx_box *b)
{
	expect_text(b, "'abc'", "abc");
	expect_text(b, "'5050'", "5050");
	expect_text(b, "\"it's\"", "\"it's\"");
	expect_text(b, "[1, 'a']", "[1, 'a']");
}

static void case_display_two(struct ctx_box *b)
{
	struct run r;
	run_code(b, "display(1, 'two')\nNone", 0, &r);
	assert_ok(&r);
	assert_int_equal(count(&r, "result"), 2);
	assert_string_equal(str(nth(&r, "result", 0), "text"), "1");
	assert_string_equal(str(nth(&r, "result", 1), "text"), "two");
	assert_false(json_is_true(json_object_get(nth(&r, "result", 0), "is_main_result")));
	assert_false(json_is_true(json_object_get(nth(&r, "result", 1), "is_main_result")));
	run_clear(&r);
}

static void case_input_fails_fast(struct ctx_box *b)
{
	struct run r;
	run_code(b, "input('name? ')", 30000, &r);
	const json_t *e = error_of(&r);
	assert_non_null(e);
	assert_string_equal(str(e, "name"), "StdinNotImplementedError");
	assert_false(json_is_true(json_object_get(r.done, "timed_out")));
	run_clear(&r);
}

static void case_timeout_keeps_state(struct ctx_box *b)
{
	struct run r;
	run_code(b, "kept = 'still here'", 0, &r);
	assert_ok(&r);
	run_clear(&r);
	run_code(b, "import time\ntime.sleep(100)", 2000, &r);
	assert_true(json_is_true(json_object_get(r.done, "timed_out")));
	const json_t *e = error_of(&r);
	assert_non_null(e);
	assert_string_equal(str(e, "name"), "TimeoutError");
	assert_non_null(strstr(str(e, "traceback"), "KeyboardInterrupt"));
	assert_true(r.ms >= 1900);
	assert_true(r.ms < 60000); /* far from the 100 s of the sleep */
	run_clear(&r);
	expect_text(b, "kept", "still here");
}

static void case_death_exit_status(struct ctx_box *b)
{
	struct run r;
	run_code(b, "held = 1", 0, &r);
	run_clear(&r);
	run_code(b, "import os\nos._exit(1)", 0, &r);
	const json_t *e = error_of(&r);
	assert_non_null(e);
	assert_string_equal(str(e, "name"), "DeadKernelError");
	assert_non_null(strstr(str(e, "value"), "kernel exited with status 1"));
	run_clear(&r);
	expect_text(b, "1 + 1", "2");
	/* A new kernel: the old state is gone, and the restart was announced. */
	run_code(b, "held", 0, &r);
	assert_string_equal(str(error_of(&r), "name"), "NameError");
	run_clear(&r);
	size_t i;
	json_t *ev;
	int restarted = 0;
	json_array_foreach(b->ctx_events, i, ev)
		restarted |= strcmp(str(ev, "type"), "restarted") == 0 &&
			     strstr(str(ev, "reason"), "status 1") != NULL;
	assert_true(restarted);
}

static void case_death_by_signal(struct ctx_box *b)
{
	struct run r;
	run_code(b, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", 0, &r);
	const json_t *e = error_of(&r);
	assert_non_null(e);
	assert_string_equal(str(e, "name"), "DeadKernelError");
	assert_non_null(strstr(str(e, "value"), "kernel killed by signal 9 (SIGKILL, possibly out of memory)"));
	run_clear(&r);
	expect_text(b, "3 * 3", "9");
}

/* Wait for run id's first event (into evs): its "started\n" output. */
static void wait_first_output(struct ctx_box *b, uint64_t id, json_t *evs)
{
	int64_t end = util_now_ms() + RUN_DEADLINE_MS;
	while (json_array_size(evs) == 0 && util_now_ms() < end) {
		struct pollfd p = { .fd = kernel_ctx_fd(b->c), .events = POLLIN };
		poll(&p, 1, 200);
		uint64_t eid;
		json_t *ev;
		while (kernel_ctx_next_event(b->c, &eid, &ev) == 0) {
			if (eid == id)
				json_array_append(evs, ev);
			else if (eid == 0)
				json_array_append(b->ctx_events, ev);
			json_decref(ev);
		}
	}
	assert_int_equal(json_array_size(evs), 1);
	assert_string_equal(str(json_array_get(evs, 0), "text"), "started\n");
}

static void case_interrupt(struct ctx_box *b)
{
	uint64_t id;
	const char *code = "import time\nprint('started', flush=True)\ntime.sleep(100)";
	assert_int_equal(kernel_ctx_run(b->c, code, strlen(code), 0, &id), 0);
	json_t *evs = json_array();
	/* Wait until the code runs (its first output), then interrupt. */
	wait_first_output(b, id, evs);
	assert_int_equal(kernel_ctx_interrupt(b->c), 0);
	assert_int_equal(pump(b, id, NULL, evs, RUN_DEADLINE_MS), 0);
	json_t *done = json_array_get(evs, json_array_size(evs) - 1);
	assert_string_equal(str(json_object_get(done, "error"), "name"), "KeyboardInterrupt");
	assert_false(json_is_true(json_object_get(done, "timed_out")));
	json_decref(evs);
	expect_text(b, "'after'", "after");
}

/*
 * An interrupt can land just before the kernel blocks in a system call and
 * then act only when the call returns (CPython runs signal handlers
 * between bytecodes).  Here the cell swallows the first SIGINT, which
 * looks the same from outside: the kernel must still stop, with its state,
 * not be killed at the end of the grace period.
 */
static void case_interrupt_lost_once(struct ctx_box *b)
{
	struct run r;
	run_code(b, "kept_too = 'yes'", 0, &r);
	assert_ok(&r);
	run_clear(&r);
	uint64_t id;
	const char *code = "import signal, time\n"
			   "prev = signal.getsignal(signal.SIGINT)\n"
			   "def swallow(signum, frame):\n"
			   "    signal.signal(signal.SIGINT, prev)\n"
			   "signal.signal(signal.SIGINT, swallow)\n"
			   "print('started', flush=True)\n"
			   "time.sleep(100)";
	assert_int_equal(kernel_ctx_run(b->c, code, strlen(code), 0, &id), 0);
	json_t *evs = json_array();
	wait_first_output(b, id, evs);
	assert_int_equal(kernel_ctx_interrupt(b->c), 0);
	assert_int_equal(pump(b, id, NULL, evs, RUN_DEADLINE_MS), 0);
	json_t *done = json_array_get(evs, json_array_size(evs) - 1);
	assert_string_equal(str(json_object_get(done, "error"), "name"), "KeyboardInterrupt");
	json_decref(evs);
	expect_text(b, "kept_too", "yes");
}

static void case_cancel_queued(struct ctx_box *b)
{
	uint64_t a, q;
	const char *slow = "import time\ntime.sleep(0.5)\n'slow'";
	assert_int_equal(kernel_ctx_run(b->c, slow, strlen(slow), 0, &a), 0);
	assert_int_equal(kernel_ctx_run(b->c, "'queued'", 8, 0, &q), 0);
	assert_true(q > a);
	assert_int_equal(kernel_ctx_cancel(b->c, q), 0);
	assert_int_equal(kernel_ctx_cancel(b->c, q), -ENOENT);
	json_t *ea = json_array(), *eq = json_array();
	assert_int_equal(pump(b, q, NULL, eq, RUN_DEADLINE_MS), 0);
	assert_int_equal(json_array_size(eq), 1);
	assert_string_equal(str(json_object_get(json_array_get(eq, 0), "error"), "name"), "Cancelled");
	assert_int_equal(pump(b, a, NULL, ea, RUN_DEADLINE_MS), 0);
	/* its result (text an earlier case's child printed late may come first:
	 * kernel_late.h) */
	size_t i = 0;
	while (i < json_array_size(ea) && strcmp(str(json_array_get(ea, i), "type"), "result") != 0)
		i++;
	assert_string_equal(str(json_array_get(ea, i), "text"), "slow");
	json_decref(ea);
	json_decref(eq);
}

static void case_fd_output(struct ctx_box *b)
{
	struct run r;
	char out[256];
	run_code(b, "import os\nrc = os.system('echo from-shell')\nrc", 0, &r);
	assert_ok(&r);
	const char *t = stream_text(&r, "stdout", out, sizeof(out));
	if (!strstr(t, "from-shell\n")) {
		/* the kernel read the child's output after the cell ended (a busy
		 * host): it comes with the next run (kernel_late.h) */
		run_clear(&r);
		run_code(b, "0", 0, &r);
		t = stream_text(&r, "stdout", out, sizeof(out));
	}
	assert_non_null(strstr(t, "from-shell\n"));
	run_clear(&r);
}

/* --- ipykernel ------------------------------------------------------------*/

static struct ctx_box jbox;

static int jupyter_setup(void **state)
{
	(void)state;
	if (!have_ipykernel)
		return 0;
	return box_open(&jbox, KERNEL_JUPYTER, 0, NULL, NULL);
}

static int jupyter_teardown(void **state)
{
	(void)state;
	if (jbox.c)
		box_close(&jbox);
	return 0;
}

#define JUPYTER_CASE(name)                          \
	static void test_j_##name(void **state)     \
	{                                           \
		(void)state;                        \
		if (!have_ipykernel)                \
			skip();                     \
		case_##name(&jbox);                 \
	}
JUPYTER_CASE(sum)
JUPYTER_CASE(print_and_value)
JUPYTER_CASE(error_then_works)
JUPYTER_CASE(state_persists)
JUPYTER_CASE(quotes)
JUPYTER_CASE(display_two)
JUPYTER_CASE(input_fails_fast)
JUPYTER_CASE(timeout_keeps_state)
JUPYTER_CASE(death_exit_status)
JUPYTER_CASE(death_by_signal)
JUPYTER_CASE(interrupt)
JUPYTER_CASE(interrupt_lost_once)
JUPYTER_CASE(cancel_queued)
JUPYTER_CASE(fd_output)

/* Big-endian u32 at p. */
static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Decode the png of a result and return its IHDR size. */
static void png_size(const json_t *res, uint32_t *w, uint32_t *h)
{
	const char *b64 = str(res, "png");
	assert_non_null(b64);
	size_t n = strlen(b64);
	assert_true(n > 32 && n % 4 == 0);
	unsigned char *bin = malloc(n);
	int len = EVP_DecodeBlock(bin, (const unsigned char *)b64, (int)n);
	assert_true(len > 24);
	assert_memory_equal(bin, "\x89PNG\r\n\x1a\n", 8);
	assert_memory_equal(bin + 12, "IHDR", 4);
	*w = be32(bin + 16);
	*h = be32(bin + 20);
	free(bin);
}

static void test_j_matplotlib_png(void **state)
{
	(void)state;
	if (!have_ipykernel)
		skip();
	struct run r;
	/* Without the inline backend's tight bounding box, the PNG has
	 * exactly the figure's size in pixels. */
	run_code(&jbox,
		 "get_ipython().run_line_magic('config', \"InlineBackend.print_figure_kwargs = {'bbox_inches': None}\")\n"
		 "import matplotlib.pyplot as plt\n"
		 "fig = plt.figure(figsize=(3, 2), dpi=100)\n"
		 "plt.plot([1, 2, 3], [3, 1, 2])\n"
		 "plt.show()",
		 0, &r);
	assert_ok(&r);
	assert_int_equal(count(&r, "result"), 1);
	json_t *res = nth(&r, "result", 0);
	assert_false(json_is_true(json_object_get(res, "is_main_result")));
	uint32_t w, h;
	png_size(res, &w, &h);
	assert_int_equal(w, 300);
	assert_int_equal(h, 200);
	assert_non_null(strstr(str(res, "text"), "Figure size 300x200"));
	run_clear(&r);
	/* The default (tight) box crops a little: still a valid, smaller PNG. */
	run_code(&jbox,
		 "get_ipython().run_line_magic('config', \"InlineBackend.print_figure_kwargs = {'bbox_inches': 'tight'}\")\n"
		 "plt.figure(figsize=(4, 3), dpi=50)\nplt.plot([1, 2])\nplt.show()",
		 0, &r);
	assert_ok(&r);
	png_size(nth(&r, "result", 0), &w, &h);
	assert_true(w > 100 && w <= 200 && h > 75 && h <= 150);
	run_clear(&r);
}

static void test_j_dataframe_html(void **state)
{
	(void)state;
	if (!have_ipykernel)
		skip();
	struct run r;
	run_code(&jbox, "import pandas as pd\npd.DataFrame({'revenue': [1, 2], 'cost': [3, 4]})", 0, &r);
	assert_ok(&r);
	json_t *res = nth(&r, "result", 0);
	assert_non_null(res);
	assert_true(json_is_true(json_object_get(res, "is_main_result")));
	assert_non_null(strstr(str(res, "html"), "<table"));
	assert_non_null(strstr(str(res, "html"), "revenue"));
	assert_non_null(strstr(str(res, "text"), "revenue"));
	run_clear(&r);
}

static void test_j_json_and_extra(void **state)
{
	(void)state;
	if (!have_ipykernel)
		skip();
	struct run r;
	run_code(&jbox, "from IPython.display import JSON, Markdown, display\n"
			"display(Markdown('# hi'))\nJSON({'a': [1, 2]})", 0, &r);
	assert_ok(&r);
	assert_string_equal(str(nth(&r, "result", 0), "markdown"), "# hi");
	json_t *j = json_object_get(nth(&r, "result", 1), "json");
	assert_true(json_is_object(j));
	assert_int_equal(json_array_size(json_object_get(j, "a")), 2);
	run_clear(&r);
	/* plotly (when installed) travels as its own mime in extra. */
	run_code(&jbox, "import importlib.util\nimportlib.util.find_spec('plotly') is not None", 0, &r);
	int have_plotly = strcmp(str(nth(&r, "result", 0), "text"), "True") == 0;
	run_clear(&r);
	if (have_plotly) {
		run_code(&jbox, "import plotly.graph_objects as go\ngo.Figure(data=[go.Bar(y=[1, 2])])",
			 0, &r);
		assert_ok(&r);
		json_t *extra = json_object_get(nth(&r, "result", 0), "extra");
		assert_true(json_is_object(json_object_get(extra, "application/vnd.plotly.v1+json")));
		assert_int_equal(count(&r, "stderr"), 0); /* no 9 MB plotly.js dropped */
		run_clear(&r);
	}
}

static void test_j_invalid_utf8_repaired(void **state)
{
	(void)state;
	if (!have_ipykernel)
		skip();
	struct run r;
	char out[64];
	/* A lone surrogate reaches the wire as an invalid byte (ipykernel's
	 * surrogateescape): repaired to U+FFFD, never a lost message. */
	run_code(&jbox, "print('a\\udce9b')\n'done'", 0, &r);
	assert_ok(&r);
	assert_string_equal(stream_text(&r, "stdout", out, sizeof(out)), "a\xEF\xBF\xBD" "b\n");
	assert_string_equal(str(nth(&r, "result", 0), "text"), "done");
	run_clear(&r);
}

static void test_j_exit_replaces_kernel(void **state)
{
	(void)state;
	if (!have_ipykernel)
		skip();
	struct run r;
	run_code(&jbox, "gone_after_exit = 1", 0, &r);
	run_clear(&r);
	pid_t old = kernel_ctx_pid(jbox.c);
	run_code(&jbox, "exit()", 0, &r);
	/* the state is lost: the cell says so */
	assert_non_null(error_of(&r));
	assert_string_equal(str(error_of(&r), "name"), "DeadKernelError");
	assert_non_null(strstr(str(error_of(&r), "value"), "exit()"));
	run_clear(&r);
	/* The next run goes to a new kernel, never to the one exiting. */
	run_code(&jbox, "'gone_after_exit' in globals()", 0, &r);
	assert_ok(&r);
	assert_string_equal(str(nth(&r, "result", 0), "text"), "False");
	run_clear(&r);
	assert_true(kernel_ctx_pid(jbox.c) != old);
	json_t *last = json_array_get(jbox.ctx_events, json_array_size(jbox.ctx_events) - 2);
	assert_string_equal(str(last, "type"), "restarted");
	assert_non_null(strstr(str(last, "reason"), "exit()"));
}

static void test_j_restart(void **state)
{
	(void)state;
	if (!have_ipykernel)
		skip();
	struct run r;
	run_code(&jbox, "before_restart = 1", 0, &r);
	run_clear(&r);
	pid_t old = kernel_ctx_pid(jbox.c);
	assert_int_equal(kernel_ctx_restart(jbox.c), 0);
	run_code(&jbox, "'before_restart' in globals()", 0, &r);
	assert_string_equal(str(nth(&r, "result", 0), "text"), "False");
	assert_true(kernel_ctx_pid(jbox.c) != old);
	run_clear(&r);
}

/* Send this process's stderr (where log_kv writes the contexts' log lines)
 * to a temporary file until capture_end; *saved keeps the real one. */
static FILE *capture_begin(int *saved)
{
	fflush(stderr);
	FILE *f = tmpfile();
	assert_non_null(f);
	*saved = dup(STDERR_FILENO);
	assert_true(*saved >= 0);
	assert_true(dup2(fileno(f), STDERR_FILENO) >= 0);
	return f;
}

/* Give stderr back; 1 if what was written to it meanwhile holds needle. */
static int capture_end(FILE *f, int saved, const char *needle)
{
	fflush(stderr);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	char buf[64 * 1024];
	rewind(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return strstr(buf, needle) != NULL;
}

static void test_j_frozen_kernel_restarts(void **state)
{
	(void)state;
	if (!have_ipykernel)
		skip();
	pid_t pid = kernel_ctx_pid(jbox.c);
	assert_true(pid > 0);
	/* An idle kernel is not pinged (an idle guest stays asleep): a stopped
	 * one misses no heartbeat while nothing runs.  Pinged every 3 s, it
	 * would have missed one within 6 s. */
	assert_int_equal(kill(pid, SIGSTOP), 0);
	json_t *tmp = json_array();
	int saved;
	FILE *log = capture_begin(&saved);
	int r = pump(&jbox, (uint64_t)-1, "restarted", tmp, 8000);
	int missed = capture_end(log, saved, "event=kernel.heartbeat_missed");
	assert_int_equal(r, -ETIMEDOUT);
	assert_false(missed);
	/* The next run's heartbeats find it (the same probe sees the misses):
	 * killed and replaced. */
	uint64_t id;
	log = capture_begin(&saved);
	assert_int_equal(kernel_ctx_run(jbox.c, "1", 1, 0, &id), 0);
	r = pump(&jbox, (uint64_t)-1, "restarted", tmp, RUN_DEADLINE_MS);
	missed = capture_end(log, saved, "event=kernel.heartbeat_missed");
	assert_int_equal(r, 0);
	assert_true(missed);
	json_decref(tmp);
	json_t *last = json_array_get(jbox.ctx_events, json_array_size(jbox.ctx_events) - 1);
	assert_non_null(strstr(str(last, "reason"), "heartbeat"));
	expect_text(&jbox, "'alive'", "alive");
	assert_true(kernel_ctx_pid(jbox.c) != pid);
}

/* --- the fallback kernel ---------------------------------------------------*/

static struct ctx_box fbox;

static int fallback_setup(void **state)
{
	(void)state;
	return box_open(&fbox, KERNEL_FALLBACK, 0, NULL, NULL);
}

static int fallback_teardown(void **state)
{
	(void)state;
	box_close(&fbox);
	return 0;
}

#define FALLBACK_CASE(name)                         \
	static void test_f_##name(void **state)     \
	{                                           \
		(void)state;                        \
		case_##name(&fbox);                 \
	}
FALLBACK_CASE(sum)
FALLBACK_CASE(print_and_value)
FALLBACK_CASE(error_then_works)
FALLBACK_CASE(state_persists)
FALLBACK_CASE(quotes)
FALLBACK_CASE(display_two)
FALLBACK_CASE(input_fails_fast)
FALLBACK_CASE(timeout_keeps_state)
FALLBACK_CASE(death_exit_status)
FALLBACK_CASE(death_by_signal)
FALLBACK_CASE(interrupt)
FALLBACK_CASE(interrupt_lost_once)
FALLBACK_CASE(cancel_queued)
FALLBACK_CASE(fd_output)

static void test_f_plain_text_only(void **state)
{
	(void)state;
	struct run r;
	run_code(&fbox, "class T:\n    def _repr_html_(self):\n        return '<b>x</b>'\n"
			"    def __repr__(self):\n        return 'T()'\nT()", 0, &r);
	assert_ok(&r);
	json_t *res = nth(&r, "result", 0);
	assert_string_equal(str(res, "text"), "T()");
	assert_int_equal(json_object_size(res), 3); /* type, is_main_result, text */
	run_clear(&r);
}

static void test_f_exit_is_an_error(void **state)
{
	(void)state;
	struct run r;
	run_code(&fbox, "survives = 'yes'", 0, &r);
	run_clear(&r);
	/* Without IPython, exit() raises SystemExit like any exception:
	 * reported, and the kernel (and its state) stays. */
	run_code(&fbox, "exit(3)", 0, &r);
	assert_string_equal(str(error_of(&r), "name"), "SystemExit");
	run_clear(&r);
	expect_text(&fbox, "survives", "yes");
}

static void test_f_auto_falls_back(void **state)
{
	(void)state;
	/* An interpreter that cannot see site-packages has no ipykernel:
	 * AUTO launches ipykernel, sees it fail, and serves the fallback. */
	char wrapper[128];
	snprintf(wrapper, sizeof(wrapper), "%s/python-nosite", test_dir);
	char script[256];
	int n = snprintf(script, sizeof(script), "#!/bin/sh\nexec '%s' -S \"$@\"\n", python);
	assert_int_equal(util_write_file(wrapper, script, (size_t)n, 0755), 0);
	for (int round = 0; round < 2; round++) {
		struct kernel_opts o = { .kind = KERNEL_AUTO, .python = wrapper, .run_dir = test_dir };
		struct ctx_box b = { NULL, json_array() };
		assert_int_equal(kernel_ctx_create(&o, &b.c), 0);
		json_t *tmp = json_array();
		assert_int_equal(pump(&b, (uint64_t)-1, "ready", tmp, RUN_DEADLINE_MS), 0);
		json_decref(tmp);
		json_t *ready = json_array_get(b.ctx_events, json_array_size(b.ctx_events) - 1);
		assert_string_equal(str(ready, "kernel"), "fallback");
		expect_text(&b, "6 * 7", "42");
		box_close(&b);
	}
}

static void test_f_auto_no_fallback_when_killed(void **state)
{
	(void)state;
	/* An interpreter with ipykernel whose kernel is killed while starting
	 * (the guest's OOM killer): AUTO reports the failure rather than turning
	 * the context into a plain-text one. */
	char wrapper[128];
	snprintf(wrapper, sizeof(wrapper), "%s/python-killed", test_dir);
	static const char script[] = "#!/bin/sh\nkill -KILL $$\n";
	assert_int_equal(util_write_file(wrapper, script, sizeof(script) - 1, 0755), 0);
	struct kernel_opts o = { .kind = KERNEL_AUTO, .python = wrapper, .run_dir = test_dir };
	struct ctx_box b = { NULL, json_array() };
	assert_int_equal(kernel_ctx_create(&o, &b.c), 0);
	json_t *tmp = json_array();
	assert_int_equal(pump(&b, (uint64_t)-1, "failed", tmp, RUN_DEADLINE_MS), 0);
	json_decref(tmp);
	for (size_t i = 0; i < json_array_size(b.ctx_events); i++)
		assert_string_not_equal(str(json_array_get(b.ctx_events, i), "type"), "ready");
	json_t *failed = json_array_get(b.ctx_events, json_array_size(b.ctx_events) - 1);
	assert_non_null(strstr(str(failed, "error"), "could not start"));
	box_close(&b);
}

static void test_f_crash_loop_waits_for_work(void **state)
{
	(void)state;
	struct ctx_box b;
	assert_int_equal(box_open(&b, KERNEL_FALLBACK, 0, NULL, NULL), 0);
	struct run r;
	for (int i = 0; i < 3; i++) {
		run_code(&b, "import os\nos._exit(2)", 0, &r);
		assert_string_equal(str(error_of(&r), "name"), "DeadKernelError");
		run_clear(&r);
	}
	/* Three quick deaths in a row: no new kernel until work arrives. */
	usleep(500 * 1000);
	assert_int_equal(kernel_ctx_pid(b.c), 0);
	expect_text(&b, "1 + 1", "2");
	assert_true(kernel_ctx_pid(b.c) > 0);
	box_close(&b);
}

static void test_f_ready_event(void **state)
{
	(void)state;
	json_t *ev = json_array_get(fbox.ctx_events, 0);
	assert_string_equal(str(ev, "type"), "ready");
	assert_string_equal(str(ev, "kernel"), "fallback");
	assert_string_equal(str(ev, "language"), "python");
	assert_true(strncmp(str(ev, "language_version"), "3.", 2) == 0);
}

static void test_f_output_cap(void **state)
{
	(void)state;
	struct ctx_box b;
	assert_int_equal(box_open(&b, KERNEL_FALLBACK, 1000, NULL, NULL), 0);
	struct run r;
	char out[4096];
	run_code(&b, "print('x' * 5000)\nprint('more')\n'end'", 0, &r);
	assert_ok(&r);
	stream_text(&r, "stdout", out, sizeof(out));
	assert_non_null(strstr(out, "[pandastack: output truncated at 1000 bytes]"));
	assert_null(strstr(out, "more"));
	assert_true(strlen(out) < 1100);
	run_clear(&r);
	/* The next run has its own budget. */
	run_code(&b, "print('fresh')", 0, &r);
	assert_string_equal(stream_text(&r, "stdout", out, sizeof(out)), "fresh\n");
	run_clear(&r);
	box_close(&b);
}

static void test_f_env_cwd_and_cleanup(void **state)
{
	(void)state;
	const char *env[] = { "PANDASTACK_TEST_VAR=it's \"quoted\"", NULL };
	struct ctx_box b;
	assert_int_equal(box_open(&b, KERNEL_FALLBACK, 0, env, test_dir), 0);
	char want[128];
	expect_text(&b, "import os\nos.environ['PANDASTACK_TEST_VAR']", "it\\'s \"quoted\"");
	snprintf(want, sizeof(want), "%s", test_dir);
	expect_text(&b, "os.getcwd()", want);
	/* Destroy kills the whole process group, children included. */
	struct run r;
	run_code(&b, "import subprocess\np = subprocess.Popen(['sleep', '1000'])\np.pid", 0, &r);
	pid_t child = (pid_t)atol(str(nth(&r, "result", 0), "text"));
	run_clear(&r);
	pid_t kpid = kernel_ctx_pid(b.c);
	assert_true(child > 0 && kpid > 0);
	box_close(&b);
	assert_int_equal(kernel_wait_all(30000), 0);
	int64_t end = util_now_ms() + 10000;
	while (kill(child, 0) == 0 && util_now_ms() < end)
		usleep(20000);
	assert_int_equal(kill(child, 0), -1);
	assert_int_equal(kill(kpid, 0), -1);
}

static void test_f_bad_options(void **state)
{
	(void)state;
	struct kernel_ctx *c;
	struct kernel_opts o = { .kind = KERNEL_FALLBACK, .python = python, .cwd = "relative" };
	assert_int_equal(kernel_ctx_create(&o, &c), -EINVAL);
	const char *env[] = { "NOEQUALS", NULL };
	o.cwd = NULL;
	o.env = env;
	assert_int_equal(kernel_ctx_create(&o, &c), -EINVAL);
	o.env = NULL;
	o.python = "/nonexistent/python3";
	/* The path is taken as given: the failure comes as a "failed" event
	 * and as an error on the queued run, not as a crash. */
	assert_int_equal(kernel_ctx_create(&o, &c), 0);
	struct ctx_box b = { c, json_array() };
	struct run r;
	run_code(&b, "1", 0, &r);
	assert_string_equal(str(error_of(&r), "name"), "KernelError");
	assert_non_null(strstr(str(error_of(&r), "value"), "could not start"));
	run_clear(&r);
	box_close(&b);
}

/* --- warm pool and reseed --------------------------------------------------*/

static int pool_wait(enum kernel_pool_state want)
{
	int64_t end = util_now_ms() + POOL_DEADLINE_MS;
	while (util_now_ms() < end) {
		char err[256];
		enum kernel_pool_state st = kernel_pool_state(err, sizeof(err));
		if (st == want)
			return 0;
		if (st == KERNEL_POOL_FAILED)
			fail_msg("pool failed: %s", err);
		struct pollfd p = { .fd = kernel_pool_fd(), .events = POLLIN };
		poll(&p, 1, 500);
	}
	return -ETIMEDOUT;
}

/* Every thread of pid: 1 if all run at policy (and, for SCHED_OTHER,
 * nice 0), else 0. */
static int threads_at(pid_t pid, int policy)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	int ok = 1, n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		pid_t tid = (pid_t)atol(de->d_name);
		int pol = sched_getscheduler(tid);
		if (pol < 0)
			continue; /* a thread that just ended */
		n++;
		errno = 0;
		int nice = getpriority(PRIO_PROCESS, (id_t)tid);
		if (pol != policy || (policy == SCHED_OTHER && nice != 0) ||
		    (policy == SCHED_IDLE && nice != 19))
			ok = 0;
	}
	closedir(d);
	return ok && n > 0;
}

static long oom_adj(pid_t pid)
{
	char path[64], *txt = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%ld/oom_score_adj", (long)pid);
	if (util_read_file(path, 64, &txt, &len) < 0)
		return -9999;
	long v = atol(txt);
	free(txt);
	return v;
}

static int has_pid(const pid_t *v, size_t n, pid_t p)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == p)
			return 1;
	return 0;
}

/* Pool options for the tests: spares at normal priority, since an
 * idle-class process may not run at all on a busy test host (the idle
 * standing itself is test_spare_standing's). */
static struct kernel_opts pool_opts(unsigned size)
{
	struct kernel_opts o = { .kind = have_ipykernel ? KERNEL_JUPYTER : KERNEL_FALLBACK,
				 .python = python, .run_dir = test_dir, .pool_size = size,
				 .spare_full_priority = 1 };
	return o;
}

static void test_spare_standing(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* promotion lowers nice and oom_score_adj: root only */
	/* A spare's process: idle class, nice 19, the OOM killer's first. */
	char *argv[] = { "sleep", "100", NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	char *path = kernel_proc_which("sleep", envp);
	assert_non_null(path);
	struct kernel_spawn sp = { .path = path, .argv = argv, .envp = envp,
				   .fd = { -1, -1, -1, -1 }, .idle = 1 };
	struct kernel_proc p;
	assert_int_equal(kernel_proc_spawn(&sp, &p), 0);
	free(path);
	assert_true(threads_at(p.pid, SCHED_IDLE));
	assert_int_equal(oom_adj(p.pid), 1000);
	/* Taken: normal class, nice 0, ordinary OOM standing. */
	assert_int_equal(kernel_proc_promote(&p), 0);
	assert_true(threads_at(p.pid, SCHED_OTHER));
	assert_int_equal(oom_adj(p.pid), 0);
	assert_int_equal(kernel_proc_kill(&p, 10000), 0);
	kernel_proc_release(&p);

	/* The pool spawns its spares that way by default. */
	struct kernel_opts o = pool_opts(1);
	o.spare_full_priority = 0;
	o.kind = KERNEL_FALLBACK;
	assert_int_equal(kernel_pool_start(&o), 0);
	pid_t spares[KERNEL_POOL_MAX];
	int64_t end = util_now_ms() + RUN_DEADLINE_MS;
	while (kernel_pool_pids(spares, KERNEL_POOL_MAX) == 0 && util_now_ms() < end)
		usleep(20 * 1000);
	assert_int_equal(kernel_pool_pids(spares, KERNEL_POOL_MAX), 1);
	assert_true(threads_at(spares[0], SCHED_IDLE));
	assert_int_equal(oom_adj(spares[0]), 1000);
	kernel_pool_stop();
	assert_int_equal(kernel_wait_all(30000), 0);
}

static void test_pool_two_warm_then_refill_when_idle(void **state)
{
	(void)state;
	struct kernel_opts o = pool_opts(2);
	assert_int_equal(kernel_pool_start(&o), 0);
	assert_int_equal(pool_wait(KERNEL_POOL_READY), 0);
	assert_int_equal(kernel_pool_ready(), 2);
	pid_t spares[KERNEL_POOL_MAX];
	assert_int_equal(kernel_pool_pids(spares, KERNEL_POOL_MAX), 2);

	/* Two contexts in a row both take a warm kernel... */
	const char *env[] = { "PANDASTACK_OWNER=a", NULL };
	struct kernel_opts take = o;
	take.use_pool = 1;
	take.env = env;
	take.cwd = test_dir;
	struct ctx_box a = { NULL, json_array() }, b = { NULL, json_array() };
	assert_int_equal(kernel_ctx_create(&take, &a.c), 0);
	take.env = NULL;
	take.cwd = NULL;
	assert_int_equal(kernel_ctx_create(&take, &b.c), 0);
	pid_t pa = kernel_ctx_pid(a.c), pb = kernel_ctx_pid(b.c);
	assert_true(has_pid(spares, 2, pa) && has_pid(spares, 2, pb) && pa != pb);

	/* ...and while a context has work queued or running (from the take
	 * on), nothing refills. */
	const char *nap = "import time\ntime.sleep(0.4)";
	uint64_t ids[6];
	for (int i = 0; i < 6; i++)
		assert_int_equal(kernel_ctx_run(a.c, nap, strlen(nap), 0, &ids[i]), 0);
	for (int i = 0; i < 6; i++) {
		json_t *evs = json_array();
		assert_int_equal(pump(&a, ids[i], NULL, evs, RUN_DEADLINE_MS), 0);
		json_decref(evs);
		if (i < 5)
			assert_int_equal(kernel_pool_pids(spares, KERNEL_POOL_MAX), 0);
	}

	/* Each has the owner's env and cwd, and the warm imports. */
	json_t *tmp = json_array();
	assert_int_equal(pump(&b, (uint64_t)-1, "ready", tmp, RUN_DEADLINE_MS), 0);
	json_decref(tmp);
	if (have_ipykernel) {
		expect_text(&a, "import sys\n'pandas' in sys.modules and 'matplotlib.pyplot' in sys.modules",
			    "True");
		expect_text(&b, "import sys\n'pandas' in sys.modules", "True");
	}
	expect_text(&a, "import os\nos.environ['PANDASTACK_OWNER']", "a");
	expect_text(&a, "os.getcwd()", test_dir);
	expect_text(&b, "import os\n'PANDASTACK_OWNER' in os.environ", "False");
	assert_int_equal(kernel_ctx_pid(a.c), pa);
	assert_int_equal(kernel_ctx_pid(b.c), pb);

	/* Quiet again: the pool fills back to two warm spares. */
	assert_int_equal(pool_wait(KERNEL_POOL_READY), 0);
	assert_int_equal(kernel_pool_pids(spares, KERNEL_POOL_MAX), 2);
	assert_false(has_pid(spares, 2, pa) || has_pid(spares, 2, pb));

	box_close(&a);
	box_close(&b);
	kernel_pool_stop();
	assert_int_equal(kernel_pool_state(NULL, 0), KERNEL_POOL_NONE);
	assert_int_equal(kernel_wait_all(30000), 0);
}

static void test_pool_replaces_a_dead_spare(void **state)
{
	(void)state;
	struct kernel_opts o = pool_opts(1);
	assert_int_equal(kernel_pool_start(&o), 0);
	assert_int_equal(pool_wait(KERNEL_POOL_READY), 0);
	pid_t spares[KERNEL_POOL_MAX];
	assert_int_equal(kernel_pool_pids(spares, KERNEL_POOL_MAX), 1);
	pid_t dead = spares[0];
	assert_int_equal(kill(dead, SIGKILL), 0);
	/* It is dropped, not restarted in place, and a new one is warmed. */
	int64_t end = util_now_ms() + POOL_DEADLINE_MS;
	size_t n = 1;
	while (util_now_ms() < end) {
		n = kernel_pool_pids(spares, KERNEL_POOL_MAX);
		if (n == 1 && spares[0] != dead && kernel_pool_ready() == 1)
			break;
		usleep(100 * 1000);
	}
	assert_int_equal(n, 1);
	assert_int_not_equal(spares[0], dead);
	assert_int_equal(kernel_pool_state(NULL, 0), KERNEL_POOL_READY);
	/* The new spare serves a context. */
	struct kernel_opts take = o;
	take.use_pool = 1;
	struct ctx_box a = { NULL, json_array() };
	assert_int_equal(kernel_ctx_create(&take, &a.c), 0);
	assert_int_equal(kernel_ctx_pid(a.c), spares[0]);
	expect_text(&a, "6 * 7", "42");
	box_close(&a);
	kernel_pool_stop();
	assert_int_equal(kernel_wait_all(30000), 0);
}

static void test_pool_that_cannot_start_fails(void **state)
{
	(void)state;
	struct kernel_opts o = pool_opts(2);
	o.python = "/nonexistent/python3";
	o.kind = KERNEL_FALLBACK;
	assert_int_equal(kernel_pool_start(&o), 0);
	int64_t end = util_now_ms() + POOL_DEADLINE_MS;
	char err[256] = "";
	enum kernel_pool_state st = KERNEL_POOL_STARTING;
	while (st != KERNEL_POOL_FAILED && util_now_ms() < end) {
		struct pollfd p = { .fd = kernel_pool_fd(), .events = POLLIN };
		poll(&p, 1, 200);
		st = kernel_pool_state(err, sizeof(err));
	}
	assert_int_equal(st, KERNEL_POOL_FAILED);
	assert_non_null(strstr(err, "starting python"));
	/* A context does not take a failed spare: it starts its own kernel
	 * (which fails the same way, as a failed event). */
	o.use_pool = 1;
	struct ctx_box b = { NULL, json_array() };
	assert_int_equal(kernel_ctx_create(&o, &b.c), 0);
	json_t *tmp = json_array();
	assert_int_equal(pump(&b, (uint64_t)-1, "failed", tmp, RUN_DEADLINE_MS), 0);
	json_decref(tmp);
	box_close(&b);
	/* Too big a pool is refused. */
	struct kernel_opts big = pool_opts(KERNEL_POOL_MAX + 1);
	assert_int_equal(kernel_pool_start(&big), -EINVAL);
	kernel_pool_stop();
	assert_int_equal(kernel_pool_state(NULL, 0), KERNEL_POOL_NONE);
	assert_int_equal(kernel_wait_all(30000), 0);
}

static void test_pool_reseed(void **state)
{
	(void)state;
	struct kernel_opts o = pool_opts(2);
	assert_int_equal(kernel_pool_start(&o), 0);
	assert_int_equal(pool_wait(KERNEL_POOL_READY), 0);
	struct kernel_opts take = o;
	take.use_pool = 1;
	struct ctx_box a = { NULL, json_array() }, b = { NULL, json_array() };
	assert_int_equal(kernel_ctx_create(&take, &a.c), 0);
	assert_int_equal(kernel_ctx_create(&take, &b.c), 0);

	/* Same seed in both, as two clones of one snapshot would have. */
	const char *seed = "import random, sys\nrandom.seed(1234)\n"
			   "np = sys.modules.get('numpy')\n_ = np and np.random.seed(1234)";
	const char *draw = "(random.random(), np and float(np.random.random()))";
	struct run ra, rb;
	run_code(&a, seed, 0, &ra);
	run_code(&b, seed, 0, &rb);
	run_clear(&ra);
	run_clear(&rb);
	run_code(&a, draw, 0, &ra);
	run_code(&b, draw, 0, &rb);
	assert_string_equal(str(nth(&ra, "result", 0), "text"), str(nth(&rb, "result", 0), "text"));
	run_clear(&ra);
	run_clear(&rb);
	run_code(&a, seed, 0, &ra);
	run_code(&b, seed, 0, &rb);
	run_clear(&ra);
	run_clear(&rb);

	/* The reseed leaves an idle kernel asleep (no job runs: its idle time
	 * keeps growing) and runs ahead of the next job. */
	usleep(1000 * 1000);
	int64_t idle0 = kernel_ctx_idle_ms(a.c);
	assert_true(idle0 >= 900);
	assert_true(kernel_reseed_all(NULL) >= 2);
	usleep(1500 * 1000);
	assert_true(kernel_ctx_idle_ms(a.c) >= idle0 + 1400);
	run_code(&a, draw, 0, &ra);
	run_code(&b, draw, 0, &rb);
	/* the same probe sees the runs */
	assert_true(kernel_ctx_idle_ms(a.c) < 1000);
	const char *ta = str(nth(&ra, "result", 0), "text"), *tb = str(nth(&rb, "result", 0), "text");
	assert_non_null(ta);
	assert_non_null(tb);
	assert_string_not_equal(ta, tb);
	if (have_ipykernel) /* numpy too: the second numbers differ as well */
		assert_string_not_equal(strchr(ta, ','), strchr(tb, ','));
	run_clear(&ra);
	run_clear(&rb);

	box_close(&a);
	box_close(&b);
	kernel_pool_stop();
	assert_int_equal(kernel_pool_state(NULL, 0), KERNEL_POOL_NONE);
	assert_int_equal(kernel_wait_all(30000), 0);
}

/* --- main -------------------------------------------------------------------*/

static int probe_ipykernel(void)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "'%s' -c 'import ipykernel, IPython' >/dev/null 2>&1", python);
	return strchr(python, '\'') == NULL && system(cmd) == 0;
}

int main(void)
{
	python = getenv("PANDASTACK_TEST_PYTHON");
	if (!python || !python[0])
		python = "/usr/bin/python3";
	if (access(python, X_OK) != 0) {
		printf("test_kernel: SKIPPED: no Python at %s (set PANDASTACK_TEST_PYTHON)\n", python);
		return 0;
	}
	have_ipykernel = probe_ipykernel();
	if (!have_ipykernel)
		printf("test_kernel: ipykernel tests SKIPPED: %s cannot import ipykernel "
		       "(apt-get install python3-ipykernel); fallback tests still run\n", python);
	snprintf(test_dir, sizeof(test_dir), "/tmp/pandastack-test-kernel.XXXXXX");
	if (!mkdtemp(test_dir)) {
		perror("mkdtemp");
		return 1;
	}
	const struct CMUnitTest jupyter[] = {
		cmocka_unit_test(test_j_sum),
		cmocka_unit_test(test_j_print_and_value),
		cmocka_unit_test(test_j_error_then_works),
		cmocka_unit_test(test_j_state_persists),
		cmocka_unit_test(test_j_quotes),
		cmocka_unit_test(test_j_display_two),
		cmocka_unit_test(test_j_matplotlib_png),
		cmocka_unit_test(test_j_dataframe_html),
		cmocka_unit_test(test_j_json_and_extra),
		cmocka_unit_test(test_j_invalid_utf8_repaired),
		cmocka_unit_test(test_j_input_fails_fast),
		cmocka_unit_test(test_j_fd_output),
		cmocka_unit_test(test_j_cancel_queued),
		cmocka_unit_test(test_j_interrupt),
		cmocka_unit_test(test_j_interrupt_lost_once),
		cmocka_unit_test(test_j_timeout_keeps_state),
		cmocka_unit_test(test_j_death_exit_status),
		cmocka_unit_test(test_j_death_by_signal),
		cmocka_unit_test(test_j_exit_replaces_kernel),
		cmocka_unit_test(test_j_restart),
		cmocka_unit_test(test_j_frozen_kernel_restarts),
	};
	const struct CMUnitTest fallback[] = {
		cmocka_unit_test(test_f_ready_event),
		cmocka_unit_test(test_f_sum),
		cmocka_unit_test(test_f_print_and_value),
		cmocka_unit_test(test_f_error_then_works),
		cmocka_unit_test(test_f_state_persists),
		cmocka_unit_test(test_f_quotes),
		cmocka_unit_test(test_f_display_two),
		cmocka_unit_test(test_f_plain_text_only),
		cmocka_unit_test(test_f_input_fails_fast),
		cmocka_unit_test(test_f_fd_output),
		cmocka_unit_test(test_f_cancel_queued),
		cmocka_unit_test(test_f_interrupt),
		cmocka_unit_test(test_f_interrupt_lost_once),
		cmocka_unit_test(test_f_timeout_keeps_state),
		cmocka_unit_test(test_f_death_exit_status),
		cmocka_unit_test(test_f_death_by_signal),
		cmocka_unit_test(test_f_exit_is_an_error),
		cmocka_unit_test(test_f_output_cap),
		cmocka_unit_test(test_f_env_cwd_and_cleanup),
		cmocka_unit_test(test_f_bad_options),
		cmocka_unit_test(test_f_auto_falls_back),
		cmocka_unit_test(test_f_auto_no_fallback_when_killed),
		cmocka_unit_test(test_f_crash_loop_waits_for_work),
	};
	const struct CMUnitTest pool[] = {
		cmocka_unit_test(test_spare_standing),
		cmocka_unit_test(test_pool_two_warm_then_refill_when_idle),
		cmocka_unit_test(test_pool_replaces_a_dead_spare),
		cmocka_unit_test(test_pool_that_cannot_start_fails),
		cmocka_unit_test(test_pool_reseed),
	};
	int failed = cmocka_run_group_tests_name("kernel_jupyter", jupyter, jupyter_setup,
						 jupyter_teardown);
	failed += cmocka_run_group_tests_name("kernel_fallback", fallback, fallback_setup,
					      fallback_teardown);
	failed += cmocka_run_group_tests_name("kernel_pool", pool, NULL, NULL);
	kernel_wait_all(30000);
	util_rm_rf(test_dir);
	return failed ? 1 : 0;
}
