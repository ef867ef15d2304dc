/*
 * sandbox_snapshot.c - snapshots of live sandboxes, forks, pause and
 * resume (see sandbox.h; the engine's side is engine/vm/snapshot.h, the files
 * and their lifetime daemon/sandbox/snapshots.h).
 *
 * A capture holds the sandbox's `life` lock (one capture at a time: they
 * use its QMP connection and move its disk layer) and pins it (ops), so an
 * end meanwhile kills QEMU and the capture fails cleanly.  Its row is
 * written first as pending, made ready after; the sandbox row then names
 * the new snapshot, which its disk and RAM now sit on.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "daemon/daemon.h"
#include "daemon/metrics.h"
#include "daemon/net/net_policy.h"
#include "daemon/sandbox/sandbox.h"
#include "daemon/sandbox/sandbox_int.h"
#include "daemon/sandbox/snapshots.h"

/* The least TTL a pause records as left (ms); a sandbox paused with no
 * more left than this resumes with the default TTL (resume_ttl_ms). */
#define PAUSE_LEFT_MIN_MS 1000

static int64_t wall_ms(void)
{
	return (int64_t)(util_wall_ns() / 1000000u);
}

/* What a capture is for. */
struct capture_req {
	const char *kind;        /* user, fork, pause */
	const char *name;        /* user: its name or NULL */
	int leave_paused;        /* pause: the VM is not continued */
};

/* The API error of vm_snapshot's failure r. */
static int capture_err(struct sbx_err *err, int r, const struct sbx *sb, const char *msg)
{
	if (r == -ENOSPC || r == -EDQUOT || r == -EFBIG)
		return sbx__set_err(err, API_ERR_HOST_DISK_FULL,
				    "no room for the snapshot of %s (%s); it keeps running", sb->id,
				    msg);
	if (r == -ESRCH)
		return sbx__set_err(err, API_ERR_SANDBOX_NOT_RUNNING,
				    "sandbox %s stopped or was paused during the snapshot", sb->id);
	return sbx__set_err(err, API_ERR_SNAPSHOT_FAILED, "the snapshot of %s failed: %s", sb->id,
			    msg);
}

/* A new pending row for a capture of sb; the source's env and metadata go
 * with it (a create from it starts with them). */
static int insert_pending(struct sandboxes *reg, struct sbx *sb, const struct capture_req *cr,
			  const char *base, struct snapshot_row *row)
{
	memset(row, 0, sizeof(*row));
	int r = snap_id_new(row->id);
	if (r < 0)
		return r;
	snprintf(row->team, sizeof(row->team), "%s", sb->team);
	snprintf(row->sandbox_id, sizeof(row->sandbox_id), "%s", sb->id);
	snprintf(row->template_name, sizeof(row->template_name), "%s", sb->template_name);
	snprintf(row->parent, sizeof(row->parent), "%s", base);
	snprintf(row->name, sizeof(row->name), "%s", cr->name ? cr->name : "");
	snprintf(row->kind, sizeof(row->kind), "%s", cr->kind);
	snprintf(row->state, sizeof(row->state), "pending");
	row->created_at_ms = wall_ms();
	struct sandbox_row srow;
	if (store_sandbox_get(reg->d->store, sb->id, &srow) == 0) {
		row->metadata_json = srow.metadata_json; /* taken over */
		srow.metadata_json = NULL;
		sandbox_row_clear(&srow);
	}
	row->env_json = json_dumps(sb->env, JSON_COMPACT | JSON_SORT_KEYS);
	if (!row->env_json)
		return -ENOMEM;
	return store_snapshot_insert(reg->d->store, row);
}

/* The team's capture limits: the count of its snapshots (a user's
 * capture), the disk all its captures hold (every kind: a fork's and a
 * pause's freeze the sandbox's disk layer and store its memory too).
 * 0, or -EINVAL with err (429).  Called with quota_lock held. */
static int quota_check(struct sbx *sb, const struct capture_req *cr, struct sbx_err *err)
{
	struct daemon *d = sb->reg->d;
	int64_t n = 0;
	if (!strcmp(cr->kind, "user")) {
		if (store_snapshot_count(d->store, sb->team, &n) < 0)
			return sbx__set_err(err, API_ERR_INTERNAL, "the registry failed");
		if (n >= (int64_t)d->cfg.max_snapshots_per_team)
			return sbx__set_err(err, API_ERR_TOO_MANY_SNAPSHOTS,
					    "team '%s' keeps %lld snapshots, the limit is %u",
					    sb->team, (long long)n, d->cfg.max_snapshots_per_team);
	}
	int64_t bytes = 0;
	if (store_snapshot_bytes(d->store, sb->team, &bytes) < 0)
		return sbx__set_err(err, API_ERR_INTERNAL, "the registry failed");
	if ((uint64_t)bytes >= d->cfg.max_snapshot_disk_mib << 20)
		return sbx__set_err(err, API_ERR_TOO_MANY_SNAPSHOTS,
				    "team '%s' keeps %lld MiB in snapshots, forks' captures and "
				    "paused sandboxes, the limit is %llu MiB "
				    "(--max-snapshot-disk-per-team): delete some first (a deleted "
				    "snapshot counts while a sandbox still sits on it)",
				    sb->team, (long long)(bytes >> 20),
				    (unsigned long long)d->cfg.max_snapshot_disk_mib);
	return 0;
}

/* A team's limits are checked and its pending row inserted under this
 * lock: captures of two sandboxes of one team at once (each under its own
 * `life` lock) would both pass the check. */
static pthread_mutex_t quota_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Capture sb (pinned and running) as cr says; *row gets the ready row.
 * Called with sb->life held.
 */
static int capture_locked(struct sbx *sb, const struct capture_req *cr, struct snapshot_row *row,
			  struct sbx_err *err)
{
	struct daemon *d = sb->reg->d;
	char msg[400], base[STORE_ID_MAX], dir[PATH_MAX];
	snprintf(base, sizeof(base), "%s", sb->snapshot);
	memset(row, 0, sizeof(*row));
	struct tpl *t = NULL;
	struct snap *bs = NULL;
	int r = templates_get(d->templates, sb->template_name, &t, msg, sizeof(msg));
	if (r < 0 || strcmp(template_bake_id(tpl_template(t)), vm_template_bake(sb->vm)) != 0) {
		templates_put(t);
		return sbx__set_err(err, API_ERR_SNAPSHOT_STALE,
				    "template %s was baked again since sandbox %s started: it cannot "
				    "be snapshotted",
				    sb->template_name, sb->id);
	}
	if (base[0]) {
		struct tpl *bt = NULL;
		if ((r = snaps_get(d->snaps, base, &bs, &bt, msg, sizeof(msg))) < 0) {
			templates_put(t);
			return sbx__snapshot_err(err, r, base, msg);
		}
		templates_put(bt);
	}
	pthread_mutex_lock(&quota_lock);
	int over = quota_check(sb, cr, err);
	if (over == 0)
		r = insert_pending(sb->reg, sb, cr, base, row);
	pthread_mutex_unlock(&quota_lock);
	if (over < 0) { /* err says which limit */
		snaps_put(bs, t);
		return over;
	}
	if (r < 0 || (r = snaps_dir(d->snaps, row->id, dir)) < 0) {
		snapshot_row_clear(row);
		snaps_put(bs, t);
		if (r == -ENOSPC)
			return capture_err(err, r, sb, "the registry's disk is full");
		return sbx__set_err(err, API_ERR_INTERNAL, "could not record the snapshot");
	}
	struct snapshot_opts opts = {.sync = strcmp(cr->kind, "fork") != 0,
				     .leave_paused = cr->leave_paused,
				     /* A user's snapshot pauses a sandbox that goes on:
				      * shorten the pause.  A fork's caller waits for the
				      * forks, and a pause ends the VM. */
				     .precopy = strcmp(cr->kind, "user") == 0};
	struct snapshot_stats st;
	struct vm_err verr = {{0}};
	int64_t t0 = util_now_ms();
	r = vm_snapshot(sb->vm, tpl_template(t), bs ? snap_engine(bs) : NULL, dir, &opts, &st, &verr);
	int depth = bs ? snapshot_depth(snap_engine(bs)) + 1 : 0;
	snaps_put(bs, t);
	if (r < 0) {
		char q[300];
		log_kv(LOG_WARN, "snapshot.failed", "id=%s sandbox=%s kind=%s err=%d msg=%s", row->id,
		       sb->id, cr->kind, r, log_quote(verr.msg, q, sizeof(q)));
		/* Gone unless the disk was already frozen (then it must stay,
		 * the daemon's own: the sandbox's disk sits on it now). */
		if (snaps_dir(d->snaps, row->id, dir) == 0 && access(dir, F_OK) == 0) {
			store_snapshot_set_ready(d->store, row->id, 0);
			if (!strcmp(cr->kind, "user"))
				store_snapshot_set_state(d->store, row->id, "deleted");
			store_sandbox_set_snapshot(d->store, sb->id, row->id);
			snprintf(sb->snapshot, sizeof(sb->snapshot), "%s", row->id);
		} else {
			store_snapshot_delete(d->store, row->id);
		}
		snapshot_row_clear(row);
		return capture_err(err, r, sb, verr.msg);
	}
	row->size_bytes = (int64_t)(st.memory_bytes + st.state_bytes + st.disk_bytes);
	snprintf(row->state, sizeof(row->state), "ready");
	if (store_snapshot_set_ready(d->store, row->id, row->size_bytes) < 0 ||
	    store_sandbox_set_snapshot(d->store, sb->id, row->id) < 0)
		log_kv(LOG_ERROR, "snapshot.record_failed", "id=%s sandbox=%s", row->id, sb->id);
	snprintf(sb->snapshot, sizeof(sb->snapshot), "%s", row->id);
	metrics_event(METRICS_SNAPSHOT);
	log_kv(LOG_INFO, "snapshot.taken",
	       "id=%s sandbox=%s kind=%s parent=%s depth=%d paused_ms=%.1f total_ms=%lld "
	       "private_mib=%.1f stored_mib=%.1f size=%lld",
	       row->id, sb->id, cr->kind, base[0] ? base : "-", depth, st.paused_us / 1e3,
	       (long long)(util_now_ms() - t0), st.private_pages * 4096.0 / 1048576.0,
	       st.stored_pages * 4096.0 / 1048576.0, (long long)row->size_bytes);
	snaps_captured(d->snaps, row->id, depth);
	return 0;
}

static int capture(struct sbx *sb, const struct capture_req *cr, struct snapshot_row *row,
		   struct sbx_err *err)
{
	if (sbx__pin(sb) < 0)
		return sbx__set_err(err, API_ERR_SANDBOX_NOT_RUNNING, "sandbox %s is not running",
				    sb->id);
	pthread_mutex_lock(&sb->life);
	int r = capture_locked(sb, cr, row, err);
	pthread_mutex_unlock(&sb->life);
	sbx__unpin(sb);
	return r;
}

/* The live sandbox id of team, or the API error (404, 409). */
static struct sbx *acquire(struct sandboxes *reg, const char *team, const char *id,
			   struct sbx_err *err)
{
	struct sbx *sb = NULL;
	char status[STORE_STATUS_MAX];
	int r = sbx_acquire(reg, team, id, &sb, status);
	if (r == -ENOENT)
		sbx__set_err(err, API_ERR_SANDBOX_NOT_FOUND, "no sandbox '%.64s'", id);
	else if (r == -ESRCH)
		sbx__set_err(err, API_ERR_SANDBOX_NOT_RUNNING, "sandbox %.64s is not running (its status: %s)", id,
			     strcmp(status, "running") ? status : "stopping");
	else if (r < 0)
		sbx__set_err(err, API_ERR_INTERNAL, "the registry failed");
	return sb;
}

int sbx_snapshot(struct sandboxes *reg, const char *team, const char *id, const char *name,
		 struct snapshot_row *out, struct sbx_err *err)
{
	struct sbx *sb = acquire(reg, team, id, err);
	if (!sb)
		return -EINVAL;
	struct capture_req cr = {.kind = "user", .name = name};
	int r = capture(sb, &cr, out, err);
	sbx_release(sb);
	return r;
}

/* One create of a fork, run on its own thread. */
struct fork_one {
	struct sandboxes *reg;
	const char *team;
	const struct create_spec *cs;
	struct sandbox_row row;
	struct sbx_err err;
	int r;
	pthread_t th;
	int started;
};

static void *fork_one_main(void *arg)
{
	struct fork_one *f = arg;
	f->r = sbx__create(f->reg, f->team, f->cs, &f->row, NULL, &f->err);
	return NULL;
}

int sbx_fork(struct sandboxes *reg, const char *team, const char *id, unsigned count,
	     int64_t ttl_s, struct sandbox_row **rows, struct sbx_err *err)
{
	struct daemon *d = reg->d;
	*rows = NULL;
	if (count < 1 || count > BODY_FORK_MAX)
		return sbx__set_err(err, API_ERR_INVALID_FIELD, "count must be 1 to %d",
				    BODY_FORK_MAX);
	struct sbx *sb = acquire(reg, team, id, err);
	if (!sb)
		return -EINVAL;
	/* Checked again by each create; this spares a capture and forks that
	 * would go again at once. */
	unsigned live = sbx__team_live(reg, team);
	if (live + count > d->cfg.max_sandboxes_per_team) {
		sbx_release(sb);
		return sbx__set_err(err, API_ERR_TOO_MANY_SANDBOXES,
				    "team '%s' has %u sandboxes: %u forks would pass the limit of %u",
				    team, live, count, d->cfg.max_sandboxes_per_team);
	}
	struct capture_req cr = {.kind = "fork"};
	struct snapshot_row srow;
	int r = capture(sb, &cr, &srow, err);
	json_t *env = json_incref(sb->env);
	int public_ports = sb->public_ports;
	/* The forks get the source's network policy. */
	struct sandbox_row src;
	struct net_policy *policy = NULL;
	if (r == 0 && store_sandbox_get(d->store, sb->id, &src) == 0) {
		policy = sbx__row_policy(&src);
		sandbox_row_clear(&src);
	}
	sbx_release(sb);
	if (r == 0 && !policy) {
		snapshot_row_clear(&srow);
		snaps_gc(d->snaps);
		r = sbx__set_err(err, API_ERR_INTERNAL, "cannot read the sandbox's network policy");
	}
	if (r < 0) {
		json_decref(env);
		return r;
	}
	json_t *meta = json_loads(srow.metadata_json ? srow.metadata_json : "{}", 0, NULL);
	snapshot_row_clear(&srow);
	if (!json_is_object(meta)) {
		json_decref(meta);
		meta = json_object();
	}
	char msg[400];
	struct create_spec cs = {
		.snapshot_id = srow.id, .env = env, .metadata = meta, .on_timeout = "stop",
		.ttl_ms = (ttl_s ? ttl_s : d->cfg.default_ttl_s) * 1000, .public_ports = public_ports,
		.network = policy,
	};
	r = snaps_get(d->snaps, srow.id, &cs.snap, &cs.t, msg, sizeof(msg));
	struct fork_one *f = r == 0 ? calloc(count, sizeof(*f)) : NULL;
	if (r < 0 || !f) {
		snaps_put(cs.snap, cs.t);
		json_decref(env);
		json_decref(meta);
		net_policy_free(policy);
		snaps_gc(d->snaps);
		return r < 0 ? sbx__snapshot_err(err, r, srow.id, msg)
			     : sbx__set_err(err, API_ERR_INTERNAL, "out of memory");
	}
	/* One create per thread (the first on this one): QEMU start-ups and
	 * guest wake-ups overlap. */
	for (unsigned i = 0; i < count; i++) {
		f[i] = (struct fork_one){.reg = reg, .team = team, .cs = &cs};
		if (i > 0 && pthread_create(&f[i].th, NULL, fork_one_main, &f[i]) == 0)
			f[i].started = 1;
	}
	for (unsigned i = 0; i < count; i++) {
		if (i == 0 || !f[i].started)
			fork_one_main(&f[i]);
		else
			pthread_join(f[i].th, NULL);
	}
	int failed = -1;
	for (unsigned i = 0; i < count && failed < 0; i++)
		if (f[i].r < 0)
			failed = (int)i;
	struct sandbox_row *out = failed < 0 ? calloc(count, sizeof(*out)) : NULL;
	if (failed < 0 && !out)
		failed = 0, f[0].r = sbx__set_err(&f[0].err, API_ERR_INTERNAL, "out of memory");
	for (unsigned i = 0; i < count; i++) {
		if (f[i].r < 0)
			continue;
		if (out) {
			out[i] = f[i].row;
			continue;
		}
		/* All or none: the ones made go again. */
		sbx_delete(reg, team, f[i].row.id);
		sandbox_row_clear(&f[i].row);
	}
	if (failed >= 0) {
		*err = f[failed].err;
		r = f[failed].r;
	}
	free(f);
	snaps_put(cs.snap, cs.t);
	json_decref(env);
	json_decref(meta);
	net_policy_free(policy);
	if (r < 0)
		snaps_gc(d->snaps);
	*rows = out;
	return r;
}

/* Capture sb and end its QEMU; its row becomes paused.  For an expiry,
 * reason_if_failed: how the sandbox ends when the pause fails (NULL: an
 * API pause, which leaves it running then). */
static int pause_live(struct sbx *sb, const char *reason_if_failed, struct sandbox_row *row,
		      struct sbx_err *err)
{
	struct sandboxes *reg = sb->reg;
	struct daemon *d = reg->d;
	struct capture_req cr = {.kind = "pause", .leave_paused = 1};
	struct snapshot_row srow;
	int r = capture(sb, &cr, &srow, err);
	if (r < 0) {
		if (reason_if_failed) {
			char why[STORE_REASON_MAX];
			snprintf(why, sizeof(why), "%s; pausing failed: %.180s", reason_if_failed,
				 err->message);
			sbx__end(sb, "stopped", why, 0);
		} else if (sbx__pin(sb) == 0) {
			/* A pause that failed after the capture left it stopped. */
			vm_resume(sb->vm);
			sbx__unpin(sb);
		}
		return r;
	}
	pthread_mutex_lock(&sb->lock);
	int64_t left = sb->expires_at_ms - wall_ms();
	pthread_mutex_unlock(&sb->lock);
	if (left < PAUSE_LEFT_MIN_MS)
		left = PAUSE_LEFT_MIN_MS; /* at its TTL: resume_ttl_ms gives it a new one */
	sbx__end(sb, NULL, NULL, 0);
	r = store_sandbox_set_paused(d->store, sb->id, srow.id, left,
				     wall_ms() + d->cfg.paused_retention_s * 1000);
	snapshot_row_clear(&srow);
	if (r == 0 && row)
		r = store_sandbox_get(d->store, sb->id, row);
	if (r < 0) {
		snaps_gc(d->snaps);
		return sbx__set_err(err, r == -ENOENT ? API_ERR_SANDBOX_NOT_FOUND : API_ERR_INTERNAL,
				    "sandbox %s was deleted while it was paused", sb->id);
	}
	metrics_event(METRICS_PAUSED);
	log_kv(LOG_INFO, "sandbox.paused", "id=%s team=%s snapshot=%s ttl_left_s=%lld", sb->id,
	       sb->team, sb->snapshot, (long long)(left / 1000));
	return 0;
}

int sbx_pause(struct sandboxes *reg, const char *team, const char *id, struct sandbox_row *row,
	      struct sbx_err *err)
{
	struct sbx *sb = acquire(reg, team, id, err);
	if (!sb)
		return -EINVAL;
	/* The monitor's own end (TTL) must not start meanwhile. */
	pthread_mutex_lock(&sb->lock);
	int mine = !sb->end_requested && sb->state == SBX_RUNNING;
	sb->end_requested = 1;
	pthread_mutex_unlock(&sb->lock);
	int r = mine ? pause_live(sb, NULL, row, err)
		     : sbx__set_err(err, API_ERR_SANDBOX_NOT_RUNNING,
				    "sandbox %s is being stopped or paused", id);
	if (mine && r < 0) {
		pthread_mutex_lock(&sb->lock);
		sb->end_requested = 0;
		pthread_mutex_unlock(&sb->lock);
		sbx__wake(reg);
	}
	sbx_release(sb);
	return r;
}

/* The TTL a resume gives: ttl_s when asked, else what the sandbox had left
 * when it was paused; one paused at its TTL (nothing left) gets the
 * default TTL, or it would expire again at once. */
static int64_t resume_ttl_ms(const struct daemon *d, const struct sandbox_row *pr, int64_t ttl_s)
{
	if (ttl_s > 0)
		return ttl_s * 1000;
	return pr->ttl_left_ms > PAUSE_LEFT_MIN_MS ? pr->ttl_left_ms
						    : (int64_t)d->cfg.default_ttl_s * 1000;
}

int sbx_resume(struct sandboxes *reg, const char *team, const char *id, int64_t ttl_s,
	       struct sandbox_row *row, struct sbx_err *err)
{
	struct daemon *d = reg->d;
	struct sandbox_row pr;
	int r = sandbox_id_valid(id) ? store_sandbox_get(d->store, id, &pr) : -ENOENT;
	if (r == 0 && strcmp(pr.team, team) != 0) {
		sandbox_row_clear(&pr);
		r = -ENOENT;
	}
	if (r < 0)
		return r == -ENOENT ? sbx__set_err(err, API_ERR_SANDBOX_NOT_FOUND, "no sandbox '%.64s'", id)
				    : sbx__set_err(err, API_ERR_INTERNAL, "the registry failed");
	if (strcmp(pr.status, "paused") != 0) {
		sbx__set_err(err, API_ERR_SANDBOX_NOT_PAUSED,
			     "sandbox %s is not paused (its status: %s)", id, pr.status);
		sandbox_row_clear(&pr);
		return -EINVAL;
	}
	json_t *env = json_loads(pr.env_json ? pr.env_json : "{}", 0, NULL);
	json_t *meta = json_object();
	char msg[400];
	struct create_spec cs = {
		.id = id, .resume = 1, .snapshot_id = pr.snapshot, .env = env, .metadata = meta,
		.on_timeout = pr.on_timeout, .ttl_ms = resume_ttl_ms(d, &pr, ttl_s),
		.public_ports = pr.public_ports, .access_token = pr.access_token,
	};
	struct net_policy *policy = sbx__row_policy(&pr);
	cs.network = policy;
	r = snaps_get(d->snaps, pr.snapshot, &cs.snap, &cs.t, msg, sizeof(msg));
	struct sandbox_row now;
	int gone = r == -ENOENT ? store_sandbox_get(d->store, id, &now) : 0;
	if (r == -ENOENT && gone == 0)
		sandbox_row_clear(&now);
	if (gone == -ENOENT) /* deleted since its row was read: its capture went */
		sbx__set_err(err, API_ERR_SANDBOX_NOT_FOUND, "sandbox %s was deleted meanwhile", id);
	else if (r < 0)
		sbx__snapshot_err(err, r, pr.snapshot, msg);
	else
		r = sbx__create(reg, team, &cs, row, NULL, err);
	if (r == 0) {
		metrics_event(METRICS_RESUMED);
		log_kv(LOG_INFO, "sandbox.resumed", "id=%s team=%s snapshot=%s", id, team,
		       pr.snapshot);
	}
	snaps_put(cs.snap, cs.t);
	/* A delete while this resume held the capture could not remove it. */
	if (r < 0)
		snaps_gc(d->snaps);
	json_decref(env);
	json_decref(meta);
	net_policy_free(policy);
	sandbox_row_clear(&pr);
	return r;
}

static void *expire_thread(void *arg)
{
	struct sbx *sb = arg;
	struct sandboxes *reg = sb->reg;
	struct sbx_err err;
	if (pause_live(sb, "ttl expired", NULL, &err) < 0)
		log_kv(LOG_WARN, "sandbox.pause_on_timeout_failed", "id=%s msg=%s", sb->id,
		       err.message);
	sbx_release(sb);
	pthread_mutex_lock(&reg->lock);
	reg->ending--;
	pthread_cond_broadcast(&reg->cond);
	pthread_mutex_unlock(&reg->lock);
	return NULL;
}

int sbx_expire_async(struct sbx *sb)
{
	pthread_mutex_lock(&sb->lock);
	int pause = sb->on_timeout_pause;
	int first = pause && !sb->end_requested && sb->state == SBX_RUNNING;
	if (first)
		sb->end_requested = 1;
	pthread_mutex_unlock(&sb->lock);
	if (!pause)
		return sbx_end_async(sb, "stopped", "ttl expired");
	if (!first)
		return 0;
	int e = sbx__start_ending(sb, expire_thread, sb);
	if (e == 0)
		return 1;
	pthread_mutex_lock(&sb->lock);
	sb->end_requested = 0;
	pthread_mutex_unlock(&sb->lock);
	return e;
}

int sandboxes_paused_expire(struct sandboxes *reg)
{
	struct daemon *d = reg->d;
	struct sandbox_row *rows = NULL;
	size_t n = 0;
	if (store_sandbox_list(d->store, NULL, "paused", &rows, &n) < 0)
		return -EIO;
	int64_t now = wall_ms();
	int any = 0;
	for (size_t i = 0; i < n; i++) {
		if (rows[i].expires_at_ms > now)
			continue;
		store_sandbox_set_status(d->store, rows[i].id, "stopped",
					 "paused for longer than the retention (--paused-retention)",
					 now);
		log_kv(LOG_INFO, "sandbox.paused_expired", "id=%s team=%s", rows[i].id, rows[i].team);
		any = 1;
	}
	sandbox_rows_free(rows, n);
	if (any)
		snaps_gc(d->snaps);
	return 0;
}
