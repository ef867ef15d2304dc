/*
 * sandbox.c - the registry of live sandboxes: references, operations on a
 * sandbox's agent, and ending one (see sandbox.h for the rules).
 */
#include "daemon/sandbox/sandbox.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "common/thread.h"
#include "common/util.h"
#include "daemon/daemon.h"
#include "daemon/http/auth.h"
#include "daemon/metrics.h"
#include "daemon/net/net.h"
#include "daemon/sandbox/sandbox_int.h"
#include "daemon/sandbox/snapshots.h"
#include "daemon/store/store.h"
#include "engine/qemu/netslot.h"

/* How long a reconnect to a lost agent may take, ms. */
#define RECONNECT_TIMEOUT_MS 5000

static int64_t wall_ms(void)
{
	return (int64_t)(util_wall_ns() / 1000000u);
}

int sandboxes_new(struct daemon *d, struct sandboxes **out)
{
	struct sandboxes *reg = calloc(1, sizeof(*reg));
	if (!reg)
		return -ENOMEM;
	reg->d = d;
	reg->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (reg->wake_fd < 0) {
		int e = -errno;
		free(reg);
		return e;
	}
	pthread_mutex_init(&reg->lock, NULL);
	pthread_cond_init(&reg->cond, NULL);
	*out = reg;
	return 0;
}

int sandboxes_wake_fd(struct sandboxes *reg)
{
	return reg->wake_fd;
}

void sbx__wake(struct sandboxes *reg)
{
	uint64_t one = 1;
	ssize_t w = write(reg->wake_fd, &one, sizeof(one));
	(void)w; /* a full counter already means "wake up" */
}

int sbx__run_dir(struct sandboxes *reg, const char *id, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "%s/%s", reg->d->sandboxes_dir, id);
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

struct sbx *sbx__new(struct sandboxes *reg, const char *id, const char *team,
		     const char *template_name, json_t *env, int64_t expires_at_ms)
{
	struct sbx *sb = calloc(1, sizeof(*sb));
	if (!sb)
		return NULL;
	sb->reg = reg;
	snprintf(sb->id, sizeof(sb->id), "%s", id);
	snprintf(sb->team, sizeof(sb->team), "%s", team);
	snprintf(sb->template_name, sizeof(sb->template_name), "%s", template_name);
	sb->env = env ? json_incref(env) : json_object();
	pthread_mutex_init(&sb->lock, NULL);
	pthread_mutex_init(&sb->life, NULL);
	pthread_cond_init(&sb->cond, NULL);
	sb->state = SBX_CREATING;
	sb->expires_at_ms = expires_at_ms;
	sb->refs = 1;
	if (!sb->env) {
		free(sb);
		return NULL;
	}
	return sb;
}

void sbx__set_origin(struct sbx *sb, const char *snapshot, const char *on_timeout)
{
	snprintf(sb->snapshot, sizeof(sb->snapshot), "%s", snapshot ? snapshot : "");
	sb->on_timeout_pause = on_timeout && !strcmp(on_timeout, "pause");
}

void sbx__link(struct sandboxes *reg, struct sbx *sb)
{
	sb->refs++;
	sb->linked = 1;
	sb->prev = NULL;
	sb->next = reg->head;
	if (reg->head)
		reg->head->prev = sb;
	reg->head = sb;
}

static void destroy(struct sbx *sb)
{
	vm_free(sb->vm);
	json_decref(sb->env);
	pthread_mutex_destroy(&sb->lock);
	pthread_mutex_destroy(&sb->life);
	pthread_cond_destroy(&sb->cond);
	free(sb);
}

/* Drop a reference; registry lock held.  Returns 1 if sb must be destroyed
 * (after the lock is released: vm_free may take time). */
static int unref_locked(struct sbx *sb)
{
	return --sb->refs == 0;
}

void sbx__unlink(struct sbx *sb)
{
	struct sandboxes *reg = sb->reg;
	pthread_mutex_lock(&reg->lock);
	int last = 0;
	if (sb->linked) {
		if (sb->prev)
			sb->prev->next = sb->next;
		else
			reg->head = sb->next;
		if (sb->next)
			sb->next->prev = sb->prev;
		sb->prev = sb->next = NULL;
		sb->linked = 0;
		last = unref_locked(sb);
	}
	pthread_mutex_unlock(&reg->lock);
	if (last)
		destroy(sb);
}

void sbx_release(struct sbx *sb)
{
	if (!sb)
		return;
	struct sandboxes *reg = sb->reg;
	pthread_mutex_lock(&reg->lock);
	int last = unref_locked(sb);
	pthread_mutex_unlock(&reg->lock);
	if (last)
		destroy(sb);
}

const char *sbx_id(const struct sbx *sb)
{
	return sb->id;
}

json_t *sbx_env(const struct sbx *sb)
{
	return sb->env;
}

int sbx_ending(struct sbx *sb)
{
	pthread_mutex_lock(&sb->lock);
	int e = sb->state >= SBX_ENDING;
	pthread_mutex_unlock(&sb->lock);
	return e;
}

unsigned sandboxes_count_running(struct sandboxes *reg)
{
	unsigned n = 0;
	pthread_mutex_lock(&reg->lock);
	for (struct sbx *sb = reg->head; sb; sb = sb->next) {
		pthread_mutex_lock(&sb->lock);
		n += sb->state == SBX_RUNNING;
		pthread_mutex_unlock(&sb->lock);
	}
	pthread_mutex_unlock(&reg->lock);
	return n;
}

/* The linked handle of id, with a new reference, or NULL.  Creating ones
 * are invisible. */
static struct sbx *find_ref(struct sandboxes *reg, const char *id)
{
	struct sbx *found = NULL;
	pthread_mutex_lock(&reg->lock);
	for (struct sbx *sb = reg->head; sb; sb = sb->next) {
		if (strcmp(sb->id, id) != 0)
			continue;
		pthread_mutex_lock(&sb->lock);
		int visible = sb->state != SBX_CREATING;
		pthread_mutex_unlock(&sb->lock);
		if (visible) {
			sb->refs++;
			found = sb;
		}
		break;
	}
	pthread_mutex_unlock(&reg->lock);
	return found;
}

/* The live sandbox id of team with a reference in *out (NULL when it is
 * not live), or -ENOENT for a malformed id or another team's sandbox
 * (never visible). */
static int find_mine(struct sandboxes *reg, const char *team, const char *id, struct sbx **out)
{
	*out = NULL;
	if (!sandbox_id_valid(id))
		return -ENOENT;
	struct sbx *sb = find_ref(reg, id);
	if (sb && strcmp(sb->team, team) != 0) {
		sbx_release(sb);
		return -ENOENT;
	}
	*out = sb;
	return 0;
}

int sbx_acquire(struct sandboxes *reg, const char *team, const char *id, struct sbx **out,
		char *row_status)
{
	*out = NULL;
	if (row_status)
		row_status[0] = '\0';
	struct sbx *sb;
	if (find_mine(reg, team, id, &sb) < 0)
		return -ENOENT;
	if (sb && !sbx_ending(sb)) {
		*out = sb;
		return 0;
	}
	sbx_release(sb);
	struct sandbox_row row;
	int r = store_sandbox_get(reg->d->store, id, &row);
	if (r < 0)
		return r == -ENOENT ? -ENOENT : -EIO;
	int mine = strcmp(row.team, team) == 0;
	if (mine && row_status)
		snprintf(row_status, STORE_STATUS_MAX, "%s", row.status);
	sandbox_row_clear(&row);
	return mine ? -ESRCH : -ENOENT;
}

int sbx_acquire_any(struct sandboxes *reg, const char *id, struct sbx **out)
{
	*out = NULL;
	struct sbx *sb = sandbox_id_valid(id) ? find_ref(reg, id) : NULL;
	if (sb && sbx_ending(sb)) {
		sbx_release(sb);
		sb = NULL;
	}
	*out = sb;
	return sb ? 0 : -ENOENT;
}

int sbx_token_ok(const struct sbx *sb, const char *token)
{
	return auth_token_equal(sb->access_token, token);
}

int sbx_public_ports(struct sbx *sb)
{
	pthread_mutex_lock(&sb->lock);
	int p = sb->public_ports;
	pthread_mutex_unlock(&sb->lock);
	return p;
}

int sbx_set_public_ports(struct sbx *sb, int public_ports)
{
	if (sbx_ending(sb))
		return -ESRCH;
	int r = store_sandbox_set_public_ports(sb->reg->d->store, sb->id, public_ports);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : -EIO;
	pthread_mutex_lock(&sb->lock);
	sb->public_ports = public_ports ? 1 : 0;
	pthread_mutex_unlock(&sb->lock);
	return 0;
}

/* Mark one more thread inside the engine with sb's VM.  -ESRCH if the
 * sandbox is not running. */
int sbx__pin(struct sbx *sb)
{
	pthread_mutex_lock(&sb->lock);
	int ok = sb->state == SBX_RUNNING;
	if (ok)
		sb->ops++;
	pthread_mutex_unlock(&sb->lock);
	return ok ? 0 : -ESRCH;
}

void sbx__unpin(struct sbx *sb)
{
	pthread_mutex_lock(&sb->lock);
	sb->ops--;
	pthread_cond_broadcast(&sb->cond);
	pthread_mutex_unlock(&sb->lock);
}

/*
 * The live agent connection of sb (pinned by the caller).  A lost
 * connection is replaced only by a thread that is alone with the VM, since
 * replacing frees the old one under any thread still holding it.
 */
static struct guest_conn *live_conn(struct sbx *sb)
{
	struct guest_conn *c = vm_agent(sb->vm);
	if (c && guest_conn_alive(c))
		return c;
	pthread_mutex_lock(&sb->lock);
	if (sb->ops == 1 && sb->state == SBX_RUNNING) {
		int r = vm_agent_reconnect(sb->vm, RECONNECT_TIMEOUT_MS);
		log_kv(r ? LOG_WARN : LOG_INFO, "sandbox.agent_reconnect", "id=%s err=%d", sb->id,
		       r);
		c = r ? NULL : vm_agent(sb->vm);
	} else {
		c = NULL;
	}
	pthread_mutex_unlock(&sb->lock);
	return c && guest_conn_alive(c) ? c : NULL;
}

int sbx_stream_open(struct sbx *sb, json_t *req, struct guest_stream **out)
{
	int r = sbx__pin(sb);
	if (r)
		return r;
	struct guest_conn *c = live_conn(sb);
	r = c ? guest_stream_open(c, req, out) : -ECONNRESET;
	sbx__unpin(sb);
	return r;
}

int sbx_call(struct sbx *sb, json_t *req, int timeout_ms, json_t **result)
{
	*result = NULL;
	int r = sbx__pin(sb);
	if (r)
		return r;
	struct guest_conn *c = live_conn(sb);
	r = c ? guest_call(c, req, timeout_ms, result) : -ECONNRESET;
	sbx__unpin(sb);
	return r;
}

int sbx_connect_port(struct sbx *sb, unsigned port)
{
	int r = sbx__pin(sb);
	if (r)
		return r;
	r = netslot_connect_guest(vm_netns(sb->vm), port);
	sbx__unpin(sb);
	return r;
}

/* SIGKILL sb's QEMU through its pidfd (no pid reuse race), else its pid. */
static void kill_vm(struct vm *vm)
{
	int fd = vm_exit_fd(vm);
	if (fd >= 0 && syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) == 0)
		return;
	pid_t pid = vm_pid(vm);
	if (pid > 0 && vm_alive(vm))
		kill(pid, SIGKILL);
}

/*
 * End sb: refuse new operations, wake and drain the running ones, stop
 * QEMU and remove its run dir, then update the row (status and reason;
 * nothing when status is NULL) or delete it.  A second caller waits for
 * the first to finish.
 */
void sbx__end(struct sbx *sb, const char *status, const char *reason, int delete_row)
{
	struct daemon *d = sb->reg->d;
	pthread_mutex_lock(&sb->lock);
	if (sb->state >= SBX_ENDING) {
		while (sb->state != SBX_ENDED)
			pthread_cond_wait(&sb->cond, &sb->lock);
		pthread_mutex_unlock(&sb->lock);
		if (delete_row)
			store_sandbox_delete(d->store, sb->id);
		return;
	}
	sb->state = SBX_ENDING;
	sb->end_requested = 1;
	if (sb->ops > 0)
		kill_vm(sb->vm); /* wakes threads blocked on the agent */
	while (sb->ops > 0)
		pthread_cond_wait(&sb->cond, &sb->lock);
	pthread_mutex_unlock(&sb->lock);

	char why[STORE_REASON_MAX];
	if (reason)
		snprintf(why, sizeof(why), "%s", reason);
	else
		snprintf(why, sizeof(why), "qemu exited: %s", vm_exit_reason(sb->vm));
	int64_t t0 = util_now_ms();
	net_detach(d->net, sb->id); /* its connections end before its VM */
	int sr = vm_stop(sb->vm);
	int dr = delete_row ? store_sandbox_delete(d->store, sb->id)
		 : status   ? store_sandbox_set_status(d->store, sb->id, status, why, wall_ms())
			    : 0;
	char q[STORE_REASON_MAX + 8];
	log_kv(LOG_INFO, "sandbox.end", "id=%s team=%s status=%s reason=%s stop_ms=%lld stop_err=%d db_err=%d",
	       sb->id, sb->team, delete_row ? "deleted" : status ? status : "kept",
	       log_quote(why, q, sizeof(q)),
	       (long long)(util_now_ms() - t0), sr, dr);

	pthread_mutex_lock(&sb->lock);
	sb->state = SBX_ENDED;
	pthread_cond_broadcast(&sb->cond);
	pthread_mutex_unlock(&sb->lock);
	sbx__unlink(sb);
	snaps_gc(d->snaps); /* it may have been the last to need a snapshot */
}

int sbx_delete(struct sandboxes *reg, const char *team, const char *id)
{
	struct sbx *sb;
	if (find_mine(reg, team, id, &sb) < 0)
		return -ENOENT;
	if (sb) {
		sbx__end(sb, "stopped", "deleted", 1);
		sbx_release(sb);
		return 0;
	}
	/* Not live: a stopped or failed sandbox's row. */
	struct sandbox_row row;
	int r = store_sandbox_get(reg->d->store, id, &row);
	if (r < 0)
		return r == -ENOENT ? -ENOENT : -EIO;
	int mine = strcmp(row.team, team) == 0;
	sandbox_row_clear(&row);
	if (!mine)
		return -ENOENT;
	r = store_sandbox_delete(reg->d->store, id);
	snaps_gc(reg->d->snaps); /* a paused sandbox's snapshot goes with it */
	return r == -ENOENT ? 0 : r; /* a concurrent delete won: same outcome */
}

int sbx_set_ttl(struct sandboxes *reg, const char *team, const char *id, int64_t ttl_s,
		struct sandbox_row *row)
{
	struct sbx *sb;
	int r = sbx_acquire(reg, team, id, &sb, NULL);
	if (r)
		return r;
	int64_t exp = wall_ms() + ttl_s * 1000;
	pthread_mutex_lock(&sb->lock);
	int running = sb->state == SBX_RUNNING;
	if (running) {
		sb->expires_at_ms = exp;
		r = vm_set_deadline(sb->vm, exp + (int64_t)reg->d->cfg.ttl_grace_s * 1000);
	}
	pthread_mutex_unlock(&sb->lock);
	if (running && r < 0) {
		sbx_release(sb);
		return r;
	}
	if (!running) {
		sbx_release(sb);
		return -ESRCH;
	}
	r = store_sandbox_set_expiry(reg->d->store, id, exp);
	if (!r)
		r = store_sandbox_get(reg->d->store, id, row);
	sbx_release(sb);
	sbx__wake(reg);
	return r == -ENOENT ? -ESRCH : r; /* deleted meanwhile */
}

size_t sandboxes_watch_list(struct sandboxes *reg, struct sbx_watch *out, size_t cap)
{
	size_t n = 0;
	pthread_mutex_lock(&reg->lock);
	for (struct sbx *sb = reg->head; sb && n < cap; sb = sb->next) {
		pthread_mutex_lock(&sb->lock);
		int watch = sb->state == SBX_RUNNING && !sb->end_requested;
		if (watch) {
			out[n].sb = sb;
			out[n].exit_fd = vm_exit_fd(sb->vm);
			out[n].expires_at_ms = sb->expires_at_ms;
		}
		pthread_mutex_unlock(&sb->lock);
		if (watch) {
			sb->refs++;
			n++;
		}
	}
	pthread_mutex_unlock(&reg->lock);
	return n;
}

int sbx_vm_alive(struct sbx *sb)
{
	pthread_mutex_lock(&sb->lock);
	int alive = sb->state == SBX_RUNNING && vm_alive(sb->vm);
	pthread_mutex_unlock(&sb->lock);
	return alive;
}

struct end_job {
	struct sbx *sb;
	char status[STORE_STATUS_MAX];
	char reason[STORE_REASON_MAX];
	int has_reason;
};

static void *end_thread(void *arg)
{
	struct end_job *job = arg;
	struct sandboxes *reg = job->sb->reg;
	sbx__end(job->sb, job->status, job->has_reason ? job->reason : NULL, 0);
	sbx_release(job->sb);
	free(job);
	pthread_mutex_lock(&reg->lock);
	reg->ending--;
	pthread_cond_broadcast(&reg->cond);
	pthread_mutex_unlock(&reg->lock);
	return NULL;
}

/* Undo an end request that could not start (the monitor retries). */
static void end_request_failed(struct sbx *sb)
{
	pthread_mutex_lock(&sb->lock);
	sb->end_requested = 0;
	pthread_mutex_unlock(&sb->lock);
}

int sbx_end_async(struct sbx *sb, const char *status, const char *reason)
{
	pthread_mutex_lock(&sb->lock);
	int first = !sb->end_requested && sb->state == SBX_RUNNING;
	sb->end_requested = 1;
	pthread_mutex_unlock(&sb->lock);
	if (!first)
		return 0;
	struct end_job *job = calloc(1, sizeof(*job));
	if (!job) {
		end_request_failed(sb);
		return -ENOMEM;
	}
	job->sb = sb;
	snprintf(job->status, sizeof(job->status), "%s", status);
	if (reason) {
		snprintf(job->reason, sizeof(job->reason), "%s", reason);
		job->has_reason = 1;
	}
	/* the job's reference is dropped by end_thread */
	int e = sbx__start_ending(sb, end_thread, job);
	if (e == 0)
		return 1;
	free(job);
	end_request_failed(sb);
	return e;
}

int sbx__start_ending(struct sbx *sb, void *(*fn)(void *), void *arg)
{
	struct sandboxes *reg = sb->reg;
	pthread_mutex_lock(&reg->lock);
	sb->refs++;
	reg->ending++;
	pthread_mutex_unlock(&reg->lock);
	int e = -thread_start_detached(fn, arg);
	if (e == 0)
		return 0;
	pthread_mutex_lock(&reg->lock);
	reg->ending--;
	pthread_mutex_unlock(&reg->lock);
	sbx_release(sb); /* the thread's reference; the caller still holds its own */
	return -e;
}

void sandboxes_free(struct sandboxes *reg)
{
	if (!reg)
		return;
	pthread_mutex_lock(&reg->lock);
	while (reg->ending > 0)
		pthread_cond_wait(&reg->cond, &reg->lock);
	pthread_mutex_unlock(&reg->lock);
	for (;;) {
		pthread_mutex_lock(&reg->lock);
		struct sbx *sb = reg->head;
		pthread_mutex_unlock(&reg->lock);
		if (!sb)
			break;
		sbx__unlink(sb); /* vm_free: QEMU keeps running for the next start */
	}
	close(reg->wake_fd);
	pthread_mutex_destroy(&reg->lock);
	pthread_cond_destroy(&reg->cond);
	free(reg);
}
