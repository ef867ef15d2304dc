/*
 * main.c - pandastackd: start-up, the wait for a signal, shutdown.
 *
 * Start-up order: configuration; the data dir and its lock (one daemon per
 * data dir); the store and its migrations; the admin key on first start;
 * the accelerator; the template cache and pools; the sandboxes' network
 * service; adoption of the sandboxes a previous run left; the monitor; the
 * HTTP server last, so the first request sees a complete registry.
 * SIGINT/SIGTERM stop in reverse order and leave every sandbox's QEMU
 * running for the next start.
 *
 * Exit status: 0 after a clean stop, 1 when start-up failed, 2 for bad
 * arguments.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/crash.h"
#include "common/log.h"
#include "common/util.h"
#include "daemon/api/api.h"
#include "daemon/api/api_mcp.h"
#include "daemon/api_errors.h"
#include "daemon/cluster/cluster.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/http/auth.h"
#include "daemon/http/http_server.h"
#include "daemon/http/origin.h"
#include "daemon/http/route.h"
#include "daemon/net/net.h"
#include "daemon/net/net_denied.h"
#include "daemon/net/net_resolve.h"
#include "daemon/ports/port_splice.h"
#include "daemon/sandbox/monitor.h"
#include "daemon/sandbox/sandbox.h"
#include "daemon/sandbox/snapshots.h"
#include "daemon/sandbox/templates.h"
#include "daemon/store/store.h"
#include "engine/qemu/jail.h"

/* How long a start waits for the data dir's lock, and how often it tries,
 * ms. */
#define LOCK_WAIT_MS 5000
#define LOCK_STEP_MS 100

static int fail(const char *what, int err, const char *detail)
{
	char q[600];
	log_kv(LOG_ERROR, "daemon.start_failed", "what=%s err=%d msg=%s", what, err,
	       log_quote(detail && *detail ? detail : strerror(err < 0 ? -err : err), q,
			 sizeof(q)));
	return 1;
}

static int path_in(char *out, size_t outlen, const char *dir, const char *name)
{
	int n = snprintf(out, outlen, "%s/%s", dir, name);
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

/* Create the data dir and take its lock (held until exit). */
static int prepare_data_dir(struct daemon *d)
{
	char path[PATH_MAX];
	int e = util_mkdir_p(d->cfg.data_dir, 0711);
	if (!e)
		e = path_in(d->sandboxes_dir, sizeof(d->sandboxes_dir), d->cfg.data_dir, "sandboxes");
	if (!e)
		e = path_in(d->pool_dir, sizeof(d->pool_dir), d->cfg.data_dir, "pool");
	if (!e)
		e = path_in(d->snapshots_dir, sizeof(d->snapshots_dir), d->cfg.data_dir, "snapshots");
	if (!e)
		e = util_mkdir_p(d->sandboxes_dir, 0711);
	if (!e)
		e = path_in(path, sizeof(path), d->cfg.data_dir, "pandastackd.lock");
	if (e)
		return e;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	/* A daemon killed a moment ago may still be exiting (unmapping its
	 * snapshots' memory) with the lock held: wait a little for it. */
	for (int i = 0; flock(fd, LOCK_EX | LOCK_NB) < 0; i++) {
		if (errno != EWOULDBLOCK || i >= LOCK_WAIT_MS / LOCK_STEP_MS) {
			close(fd);
			return -EBUSY;
		}
		usleep(LOCK_STEP_MS * 1000);
	}
	return 0; /* fd stays open: the lock lives as long as the process */
}

/* Every QEMU this process starts runs in a jail (engine/qemu/jail.h). */
static int setup_jail(struct daemon *d)
{
	char work[PATH_MAX], err[300] = "";
	if (path_in(work, sizeof(work), d->cfg.cache_dir, "jail") < 0)
		return -ENAMETOOLONG;
	struct jail_config c = {
		.uid_first = d->cfg.jail_uid_first,
		.uid_count = d->cfg.jail_uid_count,
		.work_dir = work,
		.disk_dir = d->cfg.data_dir,
		.mem_overhead_mib = d->cfg.vm_memory_overhead_mib,
		.pids_max = d->cfg.vm_pids_max,
	};
	int e = jail_setup(&c, err, sizeof(err));
	char q[320];
	if (e < 0) {
		log_kv(LOG_ERROR, "daemon.jail", "err=%s", log_quote(err, q, sizeof(q)));
		return e;
	}
	if (err[0])
		log_kv(LOG_WARN, "daemon.jail", "msg=%s", log_quote(err, q, sizeof(q)));
	json_t *desc = jail_host_describe(jail_host_get());
	char *s = desc ? json_dumps(desc, JSON_COMPACT) : NULL;
	log_kv(LOG_INFO, "daemon.jail", "in_force=%s", s ? s : "?");
	free(s);
	json_decref(desc);
	return 0;
}

/*
 * The options whose values another part of the daemon parses: checked by
 * that part's own parser, here, before anything starts (config.c checks
 * the rest).  Returns 0 or -EINVAL with the reason in err.
 */
static int check_parts_options(const struct daemon_cfg *cfg, char *err, size_t errlen)
{
	char why[160];
	if (origin_list_check(cfg->mcp_allowed_origins, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "--mcp-allowed-origins: %s", why);
		return -EINVAL;
	}
	if (cfg->dns_upstream[0] && net_resolve_check_servers(cfg->dns_upstream, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "--dns-upstream: %s", why);
		return -EINVAL;
	}
	struct net_cidr deny[NET_DENIED_EXTRA_MAX];
	if (net_denied_parse_list(cfg->net_deny, deny, NET_DENIED_EXTRA_MAX, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "--net-deny: %s", why);
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct daemon d;
	char err[1024] = "";
	if (config_load(&d.cfg, argc, argv, err, sizeof(err)) < 0 ||
	    check_parts_options(&d.cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "pandastackd: %s\n", err);
		return 2;
	}
	if (d.cfg.help) {
		config_usage(stdout);
		return 0;
	}
	if (d.cfg.print_routes) {
		routes_print(stdout);
		return 0;
	}
	if (d.cfg.print_errors) {
		api_errors_print(stdout);
		return 0;
	}
	signal(SIGPIPE, SIG_IGN);
	int cr = crash_report_install("daemon");
	if (cr < 0)
		log_kv(LOG_WARN, "daemon.no_crash_report", "err=%d", cr);
	sigset_t stop_signals;
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGTERM);
	/* Every thread started from here inherits the mask: only sigwait below
	 * takes these signals. */
	pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);

	d.started_wall_ms = (int64_t)(util_wall_ns() / 1000000u);
	d.limits.max_ttl_seconds = d.cfg.max_ttl_s;
	d.limits.max_exec_timeout_seconds = d.cfg.exec_max_timeout_s;
	log_kv(LOG_INFO, "daemon.starting", "version=%s data_dir=%s cache=%s pool_size=%u",
	       PANDASTACK_VERSION, d.cfg.data_dir, d.cfg.cache_dir, d.cfg.pool_size);

	int e = prepare_data_dir(&d);
	if (e == -EBUSY)
		return fail("data_dir", e, "another pandastackd uses this data dir");
	if (e)
		return fail("data_dir", e, NULL);
	/* before any thread: it starts libcurl for the MCP endpoint's loopback */
	if ((e = api_mcp_new(&d.cfg, &d.mcp)) < 0)
		return fail("mcp", e, e == -EINVAL ? "--tls-cert holds no PEM certificate" : NULL);
	char db[PATH_MAX];
	if (path_in(db, sizeof(db), d.cfg.data_dir, "pandastack.db") < 0)
		return fail("store", -ENAMETOOLONG, NULL);
	if ((e = store_open(db, &d.store, err, sizeof(err))) < 0)
		return fail("store", e, err);
	int created;
	if ((e = auth_bootstrap_admin(d.store, d.cfg.data_dir, &created)) < 0)
		return fail("admin_key", e, NULL);
	char why[256] = "";
	if ((e = accel_resolve(d.cfg.accel, &d.accel, why, sizeof(why))) < 0)
		return fail("accelerator", e, why);
	snprintf(d.accel_why, sizeof(d.accel_why), "%s", why);
	char q[300];
	log_kv(LOG_INFO, "daemon.accelerator", "accel=%s why=%s", accel_name(d.accel),
	       log_quote(why, q, sizeof(q)));
	if (d.accel == ACCEL_TCG)
		log_kv(LOG_WARN, "daemon.isolation",
		       "msg=\"TCG: software emulation, weaker isolation than KVM; do not run "
		       "untrusted code on a multi-tenant host without hardware virtualisation\"");
	if ((e = setup_jail(&d)) < 0)
		return fail("jail", e, NULL);
	if ((e = templates_new(d.cfg.cache_dir, d.pool_dir, d.accel, &d.cfg, &d.templates)) < 0)
		return fail("templates", e, NULL);
	templates_load_all(d.templates);
	struct net_config ncfg = {
		.dns_upstream = d.cfg.dns_upstream,
		.deny = d.cfg.net_deny,
		.max_conns = d.cfg.net_max_conns,
		.max_conns_sandbox = d.cfg.net_max_conns_sandbox,
	};
	if ((e = net_start(&ncfg, &d.net, err, sizeof(err))) < 0)
		return fail("network", e, err);
	if ((e = snaps_new(&d, &d.snaps)) < 0)
		return fail("snapshots", e, NULL);
	if ((e = sandboxes_new(&d, &d.sandboxes)) < 0)
		return fail("registry", e, NULL);
	if ((e = sandboxes_adopt(d.sandboxes)) < 0)
		return fail("adopt", e, NULL);
	if ((e = sandboxes_settle_captures(d.sandboxes)) < 0 || (e = snaps_recover(d.snaps)) < 0)
		return fail("snapshots", e, NULL);
	struct monitor *mon;
	if ((e = monitor_start(&d, &mon)) < 0)
		return fail("monitor", e, NULL);
	/* cluster (docs/cluster.md): after adoption, so what runs here is published */
	if (d.cfg.cluster[0] && (e = cluster_start(&d, &d.cluster, err, sizeof(err))) < 0)
		return fail("cluster", e, err);
	d.gate = d.cluster ? cluster_gate(d.cluster) : NULL;
	struct http_server *http;
	unsigned port;
	size_t nroutes;
	const struct route *routes = routes_table(&nroutes);
	if ((e = http_server_start(&d, routes, nroutes, &http, &port)) < 0)
		return fail("http", e,
			    e == -EINVAL   ? "--listen needs an IP address and port"
			    : e == -ENOKEY ? "cannot load the TLS certificate and key (PEM files)"
					   : NULL);
	log_kv(LOG_INFO, "http.listening", "host=%s port=%u", d.cfg.listen_host, port);

	int sig = 0;
	sigwait(&stop_signals, &sig);
	log_kv(LOG_INFO, "daemon.stopping", "signal=%d", sig);
	http_server_quiesce(http); /* no new connection reaches the server */
	port_splice_stop_all();    /* libmicrohttpd must find no upgraded connection */
	http_server_stop(http);
	cluster_stop(d.cluster);
	api_mcp_free(d.mcp);
	monitor_stop(mon);
	net_stop(d.net); /* proxied connections end with the daemon */
	sandboxes_free(d.sandboxes);
	snaps_free(d.snaps);
	templates_free(d.templates);
	store_close(d.store);
	log_kv(LOG_INFO, "daemon.stopped", "signal=%d", sig);
	return 0;
}
