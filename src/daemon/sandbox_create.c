/*
 * sandbox_create.c - POST /v1/sandboxes behind the API: template, team
 * limit, VM restore, row (see sbx_create in sandbox.h).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "daemon/auth.h"
#include "daemon/capacity.h"
#include "daemon/daemon.h"
#include "daemon/metrics.h"
#include "daemon/net.h"
#include "daemon/sandbox.h"
#include "daemon/sandbox_int.h"
#include "daemon/templates.h"
#include "engine/pool.h"

/* Bound on one restore (QEMU start, state load, agent handshake), ms. */
#define RESTORE_TIMEOUT_MS 30000

static int set_err(struct sbx_err *err, enum api_err e, const char *msg)
{
	err->err = e;
	snprintf(err->message, sizeof(err->message), "%s", msg);
	return -EINVAL;
}

/* Reserve a slot for sb under team's limit; links sb (CREATING). */
static int reserve(struct sandboxes *reg, struct sbx *sb, unsigned limit, unsigned *used)
{
	pthread_mutex_lock(&reg->lock);
	unsigned n = 0;
	for (struct sbx *o = reg->head; o; o = o->next) {
		if (strcmp(o->team, sb->team) != 0)
			continue;
		pthread_mutex_lock(&o->lock);
		n += o->state == SBX_CREATING || o->state == SBX_RUNNING;
		pthread_mutex_unlock(&o->lock);
	}
	*used = n;
	int ok = n < limit;
	if (ok)
		sbx__link(reg, sb);
	pthread_mutex_unlock(&reg->lock);
	return ok ? 0 : -EDQUOT;
}

/* A VM of t in run_dir: a ready sandbox from the pool if there is one,
 * else a restore from the template; the restore message carries d's guest
 * settings.  *from_pool says which. */
static int restore(const struct daemon *d, struct tpl *t, const char *run_dir, struct vm **vm,
		   struct vm_err *verr, int *from_pool)
{
	const struct guest_restore_opts gopts = {.pip_index_url = d->cfg.pip_index_url};
	*from_pool = 0;
	int r = -EAGAIN;
	if (tpl_pool(t)) {
		r = pool_take(tpl_pool(t), run_dir, &gopts, RESTORE_TIMEOUT_MS, vm, verr);
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
		r = vm_restore(tpl_template(t), run_dir, &gopts, RESTORE_TIMEOUT_MS, vm, verr);
	}
	return r;
}

static int fill_row(struct sandbox_row *row, const struct sbx *sb, const struct template *tt,
		    const struct create_sandbox_body *b, const struct net_policy *np, int64_t now,
		    int64_t expires)
{
	memset(row, 0, sizeof(*row));
	snprintf(row->id, sizeof(row->id), "%s", sb->id);
	snprintf(row->team, sizeof(row->team), "%s", sb->team);
	snprintf(row->template_name, sizeof(row->template_name), "%s", sb->template_name);
	snprintf(row->status, sizeof(row->status), "running");
	snprintf(row->access_token, sizeof(row->access_token), "%s", sb->access_token);
	row->public_ports = sb->public_ports;
	row->created_at_ms = now;
	row->expires_at_ms = expires;
	row->vcpus = template_vcpus(tt);
	row->memory_mib = template_memory_mib(tt);
	row->metadata_json = json_dumps(b->metadata, JSON_COMPACT | JSON_SORT_KEYS);
	row->env_json = json_dumps(b->env, JSON_COMPACT | JSON_SORT_KEYS);
	json_t *net = net_policy_json(np);
	row->network_json = net ? json_dumps(net, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(net);
	if (!row->metadata_json || !row->env_json || !row->network_json) {
		sandbox_row_clear(row);
		return -ENOMEM;
	}
	return 0;
}

int sbx_create(struct sandboxes *reg, const char *team, const struct create_sandbox_body *b,
	       struct sandbox_row *row, const char **restored_from, struct sbx_err *err)
{
	struct daemon *d = reg->d;
	int64_t t0 = util_now_ms();
	memset(row, 0, sizeof(*row));
	char msg[300];
	struct tpl *t;
	int r = templates_get(d->templates, b->template_name, &t, msg, sizeof(msg));
	if (r == -ENOENT) {
		snprintf(msg, sizeof(msg), "template '%s' is not built (see GET /v1/templates)",
			 b->template_name);
		return set_err(err, API_ERR_TEMPLATE_NOT_FOUND, msg);
	}
	if (r == -ESTALE)
		return set_err(err, API_ERR_TEMPLATE_STALE, msg);
	if (r < 0)
		return set_err(err, API_ERR_TEMPLATE_INVALID, msg);

	unsigned char rnd[SBX_ID_HEX / 2];
	char id[STORE_ID_MAX] = "sbx_";
	if (util_random(rnd, sizeof(rnd)) < 0) {
		templates_put(t);
		return set_err(err, API_ERR_INTERNAL, "no randomness for an id");
	}
	util_hex(rnd, sizeof(rnd), id + 4);
	int64_t now = (int64_t)(util_wall_ns() / 1000000u);
	int64_t ttl = b->ttl_seconds ? b->ttl_seconds : d->cfg.default_ttl_s;
	struct sbx *sb = sbx__new(reg, id, team, b->template_name, b->env, now + ttl * 1000);
	if (!sb) {
		templates_put(t);
		return set_err(err, API_ERR_INTERNAL, "out of memory");
	}
	char token[AUTH_TOKEN_LEN + 1];
	if (auth_make_token(token) < 0) {
		sbx_release(sb);
		templates_put(t);
		return set_err(err, API_ERR_INTERNAL, "no randomness for an access token");
	}
	snprintf(sb->access_token, sizeof(sb->access_token), "%s", token);
	explicit_bzero(token, sizeof(token));
	sb->public_ports = b->public_ports;
	unsigned used;
	if (reserve(reg, sb, d->cfg.max_sandboxes_per_team, &used) < 0) {
		snprintf(msg, sizeof(msg), "team '%s' has %u sandboxes, the limit is %u", team, used,
			 d->cfg.max_sandboxes_per_team);
		sbx_release(sb);
		templates_put(t);
		return set_err(err, API_ERR_TOO_MANY_SANDBOXES, msg);
	}

	const struct template *tt = tpl_template(t);
	uint64_t mem = ((uint64_t)template_memory_mib(tt) + d->cfg.vm_memory_overhead_mib) << 20;
	r = capacity_admit(d, template_disk_cap_bytes(tt), mem, msg, sizeof(msg));
	if (r < 0) {
		set_err(err, API_ERR_HOST_FULL, msg);
		goto undo;
	}
	char run_dir[PATH_MAX];
	struct vm *vm = NULL;
	struct vm_err verr = {{0}};
	int from_pool = 0;
	r = sbx__run_dir(reg, id, run_dir, sizeof(run_dir));
	if (!r)
		r = restore(d, t, run_dir, &vm, &verr, &from_pool);
	/* The monitor ends the VM at TTL + grace even if no daemon is left. */
	if (!r && (r = vm_set_deadline(vm, now + ttl * 1000 + (int64_t)d->cfg.ttl_grace_s * 1000)) < 0) {
		vm_stop(vm);
		vm_free(vm);
		snprintf(verr.msg, sizeof(verr.msg), "cannot record its deadline");
	}
	if (r < 0) {
		util_rm_rf(run_dir);
		snprintf(msg, sizeof(msg), "the VM did not start: %s",
			 verr.msg[0] ? verr.msg : strerror(-r));
		set_err(err, r == -ETIMEDOUT ? API_ERR_VM_START_TIMEOUT : API_ERR_VM_START_FAILED,
			msg);
		goto undo;
	}
	/* Its network from the start: what the guest sent meanwhile waits in the
	 * listeners' queues.  The service takes the policy. */
	struct net_policy *policy = net_policy_dup(b->network);
	r = policy ? fill_row(row, sb, tpl_template(t), b, policy, now, now + ttl * 1000) : -ENOMEM;
	if (!r)
		r = net_attach(d->net, id, vm_listeners(vm), policy);
	else
		net_policy_free(policy);
	int attached = r == 0;
	if (!r)
		r = store_sandbox_insert(d->store, row);
	if (r < 0) {
		if (attached)
			net_detach(d->net, id);
		vm_stop(vm);
		vm_free(vm);
		util_rm_rf(run_dir);
		sandbox_row_clear(row);
		set_err(err, API_ERR_INTERNAL, "could not record the sandbox");
		goto undo;
	}
	pthread_mutex_lock(&sb->lock);
	sb->vm = vm;
	sb->state = SBX_RUNNING;
	pthread_mutex_unlock(&sb->lock);
	sbx__wake(reg);
	templates_put(t);
	int64_t ms = util_now_ms() - t0;
	metrics_create(1, ms);
	*restored_from = from_pool ? "pool" : "template";
	log_kv(LOG_INFO, "sandbox.create", "id=%s team=%s template=%s ttl_s=%lld pool=%d ms=%lld",
	       id, team, b->template_name, (long long)ttl, from_pool, (long long)ms);
	sbx_release(sb); /* the registry keeps its own reference */
	return 0;
undo:
	sbx__unlink(sb);
	sbx_release(sb);
	templates_put(t);
	metrics_create(0, util_now_ms() - t0);
	char q[420];
	log_kv(LOG_WARN, "sandbox.create_failed", "id=%s team=%s template=%s err=%d msg=%s", id,
	       team, b->template_name, r, log_quote(err->message, q, sizeof(q)));
	return r;
}
