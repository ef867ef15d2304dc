/*
 * api_system.c - GET /healthz and GET /metrics.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/util.h"
#include "daemon/api/api.h"
#include "daemon/cluster/cluster.h"
#include "daemon/daemon.h"
#include "daemon/http/http_reply.h"
#include "daemon/metrics.h"
#include "daemon/net/net.h"
#include "daemon/sandbox/capacity.h"
#include "daemon/sandbox/sandbox.h"
#include "daemon/sandbox/templates.h"
#include "daemon/store/store.h"
#include "engine/qemu/accel.h"
#include "engine/qemu/jail.h"

void api_healthz(struct http_req *r)
{
	struct daemon *d = r->d;
	int64_t now = (int64_t)(util_wall_ns() / 1000000u);
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:i}", "status", "ok", "version",
			      PANDASTACK_VERSION, "accelerator", accel_name(d->accel),
			      "accelerator_reason", d->accel_why, "uptime_seconds",
			      (json_int_t)((now - d->started_wall_ms) / 1000), "sandboxes_running",
			      (json_int_t)sandboxes_count_running(d->sandboxes), "schema_version",
			      store_schema_version(d->store));
	if (o) {
		json_object_set_new(o, "isolation",
				    json_string(d->accel == ACCEL_KVM
							? "kvm"
							: "tcg: software emulation, weaker isolation"));
		json_t *jail = jail_host_describe(jail_host_get());
		if (jail)
			json_object_set_new(o, "jail", jail);
		json_object_set_new(o, "proxy_domain",
				    d->cfg.proxy_domain[0] ? json_string(d->cfg.proxy_domain)
							   : json_null());
		json_t *cap = capacity_json(d);
		if (cap)
			json_object_set_new(o, "capacity", cap);
		json_t *cl = d->cluster ? cluster_json(d->cluster) : NULL;
		if (cl)
			json_object_set_new(o, "cluster", cl);
	}
	http_reply_json(r, 200, o);
}

/* Gauges: sandboxes by status, templates and their pools. */
static void write_gauges(struct daemon *d, FILE *f)
{
	static const char *const states[] = {"stopped", "error"};
	fprintf(f, "# HELP pandastack_sandboxes Sandboxes by status.\n"
		   "# TYPE pandastack_sandboxes gauge\n"
		   "pandastack_sandboxes{status=\"running\"} %u\n",
		sandboxes_count_running(d->sandboxes));
	for (size_t i = 0; i < 2; i++) {
		int64_t n = 0;
		store_sandbox_count(d->store, states[i], &n);
		fprintf(f, "pandastack_sandboxes{status=\"%s\"} %lld\n", states[i], (long long)n);
	}
	json_t *list = templates_list_json(d->templates);
	fprintf(f, "# HELP pandastack_pool_ready Ready sandboxes in the pool per template.\n"
		   "# TYPE pandastack_pool_ready gauge\n");
	size_t i;
	json_t *t;
	json_array_foreach(list, i, t) {
		const char *name = json_string_value(json_object_get(t, "name"));
		if (name)
			fprintf(f, "pandastack_pool_ready{template=\"%s\"} %lld\n", name,
				(long long)json_integer_value(json_object_get(t, "pool_ready")));
	}
	json_decref(list);
}

void api_metrics(struct http_req *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f) {
		http_reply_error(r, API_ERR_INTERNAL, "out of memory");
		return;
	}
	write_gauges(r->d, f);
	net_metrics_write(r->d->net, f);
	int e = metrics_write(f);
	if (fclose(f) != 0 || e < 0 || !buf) {
		free(buf);
		http_reply_error(r, API_ERR_INTERNAL, "could not render the metrics");
		return;
	}
	http_reply_text(r, 200, "text/plain; version=0.0.4; charset=utf-8", buf, len);
	free(buf);
}
