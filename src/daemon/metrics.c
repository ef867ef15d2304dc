/*
 * metrics.c - counters and histograms (see metrics.h).
 */
#include "daemon/metrics.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

/* Statuses counted one by one; anything else goes to "other". */
static const unsigned statuses[] = {200, 201, 202, 204, 400, 401, 403, 404, 405,
				    409, 411, 413, 429, 500, 502, 503, 504, 507};
#define N_STATUSES (sizeof(statuses) / sizeof(statuses[0]))

/* Histogram bucket upper bounds, ms (rendered as seconds). */
static const int64_t bounds_ms[] = {5, 10, 25, 50, 100, 250, 500, 1000,
				    2500, 5000, 10000, 30000, 60000, 300000};
#define N_BOUNDS (sizeof(bounds_ms) / sizeof(bounds_ms[0]))

struct histogram {
	atomic_uint_fast64_t bucket[N_BOUNDS + 1]; /* non-cumulative; last is +Inf */
	atomic_uint_fast64_t count;
	atomic_int_fast64_t sum_ms;
};

static atomic_uint_fast64_t http_by_status[N_STATUSES + 1];
static atomic_uint_fast64_t creates_ok, creates_failed;
static atomic_uint_fast64_t events[METRICS_N_EVENTS];
static struct histogram exec_hist, create_hist;
static atomic_uint_fast64_t port_results[METRICS_PORT_N_RESULTS];
static atomic_uint_fast64_t port_bytes_up, port_bytes_down;

static const char *const port_result_names[METRICS_PORT_N_RESULTS] = {
	[METRICS_PORT_FORWARDED] = "forwarded",
	[METRICS_PORT_UPGRADED] = "upgraded",
	[METRICS_PORT_REFUSED] = "refused",
	[METRICS_PORT_NOT_RUNNING] = "not_running",
	[METRICS_PORT_NOT_OPEN] = "not_open",
	[METRICS_PORT_UNREACHABLE] = "unreachable",
	[METRICS_PORT_TIMEOUT] = "timeout",
	[METRICS_PORT_BAD_RESPONSE] = "bad_response",
	[METRICS_PORT_BAD_REQUEST] = "bad_request",
};

/* Resolver answers by rcode (RFC 1035 4.1.1); anything else is "other". */
static const char *const rcode_names[] = {"noerror", "formerr", "servfail", "nxdomain",
					  "notimp",  "refused", "other"};
#define N_RCODES (sizeof(rcode_names) / sizeof(rcode_names[0]) - 1) /* and "other" */
static atomic_uint_fast64_t dns_answers[N_RCODES + 1];

static const char *const event_names[METRICS_N_EVENTS] = {
	[METRICS_VM_DIED] = "vm_died",
	[METRICS_TTL_EXPIRED] = "ttl_expired",
	[METRICS_ADOPTED] = "adopted",
	[METRICS_ADOPT_FAILED] = "adopt_failed",
	[METRICS_EXEC_CLIENT_GONE] = "exec_client_gone",
	[METRICS_POOL_HIT] = "pool_hit",
	[METRICS_POOL_MISS] = "pool_miss",
	[METRICS_SNAPSHOT] = "snapshot_taken",
	[METRICS_PAUSED] = "paused",
	[METRICS_RESUMED] = "resumed",
	[METRICS_HTTP_DROPPED] = "http_dropped",
};

static void observe(struct histogram *h, int64_t ms)
{
	if (ms < 0)
		ms = 0;
	size_t i = 0;
	while (i < N_BOUNDS && ms > bounds_ms[i])
		i++;
	atomic_fetch_add(&h->bucket[i], 1);
	atomic_fetch_add(&h->count, 1);
	atomic_fetch_add(&h->sum_ms, ms);
}

void metrics_http_response(unsigned status)
{
	size_t i = 0;
	while (i < N_STATUSES && statuses[i] != status)
		i++;
	atomic_fetch_add(&http_by_status[i], 1);
}

void metrics_create(int ok, int64_t ms)
{
	atomic_fetch_add(ok ? &creates_ok : &creates_failed, 1);
	if (ok)
		observe(&create_hist, ms);
}

void metrics_exec(int64_t ms)
{
	observe(&exec_hist, ms);
}

void metrics_event(enum metrics_event e)
{
	if ((unsigned)e < METRICS_N_EVENTS)
		atomic_fetch_add(&events[e], 1);
}

void metrics_port_request(enum metrics_port_result result)
{
	if ((unsigned)result < METRICS_PORT_N_RESULTS)
		atomic_fetch_add(&port_results[result], 1);
}

void metrics_port_bytes(uint64_t up, uint64_t down)
{
	atomic_fetch_add(&port_bytes_up, up);
	atomic_fetch_add(&port_bytes_down, down);
}

void metrics_dns_answer(unsigned rcode)
{
	atomic_fetch_add(&dns_answers[rcode < N_RCODES ? rcode : N_RCODES], 1);
}

static void write_hist(FILE *f, const char *name, const char *help, struct histogram *h)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	uint64_t cum = 0;
	for (size_t i = 0; i < N_BOUNDS; i++) {
		cum += atomic_load(&h->bucket[i]);
		fprintf(f, "%s_bucket{le=\"%g\"} %llu\n", name, (double)bounds_ms[i] / 1000.0,
			(unsigned long long)cum);
	}
	cum += atomic_load(&h->bucket[N_BOUNDS]);
	fprintf(f, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
	fprintf(f, "%s_sum %.3f\n", name, (double)atomic_load(&h->sum_ms) / 1000.0);
	fprintf(f, "%s_count %llu\n", name, (unsigned long long)atomic_load(&h->count));
}

/* One counter family: HELP, TYPE and a line per label value (names[i]
 * for counters[i], n of them). */
static void write_family(FILE *f, const char *name, const char *help, const char *label,
			 const char *const *names, const atomic_uint_fast64_t *counters, size_t n)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s{%s=\"%s\"} %llu\n", name, label, names[i],
			(unsigned long long)atomic_load(&counters[i]));
}

int metrics_write(FILE *f)
{
	fprintf(f, "# HELP pandastack_http_responses_total HTTP answers by status.\n"
		   "# TYPE pandastack_http_responses_total counter\n");
	for (size_t i = 0; i <= N_STATUSES; i++) {
		unsigned long long v = atomic_load(&http_by_status[i]);
		if (i < N_STATUSES)
			fprintf(f, "pandastack_http_responses_total{status=\"%u\"} %llu\n",
				statuses[i], v);
		else
			fprintf(f, "pandastack_http_responses_total{status=\"other\"} %llu\n", v);
	}
	fprintf(f, "# HELP pandastack_http_errors_total HTTP answers with a 4xx or 5xx status.\n"
		   "# TYPE pandastack_http_errors_total counter\n");
	unsigned long long errs = atomic_load(&http_by_status[N_STATUSES]);
	for (size_t i = 0; i < N_STATUSES; i++)
		if (statuses[i] >= 400)
			errs += atomic_load(&http_by_status[i]);
	fprintf(f, "pandastack_http_errors_total %llu\n", errs);
	fprintf(f, "# HELP pandastack_sandbox_creates_total Sandbox creates by result.\n"
		   "# TYPE pandastack_sandbox_creates_total counter\n"
		   "pandastack_sandbox_creates_total{result=\"ok\"} %llu\n"
		   "pandastack_sandbox_creates_total{result=\"error\"} %llu\n",
		(unsigned long long)atomic_load(&creates_ok),
		(unsigned long long)atomic_load(&creates_failed));
	write_family(f, "pandastack_events_total", "Lifecycle events.", "event", event_names,
		     events, METRICS_N_EVENTS);
	write_family(f, "pandastack_port_requests_total",
		     "Requests for sandboxes' exposed ports by result.", "result", port_result_names,
		     port_results, METRICS_PORT_N_RESULTS);
	fprintf(f, "# HELP pandastack_port_bytes_total Bytes carried for sandboxes' exposed ports "
		   "(bodies and upgraded connections).\n"
		   "# TYPE pandastack_port_bytes_total counter\n"
		   "pandastack_port_bytes_total{direction=\"to_sandbox\"} %llu\n"
		   "pandastack_port_bytes_total{direction=\"from_sandbox\"} %llu\n",
		(unsigned long long)atomic_load(&port_bytes_up),
		(unsigned long long)atomic_load(&port_bytes_down));
	write_family(f, "pandastack_dns_answers_total", "Sandbox resolver answers, by code.",
		     "rcode", rcode_names, dns_answers, N_RCODES + 1);
	write_hist(f, "pandastack_sandbox_create_duration_seconds",
		   "Time from create request to a running sandbox.", &create_hist);
	write_hist(f, "pandastack_exec_duration_seconds",
		   "Exec latency as the daemon saw it (request to result).", &exec_hist);
	return ferror(f) ? -EIO : 0;
}
