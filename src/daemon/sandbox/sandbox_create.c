/*
 * sandbox_create.c - POST /v1/sandboxes behind the API: template or
 * snapshot, team limit, VM restore, row (see sbx_create in sandbox.h);
 * sbx__create is the same core for forks and resumes (sandbox_int.h).
 *
 * Order matters for "nothing half-created": the slot is reserved in memory
 * first (invisible CREATING entry), the VM is restored with no lock held,
 * and the row is written last.  Every failure undoes what was done before
 * it: the VM is stopped, the run dir removed, the slot released.  A crash
 * between restore and row leaves a run dir without a row, which the next
 * start removes (sandboxes_adopt).
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "daemon/daemon.h"
#include "daemon/http/auth.h"
#include "daemon/metrics.h"
#include "daemon/net/net.h"
#include "daemon/sandbox/capacity.h"
#include "daemon/sandbox/sandbox.h"
#include "daemon/sandbox/sandbox_int.h"
#include "daemon/sandbox/snapshots.h"
#include "daemon/sandbox/templates.h"
#include "engine/vm/pool.h"

/* Bound on one restore (QEMU start, state load, agent handshake), ms. */
#define RESTORE_TIMEOUT_MS 30000

int sbx__set_err(struct sbx_err *err, enum api_err e, const char *fmt, ...)
{
	err->err = e;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* team's sandboxes being created or running, and (dup) whether one of
 * the registry's handles has id; reg->lock held. */
static unsigned team_live_locked(struct sandboxes *reg, const char *team, const char *id,
				 int *dup)
{
	unsigned n = 0;
	for (struct sbx *o = reg->head; o; o = o->next) {
		*dup |= id && strcmp(o->id, id) == 0;
		if (strcmp(o->team, team) != 0)
			continue;
		pthread_mutex_lock(&o->lock);
		n += o->state == SBX_CREATING || o->state == SBX_RUNNING;
		pthread_mutex_unlock(&o->lock);
	}
	return n;
}

unsigned sbx__team_live(struct sandboxes *reg, const char *team)
{
	int dup = 0;
	pthread_mutex_lock(&reg->lock);
	unsigned n = team_live_locked(reg, team, NULL, &dup);
	pthread_mutex_unlock(&reg->lock);
	return n;
}

/* Reserve a slot for sb under team's limit; links sb (CREATING).  -EDQUOT
 * over the limit, -EBUSY when a handle of sb's id is linked already (a
 * resume racing another). */
static int reserve(struct sandboxes *reg, struct sbx *sb, unsigned limit, unsigned *used)
{
	pthread_mutex_lock(&reg->lock);
	int dup = 0;
	unsigned n = team_live_locked(reg, sb->team, sb->id, &dup);
	*used = n;
	int r = dup ? -EBUSY : n < limit ? 0 : -EDQUOT;
	if (r == 0)
		sbx__link(reg, sb);
	pthread_mutex_unlock(&reg->lock);
	return r;
}

/* Restore a VM into run_dir: from the snapshot when cs has one, else from
 * the template (a pool entry if one is ready); the restore message carries
 * d's guest settings and the new sandbox's id (the guest's after-restore
 * hooks run for it before the restore ends).  *from_pool says which. */
static int restore(const struct daemon *d, const struct create_spec *cs, const char *id,
		   const char *run_dir, struct vm **vm, struct vm_err *verr, int *from_pool)
{
	const struct guest_restore_opts gopts = {.pip_index_url = d->cfg.pip_index_url,
						 .sandbox_id = id};
	*from_pool = 0;
	if (cs->snap) {
		int r = vm_restore_snapshot(tpl_template(cs->t), snap_engine(cs->snap), run_dir,
					    &gopts, RESTORE_TIMEOUT_MS, vm, verr);
		if (r == 0)
			snap_note_restore(cs->snap);
		return r;
	}
	int r = -EAGAIN;
	if (tpl_pool(cs->t)) {
		r = pool_take(tpl_pool(cs->t), run_dir, &gopts, RESTORE_TIMEOUT_MS, vm, verr);
		*from_pool = r == 0;
		metrics_event(r == 0 ? METRICS_POOL_HIT : METRICS_POOL_MISS);
		if (r < 0 && r != -EAGAIN) {
			char q[300];
			log_kv(LOG_WARN, "sandbox.pool_take_failed", "err=%d msg=%s", r,
			       log_quote(verr->msg, q, sizeof(q)));
			util_rm_rf(run_dir);
			r = -EAGAIN; /* fall back to a fresh QEMU */
		}
	}
	if (r == -EAGAIN) {
		memset(verr, 0, sizeof(*verr));
		r = vm_restore(tpl_template(cs->t), run_dir, &gopts, RESTORE_TIMEOUT_MS, vm, verr);
	}
	return r;
}

static int fill_row(struct sandbox_row *row, const struct sbx *sb, const struct template *tt,
		    const struct create_spec *cs, int64_t now, int64_t expires)
{
	memset(row, 0, sizeof(*row));
	snprintf(row->id, sizeof(row->id), "%s", sb->id);
	snprintf(row->team, sizeof(row->team), "%s", sb->team);
	snprintf(row->template_name, sizeof(row->template_name), "%s", sb->template_name);
	snprintf(row->status, sizeof(row->status), "running");
	snprintf(row->access_token, sizeof(row->access_token), "%s", sb->access_token);
	row->public_ports = sb->public_ports;
	snprintf(row->snapshot, sizeof(row->snapshot), "%s", cs->snapshot_id ? cs->snapshot_id : "");
	snprintf(row->on_timeout, sizeof(row->on_timeout), "%s",
		 cs->on_timeout ? cs->on_timeout : "stop");
	row->created_at_ms = now;
	row->expires_at_ms = expires;
	row->vcpus = template_vcpus(tt);
	row->memory_mib = template_memory_mib(tt);
	row->metadata_json = json_dumps(cs->metadata, JSON_COMPACT | JSON_SORT_KEYS);
	row->env_json = json_dumps(cs->env, JSON_COMPACT | JSON_SORT_KEYS);
	json_t *net = net_policy_json(cs->network);
	row->network_json = net ? json_dumps(net, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(net);
	if (!row->metadata_json || !row->env_json || !row->network_json) {
		sandbox_row_clear(row);
		return -ENOMEM;
	}
	return 0;
}

/* Record the new sandbox: a new row, or the paused row running again. */
static int record(struct sandboxes *reg, struct sbx *sb, const struct create_spec *cs,
		  int64_t now, int64_t expires, struct sandbox_row *row)
{
	struct store *st = reg->d->store;
	if (cs->resume) {
		int r = store_sandbox_set_resumed(st, sb->id, expires);
		return r ? r : store_sandbox_get(st, sb->id, row);
	}
	int r = fill_row(row, sb, tpl_template(cs->t), cs, now, expires);
	if (!r && (r = store_sandbox_insert(st, row)) < 0)
		sandbox_row_clear(row);
	return r;
}

/* 1 when a create that failed was cut short by a delete of its sandbox:
 * its handle was ended meanwhile, or (a resume, r from recording it) its
 * row is gone. */
static int deleted_meanwhile(struct sbx *sb, const struct create_spec *cs, int r)
{
	pthread_mutex_lock(&sb->lock);
	int ended = sb->end_requested || sb->state >= SBX_ENDING;
	pthread_mutex_unlock(&sb->lock);
	return ended || (cs->resume && r == -ENOENT);
}

int sbx__create(struct sandboxes *reg, const char *team, const struct create_spec *cs,
		struct sandbox_row *row, const char **restored_from, struct sbx_err *err)
{
	struct daemon *d = reg->d;
	int64_t t0 = util_now_ms();
	memset(row, 0, sizeof(*row));
	char msg[300], id[STORE_ID_MAX] = "sbx_";
	const struct template *tt = tpl_template(cs->t);
	if (cs->id) {
		snprintf(id, sizeof(id), "%s", cs->id);
	} else {
		unsigned char rnd[SBX_ID_HEX / 2];
		if (util_random(rnd, sizeof(rnd)) < 0)
			return sbx__set_err(err, API_ERR_INTERNAL, "no randomness for an id");
		util_hex(rnd, sizeof(rnd), id + 4);
	}
	int64_t now = (int64_t)(util_wall_ns() / 1000000u);
	int64_t expires = now + cs->ttl_ms;
	struct sbx *sb = sbx__new(reg, id, team, template_name(tt), cs->env, expires);
	if (!sb)
		return sbx__set_err(err, API_ERR_INTERNAL, "out of memory");
	sbx__set_origin(sb, cs->snapshot_id, cs->on_timeout);
	/* A resume keeps its access token; any other create gets a new one. */
	char token[AUTH_TOKEN_LEN + 1];
	if (!cs->access_token && auth_make_token(token) < 0) {
		sbx_release(sb);
		return sbx__set_err(err, API_ERR_INTERNAL, "no randomness for an access token");
	}
	snprintf(sb->access_token, sizeof(sb->access_token), "%s",
		 cs->access_token ? cs->access_token : token);
	explicit_bzero(token, sizeof(token));
	sb->public_ports = cs->public_ports;
	unsigned used;
	int r = reserve(reg, sb, d->cfg.max_sandboxes_per_team, &used);
	if (r == -EBUSY) {
		sbx_release(sb);
		return sbx__set_err(err, API_ERR_SANDBOX_NOT_PAUSED, "sandbox %s is being resumed",
				    id);
	}
	if (r < 0) {
		sbx_release(sb);
		return sbx__set_err(err, API_ERR_TOO_MANY_SANDBOXES,
				    "team '%s' has %u sandboxes, the limit is %u", team, used,
				    d->cfg.max_sandboxes_per_team);
	}
	uint64_t mem = ((uint64_t)template_memory_mib(tt) + d->cfg.vm_memory_overhead_mib) << 20;
	r = capacity_admit(d, template_disk_cap_bytes(tt), mem, msg, sizeof(msg));
	if (r < 0) {
		sbx__set_err(err, API_ERR_HOST_FULL, "%s", msg);
		goto undo;
	}
	char run_dir[PATH_MAX];
	struct vm *vm = NULL;
	struct vm_err verr = {{0}};
	int from_pool = 0;
	r = sbx__run_dir(reg, id, run_dir, sizeof(run_dir));
	if (!r)
		r = restore(d, cs, id, run_dir, &vm, &verr, &from_pool);
	/* The monitor ends the VM at TTL + grace even if no daemon is left. */
	if (!r && (r = vm_set_deadline(vm, expires + (int64_t)d->cfg.ttl_grace_s * 1000)) < 0) {
		vm_stop(vm);
		vm_free(vm);
		snprintf(verr.msg, sizeof(verr.msg), "cannot record its deadline");
	}
	if (r < 0) {
		util_rm_rf(run_dir);
		if (deleted_meanwhile(sb, cs, 0))
			sbx__set_err(err, API_ERR_SANDBOX_NOT_FOUND,
				     "sandbox %s was deleted while it was being started", id);
		else
			sbx__set_err(err, r == -ETIMEDOUT ? API_ERR_VM_START_TIMEOUT
							  : API_ERR_VM_START_FAILED,
				     "the VM did not start: %s", verr.msg[0] ? verr.msg : strerror(-r));
		goto undo;
	}
	/* Its network from the start: what the guest sent meanwhile waits in the
	 * listeners' queues.  The service takes the policy. */
	struct net_policy *policy = net_policy_dup(cs->network);
	r = policy ? net_attach(d->net, id, vm_listeners(vm), policy) : -ENOMEM;
	int attached = r == 0;
	if (!r)
		r = record(reg, sb, cs, now, expires, row);
	if (r < 0) {
		if (attached)
			net_detach(d->net, id);
		vm_stop(vm);
		vm_free(vm);
		util_rm_rf(run_dir);
		if (deleted_meanwhile(sb, cs, r))
			sbx__set_err(err, API_ERR_SANDBOX_NOT_FOUND,
				     "sandbox %s was deleted while it was being started", id);
		else
			sbx__set_err(err, API_ERR_INTERNAL, "could not record the sandbox");
		goto undo;
	}
	vm_set_log_label(vm, id);
	pthread_mutex_lock(&sb->lock);
	sb->vm = vm;
	sb->state = SBX_RUNNING;
	pthread_mutex_unlock(&sb->lock);
	sbx__wake(reg);
	int64_t ms = util_now_ms() - t0;
	metrics_create(1, ms);
	if (restored_from)
		*restored_from = cs->snap ? "snapshot" : from_pool ? "pool" : "template";
	log_kv(LOG_INFO, "sandbox.create",
	       "id=%s team=%s template=%s snapshot=%s resume=%d ttl_s=%lld pool=%d ms=%lld", id, team,
	       template_name(tt), cs->snapshot_id ? cs->snapshot_id : "", cs->resume,
	       (long long)(cs->ttl_ms / 1000), from_pool, (long long)ms);
	sbx_release(sb); /* the registry keeps its own reference */
	return 0;
undo:
	sbx__unlink(sb);
	sbx_release(sb);
	metrics_create(0, util_now_ms() - t0);
	char q[420];
	log_kv(LOG_WARN, "sandbox.create_failed", "id=%s team=%s template=%s err=%d msg=%s", id,
	       team, template_name(tt), r, log_quote(err->message, q, sizeof(q)));
	return r;
}

/* The error of a snapshot that cannot be restored (snaps_get's -errno). */
int sbx__snapshot_err(struct sbx_err *err, int r, const char *id, const char *why)
{
	if (r == -ENOENT)
		return sbx__set_err(err, API_ERR_SNAPSHOT_NOT_FOUND, "no snapshot '%.64s'", id);
	if (r == -ESTALE)
		return sbx__set_err(err, API_ERR_SNAPSHOT_STALE, "%s", why);
	if (r == -EAGAIN)
		return sbx__set_err(err, API_ERR_SNAPSHOT_NOT_FOUND, "snapshot %s is still being taken",
				    id);
	return sbx__set_err(err, API_ERR_SNAPSHOT_FAILED, "%s", why);
}

int sbx_create(struct sandboxes *reg, const char *team, const struct create_sandbox_body *b,
	       struct sandbox_row *row, const char **restored_from, struct sbx_err *err)
{
	struct daemon *d = reg->d;
	memset(row, 0, sizeof(*row));
	char msg[400];
	struct create_spec cs = {
		.ttl_ms = (b->ttl_seconds ? b->ttl_seconds : d->cfg.default_ttl_s) * 1000,
		.env = b->env, .metadata = b->metadata,
		.on_timeout = b->on_timeout ? b->on_timeout : "stop", .public_ports = b->public_ports,
		.network = b->network,
	};
	json_t *env = NULL;
	if (b->snapshot) {
		/* Only the team's own snapshots that the API shows. */
		struct snapshot_row sr;
		int r = snap_id_valid(b->snapshot) ? store_snapshot_get(d->store, b->snapshot, &sr)
						   : -ENOENT;
		int mine = r == 0 && !strcmp(sr.team, team) && !strcmp(sr.kind, "user") &&
			   !strcmp(sr.state, "ready");
		if (r == 0) {
			env = json_loads(sr.env_json, 0, NULL);
			snapshot_row_clear(&sr);
		}
		if (r < 0 && r != -ENOENT) {
			json_decref(env);
			return sbx__set_err(err, API_ERR_INTERNAL, "the registry failed");
		}
		if (!mine) {
			json_decref(env);
			return sbx__set_err(err, API_ERR_SNAPSHOT_NOT_FOUND, "no snapshot '%.64s'",
					    b->snapshot);
		}
		if (b->template_name && strcmp(b->template_name, sr.template_name) != 0) {
			json_decref(env);
			return sbx__set_err(err, API_ERR_INVALID_FIELD,
					    "snapshot %s is of template '%s', not '%s'", b->snapshot,
					    sr.template_name, b->template_name);
		}
		/* Its environment, with the create's own over it. */
		if (!json_is_object(env)) {
			json_decref(env);
			env = json_object();
		}
		if (!env || json_object_update(env, b->env) < 0) {
			json_decref(env);
			return sbx__set_err(err, API_ERR_INTERNAL, "out of memory");
		}
		cs.env = env;
		cs.snapshot_id = b->snapshot;
		r = snaps_get(d->snaps, b->snapshot, &cs.snap, &cs.t, msg, sizeof(msg));
		if (r < 0) {
			json_decref(env);
			return sbx__snapshot_err(err, r, b->snapshot, msg);
		}
	} else {
		int r = templates_get(d->templates, b->template_name, &cs.t, msg, sizeof(msg));
		if (r == -ENOENT)
			return sbx__set_err(err, API_ERR_TEMPLATE_NOT_FOUND,
					    "template '%s' is not built (see GET /v1/templates)",
					    b->template_name);
		if (r == -ESTALE)
			return sbx__set_err(err, API_ERR_TEMPLATE_STALE, "%s", msg);
		if (r < 0)
			return sbx__set_err(err, API_ERR_TEMPLATE_INVALID, "%s", msg);
	}
	int r = sbx__create(reg, team, &cs, row, restored_from, err);
	snaps_put(cs.snap, cs.t);
	json_decref(env);
	return r;
}
