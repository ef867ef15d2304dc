/*
 * vm.c - a sandbox's QEMU process: restore, adopt, pause/resume, status,
 * exit notice and stop (see vm.h).  The steps a restore shares with the
 * pool are in vm_launch.c.
 *
 * Lifecycle:
 *   vm_restore:  launched (QEMU in -incoming defer) -> state migrated in
 *                -> cont -> agent handshake + restore message -> running
 *   vm_adopt:    vm.json + pid checks -> QMP -> agent (if running)
 *   vm_stop:     quit -> (2 s) SIGKILL -> run dir removed
 */
#include "engine/vm/vm_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <jansson.h>

#include "common/log.h"
#include "common/util.h"
#include "engine/guest/guest_conn.h"
#include "engine/qemu/spawn.h"

int vm_restore(const struct template *t, const char *run_dir,
	       const struct guest_restore_opts *gopts, int timeout_ms, struct vm **out,
	       struct vm_err *err)
{
	int64_t t0 = util_now_ms(), deadline = t0 + timeout_ms;
	struct vm *v = NULL;
	int r = vm_launch_clone(t, run_dir, 0, deadline, &v, err);
	if (r < 0)
		return r;
	int64_t t1 = util_now_ms();
	if ((r = vm_finish_restore(v, t, gopts, deadline, err)) < 0) {
		log_kv(LOG_WARN, "vm.restore_failed", "template=%s pid=%d err=%d", template_name(t),
		       (int)v->pid, r);
		vm_discard(v);
		return r;
	}
	log_kv(LOG_DEBUG, "vm.restore", "template=%s pid=%d launch_ms=%lld total_ms=%lld", template_name(t),
	       (int)v->pid, (long long)(t1 - t0), (long long)(util_now_ms() - t0));
	*out = v;
	return 0;
}

/* 1 if /proc/<pid>/cmdline has an argument containing needle. */
static int cmdline_mentions(pid_t pid, const char *needle)
{
	char path[64], *data = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if (util_read_file(path, 256 * 1024, &data, &len) < 0)
		return 0;
	int found = 0;
	for (size_t off = 0; off < len && !found; off += strlen(data + off) + 1)
		found = strstr(data + off, needle) != NULL;
	free(data);
	return found;
}

int vm_adopt(const char *run_dir, int timeout_ms, struct vm **out, struct vm_err *err)
{
	int64_t deadline = util_now_ms() + timeout_ms;
	char path[PATH_MAX], *data = NULL;
	size_t len = 0;
	err->msg[0] = '\0';
	if (strlen(run_dir) >= PATH_MAX - 32)
		return -ENAMETOOLONG;
	struct vm *v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	vm_init_fields(v);
	snprintf(v->run_dir, sizeof(v->run_dir), "%s", run_dir);
	int r = vm_path(v, "vm.json", path);
	if (r == 0)
		r = util_read_file(path, VM_JSON_MAX, &data, &len);
	if (r < 0) {
		snprintf(err->msg, sizeof(err->msg), "its vm.json: %s", strerror(-r));
		free(v);
		return r == -EFBIG ? -EINVAL : r;
	}
	json_t *o = json_loadb(data, len, JSON_REJECT_DUPLICATES, NULL);
	free(data);
	json_t *tn = json_object_get(o, "template"), *sd = json_object_get(o, "spawn_dir");
	json_t *st = json_object_get(o, "start_ticks"), *ac = json_object_get(o, "accel");
	json_t *fm = json_object_get(o, "format"), *ui = json_object_get(o, "uid");
	json_t *tb = json_object_get(o, "template_bake");
	if (!json_is_object(o) || !json_is_string(tn) || !json_is_string(sd) ||
	    !json_is_integer(fm) || json_integer_value(fm) != VM_JSON_FORMAT ||
	    (ui && (!json_is_integer(ui) || json_integer_value(ui) < 0 ||
		    json_integer_value(ui) > 0xfffffffe)) ||
	    !json_is_integer(st) || !json_is_string(ac) ||
	    json_string_length(tn) >= sizeof(v->template_name) ||
	    json_string_length(sd) >= sizeof(v->spawn_dir) ||
	    (tb && (!json_is_string(tb) || json_string_length(tb) >= sizeof(v->template_bake))) ||
	    accel_parse(json_string_value(ac), &v->accel) < 0) {
		snprintf(err->msg, sizeof(err->msg), "its vm.json: missing or bad fields");
		json_decref(o);
		free(v);
		return -EINVAL;
	}
	snprintf(v->template_name, sizeof(v->template_name), "%s", json_string_value(tn));
	snprintf(v->spawn_dir, sizeof(v->spawn_dir), "%s", json_string_value(sd));
	snprintf(v->template_bake, sizeof(v->template_bake), "%s", tb ? json_string_value(tb) : "");
	unsigned long long want_ticks = (unsigned long long)json_integer_value(st);
	v->uid = ui ? (uid_t)json_integer_value(ui) : 0;
	json_decref(o);

	/* qemu.pid is the authority on the pid; vm.json's start time and
	 * spawn folder make sure it is still that QEMU (pids are reused). */
	long pid = 0;
	if (vm_path(v, "qemu.pid", path) == 0 && util_read_file(path, 64, &data, &len) == 0) {
		char *end = NULL;
		pid = strtol(data, &end, 10);
		if (!end || (*end != '\n' && *end != '\0'))
			pid = 0;
		free(data);
	}
	if (pid <= 1 || pid > 0x3fffffff) {
		snprintf(err->msg, sizeof(err->msg), "its qemu.pid: missing or bad");
		free(v);
		return -EINVAL;
	}
	v->pid = (pid_t)pid;
	v->pidfd = (int)syscall(SYS_pidfd_open, v->pid, 0);
	v->start_ticks = vm_proc_start_ticks(v->pid);
	char needle[PATH_MAX + 16];
	snprintf(needle, sizeof(needle), "%s/" VM_QMP_SOCK, v->spawn_dir);
	if ((v->pidfd < 0 && errno == ESRCH) || v->start_ticks == 0 ||
	    (want_ticks && v->start_ticks != want_ticks) || !cmdline_mentions(v->pid, needle)) {
		char how[96] = "";
		spawn_exit_status(run_dir, 0, how, sizeof(how));
		snprintf(err->msg, sizeof(err->msg), "QEMU (pid %ld) is gone%s%s", pid,
			 how[0] ? ": " : "", how);
		if (v->pidfd >= 0)
			close(v->pidfd);
		free(v);
		return -ESRCH;
	}
	if ((r = vm_path(v, VM_QMP_SOCK, path)) < 0 ||
	    (r = qmp_connect(path, vm_left_ms(deadline), &v->qmp)) < 0) {
		v->qmp = NULL;
		snprintf(err->msg, sizeof(err->msg), "its QMP does not answer: %s",
			 strerror(-r));
		vm_free(v);
		return -EIO;
	}
	/* Its network namespace (QEMU is in it) and our listeners there anew:
	 * the ones of the process that made it died with that process. */
	char nspath[64];
	snprintf(nspath, sizeof(nspath), "/proc/%d/ns/net", (int)v->pid);
	v->net.netns = open(nspath, O_RDONLY | O_CLOEXEC);
	if (v->net.netns < 0 || (r = netslot_listen(v->net.netns, &v->net.l)) < 0) {
		r = v->net.netns < 0 ? -errno : r;
		snprintf(err->msg, sizeof(err->msg), "its network namespace: %s", strerror(-r));
		vm_free(v);
		return -EIO;
	}
	char status[32] = "";
	vm_status(v, status, sizeof(status));
	/* Stopped ("paused") by a capture whose daemon died before its cont:
	 * no sandbox is left stopped on purpose (a pause ends QEMU), so it
	 * runs again; the daemon settles what the capture left
	 * (vm_snapshot_settle). */
	if (!strcmp(status, "paused")) {
		r = qmp_call(v->qmp, "cont", NULL, vm_left_ms(deadline), NULL);
		log_kv(r < 0 ? LOG_WARN : LOG_INFO, "vm.adopt_continued", "pid=%d err=%d",
		       (int)v->pid, r);
		if (r == 0)
			vm_status(v, status, sizeof(status));
	}
	if (!strcmp(status, "running")) {
		if ((r = vm_agent_reconnect(v, vm_left_ms(deadline))) < 0) {
			snprintf(err->msg, sizeof(err->msg), "its agent does not answer: %s",
				 strerror(-r));
			vm_free(v);
			return -EIO;
		}
	}
	*out = v;
	return 0;
}

pid_t vm_pid(const struct vm *v)
{
	return v->pid;
}

const char *vm_run_dir(const struct vm *v)
{
	return v->run_dir;
}

const char *vm_template_name(const struct vm *v)
{
	return v->template_name;
}

const char *vm_template_bake(const struct vm *v)
{
	return v->template_bake;
}

int vm_exit_fd(const struct vm *v)
{
	return v->pidfd;
}

int vm_alive(const struct vm *v)
{
	if (v->pidfd >= 0) {
		struct pollfd p = {.fd = v->pidfd, .events = POLLIN};
		return poll(&p, 1, 0) == 1 ? 0 : 1;
	}
	if (kill(v->pid, 0) < 0 && errno == ESRCH)
		return 0;
	return vm_proc_start_ticks(v->pid) == v->start_ticks;
}

const char *vm_exit_reason(struct vm *v)
{
	char st[96] = "", qlog[160] = "";
	if (vm_alive(v))
		return "running";
	spawn_exit_status(v->run_dir, 1000, st, sizeof(st));
	/* QEMU's own messages only: the serial console is written by the
	 * guest, which must not get to word the host's reason. */
	spawn_log_tail(v->run_dir, "qemu.log", vm_qemu_log_noise, qlog, sizeof(qlog));
	/* QEMU runs with -no-reboot and the guest kernel with panic=-1
	 * reboot=t: a clean exit nobody asked for is the guest going down */
	if (!qlog[0] && strcmp(st, "exited 0") == 0)
		snprintf(qlog, sizeof(qlog), "the guest shut down, rebooted or its kernel panicked");
	snprintf(v->reason, sizeof(v->reason), "%s%s%s", st[0] ? st : "exited",
		 qlog[0] ? ": " : "", qlog);
	return v->reason;
}

struct guest_conn *vm_agent(struct vm *v)
{
	if (v->agent && !guest_conn_alive(v->agent))
		return NULL;
	return v->agent;
}

int vm_agent_reconnect(struct vm *v, int timeout_ms)
{
	char sock[PATH_MAX];
	int r = vm_path(v, VM_AGENT_SOCK, sock);
	if (r < 0)
		return r;
	if (v->agent)
		guest_conn_close(v->agent);
	v->agent = NULL;
	if (!vm_alive(v))
		return -ESRCH;
	if ((r = guest_conn_open(sock, timeout_ms, &v->agent)) == 0 && v->log_label[0])
		guest_conn_set_label(v->agent, v->log_label);
	return r;
}

void vm_set_log_label(struct vm *v, const char *label)
{
	snprintf(v->log_label, sizeof(v->log_label), "%s", label);
	if (v->agent)
		guest_conn_set_label(v->agent, v->log_label);
}

/* Run a QMP command without arguments or result; -ESRCH if QEMU is gone. */
static int simple_cmd(struct vm *v, const char *cmd)
{
	if (!vm_alive(v) || !v->qmp)
		return -ESRCH;
	int r = qmp_call(v->qmp, cmd, NULL, 5000, NULL);
	if (r < 0) {
		log_kv(LOG_WARN, "vm.qmp_failed", "pid=%d cmd=%s err=%d", (int)v->pid, cmd, r);
		return vm_alive(v) ? -EIO : -ESRCH;
	}
	return 0;
}

int vm_pause(struct vm *v)
{
	return simple_cmd(v, "stop");
}

int vm_resume(struct vm *v)
{
	int r = simple_cmd(v, "cont");
	/* A VM adopted while paused has no agent connection yet. */
	if (r == 0 && !vm_agent(v))
		vm_agent_reconnect(v, 10000);
	return r;
}

int vm_status(struct vm *v, char *buf, size_t buflen)
{
	if (!vm_alive(v) || !v->qmp)
		return -ESRCH;
	json_t *ret = NULL;
	int r = qmp_call(v->qmp, "query-status", NULL, 5000, &ret);
	if (r < 0)
		return vm_alive(v) ? -EIO : -ESRCH;
	const char *s = json_string_value(json_object_get(ret, "status"));
	snprintf(buf, buflen, "%s", s ? s : "unknown");
	json_decref(ret);
	return s ? 0 : -EBADMSG;
}

int vm_stop(struct vm *v)
{
	if (v->agent)
		guest_conn_close(v->agent);
	v->agent = NULL;
	if (vm_alive(v) && v->qmp)
		qmp_call(v->qmp, "quit", NULL, 1000, NULL);
	if (!vm_wait_exit(v, VM_QUIT_GRACE_MS)) {
		kill(v->pid, SIGKILL);
		vm_wait_exit(v, 5000);
	}
	if (v->qmp)
		qmp_close(v->qmp);
	v->qmp = NULL;
	/* The monitor writes qemu.exit last: once it is there nothing
	 * writes into the directory any more. */
	char st[96];
	spawn_exit_status(v->run_dir, 1000, st, sizeof(st));
	int r = util_rm_rf(v->run_dir);
	if (r == -ENOTEMPTY)
		r = util_rm_rf(v->run_dir);
	if (r < 0)
		log_kv(LOG_WARN, "vm.rm_failed", "pid=%d err=%d", (int)v->pid, r);
	return r;
}

void vm_free(struct vm *v)
{
	if (!v)
		return;
	if (v->agent)
		guest_conn_close(v->agent);
	if (v->qmp)
		qmp_close(v->qmp);
	if (v->pidfd >= 0)
		close(v->pidfd);
	if (v->lifeline_fd >= 0)
		close(v->lifeline_fd);
	netslot_close(&v->net);
	free(v);
}

int vm_netns(const struct vm *v)
{
	return v->net.netns;
}

const struct netslot_listeners *vm_listeners(const struct vm *v)
{
	return &v->net.l;
}

uid_t vm_uid(const struct vm *v)
{
	return v->uid;
}

int vm_set_deadline(struct vm *v, int64_t unix_ms)
{
	return spawn_set_deadline(v->run_dir, unix_ms);
}
