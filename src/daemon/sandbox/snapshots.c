/*
 * snapshots.c - snapshots on disk, loaded, merged, flattened and removed
 * (see snapshots.h).
 *
 * Locking: ss->lock guards the cache (list, refs, counters); load_lock
 * makes loads one at a time (a load reads a row and a few small files);
 * gc_lock makes collections one at a time; a collection removes each
 * snapshot under load_lock, so no load picks up one being removed.
 * Order: gc_lock, then load_lock, then lock.
 * Background jobs (merge, flatten) hold a reference on what they work on
 * and are counted in jobs, which snaps_free waits for.
 */
#include "daemon/sandbox/snapshots.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/thread.h"
#include "common/util.h"
#include "daemon/daemon.h"

/* Snapshots removed per collection round (rounds repeat while any goes). */
#define GC_BATCH 256

struct snap {
	struct snaps *ss;
	char id[STORE_ID_MAX];
	char template_name[STORE_NAME_MAX];
	char bake[65];              /* the template bake it was opened against */
	struct snapshot *eng;
	struct snap *parent;        /* a reference; NULL at depth 0 */
	int refs;                   /* ss->lock: handles out */
	int linked;                 /* ss->lock: in the cache */
	unsigned restores;          /* ss->lock */
	int merging;                /* ss->lock: a merge job runs or ran */
	int merged;                 /* ss->lock: counted in ss->merged */
	struct snap *next;          /* ss->lock */
};

struct snaps {
	struct daemon *d;
	pthread_mutex_t lock;
	pthread_mutex_t load_lock;
	pthread_mutex_t gc_lock;
	pthread_cond_t cond;        /* broadcast when jobs drops */
	int jobs;
	unsigned merged;
	struct snap *head;
};

int snap_id_valid(const char *s)
{
	if (!s || strncmp(s, "snap_", 5) != 0 || strlen(s) != 5 + SNAP_ID_HEX)
		return 0;
	for (const char *p = s + 5; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return 0;
	return 1;
}

int snap_id_new(char *out)
{
	unsigned char rnd[SNAP_ID_HEX / 2];
	int r = util_random(rnd, sizeof(rnd));
	if (r < 0)
		return r;
	memcpy(out, "snap_", 5);
	util_hex(rnd, sizeof(rnd), out + 5);
	return 0;
}

int snaps_new(struct daemon *d, struct snaps **out)
{
	int r = util_mkdir_p(d->snapshots_dir, 0700);
	if (r < 0)
		return r;
	struct snaps *ss = calloc(1, sizeof(*ss));
	if (!ss)
		return -ENOMEM;
	ss->d = d;
	pthread_mutex_init(&ss->lock, NULL);
	pthread_mutex_init(&ss->load_lock, NULL);
	pthread_mutex_init(&ss->gc_lock, NULL);
	pthread_cond_init(&ss->cond, NULL);
	*out = ss;
	return 0;
}

int snaps_dir(struct snaps *ss, const char *id, char *out)
{
	return snprintf(out, PATH_MAX, "%s/%s", ss->d->snapshots_dir, id) >= PATH_MAX ? -ENAMETOOLONG
										      : 0;
}

static void entry_free(struct snap *s);

/* Drop a reference; ss->lock held.  Returns s when it must be freed (after
 * the lock is released). */
static struct snap *unref_locked(struct snap *s)
{
	return --s->refs == 0 && !s->linked ? s : NULL;
}

static void unlink_locked(struct snap *s)
{
	for (struct snap **p = &s->ss->head; *p; p = &(*p)->next) {
		if (*p == s) {
			*p = s->next;
			break;
		}
	}
	s->next = NULL;
	s->linked = 0;
}

static void entry_free(struct snap *s)
{
	struct snaps *ss = s->ss;
	struct snap *parent = s->parent;
	pthread_mutex_lock(&ss->lock);
	if (s->merged)
		ss->merged--;
	pthread_mutex_unlock(&ss->lock);
	snapshot_free(s->eng);
	free(s);
	snaps_put(parent, NULL);
}

void snaps_put(struct snap *s, struct tpl *t)
{
	templates_put(t);
	if (!s)
		return;
	pthread_mutex_lock(&s->ss->lock);
	struct snap *dead = unref_locked(s);
	pthread_mutex_unlock(&s->ss->lock);
	if (dead)
		entry_free(dead);
}

/* The cached entry of id, linked, with a reference, if it was opened
 * against bake; a stale one is dropped from the cache. */
static struct snap *cached(struct snaps *ss, const char *id, const char *bake)
{
	struct snap *found = NULL, *dead = NULL;
	pthread_mutex_lock(&ss->lock);
	for (struct snap *s = ss->head; s; s = s->next) {
		if (strcmp(s->id, id) != 0)
			continue;
		if (!strcmp(s->bake, bake)) {
			s->refs++;
			found = s;
		} else {
			unlink_locked(s);
			s->refs++;
			dead = unref_locked(s);
		}
		break;
	}
	pthread_mutex_unlock(&ss->lock);
	if (dead)
		entry_free(dead);
	return found;
}

/* Load id (and its chain); ss->load_lock held. */
static int load_locked(struct snaps *ss, const char *id, int depth, struct snap **out,
		       struct tpl **tout, char *err, size_t errlen)
{
	struct snapshot_row row;
	char dir[PATH_MAX];
	*out = NULL;
	*tout = NULL;
	if (depth > 32) {
		snprintf(err, errlen, "snapshot %s: its chain is too long", id);
		return -ELOOP;
	}
	int r = store_snapshot_get(ss->d->store, id, &row);
	if (r < 0) {
		snprintf(err, errlen, "no snapshot '%s'", id);
		return r == -ENOENT ? -ENOENT : -EIO;
	}
	snapshot_row_clear(&row);
	if (!strcmp(row.state, "pending")) {
		snprintf(err, errlen, "snapshot %s is still being taken", id);
		return -EAGAIN;
	}
	struct tpl *t = NULL;
	char terr[300];
	r = templates_get(ss->d->templates, row.template_name, &t, terr, sizeof(terr));
	if (r < 0) {
		snprintf(err, errlen, "snapshot %s: its template %s cannot be used: %.200s", id,
			 row.template_name, terr);
		return r == -ENOENT || r == -ESTALE ? -ESTALE : -EIO;
	}
	const char *bake = template_bake_id(tpl_template(t));
	struct snap *s = cached(ss, id, bake);
	if (s) {
		*out = s;
		*tout = t;
		return 0;
	}
	struct snap *parent = NULL;
	if (row.parent[0]) {
		struct tpl *pt = NULL;
		r = load_locked(ss, row.parent, depth + 1, &parent, &pt, err, errlen);
		templates_put(pt);
		if (r < 0) {
			templates_put(t);
			return r;
		}
	}
	s = calloc(1, sizeof(*s));
	if (!s || (r = snaps_dir(ss, id, dir)) < 0) {
		free(s);
		snaps_put(parent, t);
		return s ? r : -ENOMEM;
	}
	char eerr[300];
	r = snapshot_open(dir, tpl_template(t), parent ? parent->eng : NULL, &s->eng, eerr,
			  sizeof(eerr));
	if (r < 0) {
		snprintf(err, errlen, "snapshot %s: %.300s", id, eerr);
		free(s);
		snaps_put(parent, t);
		return r;
	}
	s->ss = ss;
	snprintf(s->id, sizeof(s->id), "%s", id);
	snprintf(s->template_name, sizeof(s->template_name), "%s", row.template_name);
	snprintf(s->bake, sizeof(s->bake), "%s", bake);
	s->parent = parent;
	s->refs = 1;
	pthread_mutex_lock(&ss->lock);
	s->linked = 1;
	s->next = ss->head;
	ss->head = s;
	pthread_mutex_unlock(&ss->lock);
	*out = s;
	*tout = t;
	return 0;
}

int snaps_get(struct snaps *ss, const char *id, struct snap **out, struct tpl **t, char *err,
	      size_t errlen)
{
	err[0] = '\0';
	if (!snap_id_valid(id)) {
		snprintf(err, errlen, "no snapshot '%.64s'", id);
		return -ENOENT;
	}
	pthread_mutex_lock(&ss->load_lock);
	int r = load_locked(ss, id, 0, out, t, err, errlen);
	pthread_mutex_unlock(&ss->load_lock);
	return r;
}

const struct snapshot *snap_engine(struct snap *s)
{
	return s->eng;
}

/* Run fn(arg) on a detached thread counted in ss->jobs.  0 or -errno. */
static int job_start(struct snaps *ss, void *(*fn)(void *), void *arg)
{
	pthread_mutex_lock(&ss->lock);
	ss->jobs++;
	pthread_mutex_unlock(&ss->lock);
	int e = -thread_start_detached(fn, arg);
	if (e) {
		pthread_mutex_lock(&ss->lock);
		ss->jobs--;
		pthread_cond_broadcast(&ss->cond);
		pthread_mutex_unlock(&ss->lock);
	}
	return -e;
}

static void job_done(struct snaps *ss)
{
	pthread_mutex_lock(&ss->lock);
	ss->jobs--;
	pthread_cond_broadcast(&ss->cond);
	pthread_mutex_unlock(&ss->lock);
}

static void *merge_job(void *arg)
{
	struct snap *s = arg;
	struct snaps *ss = s->ss;
	struct tpl *t = NULL;
	char err[300];
	int r = templates_get(ss->d->templates, s->template_name, &t, err, sizeof(err));
	if (r == 0 && strcmp(template_bake_id(tpl_template(t)), s->bake) != 0)
		r = -ESTALE;
	if (r == 0)
		r = snapshot_memory_fd(s->eng, tpl_template(t));
	pthread_mutex_lock(&ss->lock);
	if (r >= 0) {
		s->merged = 1;
	} else {
		ss->merged--; /* counted when the job started */
	}
	pthread_mutex_unlock(&ss->lock);
	log_kv(r >= 0 ? LOG_INFO : LOG_WARN, "snapshot.merged", "id=%s err=%d", s->id,
	       r < 0 ? r : 0);
	snaps_put(s, t);
	job_done(ss);
	return NULL;
}

void snap_note_restore(struct snap *s)
{
	struct snaps *ss = s->ss;
	const struct daemon_cfg *c = &ss->d->cfg;
	pthread_mutex_lock(&ss->lock);
	s->restores++;
	int go = c->snapshot_merge_after > 0 && !s->merging && s->restores >= c->snapshot_merge_after &&
		 ss->merged < c->snapshot_merge_max;
	if (go) {
		s->merging = 1;
		s->refs++;
		ss->merged++; /* reserved now, so concurrent jobs respect the cap */
	}
	pthread_mutex_unlock(&ss->lock);
	if (go && job_start(ss, merge_job, s) < 0) {
		pthread_mutex_lock(&ss->lock);
		ss->merged--;
		pthread_mutex_unlock(&ss->lock);
		snaps_put(s, NULL);
	}
}

unsigned snaps_merged_count(struct snaps *ss)
{
	pthread_mutex_lock(&ss->lock);
	unsigned n = ss->merged;
	pthread_mutex_unlock(&ss->lock);
	return n;
}

struct flatten_job {
	struct snaps *ss;
	char id[STORE_ID_MAX];
};

static void *flatten_job(void *arg)
{
	struct flatten_job *job = arg;
	struct snaps *ss = job->ss;
	struct snap *s = NULL;
	struct tpl *t = NULL;
	char err[400];
	int r = snaps_get(ss, job->id, &s, &t, err, sizeof(err));
	if (r == 0 && (r = snapshot_flatten(s->eng, tpl_template(t), err, sizeof(err))) == 0) {
		uint64_t size = 0;
		snapshot_size(s->eng, &size);
		/* The next load opens the flat files alone; this entry (and its
		 * chain) lives on while handles hold it. */
		pthread_mutex_lock(&ss->load_lock);
		r = store_snapshot_set_parent(ss->d->store, s->id, "", (int64_t)size);
		pthread_mutex_lock(&ss->lock);
		if (s->linked)
			unlink_locked(s);
		pthread_mutex_unlock(&ss->lock);
		pthread_mutex_unlock(&ss->load_lock);
	}
	log_kv(r ? LOG_WARN : LOG_INFO, "snapshot.flattened", "id=%s err=%d msg=%s", job->id, r,
	       r ? err : "");
	snaps_put(s, t);
	if (r == 0)
		snaps_gc(ss);
	free(job);
	job_done(ss);
	return NULL;
}

void snaps_captured(struct snaps *ss, const char *id, int depth)
{
	if (depth < (int)ss->d->cfg.snapshot_max_depth)
		return;
	struct flatten_job *job = calloc(1, sizeof(*job));
	if (!job)
		return;
	job->ss = ss;
	snprintf(job->id, sizeof(job->id), "%s", id);
	if (job_start(ss, flatten_job, job) < 0)
		free(job);
}

/* Remove snapshot id's files and row, unless a handle holds it.  1 when
 * removed.  Under load_lock, so that no snaps_get loads id (its row still
 * there) while its folder is being removed. */
static int remove_one(struct snaps *ss, const char *id)
{
	struct snap *dead = NULL;
	pthread_mutex_lock(&ss->load_lock);
	pthread_mutex_lock(&ss->lock);
	for (struct snap *s = ss->head; s; s = s->next) {
		if (strcmp(s->id, id) != 0)
			continue;
		if (s->refs > 0) {
			pthread_mutex_unlock(&ss->lock);
			pthread_mutex_unlock(&ss->load_lock);
			return 0;
		}
		unlink_locked(s);
		dead = s;
		break;
	}
	pthread_mutex_unlock(&ss->lock);
	if (dead)
		entry_free(dead);
	char dir[PATH_MAX];
	int r = snaps_dir(ss, id, dir);
	if (r == 0 && (r = util_rm_rf(dir)) < 0 && r != -ENOENT)
		log_kv(LOG_WARN, "snapshot.rm_failed", "id=%s err=%d", id, r);
	else if (r == 0 || r == -ENOENT)
		store_snapshot_delete(ss->d->store, id);
	pthread_mutex_unlock(&ss->load_lock);
	if (r < 0 && r != -ENOENT)
		return 0;
	log_kv(LOG_INFO, "snapshot.removed", "id=%s", id);
	return 1;
}

void snaps_gc(struct snaps *ss)
{
	static char ids[GC_BATCH][STORE_ID_MAX];
	pthread_mutex_lock(&ss->gc_lock);
	for (;;) {
		size_t n = 0;
		if (store_snapshot_garbage(ss->d->store, ids, GC_BATCH, &n) < 0 || n == 0)
			break;
		int removed = 0;
		for (size_t i = 0; i < n; i++)
			removed += remove_one(ss, ids[i]);
		if (!removed)
			break;
	}
	pthread_mutex_unlock(&ss->gc_lock);
}

/* A capture a crash interrupted: keep it if its disk was frozen (the
 * sandbox runs on it), else remove it. */
static void recover_pending(struct snaps *ss, const struct snapshot_row *row)
{
	char dir[PATH_MAX], layer[PATH_MAX];
	struct stat st;
	if (snaps_dir(ss, row->id, dir) < 0 ||
	    snprintf(layer, sizeof(layer), "%s/disk.qcow2", dir) >= (int)sizeof(layer))
		return;
	if (stat(layer, &st) == 0) {
		struct sandbox_row sb;
		if (store_sandbox_get(ss->d->store, row->sandbox_id, &sb) == 0) {
			if (!strcmp(sb.status, "running") && !strcmp(sb.snapshot, row->parent))
				store_sandbox_set_snapshot(ss->d->store, sb.id, row->id);
			sandbox_row_clear(&sb);
		}
		/* A user's capture that never answered is the daemon's now. */
		store_snapshot_set_state(ss->d->store, row->id, "ready");
		if (!strcmp(row->kind, "user"))
			store_snapshot_set_state(ss->d->store, row->id, "deleted");
		log_kv(LOG_WARN, "snapshot.recovered", "id=%s", row->id);
		return;
	}
	util_rm_rf(dir);
	store_snapshot_delete(ss->d->store, row->id);
	log_kv(LOG_WARN, "snapshot.interrupted_removed", "id=%s", row->id);
}

int snaps_recover(struct snaps *ss)
{
	struct snapshot_row *rows = NULL;
	size_t n = 0;
	if (store_snapshot_list(ss->d->store, NULL, NULL, "pending", &rows, &n) < 0)
		return -EIO;
	for (size_t i = 0; i < n; i++)
		recover_pending(ss, &rows[i]);
	snapshot_rows_free(rows, n);
	/* Folders without a row (a crash between mkdir and the row's insert
	 * cannot happen: the row comes first; a removal cut short can). */
	DIR *d = opendir(ss->d->snapshots_dir);
	if (d) {
		struct dirent *de;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			struct snapshot_row row;
			int r = snap_id_valid(de->d_name)
					? store_snapshot_get(ss->d->store, de->d_name, &row)
					: -ENOENT;
			if (r == 0) {
				snapshot_row_clear(&row);
				continue;
			}
			char dir[PATH_MAX];
			if (r == -ENOENT && snprintf(dir, sizeof(dir), "%s/%s", ss->d->snapshots_dir,
						     de->d_name) < (int)sizeof(dir)) {
				util_rm_rf(dir);
				log_kv(LOG_WARN, "snapshot.leftover_removed", "dir=%s", de->d_name);
			}
		}
		closedir(d);
	}
	snaps_gc(ss);
	return 0;
}

void snaps_free(struct snaps *ss)
{
	if (!ss)
		return;
	pthread_mutex_lock(&ss->lock);
	while (ss->jobs > 0)
		pthread_cond_wait(&ss->cond, &ss->lock);
	pthread_mutex_unlock(&ss->lock);
	for (;;) {
		pthread_mutex_lock(&ss->lock);
		struct snap *s = ss->head;
		if (s) {
			unlink_locked(s);
			s->refs++;
			s = unref_locked(s);
		}
		int more = ss->head != NULL;
		pthread_mutex_unlock(&ss->lock);
		if (s)
			entry_free(s);
		if (!s && !more)
			break;
	}
	pthread_mutex_destroy(&ss->lock);
	pthread_mutex_destroy(&ss->load_lock);
	pthread_mutex_destroy(&ss->gc_lock);
	pthread_cond_destroy(&ss->cond);
	free(ss);
}
