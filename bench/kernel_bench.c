/*
 * bench/kernel_bench.c - code contexts on the host: how long a context takes to
 * start, cold and from the warm pool, and the round trip of `1+1` (run ->
 * done event), on ipykernel and on the fallback kernel; next to the same
 * round trip through jupyter_client (the reference Python client) against
 * the same ipykernel, run in this process tree.
 *
 *   make bench-kernel     (PANDASTACK_TEST_PYTHON: the python3 with
 *                          ipykernel and jupyter_client; default
 *                          /usr/bin/python3; BENCH_N: runs, default 300)
 *
 * Prints one line per figure: name, median, p90, p99 in ms.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "agent/kernel/kernel.h"
#include "common/util.h"

static const char *python;
static char run_dir[64];

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void print_figure(const char *name, double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	printf("%-44s median %8.3f ms   p90 %8.3f ms   p99 %8.3f ms   (n=%d)\n", name,
	       v[n / 2], v[n * 9 / 10], v[n * 99 / 100], n);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Wait for an event of type (exec id id, or 0 for the context). */
static int wait_for(struct kernel_ctx *c, uint64_t id, const char *type)
{
	int64_t end = util_now_ms() + 180000;
	while (util_now_ms() < end) {
		uint64_t eid;
		json_t *ev;
		while (kernel_ctx_next_event(c, &eid, &ev) == 0) {
			int hit = eid == id &&
				  strcmp(json_string_value(json_object_get(ev, "type")), type) == 0;
			json_decref(ev);
			if (hit)
				return 0;
		}
		struct pollfd p = { .fd = kernel_ctx_fd(c), .events = POLLIN };
		poll(&p, 1, 1000);
	}
	return -ETIMEDOUT;
}

static struct kernel_ctx *open_ctx(enum kernel_kind kind, int use_pool, double *ms)
{
	struct kernel_opts o = { .kind = kind, .python = python, .run_dir = run_dir,
				 .use_pool = use_pool };
	struct kernel_ctx *c;
	double t0 = now_ms();
	if (kernel_ctx_create(&o, &c) < 0)
		return NULL;
	/* Ready, then one run: what a caller waits for before its first result. */
	uint64_t id;
	if (wait_for(c, 0, "ready") < 0 || kernel_ctx_run(c, "1", 1, 0, &id) < 0 ||
	    wait_for(c, id, "done") < 0) {
		kernel_ctx_destroy(c);
		return NULL;
	}
	*ms = now_ms() - t0;
	return c;
}

static void bench_rtt(const char *name, struct kernel_ctx *c, const char *code, int n)
{
	double *v = calloc((size_t)n, sizeof(double));
	uint64_t id;
	for (int i = 0; i < 20; i++) { /* warm the path */
		kernel_ctx_run(c, code, strlen(code), 0, &id);
		wait_for(c, id, "done");
	}
	for (int i = 0; i < n; i++) {
		double t0 = now_ms();
		kernel_ctx_run(c, code, strlen(code), 0, &id);
		if (wait_for(c, id, "done") < 0) {
			printf("%s: timed out\n", name);
			free(v);
			return;
		}
		v[i] = now_ms() - t0;
	}
	print_figure(name, v, n);
	free(v);
}

static void bench_starts(const char *name, enum kernel_kind kind, int use_pool, int n)
{
	double v[16];
	int k = 0;
	if (use_pool) {
		struct kernel_opts o = { .kind = kind, .python = python, .run_dir = run_dir };
		kernel_pool_start(&o);
	}
	for (int i = 0; i < n && i < 16; i++) {
		if (use_pool) {
			int64_t end = util_now_ms() + 180000;
			while (kernel_pool_state(NULL, 0) != KERNEL_POOL_READY && util_now_ms() < end)
				usleep(20000);
		}
		struct kernel_ctx *c = open_ctx(kind, use_pool, &v[k]);
		if (!c)
			break;
		k++;
		kernel_ctx_destroy(c);
		kernel_wait_all(30000);
	}
	if (use_pool)
		kernel_pool_stop();
	kernel_wait_all(30000);
	if (k)
		print_figure(name, v, k);
}

/* jupyter_client's execute_interactive on `1+1`, for comparison. */
static void bench_peer(int n)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd),
		 "'%s' -c '\n"
		 "import statistics, time\n"
		 "from jupyter_client.manager import start_new_kernel\n"
		 "km, kc = start_new_kernel(kernel_name=\"python3\")\n"
		 "hook = lambda m: None\n"
		 "for _ in range(20): kc.execute_interactive(\"1+1\", output_hook=hook)\n"
		 "v = []\n"
		 "for _ in range(%d):\n"
		 "    t = time.perf_counter(); kc.execute_interactive(\"1+1\", output_hook=hook)\n"
		 "    v.append((time.perf_counter() - t) * 1000)\n"
		 "v.sort()\n"
		 "print(\"%%-44s median %%8.3f ms   p90 %%8.3f ms   p99 %%8.3f ms   (n=%%d)\" %% (\n"
		 "    \"peer jupyter_client 1+1 (ipykernel)\", v[len(v)//2], v[len(v)*9//10], v[len(v)*99//100], len(v)))\n"
		 "kc.stop_channels(); km.shutdown_kernel(now=True)\n' 2>/dev/null",
		 python, n);
	fflush(stdout);
	if (system(cmd) != 0)
		printf("peer jupyter_client: not available\n");
}

int main(void)
{
	python = getenv("PANDASTACK_TEST_PYTHON");
	if (!python || !python[0] || strchr(python, '\''))
		python = "/usr/bin/python3";
	const char *ns = getenv("BENCH_N");
	int n = ns ? atoi(ns) : 300;
	if (n < 10)
		n = 10;
	snprintf(run_dir, sizeof(run_dir), "/tmp/pandastack-bench-kernel.XXXXXX");
	if (!mkdtemp(run_dir))
		return 1;
	setenv("PANDASTACK_LOG", "warn", 0);
	char probe[512];
	snprintf(probe, sizeof(probe), "'%s' -c 'import ipykernel' >/dev/null 2>&1", python);
	int jup = system(probe) == 0;

	double ms;
	struct kernel_ctx *c;
	if (jup) {
		bench_starts("context start cold, ipykernel (to 1st done)", KERNEL_JUPYTER, 0, 3);
		bench_starts("context start from warm pool, ipykernel", KERNEL_JUPYTER, 1, 3);
		c = open_ctx(KERNEL_JUPYTER, 0, &ms);
		if (c) {
			bench_rtt("run 1+1, ipykernel", c, "1+1", n);
			bench_rtt("run print(1), ipykernel", c, "print(1)", n);
			kernel_ctx_destroy(c);
		}
		bench_peer(n);
	} else {
		printf("ipykernel not importable by %s: ipykernel figures skipped\n", python);
	}
	bench_starts("context start cold, fallback (to 1st done)", KERNEL_FALLBACK, 0, 5);
	c = open_ctx(KERNEL_FALLBACK, 0, &ms);
	if (c) {
		bench_rtt("run 1+1, fallback kernel", c, "1+1", n);
		kernel_ctx_destroy(c);
	}
	kernel_wait_all(30000);
	util_rm_rf(run_dir);
	return 0;
}
