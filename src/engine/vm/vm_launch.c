/*
 * vm_launch.c - the steps of a restore (see vm_int.h): launch a clone QEMU
 * waiting for its state, then migrate the state in, continue, handshake
 * with the agent and record vm.json.
 */
#include "engine/qemu/qcow2.h"
#include "engine/vm/vm_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/log.h"
#include "common/util.h"
#include "engine/guest/guest_conn.h"
#include "engine/qemu/jail.h"
#include "engine/qemu/migrate.h"
#include "engine/qemu/spawn.h"

int engine_path_join(char *out, const char *dir, const char *name)
{
	return snprintf(out, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX ? -ENAMETOOLONG : 0;
}

int vm_path(const struct vm *v, const char *name, char *out)
{
	return snprintf(out, PATH_MAX, "%s/%s", v->run_dir, name) >= PATH_MAX ? -ENAMETOOLONG : 0;
}

int vm_left_ms(int64_t deadline)
{
	int64_t l = deadline - util_now_ms();
	return l > 0 ? (int)(l > 0x7fffffff ? 0x7fffffff : l) : 0;
}

unsigned long long vm_proc_start_ticks(pid_t pid)
{
	char path[64], *data = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (util_read_file(path, 4096, &data, &len) < 0)
		return 0;
	/* The command name (field 2) may hold spaces and ')': skip past the
	 * last ')'; starttime is the 20th field after it. */
	char *p = strrchr(data, ')');
	unsigned long long ticks = 0;
	if (p) {
		int field = 2;
		for (char *s = p + 1; *s; s++) {
			if (*s == ' ') {
				field++;
				if (field == 22) {
					ticks = strtoull(s + 1, NULL, 10);
					break;
				}
			}
		}
	}
	free(data);
	return ticks;
}

int vm_wait_exit(struct vm *v, int timeout_ms)
{
	int64_t deadline = util_now_ms() + timeout_ms;
	for (;;) {
		if (v->pidfd >= 0) {
			struct pollfd p = {.fd = v->pidfd, .events = POLLIN};
			int r = poll(&p, 1, vm_left_ms(deadline));
			if (r == 1)
				return 1;
			if (r == 0)
				return 0;
			if (errno != EINTR)
				return 0;
			continue;
		}
		if (kill(v->pid, 0) < 0 && errno == ESRCH)
			return 1;
		if (util_now_ms() >= deadline)
			return 0;
		struct timespec ts = {0, 5000000};
		nanosleep(&ts, NULL);
	}
}

const char *const vm_qemu_log_noise[] = {"Expected vmdescription section", NULL};

void vm_fail_msg(struct vm *v, struct vm_err *err, const char *what, int code)
{
	char st[96] = "", qlog[160] = "", con[160] = "";
	if (!err)
		return;
	if (v && vm_wait_exit(v, 0))
		spawn_exit_status(v->run_dir, 200, st, sizeof(st));
	if (v) {
		spawn_log_tail(v->run_dir, "qemu.log", vm_qemu_log_noise, qlog, sizeof(qlog));
		spawn_log_tail(v->run_dir, "console.log", NULL, con, sizeof(con));
	}
	/* The caller's users see what failed and how QEMU ended; QEMU's own
	 * words (paths of this host) and the guest's console go to the log. */
	snprintf(err->msg, sizeof(err->msg), "%s: %s%s%s", what, strerror(-code),
		 st[0] ? "; qemu " : "", st);
	char q1[200], q2[200];
	log_kv(LOG_WARN, "vm.failed", "what=%s pid=%d qemu=%s console=%s", what, v ? (int)v->pid : 0,
	       log_quote(qlog, q1, sizeof(q1)), log_quote(con, q2, sizeof(q2)));
}

void vm_init_fields(struct vm *v)
{
	v->pidfd = -1;
	v->lifeline_fd = -1;
	v->net.netns = v->net.tap = -1;
	v->net.l.proxy = v->net.l.dns_udp = v->net.l.dns_tcp = -1;
}

void vm_discard(struct vm *v)
{
	if (!v)
		return;
	netslot_close(&v->net);
	if (v->agent)
		guest_conn_close(v->agent);
	v->agent = NULL;
	if (v->qmp)
		qmp_close(v->qmp);
	v->qmp = NULL;
	if (v->lifeline_fd >= 0)
		close(v->lifeline_fd);
	v->lifeline_fd = -1;
	if (v->pid > 0 && !vm_wait_exit(v, 0)) {
		kill(v->pid, SIGKILL);
		vm_wait_exit(v, 2000);
	}
	char st[96];
	if (v->pid > 0)
		spawn_exit_status(v->run_dir, 1000, st, sizeof(st));
	if (util_rm_rf(v->run_dir) == -ENOTEMPTY)
		util_rm_rf(v->run_dir);
	if (v->pidfd >= 0)
		close(v->pidfd);
	free(v);
}

/* The jail of a clone: uid, control group, mount plan (jail.h).  Sets
 * *mem_path to what QEMU maps: the template's sealed memfd when jailed, or
 * the origin's RAM when it has its own (o may be NULL). */
static int prepare_jail(struct vm *v, const struct template *t, const struct vm_origin *o,
			const char *jail_dir, char *mem_path, int *mem_fd, struct jail **out,
			struct vm_err *err)
{
	*out = NULL;
	*mem_fd = -1;
	const struct jail_host *h = jail_host_get();
	if (!h) {
		snprintf(err->msg, sizeof(err->msg), "the jail could not be set up (see the log)");
		return -EPERM;
	}
	if (o && o->mem_fd >= 0) {
		snprintf(mem_path, PATH_MAX, "/proc/self/fd/%d", o->mem_fd);
		*mem_fd = o->mem_fd;
	}
	if (!jail_host_enabled(h)) {
		if (*mem_fd < 0)
			snprintf(mem_path, PATH_MAX, "%s", template_memory_path(t));
		return 0;
	}
	int mfd = *mem_fd >= 0 ? *mem_fd : template_memory_fd(t);
	if (mfd < 0) {
		snprintf(err->msg, sizeof(err->msg), "cannot load the template's memory: %s",
			 strerror(-mfd));
		return mfd;
	}
	snprintf(mem_path, PATH_MAX, "/proc/self/fd/%d", mfd);
	*mem_fd = mfd;
	/* The disk layer the overlay sits on and every layer below it. */
	const char *layers[1 + QCOW2_CHAIN_MAX] = {o ? o->disk : template_disk_path(t)};
	int nchain = o ? o->ndisk_chain : template_disk_chain_len(t);
	if (nchain > QCOW2_CHAIN_MAX)
		return -ELOOP;
	for (int i = 0; i < nchain; i++)
		layers[1 + i] = o ? o->disk_chain[i] : template_disk_layer(t, i);
	struct jail_vm jv = {
		.name = v->run_dir, .jail_dir = jail_dir, .disk_layers = layers,
		.ndisk_layers = 1 + nchain, .netns_fd = v->net.netns,
		.memory_mib = template_memory_mib(t), .vcpus = template_vcpus(t),
		.disk_cap_bytes = template_disk_cap_bytes(t), .kvm = template_accel(t) == ACCEL_KVM,
	};
	int r = jail_prepare(h, &jv, out);
	if (r < 0) {
		snprintf(err->msg, sizeof(err->msg), "cannot prepare the jail: %s",
			 r == -EAGAIN ? "every uid of the jail's range is in use" : strerror(-r));
		return r;
	}
	v->uid = jail_uid(*out);
	const char *cpu = vmcg_cpu_dir(jail_host_cgroups(h), jail_cgroup(*out));
	if (cpu && vmcg_cpu_weight_get(cpu, &v->cg_weight) == 0)
		snprintf(v->cg_cpu, sizeof(v->cg_cpu), "%s", cpu);
	return 0;
}

/* A pool entry's weight: a tenth of a sandbox's. */
#define VM_LOW_CPU_DIVISOR 10u

int vm_set_cpu_low(struct vm *v, int low)
{
	if (!v->cg_cpu[0])
		return -ENOENT;
	unsigned w = v->cg_weight;
	if (low)
		w = w / VM_LOW_CPU_DIVISOR < 2 ? 2 : w / VM_LOW_CPU_DIVISOR;
	return vmcg_cpu_weight_set(v->cg_cpu, w);
}

int vm_launch_clone(const struct template *t, const char *dir, int lifeline, int64_t deadline,
		    struct vm **out, struct vm_err *err)
{
	return vm_launch_from(t, NULL, dir, lifeline, deadline, out, err);
}

int vm_launch_from(const struct template *t, const struct vm_origin *o, const char *dir,
		   int lifeline, int64_t deadline, struct vm **out, struct vm_err *err)
{
	char overlay[PATH_MAX], sock[PATH_MAX], jail_dir[PATH_MAX], mem_path[PATH_MAX];
	int r;
	err->msg[0] = '\0';
	if (strlen(dir) >= PATH_MAX - 64 || dir[0] != '/') {
		snprintf(err->msg, sizeof(err->msg), "run directory must be an absolute path");
		return -EINVAL;
	}
	if (mkdir(dir, 0750) < 0) {
		r = -errno;
		snprintf(err->msg, sizeof(err->msg), "cannot create the sandbox's folder: %s",
			 strerror(-r));
		return r;
	}
	struct vm *v = calloc(1, sizeof(*v));
	if (!v) {
		util_rm_rf(dir);
		return -ENOMEM;
	}
	vm_init_fields(v);
	snprintf(v->run_dir, sizeof(v->run_dir), "%s", dir);
	snprintf(v->spawn_dir, sizeof(v->spawn_dir), "%s", dir);
	snprintf(v->template_name, sizeof(v->template_name), "%s", template_name(t));
	snprintf(v->template_bake, sizeof(v->template_bake), "%s", template_bake_id(t));
	v->accel = template_accel(t);
	int64_t ts = util_now_us(), tn;
	if ((r = vm_path(v, VM_JAIL_DIR, jail_dir)) < 0 || (r = vm_path(v, VM_OVERLAY, overlay)) < 0 ||
	    (mkdir(jail_dir, 0700) < 0 && (r = -errno)) ||
	    (r = o ? engine_overlay_create(o->seed, o->disk, overlay)
		   : template_overlay_create(t, overlay)) < 0) {
		snprintf(err->msg, sizeof(err->msg), "cannot create the disk overlay: %s", strerror(-r));
		vm_discard(v);
		return r;
	}
	tn = util_now_us();
	v->ph.overlay = tn - ts;
	ts = tn;
	if ((r = netslot_create(&v->net, err->msg, sizeof(err->msg))) < 0) {
		vm_discard(v);
		return r;
	}
	tn = util_now_us();
	v->ph.net = tn - ts;
	ts = tn;
	struct jail *j = NULL;
	int mem_fd = -1;
	if ((r = prepare_jail(v, t, o, jail_dir, mem_path, &mem_fd, &j, err)) < 0) {
		vm_discard(v);
		return r;
	}
	int life[2] = {-1, -1};
	if (lifeline && pipe2(life, O_CLOEXEC) < 0) {
		r = -errno;
		snprintf(err->msg, sizeof(err->msg), "cannot make a pipe: %s", strerror(-r));
		jail_release(j, 1);
		vm_discard(v);
		return r;
	}
	v->lifeline_fd = life[1];
	tn = util_now_us();
	v->ph.jail = tn - ts;
	ts = tn;
	struct qemu_instance in = {
		.role = QEMU_ROLE_CLONE, .sock_dir = jail_dir, .mem_path = mem_path, .disk = overlay,
		.tap_fd = v->net.tap, .no_send_config = o && o->no_config,
	};
	struct strv argv;
	strv_init(&argv);
	if ((r = qemu_command_line(qemu_binary(), template_spec(t), &in, &argv)) < 0) {
		snprintf(err->msg, sizeof(err->msg), "cannot build the QEMU command line: %s",
			 strerror(-r));
		strv_free(&argv);
		if (life[0] >= 0)
			close(life[0]);
		jail_release(j, 1);
		vm_discard(v);
		return r;
	}
	struct spawn_opts so = {.jail = j, .watch = 1, .lifeline_fd = life[0],
				.pass_fds = {v->net.tap}, .npass = 1};
	if (mem_fd >= 0)
		so.pass_fds[so.npass++] = mem_fd;
	r = spawn_detached(argv.v, dir, &so, &v->pid);
	/* QEMU has the tap now; ours would keep the device alive after it. */
	close(v->net.tap);
	v->net.tap = -1;
	strv_free(&argv);
	if (life[0] >= 0)
		close(life[0]);
	jail_release(j, r < 0);
	if (r < 0) {
		snprintf(err->msg, sizeof(err->msg), "cannot start QEMU: %s", strerror(-r));
		log_kv(LOG_WARN, "vm.spawn_failed", "dir=%s qemu=%s err=%s", dir, qemu_binary(),
		       strerror(-r));
		vm_discard(v);
		return r;
	}
	v->pidfd = (int)syscall(SYS_pidfd_open, v->pid, 0);
	v->start_ticks = vm_proc_start_ticks(v->pid);
	tn = util_now_us();
	v->ph.spawn = tn - ts;
	ts = tn;
	if ((r = vm_path(v, VM_QMP_SOCK, sock)) < 0 || (r = qmp_connect(sock, vm_left_ms(deadline), &v->qmp)) < 0) {
		vm_fail_msg(v, err, "QMP did not answer", r);
		vm_discard(v);
		return r;
	}
	tn = util_now_us();
	v->ph.qmp_connect = tn - ts;
	ts = tn;
	if ((r = migrate_set_caps(v->qmp, vm_left_ms(deadline))) < 0) {
		vm_fail_msg(v, err, qmp_last_error(v->qmp), r);
		vm_discard(v);
		return r;
	}
	v->ph.caps = util_now_us() - ts;
	*out = v;
	return 0;
}

int vm_write_json(struct vm *v)
{
	char path[PATH_MAX];
	char ts[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_t *o = json_pack("{s:i, s:s, s:i, s:I, s:s, s:s, s:s, s:I}", "format", VM_JSON_FORMAT,
			      "template", v->template_name, "pid", (int)v->pid, "start_ticks",
			      (json_int_t)v->start_ticks, "spawn_dir", v->spawn_dir, "accel",
			      accel_name(v->accel), "created_at", ts, "uid", (json_int_t)v->uid);
	if (!o)
		return -ENOMEM;
	json_object_set_new(o, "template_bake", json_string(v->template_bake));
	char *s = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(o);
	if (!s)
		return -ENOMEM;
	int r = vm_path(v, "vm.json", path);
	if (r == 0)
		r = util_write_file(path, s, strlen(s), 0640);
	free(s);
	return r;
}

/* ms with one decimal from us, for the phase log. */
static double ms1(int64_t us)
{
	return (double)us / 1000.0;
}

int vm_finish_restore(struct vm *v, const struct template *t,
		      const struct guest_restore_opts *gopts, int64_t deadline, struct vm_err *err)
{
	return vm_finish_restore_state(v, template_state_path(t), gopts, deadline, err);
}

int vm_finish_restore_state(struct vm *v, const char *state_path,
			    const struct guest_restore_opts *gopts, int64_t deadline,
			    struct vm_err *err)
{
	char msg[256], sock[PATH_MAX];
	int64_t t0 = util_now_us(), ts = t0, tn;
	int r = migrate_load_start(v->qmp, state_path, vm_left_ms(deadline), msg, sizeof(msg));
	if (r == 0) {
		tn = util_now_us();
		v->ph.migrate_start = tn - ts;
		ts = tn;
		r = migrate_wait(v->qmp, vm_left_ms(deadline), msg, sizeof(msg));
	}
	if (r < 0) {
		vm_fail_msg(v, err, msg, r);
		return r == -ENOENT ? -ENOENT : (r == -ETIMEDOUT ? r : -EIO);
	}
	tn = util_now_us();
	v->ph.migrate_wait = tn - ts;
	ts = tn;
	if ((r = qmp_call(v->qmp, "cont", NULL, vm_left_ms(deadline), NULL)) < 0) {
		vm_fail_msg(v, err, qmp_last_error(v->qmp), r);
		return -EIO;
	}
	tn = util_now_us();
	v->ph.cont = tn - ts;
	ts = tn;
	if ((r = vm_path(v, VM_AGENT_SOCK, sock)) < 0)
		return r;
	if ((r = guest_conn_open(sock, vm_left_ms(deadline), &v->agent)) < 0) {
		v->agent = NULL;
		vm_fail_msg(v, err, "the agent did not answer", r);
		return r == -ETIMEDOUT ? r : -EIO;
	}
	struct guest_conn_stats as;
	guest_conn_stats(v->agent, &as);
	v->ph.agent_connect = as.connect_us;
	v->ph.hello = as.handshake_us;
	v->ph.hellos = as.hellos;
	ts = util_now_us();
	if ((r = guest_conn_restore(v->agent, gopts, vm_left_ms(deadline) + 1)) < 0) {
		vm_fail_msg(v, err, "the agent's restore failed", r);
		return r == -ETIMEDOUT ? r : -EIO;
	}
	tn = util_now_us();
	v->ph.restore_op = tn - ts;
	ts = tn;
	if ((r = vm_write_json(v)) < 0) {
		snprintf(err->msg, sizeof(err->msg), "cannot write vm.json: %s", strerror(-r));
		return r;
	}
	tn = util_now_us();
	v->ph.vm_json = tn - ts;
	const struct vm_phases *p = &v->ph;
	log_kv(LOG_DEBUG, "vm.restore_phases",
	       "pid=%d pooled=%d overlay_ms=%.1f net_ms=%.1f jail_ms=%.1f spawn_ms=%.1f "
	       "qmp_connect_ms=%.1f caps_ms=%.1f pages_ms=%.1f pages_mib=%.1f "
	       "migrate_start_ms=%.1f migrate_wait_ms=%.1f cont_ms=%.1f agent_connect_ms=%.1f "
	       "hello_ms=%.1f hellos=%u restore_op_ms=%.1f vm_json_ms=%.1f finish_ms=%.1f",
	       (int)v->pid, strcmp(v->spawn_dir, v->run_dir) != 0, ms1(p->overlay), ms1(p->net),
	       ms1(p->jail),
	       ms1(p->spawn),
	       ms1(p->qmp_connect), ms1(p->caps), ms1(p->pages), (double)p->pages_bytes / 1048576.0,
	       ms1(p->migrate_start), ms1(p->migrate_wait),
	       ms1(p->cont), ms1(p->agent_connect), ms1(p->hello), p->hellos, ms1(p->restore_op),
	       ms1(p->vm_json), ms1(tn - t0));
	return 0;
}

int vm_handed_out(struct vm *v)
{
	int r = spawn_release(v->lifeline_fd);
	v->lifeline_fd = -1;
	return r;
}
