/*
 * sandbox_adopt.c - start-up: take over the sandboxes a previous daemon left
 * running, mark the ones whose QEMU is gone, and clear leftovers (see
 * sandboxes_adopt in sandbox.h); settle the captures it left half done
 * (sandboxes_settle_captures).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "daemon/daemon.h"
#include "daemon/metrics.h"
#include "daemon/net/net.h"
#include "daemon/sandbox/sandbox.h"
#include "daemon/sandbox/sandbox_int.h"
#include "daemon/sandbox/snapshots.h"
#include "engine/vm/snapshot.h"

/* Bound on re-attaching to one VM's QMP and agent sockets, ms. */
#define ADOPT_TIMEOUT_MS 10000

void sbx__kill_orphan(const char *run_dir)
{
	char path[PATH_MAX], *text = NULL;
	if (snprintf(path, sizeof(path), "%s/qemu.pid", run_dir) >= (int)sizeof(path) ||
	    util_read_file(path, 32, &text, NULL) < 0)
		return;
	char *end;
	long pid = strtol(text, &end, 10);
	free(text);
	if (pid <= 1 || pid > INT_MAX)
		return;
	char *cmd = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
	if (util_read_file(path, 256 * 1024, &cmd, &len) < 0)
		return; /* gone already */
	/* cmdline is NUL-separated: search the bytes, not a C string. */
	int ours = memmem(cmd, len, run_dir, strlen(run_dir)) != NULL;
	free(cmd);
	if (ours && kill((pid_t)pid, SIGKILL) == 0)
		log_kv(LOG_WARN, "sandbox.orphan_killed", "pid=%ld dir=%s", pid, run_dir);
}

static int64_t wall_ms(void)
{
	return (int64_t)(util_wall_ns() / 1000000u);
}

/* Serve the adopted sandbox's network under its stored policy; one that no
 * longer reads (a newer daemon wrote it) becomes "egress deny". */
struct net_policy *sbx__row_policy(const struct sandbox_row *row)
{
	json_t *j = json_loads(row->network_json ? row->network_json : "{}",
			       JSON_REJECT_DUPLICATES, NULL);
	struct net_policy *p = NULL;
	struct body_error be;
	char q[300];
	if (net_policy_parse(j, "network", &p, &be) < 0) {
		log_kv(LOG_WARN, "sandbox.network_unreadable", "id=%s msg=%s egress=deny", row->id,
		       log_quote(be.message, q, sizeof(q)));
		json_t *deny = json_pack("{s:s}", "egress", "deny");
		if (!deny || net_policy_parse(deny, "network", &p, &be) < 0)
			p = NULL;
		json_decref(deny);
	}
	json_decref(j);
	return p;
}

static void attach_net(struct daemon *d, const struct sandbox_row *row, struct vm *vm)
{
	struct net_policy *p = sbx__row_policy(row);
	int r = p ? net_attach(d->net, row->id, vm_listeners(vm), p) : -ENOMEM;
	if (r < 0)
		log_kv(LOG_WARN, "sandbox.network_attach_failed", "id=%s err=%d", row->id, r);
}

static void adopt_row(struct sandboxes *reg, const struct sandbox_row *row)
{
	struct daemon *d = reg->d;
	char run_dir[PATH_MAX], q[300];
	if (sbx__run_dir(reg, row->id, run_dir, sizeof(run_dir)) < 0)
		return;
	struct vm *vm = NULL;
	struct vm_err verr = {{0}};
	int r = vm_adopt(run_dir, ADOPT_TIMEOUT_MS, &vm, &verr);
	json_t *env = NULL;
	if (r == 0) {
		env = json_loads(row->env_json, JSON_REJECT_DUPLICATES, NULL);
		if (!json_is_object(env)) {
			json_decref(env);
			env = NULL;
		}
	}
	struct sbx *sb = r == 0 ? sbx__new(reg, row->id, row->team, row->template_name, env,
					   row->expires_at_ms)
				: NULL;
	json_decref(env);
	if (sb) {
		snprintf(sb->access_token, sizeof(sb->access_token), "%s", row->access_token);
		sb->public_ports = row->public_ports;
		attach_net(d, row, vm);
		sbx__set_origin(sb, row->snapshot, row->on_timeout);
		vm_set_log_label(vm, row->id);
		sb->vm = vm;
		sb->state = SBX_RUNNING;
		pthread_mutex_lock(&reg->lock);
		sbx__link(reg, sb);
		pthread_mutex_unlock(&reg->lock);
		sbx_release(sb);
		metrics_event(METRICS_ADOPTED);
		log_kv(LOG_INFO, "sandbox.adopted", "id=%s team=%s pid=%d", row->id, row->team,
		       (int)vm_pid(vm));
		return;
	}
	if (r == 0) { /* adopted but out of memory: do not leak a QEMU */
		vm_stop(vm);
		vm_free(vm);
		r = -ENOMEM;
	}
	char reason[STORE_REASON_MAX];
	snprintf(reason, sizeof(reason), "lost while the daemon was down: %.200s",
		 verr.msg[0] ? verr.msg : strerror(-r));
	sbx__kill_orphan(run_dir);
	util_rm_rf(run_dir);
	store_sandbox_set_status(d->store, row->id, "error", reason, wall_ms());
	metrics_event(METRICS_ADOPT_FAILED);
	log_kv(LOG_WARN, "sandbox.adopt_failed", "id=%s team=%s err=%d reason=%s", row->id,
	       row->team, r, log_quote(reason, q, sizeof(q)));
}

static int linked(struct sandboxes *reg, const char *id)
{
	int found = 0;
	pthread_mutex_lock(&reg->lock);
	for (struct sbx *sb = reg->head; sb && !found; sb = sb->next)
		found = strcmp(sb->id, id) == 0;
	pthread_mutex_unlock(&reg->lock);
	return found;
}

/* Run dirs with no live sandbox: stop what runs there and remove them. */
static void sweep(struct sandboxes *reg)
{
	DIR *dir = opendir(reg->d->sandboxes_dir);
	if (!dir)
		return;
	struct dirent *de;
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.' || linked(reg, de->d_name))
			continue;
		char run_dir[PATH_MAX];
		if (sbx__run_dir(reg, de->d_name, run_dir, sizeof(run_dir)) < 0)
			continue;
		struct vm *vm = NULL;
		struct vm_err verr = {{0}};
		if (vm_adopt(run_dir, ADOPT_TIMEOUT_MS, &vm, &verr) == 0) {
			vm_stop(vm);
			vm_free(vm);
		}
		sbx__kill_orphan(run_dir);
		util_rm_rf(run_dir);
		log_kv(LOG_WARN, "sandbox.leftover_removed", "dir=%s", de->d_name);
	}
	closedir(dir);
}

int sandboxes_adopt(struct sandboxes *reg)
{
	/* Paused sandboxes have no QEMU: their snapshot is all there is. */
	struct sandbox_row *rows;
	size_t n;
	if (store_sandbox_list(reg->d->store, NULL, "running", &rows, &n) < 0)
		return -EIO;
	for (size_t i = 0; i < n; i++)
		adopt_row(reg, &rows[i]);
	sandbox_rows_free(rows, n);
	sweep(reg);
	sbx__wake(reg);
	return 0;
}

int sandboxes_settle_captures(struct sandboxes *reg)
{
	struct daemon *d = reg->d;
	struct snapshot_row *rows = NULL;
	size_t n = 0;
	if (store_snapshot_list(d->store, NULL, NULL, "pending", &rows, &n) < 0)
		return -EIO;
	for (size_t i = 0; i < n; i++) {
		struct sbx *sb = NULL;
		char dir[PATH_MAX];
		if (sbx_acquire_any(reg, rows[i].sandbox_id, &sb) < 0)
			continue; /* its sandbox is gone: snaps_recover decides */
		int r = snaps_dir(d->snaps, rows[i].id, dir);
		struct vm_err err = {{0}};
		if (r == 0 && sbx__pin(sb) == 0) {
			pthread_mutex_lock(&sb->life);
			r = vm_snapshot_settle(sb->vm, dir, &err);
			pthread_mutex_unlock(&sb->life);
			sbx__unpin(sb);
		}
		char q[300];
		log_kv(r < 0 ? LOG_WARN : LOG_INFO, "snapshot.settled",
		       "id=%s sandbox=%s needed=%d err=%d msg=%s", rows[i].id, sb->id, r > 0,
		       r < 0 ? r : 0,
		       log_quote(err.msg, q, sizeof(q)));
		sbx_release(sb);
	}
	snapshot_rows_free(rows, n);
	return 0;
}
