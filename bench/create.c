/*
 * bench/create.c - how fast and how small sandboxes are, against peers run
 * in the same process tree (make bench-create; needs a baked template).
 *
 *   api         creates through the REST API of a pandastackd started here
 *               (BENCH_DAEMON, default build/pandastackd): through its pool
 *               of 2 ready sandboxes (each create waits until one is ready;
 *               the refill is not timed; every answer must say
 *               "restored_from": "pool"), then with the pool empty (size 0:
 *               "template"); p50/p99 of BENCH_N each, request to answer;
 *               and each create plus the new sandbox's first `exec` of
 *               `true` (a create answers once the restore message is sent;
 *               the first request waits for the guest to have taken it)
 *   create      vm_restore from the template: p50/p99 of BENCH_N (50), and
 *               the p50 of its network-slot and jail-preparation steps
 *   unjailed    the same creates with QEMU unjailed (the development-only
 *               jail_config.disable), in a child process, alternating with
 *               the jailed ones: what the jail costs a create, its steps in
 *               QEMU's monitor included
 *   prestarted  the earlier pool's path: QEMU already started and waiting
 *               in -incoming defer (not timed), then the rest of the
 *               restore (migrate, cont, agent, restore message) timed
 *   exec        round trip of `true` on one sandbox: p50 of 100, through
 *               the engine (vm_restore, guest_run_exec) and through the REST
 *               API (POST /v1/sandboxes/{id}/exec of a daemon started here,
 *               pool off); beside each, its peer in the same sandbox: the
 *               guest's own cost of spawning `/bin/sh -c true`, timed inside
 *               the guest (a shell loop of 50 spawns, median
 *               of 3), and the difference
 *   memory      20 idle sandboxes: PSS and RSS of each QEMU (smaps_rollup),
 *               the monitor processes, and the fall of MemAvailable; their
 *               host CPU while idle (/proc/<pid>/stat utime+stime over 10 s)
 *   peers       plain QEMU snapshot of the same warm guest (RAM in the
 *               file, `migrate "exec:cat > file"`, `-incoming "exec:cat
 *               file"`, no -sandbox): restore to the agent answering;
 *               cold boot of the same guest (kernel + initramfs + disk) to
 *               the agent answering (BENCH_PEERS=0 skips)
 *   tb-size     idle PSS of clones after a pandas workload, per TCG
 *               translation-buffer size (BENCH_TB=0 skips)
 * Figures go to stdout, one "name value unit" line each, then the ratios.
 * BENCH_ONLY=exec runs the exec figures alone.
 * With PANDASTACK_LOG=debug every restore logs its phases on stderr
 * (vm.restore_phases; bench/phases.py summarises them).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_rest.h"
#include "common/util.h"
#include "engine/guest/guest_conn.h"
#include "engine/guest/guest_run.h"
#include "engine/paths.h"
#include "engine/qemu/jail.h"
#include "engine/qemu/migrate.h"
#include "engine/qemu/qmp.h"
#include "engine/qemu/spawn.h"
#include "engine/template/template_int.h"
#include "engine/vm/bake.h"
#include "engine/vm/vm.h"
#include "engine/vm/vm_int.h"

static char base[] = "/tmp/pandastack-bench-XXXXXX";

/* Seconds over which the idle sandboxes' host CPU is measured. */
#define IDLE_CPU_SECONDS 10
static unsigned seq;

static void run_dir(char out[PATH_MAX], const char *tag)
{
	snprintf(out, PATH_MAX, "%s/%s%u", base, tag, ++seq);
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return x < y ? -1 : x > y;
}

static long long pct(long long *v, int n, int p)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_ll);
	int i = (n * p) / 100;
	return v[i >= n ? n - 1 : i];
}

static void die(const char *what, int r, const char *msg)
{
	fprintf(stderr, "bench: %s: %s %s\n", what, strerror(r < 0 ? -r : r), msg ? msg : "");
	util_rm_rf(base);
	exit(1);
}

/* "Pss:" or "Rss:" of /proc/<pid>/smaps_rollup, KiB. */
static long smaps_kib(pid_t pid, const char *key)
{
	char path[64], *data = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	if (util_read_file(path, 1 << 16, &data, &len) < 0)
		return -1;
	long v = -1;
	for (char *l = data; l && *l;) {
		if (!strncmp(l, key, strlen(key))) {
			v = strtol(l + strlen(key), NULL, 10);
			break;
		}
		l = strchr(l, '\n');
		l = l ? l + 1 : NULL;
	}
	free(data);
	return v;
}

static long mem_available_kib(void)
{
	char *data = NULL;
	size_t len = 0;
	long v = -1;
	if (util_read_file("/proc/meminfo", 1 << 16, &data, &len) < 0)
		return -1;
	char *p = strstr(data, "MemAvailable:");
	if (p)
		v = strtol(p + strlen("MemAvailable:"), NULL, 10);
	free(data);
	return v;
}

/* utime + stime of pid (/proc/<pid>/stat fields 14 and 15), clock ticks;
 * 0 if it cannot be read. */
static long long cpu_ticks(pid_t pid)
{
	char path[64], *data = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (util_read_file(path, 4096, &data, &len) < 0)
		return 0;
	char *p = strrchr(data, ')');
	unsigned long long ut = 0, st = 0;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
			 &st) != 2)
		ut = st = 0;
	free(data);
	return (long long)(ut + st);
}

/* The monitor process of a QEMU: its parent. */
static pid_t parent_of(pid_t pid)
{
	char path[64], *data = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (util_read_file(path, 4096, &data, &len) < 0)
		return -1;
	char *p = strrchr(data, ')');
	int ppid = -1;
	if (p)
		sscanf(p + 2, "%*c %d", &ppid);
	free(data);
	return ppid;
}

/* --- peers: QEMU processes outside vm_restore --------------------------- */

/* Replace the argument after flag (first match whose value starts with
 * prefix, or any if prefix is NULL) by val; "" removes flag and value. */
static void argv_set(struct strv *v, const char *flag, const char *prefix, const char *val)
{
	for (size_t i = 1; i + 1 < v->n; i++) {
		if (strcmp(v->v[i], flag) != 0 ||
		    (prefix && strncmp(v->v[i + 1], prefix, strlen(prefix)) != 0))
			continue;
		if (val[0]) {
			free(v->v[i + 1]);
			v->v[i + 1] = strdup(val);
		} else {
			free(v->v[i]);
			free(v->v[i + 1]);
			memmove(&v->v[i], &v->v[i + 2], (v->n - i - 1) * sizeof(char *));
			v->n -= 2;
		}
		return;
	}
	strv_add(v, flag);
	strv_add(v, val);
}

struct peer {
	pid_t pid;
	int pidfd;
	char dir[PATH_MAX];
	struct qmp *q;
	struct guest_conn *a;
	struct netslot net;     /* its NIC's namespace (every template has a NIC) */
};

/* A network slot for a peer's NIC, or exit: the bench cannot go on without. */
static void peer_net(struct netslot *n)
{
	char err[256];
	if (netslot_create(n, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench: %s\n", err);
		exit(1);
	}
}

static void peer_end(struct peer *p)
{
	if (p->a)
		guest_conn_close(p->a);
	if (p->q)
		qmp_close(p->q);
	if (p->pid > 0) {
		kill(p->pid, SIGKILL);
		struct vm tmp = {.pid = p->pid, .pidfd = p->pidfd};
		vm_wait_exit(&tmp, 5000);
	}
	if (p->pidfd >= 0)
		close(p->pidfd);
	netslot_close(&p->net);
	char st[96];
	spawn_exit_status(p->dir, 1000, st, sizeof(st));
	util_rm_rf(p->dir);
	memset(p, 0, sizeof(*p));
	p->pidfd = -1;
}

/* Say why a peer failed, with the tails of its logs. */
static void peer_report(struct peer *p, const char *what, int r)
{
	char q[160] = "", c[160] = "";
	spawn_log_tail(p->dir, "qemu.log", NULL, q, sizeof(q));
	spawn_log_tail(p->dir, "console.log", NULL, c, sizeof(c));
	fprintf(stderr, "bench: %s failed: %s; qemu: %s; console: %s\n", what, strerror(-r), q, c);
}

/* Start argv in dir (created) with the NIC of net (taken over by p);
 * wait for the agent if wait_agent. */
static int peer_start(struct peer *p, struct strv *argv, const char *dir, struct netslot *net,
		      int timeout_ms, int want_qmp, int want_agent)
{
	memset(p, 0, sizeof(*p));
	p->pidfd = -1;
	p->net = *net;
	snprintf(p->dir, sizeof(p->dir), "%s", dir);
	int64_t deadline = util_now_ms() + timeout_ms;
	struct spawn_opts so = {.pass_fds = {p->net.tap}, .npass = 1};
	int r = spawn_detached(argv->v, dir, &so, &p->pid);
	close(p->net.tap);
	p->net.tap = -1;
	if (r < 0)
		return r;
	p->pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
	char sock[PATH_MAX];
	if (want_qmp) {
		engine_path_join(sock, dir, "qmp.sock");
		if ((r = qmp_connect(sock, vm_left_ms(deadline), &p->q)) < 0)
			return r;
	}
	if (want_agent) {
		engine_path_join(sock, dir, "agent.sock");
		/* The socket appears once QEMU has started: retry until then. */
		while ((r = guest_conn_open(sock, vm_left_ms(deadline), &p->a)) == -ENOENT ||
		       r == -ECONNREFUSED) {
			if (vm_left_ms(deadline) == 0)
				return r;
			usleep(1000);
		}
		if (r < 0)
			return r;
		if ((r = guest_conn_restore(p->a, NULL, vm_left_ms(deadline) + 1)) < 0)
			return r;
	}
	return 0;
}

/* The clone command line for dir with a fresh overlay (created in dir) and
 * the NIC of net (made here). */
static int clone_argv(const struct template *t, const char *dir, struct strv *argv,
		      struct netslot *net)
{
	peer_net(net);
	char overlay[PATH_MAX];
	int r = mkdir(dir, 0755) < 0 ? -errno : 0;
	if (r == 0)
		r = engine_path_join(overlay, dir, "overlay.qcow2");
	if (r == 0)
		r = template_overlay_create(t, overlay);
	if (r < 0) {
		netslot_close(net);
		return r;
	}
	struct qemu_instance in = {.role = QEMU_ROLE_CLONE, .sock_dir = dir, .mem_path = template_memory_path(t),
				   .disk = overlay, .tap_fd = net->tap};
	strv_init(argv);
	return qemu_command_line(qemu_binary(), template_spec(t), &in, argv);
}

/* Make the plain snapshot: a clone without -sandbox, restored from the
 * template, saved whole (RAM included) through exec:cat. */
static int make_plain_snapshot(const struct template *t, const char *snap)
{
	char dir[PATH_MAX], msg[256], uri[PATH_MAX + 32];
	struct strv argv;
	struct peer p;
	struct netslot net;
	run_dir(dir, "plain-src");
	int r = clone_argv(t, dir, &argv, &net);
	if (r < 0)
		return r;
	argv_set(&argv, "-sandbox", NULL, "");
	r = peer_start(&p, &argv, dir, &net, 60000, 1, 0);
	strv_free(&argv);
	if (r == 0)
		r = migrate_set_caps(p.q, 10000);
	char state[PATH_MAX];
	snprintf(state, sizeof(state), "%s", template_state_path(t));
	if (r == 0)
		r = migrate_load(p.q, state, 30000, msg, sizeof(msg));
	if (r == 0)
		r = qmp_call(p.q, "cont", NULL, 10000, NULL);
	if (r == 0) {
		char sock[PATH_MAX];
		engine_path_join(sock, dir, "agent.sock");
		r = guest_conn_open(sock, 30000, &p.a);
		if (r == 0)
			r = guest_conn_restore(p.a, NULL, 30000);
		if (p.a)
			guest_conn_close(p.a);
		p.a = NULL;
	}
	if (r == 0) {
		json_t *caps = json_pack("{s:[{s:s,s:b}]}", "capabilities", "capability",
					 "x-ignore-shared", "state", 0);
		r = qmp_call(p.q, "migrate-set-capabilities", caps, 10000, NULL);
		json_decref(caps);
	}
	if (r == 0) {
		snprintf(uri, sizeof(uri), "exec:cat > %s", snap);
		json_t *args = json_pack("{s:s}", "uri", uri);
		r = qmp_call(p.q, "migrate", args, 10000, NULL);
		json_decref(args);
	}
	/* Wait for completion by polling. */
	for (int i = 0; r == 0 && i < 1200; i++) {
		json_t *info = NULL;
		if ((r = qmp_call(p.q, "query-migrate", NULL, 10000, &info)) < 0)
			break;
		const char *st = json_string_value(json_object_get(info, "status"));
		int done = st && !strcmp(st, "completed"), failed = st && !strcmp(st, "failed");
		json_decref(info);
		if (done)
			break;
		if (failed)
			r = -EIO;
		usleep(50 * 1000);
	}
	if (r < 0 && p.q)
		fprintf(stderr, "bench: plain snapshot: %s\n", qmp_last_error(p.q));
	peer_end(&p);
	return r;
}

/* One plain restore: start QEMU with RAM in anonymous memory and the
 * snapshot on -incoming exec:cat; ms until the agent answered. */
static long long plain_restore_ms(const struct template *t, const char *snap)
{
	char dir[PATH_MAX], mem[64], inc[PATH_MAX + 16];
	struct strv argv;
	struct peer p;
	struct netslot net;
	run_dir(dir, "plain");
	if (clone_argv(t, dir, &argv, &net) < 0)
		return -1;
	argv_set(&argv, "-sandbox", NULL, "");
	snprintf(mem, sizeof(mem), "memory-backend-ram,id=mem,size=%uM", template_memory_mib(t));
	argv_set(&argv, "-object", "memory-backend-file", mem);
	snprintf(inc, sizeof(inc), "exec:cat %s", snap);
	argv_set(&argv, "-incoming", NULL, inc);
	int64_t t0 = util_now_ms();
	int r = peer_start(&p, &argv, dir, &net, 60000, 0, 1);
	long long ms = r == 0 ? util_now_ms() - t0 : -1;
	if (r < 0)
		peer_report(&p, "plain restore", r);
	strv_free(&argv);
	peer_end(&p);
	return ms;
}

/* One cold boot of the template's guest: kernel, initramfs, a new overlay
 * on the template's disk; ms until the agent answered, -1 on a hang. */
static long long cold_boot_ms(const struct template *t, const struct manifest *m)
{
	char dir[PATH_MAX], overlay[PATH_MAX], mem[PATH_MAX];
	struct strv argv;
	struct peer p;
	run_dir(dir, "cold");
	if (mkdir(dir, 0755) < 0 || engine_path_join(overlay, dir, "overlay.qcow2") < 0 ||
	    engine_path_join(mem, dir, "memory") < 0 || template_overlay_create(t, overlay) < 0)
		return -1;
	char cmdline[MANIFEST_CMDLINE_MAX + 64];
	engine_boot_cmdline(m, template_accel(t), cmdline, sizeof(cmdline));
	struct netslot net;
	peer_net(&net);
	struct qemu_instance in = {.role = QEMU_ROLE_BAKE, .sock_dir = dir, .mem_path = mem,
				   .disk = overlay, .kernel = m->kernel, .initrd = m->initramfs,
				   .append = cmdline, .tap_fd = net.tap};
	strv_init(&argv);
	if (qemu_command_line(qemu_binary(), template_spec(t), &in, &argv) < 0)
		return -1;
	int64_t t0 = util_now_ms();
	int r = peer_start(&p, &argv, dir, &net, 30000, 0, 1);
	long long ms = r == 0 ? util_now_ms() - t0 : -1;
	if (r < 0)
		peer_report(&p, "cold boot", r);
	strv_free(&argv);
	peer_end(&p);
	return ms;
}

/* Idle PSS (KiB) of a clone run with TCG tb-size tb after a pandas workload. */
static long tb_pss_kib(const struct template *t, unsigned tb)
{
	char dir[PATH_MAX], accel[64], msg[256];
	struct strv argv;
	struct peer p;
	struct netslot net;
	run_dir(dir, "tb");
	if (clone_argv(t, dir, &argv, &net) < 0)
		return -1;
	snprintf(accel, sizeof(accel), "tcg,tb-size=%u", tb);
	argv_set(&argv, "-accel", NULL, accel);
	int r = peer_start(&p, &argv, dir, &net, 60000, 1, 0);
	strv_free(&argv);
	if (r == 0)
		r = migrate_set_caps(p.q, 10000);
	if (r == 0)
		r = migrate_load(p.q, template_state_path(t), 30000, msg, sizeof(msg));
	if (r == 0)
		r = qmp_call(p.q, "cont", NULL, 10000, NULL);
	char sock[PATH_MAX];
	engine_path_join(sock, dir, "agent.sock");
	if (r == 0)
		r = guest_conn_open(sock, 30000, &p.a);
	if (r == 0)
		r = guest_conn_restore(p.a, NULL, 30000);
	long pss = -1;
	if (r == 0) {
		struct guest_run_result res;
		struct guest_run_exec_opts o = {.timeout_ms = 300000};
		r = guest_run_exec(p.a, "python3 -c 'import pandas as pd, numpy as np; "
				     "df = pd.DataFrame(np.random.rand(20000, 8)); "
				     "print(df.describe().shape, df.groupby(df[0] > 0.5).sum().shape)'",
				&o, &res);
		guest_run_result_free(&res);
		sleep(2);
		pss = smaps_kib(p.pid, "Pss:");
	}
	peer_end(&p);
	return r == 0 ? pss : -1;
}

/* The unjailed peer: a child process whose QEMUs run without the jail (the
 * jail host is chosen once per process, before its first VM, so it must be
 * forked first).  It makes one create per request, alternating with the
 * jailed ones so that the host's load weighs on both alike. */
struct nojail {
	pid_t pid;
	int req, ans; /* write a byte to req; read the create's ms from ans */
};

static void nojail_child(const struct template *t, int req, int ans)
{
	char err[256], cmd;
	struct jail_config c = {.disable = 1};
	int ok = jail_setup(&c, err, sizeof(err)) == 0;
	while (read(req, &cmd, 1) == 1 && cmd == 'c') {
		long long ms = -1;
		struct vm *vm = NULL;
		struct vm_err verr;
		char dir[PATH_MAX];
		run_dir(dir, "u");
		int64_t t0 = util_now_ms();
		int r = ok ? vm_restore(t, dir, NULL, 60000, &vm, &verr) : -EPERM;
		if (r == 0) {
			ms = util_now_ms() - t0;
			vm_stop(vm);
			vm_free(vm);
		} else {
			fprintf(stderr, "bench: unjailed create: %s: %s\n", strerror(-r),
				ok ? verr.msg : err);
		}
		if (write(ans, &ms, sizeof(ms)) != (ssize_t)sizeof(ms))
			break;
	}
	_exit(0);
}

static int nojail_start(const struct template *t, struct nojail *p)
{
	int req[2], ans[2];
	p->pid = -1;
	if (pipe2(req, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(ans, O_CLOEXEC) < 0) {
		int r = -errno;
		close(req[0]);
		close(req[1]);
		return r;
	}
	p->pid = fork();
	if (p->pid == 0) {
		close(req[1]);
		close(ans[0]);
		nojail_child(t, req[0], ans[1]);
	}
	close(req[0]);
	close(ans[1]);
	p->req = req[1];
	p->ans = ans[0];
	if (p->pid < 0) {
		close(p->req);
		close(p->ans);
		return -EAGAIN;
	}
	return 0;
}

/* One unjailed create; its ms, or -1. */
static long long nojail_create(struct nojail *p)
{
	long long ms = -1;
	if (p->pid < 0 || write(p->req, "c", 1) != 1 ||
	    read(p->ans, &ms, sizeof(ms)) != (ssize_t)sizeof(ms))
		return -1;
	return ms;
}

static void nojail_end(struct nojail *p)
{
	if (p->pid < 0)
		return;
	close(p->req);
	close(p->ans);
	waitpid(p->pid, NULL, 0);
	p->pid = -1;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct_d(double *v, int n, int p)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	int i = (n * p) / 100;
	return v[i >= n ? n - 1 : i];
}

/* The guest's own cost of spawning `/bin/sh -c true`: a shell loop of 50
 * spawns timed inside the guest; it prints the microseconds per spawn. */
#define GUEST_FLOOR_SCRIPT                                                                     \
	"t0=$(date +%s%N); i=0; while [ $i -lt 50 ]; do /bin/sh -c true; i=$((i+1)); done; " \
	"t1=$(date +%s%N); echo $(( (t1 - t0) / 50000 ))"

/* The guest's own cost of spawning /bin/sh -c true, through the engine:
 * median of 3 runs of GUEST_FLOOR_SCRIPT, ms. */
static double guest_floor_engine(struct guest_conn *c)
{
	double f[3];
	for (int i = 0; i < 3; i++) {
		struct guest_run_result res;
		int r = guest_run_exec(c, GUEST_FLOOR_SCRIPT, NULL, &res);
		if (r < 0 || res.exit_code != 0)
			die("guest floor", r < 0 ? r : -EIO, "");
		f[i] = strtod(res.out ? res.out : "0", NULL) / 1000.0;
		guest_run_result_free(&res);
	}
	return pct_d(f, 3, 50);
}

/* exec of `true` through the REST API of a daemon started here (pool off):
 * p50/p99 of n after two untimed ones, and the guest floor in the same
 * sandbox (median of 3), ms. */
static void api_exec_series(const char *name, const char *cache, int n, double *p50,
			    double *p99, double *floor)
{
	const char *bin = getenv("BENCH_DAEMON") ? getenv("BENCH_DAEMON") : "build/pandastackd";
	char dir[PATH_MAX], id[64], out[64];
	run_dir(dir, "api-exec");
	struct bench_daemon d;
	int r = bench_daemon_start(&d, bin, dir, cache, name, 0);
	if (r < 0)
		die("starting pandastackd (BENCH_DAEMON)", r, dir);
	double ms, *v = calloc((size_t)n, sizeof(*v)), f[3];
	int from_pool = 0;
	if (!v || (r = bench_create(&d, name, &ms, id, &from_pool)) < 0) {
		bench_daemon_stop(&d);
		die("create through the API", v ? r : -ENOMEM, "");
	}
	for (int i = -2; i < n; i++) {
		if ((r = bench_exec(&d, id, "true", &ms, NULL, 0)) < 0) {
			bench_daemon_stop(&d);
			die("exec through the API", r, "");
		}
		if (i >= 0)
			v[i] = ms;
	}
	for (int i = 0; i < 3; i++) {
		if ((r = bench_exec(&d, id, GUEST_FLOOR_SCRIPT, &ms, out, sizeof(out))) < 0) {
			bench_daemon_stop(&d);
			die("guest floor through the API", r, "");
		}
		f[i] = strtod(out, NULL) / 1000.0;
	}
	bench_delete(&d, id);
	bench_daemon_stop(&d);
	*floor = pct_d(f, 3, 50);
	*p50 = pct_d(v, n, 50);
	*p99 = pct_d(v, n, 99);
	free(v);
}

/* api_exec_series's figures, printed. */
static void api_exec_figures(const char *name, const char *cache)
{
	double e50, e99, floor;
	api_exec_series(name, cache, 100, &e50, &e99, &floor);
	printf("api_exec_true_p50 %.1f ms\napi_exec_true_p99 %.1f ms\n"
	       "api_exec_guest_sh_true %.1f ms (peer: /bin/sh -c true timed in the same guest)\n"
	       "api_exec_true_over_guest %.1f ms (api_exec_true_p50 - api_exec_guest_sh_true)\n",
	       e50, e99, floor, e50 - floor);
}

/* n creates through a daemon's REST API with a pool of `pool` ready
 * sandboxes (each waits until one is ready: want_pool 1) or none
 * (want_pool 0); every answer must say which path it took.  p50/p99 in ms. */
static void api_series(const char *name, const char *cache, int n, unsigned pool, int want_pool,
		       double *p50, double *p99, double *first50, double *first99)
{
	const char *bin = getenv("BENCH_DAEMON") ? getenv("BENCH_DAEMON") : "build/pandastackd";
	char dir[PATH_MAX];
	run_dir(dir, want_pool ? "api-pool" : "api-empty");
	struct bench_daemon d;
	int r = bench_daemon_start(&d, bin, dir, cache, name, pool);
	if (r < 0)
		die("starting pandastackd (BENCH_DAEMON)", r, dir);
	double *v = calloc((size_t)n, sizeof(*v));
	double *f = calloc((size_t)n, sizeof(*f)); /* create + first exec */
	for (int i = 0; v && f && i < n; i++) {
		int64_t until = util_now_ms() + 300000;
		while (want_pool && bench_pool_ready(&d, name) < 1 && util_now_ms() < until)
			usleep(20 * 1000);
		char id[64];
		int from_pool = 0;
		if ((r = bench_create(&d, name, &v[i], id, &from_pool)) < 0) {
			bench_daemon_stop(&d);
			die("create through the API", r, "");
		}
		/* the create's answer may come before the guest took the restore
		 * message (its first request waits for it): time that too */
		double ex;
		if ((r = bench_exec(&d, id, "true", &ex, NULL, 0)) < 0) {
			bench_daemon_stop(&d);
			die("first exec after a create", r, "");
		}
		f[i] = v[i] + ex;
		bench_delete(&d, id);
		if (from_pool != want_pool) {
			bench_daemon_stop(&d);
			die("create through the API", -EPROTO,
			    want_pool ? "served from the template while the pool was ready"
				      : "served from a pool of size 0");
		}
	}
	bench_daemon_stop(&d);
	if (!v || !f)
		die("calloc", -ENOMEM, "");
	*p50 = pct_d(v, n, 50);
	*p99 = pct_d(v, n, 99);
	*first50 = pct_d(f, n, 50);
	*first99 = pct_d(f, n, 99);
	free(v);
	free(f);
}

static void api_creates(const char *name, const char *cache, int n, double *pool50,
			double *pool99, double *tpl50, double *tpl99)
{
	double f50, f99;
	api_series(name, cache, n, 2, 1, pool50, pool99, &f50, &f99);
	printf("api_create_pool_p50 %.1f ms\napi_create_pool_p99 %.1f ms\n", *pool50, *pool99);
	printf("api_create_pool_then_exec_p50 %.1f ms\napi_create_pool_then_exec_p99 %.1f ms\n",
	       f50, f99);
	api_series(name, cache, n, 0, 0, tpl50, tpl99, &f50, &f99);
	printf("api_create_empty_pool_p50 %.1f ms\napi_create_empty_pool_p99 %.1f ms\n", *tpl50,
	       *tpl99);
	printf("api_create_empty_pool_then_exec_p50 %.1f ms\n"
	       "api_create_empty_pool_then_exec_p99 %.1f ms\n",
	       f50, f99);
}

/* exec of `true` through the engine on one sandbox: p50/p99 of 100, and
 * the guest floor in the same sandbox. */
static void exec_figures(struct template *t)
{
	struct vm *one = NULL;
	struct vm_err verr;
	char dir[PATH_MAX];
	long long v[100];
	int r;
	run_dir(dir, "x");
	if ((r = vm_restore(t, dir, NULL, 60000, &one, &verr)) < 0)
		die("vm_restore", r, verr.msg);
	for (int i = 0; i < 100; i++) {
		struct guest_run_result res;
		int64_t t0 = util_now_ms();
		r = guest_run_exec(vm_agent(one), "true", NULL, &res);
		v[i] = util_now_ms() - t0;
		if (r < 0 || res.exit_code != 0)
			die("exec true", r, "");
		guest_run_result_free(&res);
	}
	long long exec_p50 = pct(v, 100, 50);
	double floor = guest_floor_engine(vm_agent(one));
	printf("exec_true_p50 %lld ms\nexec_true_p99 %lld ms\n", exec_p50, pct(v, 100, 99));
	printf("exec_guest_sh_true %.1f ms (peer: /bin/sh -c true timed in the same guest)\n"
	       "exec_true_over_guest %.1f ms (exec_true_p50 - exec_guest_sh_true)\n",
	       floor, (double)exec_p50 - floor);
	vm_stop(one);
	vm_free(one);
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "code-interpreter";
	const char *cache = engine_cache_dir(NULL);
	int n = getenv("BENCH_N") ? atoi(getenv("BENCH_N")) : 50;
	if (n < 2)
		n = 2;
	char err[1024];
	struct template *t = NULL;
	int r = template_open(cache, name, ACCEL_AUTO, &t, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "bench: template %s: %s (make templates)\n", name, err);
		return 1;
	}
	struct manifest *m = calloc(1, sizeof(*m));
	if (!m || manifest_load(cache, name, m, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench: manifest %s: %s\n", name, err);
		return 1;
	}
	if (!mkdtemp(base))
		return 1;
	printf("bench create: template %s, %s, %u MiB, QEMU %s, %d runs\n", name,
	       accel_name(template_accel(t)), template_memory_mib(t), template_qemu_version(t), n);
	int only_exec = getenv("BENCH_ONLY") && !strcmp(getenv("BENCH_ONLY"), "exec");
	int api = !(getenv("BENCH_API") && !strcmp(getenv("BENCH_API"), "0"));
	if (only_exec) {
		if (api)
			api_exec_figures(name, cache);
		exec_figures(t);
		free(m);
		util_rm_rf(base);
		template_free(t);
		return 0;
	}
	long long *v = calloc((size_t)(n > 100 ? n : 100), sizeof(*v));
	struct vm_err verr;
	char dir[PATH_MAX];

	/* 0. the unjailed peer: forked before this process opens its jail host */
	struct nojail nj;
	if ((r = nojail_start(t, &nj)) < 0)
		fprintf(stderr, "bench: no unjailed peer: %s\n", strerror(-r));

	/* through the REST API: the ready pool, then no pool; exec of true */
	double api_pool_p50 = -1, api_pool_p99 = -1, api_tpl_p50 = -1, api_tpl_p99 = -1;
	if (api) {
		api_creates(name, cache, n, &api_pool_p50, &api_pool_p99, &api_tpl_p50, &api_tpl_p99);
		api_exec_figures(name, cache);
	} else {
		printf("api skipped (BENCH_API=0)\n");
	}

	/* 1. create without the pool, each followed by an unjailed one */
	long long *net_us = calloc((size_t)n, sizeof(*net_us));
	long long *jail_us = calloc((size_t)n, sizeof(*jail_us));
	long long *nj_ms = calloc((size_t)n, sizeof(*nj_ms));
	if (!v || !net_us || !jail_us || !nj_ms)
		die("calloc", -ENOMEM, "");
	int nnj = 0;
	for (int i = 0; i < n; i++) {
		struct vm *vm = NULL;
		run_dir(dir, "c");
		int64_t t0 = util_now_ms();
		if ((r = vm_restore(t, dir, NULL, 60000, &vm, &verr)) < 0)
			die("vm_restore", r, verr.msg);
		v[i] = util_now_ms() - t0;
		net_us[i] = vm->ph.net;
		jail_us[i] = vm->ph.jail;
		vm_stop(vm);
		vm_free(vm);
		long long ms = nojail_create(&nj);
		if (ms >= 0)
			nj_ms[nnj++] = ms;
	}
	nojail_end(&nj);
	long long create_p50 = pct(v, n, 50), create_p99 = pct(v, n, 99);
	printf("create_p50 %lld ms\ncreate_p99 %lld ms\n", create_p50, create_p99);
	printf("create_net_slot_p50 %.2f ms\n", pct(net_us, n, 50) / 1000.0);
	printf("create_jail_prepare_p50 %.2f ms\n", pct(jail_us, n, 50) / 1000.0);
	long long unjailed_p50 = -1;
	if (nnj) {
		unjailed_p50 = pct(nj_ms, nnj, 50);
		printf("create_unjailed_p50 %lld ms\ncreate_unjailed_p99 %lld ms (%d runs)\n",
		       unjailed_p50, pct(nj_ms, nnj, 99), nnj);
	} else {
		printf("create_unjailed failed (see stderr)\n");
	}
	free(net_us);
	free(jail_us);
	free(nj_ms);

	/* 2. the pre-started QEMU path: only the restore after the start is timed */
	for (int i = 0; i < n; i++) {
		struct vm *vm = NULL;
		run_dir(dir, "p");
		if ((r = vm_launch_clone(t, dir, 1, util_now_ms() + 60000, &vm, &verr)) < 0)
			die("vm_launch_clone", r, verr.msg);
		int64_t t0 = util_now_ms();
		if ((r = vm_finish_restore(vm, t, NULL, util_now_ms() + 60000, &verr)) < 0 ||
		    (r = vm_handed_out(vm)) < 0)
			die("vm_finish_restore", r, verr.msg);
		v[i] = util_now_ms() - t0;
		vm_stop(vm);
		vm_free(vm);
	}
	long long pre_p50 = pct(v, n, 50), pre_p99 = pct(v, n, 99);
	printf("create_prestarted_p50 %lld ms\ncreate_prestarted_p99 %lld ms\n", pre_p50, pre_p99);

	/* 3. exec round trip */
	exec_figures(t);

	/* 4. memory of 20 idle sandboxes */
	enum { IDLE = 20 };
	struct vm *idle[IDLE];
	long avail0 = mem_available_kib();
	for (int i = 0; i < IDLE; i++) {
		run_dir(dir, "m");
		if ((r = vm_restore(t, dir, NULL, 60000, &idle[i], &verr)) < 0)
			die("vm_restore", r, verr.msg);
	}
	sleep(5);
	long pss = 0, rss = 0, mon_pss = 0;
	for (int i = 0; i < IDLE; i++) {
		pss += smaps_kib(vm_pid(idle[i]), "Pss:");
		rss += smaps_kib(vm_pid(idle[i]), "Rss:");
		mon_pss += smaps_kib(parent_of(vm_pid(idle[i])), "Pss:");
	}
	long avail1 = mem_available_kib();
	printf("idle_qemu_pss %ld KiB\nidle_qemu_rss %ld KiB\nidle_monitor_pss %ld KiB\n"
	       "memavailable_drop_per_sandbox %ld KiB\n",
	       pss / IDLE, rss / IDLE, mon_pss / IDLE, (avail0 - avail1) / IDLE);
	/* host CPU of an idle sandbox: utime + stime of its QEMU over 10 s */
	long long ticks0 = 0, ticks1 = 0;
	for (int i = 0; i < IDLE; i++)
		ticks0 += cpu_ticks(vm_pid(idle[i]));
	int64_t c0 = util_now_ms();
	sleep(IDLE_CPU_SECONDS);
	for (int i = 0; i < IDLE; i++)
		ticks1 += cpu_ticks(vm_pid(idle[i]));
	double secs = (double)(util_now_ms() - c0) / 1000.0;
	printf("idle_qemu_cpu %.2f %% of a core per sandbox (%d sandboxes, %d s)\n",
	       100.0 * (double)(ticks1 - ticks0) / (double)sysconf(_SC_CLK_TCK) / secs / IDLE,
	       IDLE, IDLE_CPU_SECONDS);
	for (int i = 0; i < IDLE; i++) {
		vm_stop(idle[i]);
		vm_free(idle[i]);
	}

	/* 5. peers (BENCH_PEERS=0 skips them) */
	char snap[PATH_MAX];
	snprintf(snap, sizeof(snap), "%s/plain.snap", base);
	long long plain_p50 = -1, cold_p50 = -1;
	int peers = !(getenv("BENCH_PEERS") && !strcmp(getenv("BENCH_PEERS"), "0"));
	if (!peers) {
		printf("peers skipped (BENCH_PEERS=0)\n");
	} else if ((r = make_plain_snapshot(t, snap)) < 0) {
		fprintf(stderr, "bench: plain snapshot failed: %s\n", strerror(-r));
	} else {
		struct stat st;
		stat(snap, &st);
		printf("plain_snapshot_size %lld KiB\n", (long long)st.st_size / 1024);
		int k = 0;
		for (int i = 0; i < 10; i++) {
			long long ms = plain_restore_ms(t, snap);
			if (ms >= 0)
				v[k++] = ms;
		}
		if (k) {
			plain_p50 = pct(v, k, 50);
			printf("plain_restore_p50 %lld ms (%d runs)\n", plain_p50, k);
		}
	}
	int k = 0, hangs = 0;
	for (int i = 0; peers && i < 5; i++) {
		long long ms = cold_boot_ms(t, m);
		if (ms >= 0)
			v[k++] = ms;
		else
			hangs++;
	}
	if (k) {
		cold_p50 = pct(v, k, 50);
		printf("cold_boot_to_agent_p50 %lld ms (%d runs, %d hung or failed)\n", cold_p50, k,
		       hangs);
	}

	/* 6. TCG translation buffer size against idle PSS after work */
	if (template_accel(t) == ACCEL_TCG && !(getenv("BENCH_TB") && !strcmp(getenv("BENCH_TB"), "0"))) {
		unsigned sizes[] = {16, 64, 256, 1024};
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			long kib = tb_pss_kib(t, sizes[i]);
			printf("pss_after_pandas_tb%u %ld KiB\n", sizes[i], kib);
		}
	}

	if (api_pool_p50 > 0) {
		printf("ratio api_empty_pool/api_pool %.1fx\n", api_tpl_p50 / api_pool_p50);
		printf("ratio prestarted/api_pool %.1fx\n", (double)pre_p50 / api_pool_p50);
		if (plain_p50 > 0)
			printf("ratio plain_restore/api_pool %.1fx\n", (double)plain_p50 / api_pool_p50);
		if (cold_p50 > 0)
			printf("ratio cold_boot/api_pool %.1fx\n", (double)cold_p50 / api_pool_p50);
	}
	printf("ratio plain_restore/create %.1fx\n", plain_p50 > 0 ? (double)plain_p50 / create_p50 : 0);
	printf("ratio plain_restore/create_prestarted %.1fx\n", plain_p50 > 0 ? (double)plain_p50 / pre_p50 : 0);
	printf("ratio cold_boot/create %.1fx\n", cold_p50 > 0 ? (double)cold_p50 / create_p50 : 0);
	printf("ratio create/create_prestarted %.1fx\n", (double)create_p50 / (pre_p50 > 0 ? pre_p50 : 1));
	if (unjailed_p50 >= 0)
		printf("jail_cost_p50 %lld ms (create_p50 - create_unjailed_p50)\n",
		       create_p50 - unjailed_p50);
	free(v);
	free(m);
	util_rm_rf(base);
	template_free(t);
	return 0;
}
