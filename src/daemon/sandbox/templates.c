/*
 * templates.c - loaded templates, their pools, bakes (see templates.h).
 */
#include "daemon/sandbox/templates.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/thread.h"
#include "common/utf8.h"
#include "common/util.h"
#include "engine/vm/bake.h"

#define NAME_CAP 65

struct tpl {
	struct templates *ts;
	char name[NAME_CAP];
	struct template *t;
	struct pool *pool;
	int refs;       /* ts->lock: users */
	int retired;    /* ts->lock: on the retired list */
	struct tpl *next;
};

struct build {
	char name[NAME_CAP];
	int running;
	int ok;
	char error[256];
	char progress[200];
	int64_t started_ms, finished_ms; /* wall clock */
	struct build *next;
};

struct templates {
	char cache_dir[PATH_MAX];
	char pool_dir[PATH_MAX];
	enum accel_kind accel;
	const struct daemon_cfg *cfg;  /* pool sizes */
	pthread_mutex_t lock;
	struct tpl *live;
	struct tpl *retired;
	struct build *builds;
	int builds_running;
};

static int64_t wall_ms(void)
{
	return (int64_t)(util_wall_ns() / 1000000u);
}

int templates_new(const char *cache_dir, const char *pool_dir, enum accel_kind accel,
		  const struct daemon_cfg *cfg, struct templates **out)
{
	struct templates *ts = calloc(1, sizeof(*ts));
	if (!ts)
		return -ENOMEM;
	if (snprintf(ts->cache_dir, sizeof(ts->cache_dir), "%s", cache_dir) >=
		    (int)sizeof(ts->cache_dir) ||
	    snprintf(ts->pool_dir, sizeof(ts->pool_dir), "%s", pool_dir) >=
		    (int)sizeof(ts->pool_dir)) {
		free(ts);
		return -ENAMETOOLONG;
	}
	ts->accel = accel;
	ts->cfg = cfg;
	pthread_mutex_init(&ts->lock, NULL);
	*out = ts;
	return 0;
}

static void tpl_destroy(struct tpl *t)
{
	if (t->pool)
		pool_free(t->pool);
	template_free(t->t);
	free(t);
}

static struct tpl *find(struct tpl *list, const char *name)
{
	for (; list; list = list->next)
		if (strcmp(list->name, name) == 0)
			return list;
	return NULL;
}

/* Start e's pool of ready sandboxes (when its size is not 0); a failure
 * is logged and e serves creates without one.  ts->lock held. */
static void start_pool_locked(struct templates *ts, struct tpl *e)
{
	unsigned pool_size = config_pool_size_of(ts->cfg, e->name);
	if (pool_size == 0)
		return;
	char dir[PATH_MAX];
	if (snprintf(dir, sizeof(dir), "%s/%s", ts->pool_dir, e->name) < (int)sizeof(dir) &&
	    util_mkdir_p(ts->pool_dir, 0700) == 0) {
		int pr = pool_new(e->t, dir, pool_size, &e->pool);
		if (pr < 0) {
			e->pool = NULL;
			log_kv(LOG_WARN, "template.pool_failed", "name=%s err=%d", e->name, pr);
		}
	}
}

/* Load name and start its pool; ts->lock held.  A rebuilt template's old
 * pool still running in the same folder goes first: the new one starts
 * when the old template is destroyed (destroy_retired). */
static int load_locked(struct templates *ts, const char *name, struct tpl **out, char *err,
		       size_t errlen)
{
	struct template *t = NULL;
	int r = template_open(ts->cache_dir, name, ts->accel, &t, err, errlen);
	if (r < 0)
		return r;
	struct tpl *e = calloc(1, sizeof(*e));
	if (!e) {
		template_free(t);
		return -ENOMEM;
	}
	e->ts = ts;
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->t = t;
	if (!find(ts->retired, name))
		start_pool_locked(ts, e);
	e->next = ts->live;
	ts->live = e;
	log_kv(LOG_INFO, "template.loaded", "name=%s vcpus=%u memory_mib=%u pool=%u", name,
	       template_vcpus(t), template_memory_mib(t),
	       e->pool ? config_pool_size_of(ts->cfg, name) : 0);
	*out = e;
	return 0;
}

static void unlink_from(struct tpl **list, struct tpl *e)
{
	for (struct tpl **p = list; *p; p = &(*p)->next) {
		if (*p == e) {
			*p = e->next;
			e->next = NULL;
			return;
		}
	}
}

/* Move e from the live list to the retired one: the next get loads the
 * bake on disk.  Returns e when nobody uses it (the caller calls
 * destroy_retired, outside the lock); else NULL and its last templates_put
 * does.  ts->lock held. */
static struct tpl *retire_locked(struct templates *ts, struct tpl *e)
{
	unlink_from(&ts->live, e);
	e->retired = 1;
	e->next = ts->retired;
	ts->retired = e;
	return e->refs == 0 ? e : NULL;
}

/* Destroy a retired template nobody uses: its pool ends first, while it
 * is still listed as retired so that no new pool starts in its folder;
 * then the pool of the bake that replaced it starts.  Without ts->lock. */
static void destroy_retired(struct templates *ts, struct tpl *e)
{
	if (e->pool)
		pool_free(e->pool);
	e->pool = NULL;
	template_free(e->t);
	e->t = NULL;
	pthread_mutex_lock(&ts->lock);
	unlink_from(&ts->retired, e);
	struct tpl *now = find(ts->live, e->name);
	if (now && !now->pool && !find(ts->retired, e->name))
		start_pool_locked(ts, now);
	pthread_mutex_unlock(&ts->lock);
	free(e);
}

int templates_get(struct templates *ts, const char *name, struct tpl **out, char *err,
		  size_t errlen)
{
	if (errlen)
		err[0] = '\0';
	pthread_mutex_lock(&ts->lock);
	struct tpl *e = find(ts->live, name);
	/* baked again outside this daemon (make templates beside it): the
	 * loaded memory no longer fits the state and disk on disk */
	if (e && template_changed_on_disk(e->t)) {
		log_kv(LOG_WARN, "template.changed_on_disk", "name=%s action=reload", name);
		struct tpl *now = retire_locked(ts, e);
		if (now) {
			pthread_mutex_unlock(&ts->lock);
			destroy_retired(ts, now);
			pthread_mutex_lock(&ts->lock);
		}
		e = find(ts->live, name); /* another get may have loaded it meanwhile */
	}
	int r = 0;
	if (!e)
		r = load_locked(ts, name, &e, err, errlen);
	if (!r)
		e->refs++;
	pthread_mutex_unlock(&ts->lock);
	*out = r ? NULL : e;
	return r;
}

void templates_put(struct tpl *t)
{
	if (!t)
		return;
	struct templates *ts = t->ts;
	pthread_mutex_lock(&ts->lock);
	int free_now = --t->refs == 0 && t->retired;
	pthread_mutex_unlock(&ts->lock);
	if (free_now)
		destroy_retired(ts, t);
}

const struct template *tpl_template(struct tpl *t)
{
	return t->t;
}

struct pool *tpl_pool(struct tpl *t)
{
	return t->pool;
}

void templates_load_all(struct templates *ts)
{
	char **names = NULL;
	int n = template_list(ts->cache_dir, &names);
	if (n < 0) {
		log_kv(LOG_WARN, "template.list_failed", "cache=%s err=%d", ts->cache_dir, n);
		return;
	}
	for (int i = 0; i < n; i++) {
		char err[256], q[300];
		struct tpl *t;
		int r = templates_get(ts, names[i], &t, err, sizeof(err));
		if (r < 0)
			log_kv(LOG_WARN, "template.unusable", "name=%s err=%d msg=%s", names[i], r,
			       log_quote(err, q, sizeof(q)));
		templates_put(r ? NULL : t);
		free(names[i]);
	}
	free(names);
}

static json_t *build_json(const struct build *b)
{
	if (!b)
		return json_null();
	return json_pack("{s:s, s:s?, s:s?, s:I, s:o}", "status",
			 b->running ? "running" : b->ok ? "succeeded" : "failed", "error",
			 b->running || b->ok ? NULL : b->error, "progress",
			 b->progress[0] ? b->progress : NULL, "started_at_ms",
			 (json_int_t)b->started_ms, "finished_at_ms",
			 b->finished_ms ? json_integer(b->finished_ms) : json_null());
}

static struct build *find_build(struct templates *ts, const char *name)
{
	for (struct build *b = ts->builds; b; b = b->next)
		if (strcmp(b->name, name) == 0)
			return b;
	return NULL;
}

json_t *templates_status_json(struct templates *ts, const char *name)
{
	char err[256];
	struct tpl *t;
	int r = templates_get(ts, name, &t, err, sizeof(err));
	const char *status = r == 0 ? "ready" : r == -ENOENT ? "missing"
				: r == -ESTALE      ? "stale"
						    : "invalid";
	json_t *o = json_pack("{s:s, s:s}", "name", name, "status", status);
	if (!o) {
		templates_put(r ? NULL : t);
		return NULL;
	}
	if (r == 0) {
		const struct template *tt = tpl_template(t);
		json_object_set_new(o, "vcpus", json_integer(template_vcpus(tt)));
		json_object_set_new(o, "memory_mib", json_integer(template_memory_mib(tt)));
		json_object_set_new(o, "pool_ready",
				    json_integer(tpl_pool(t) ? pool_ready(tpl_pool(t)) : 0));
		json_object_set_new(o, "error", json_null());
		templates_put(t);
	} else {
		json_object_set_new(o, "vcpus", json_null());
		json_object_set_new(o, "memory_mib", json_null());
		json_object_set_new(o, "pool_ready", json_integer(0));
		json_object_set_new(o, "error", r == -ENOENT ? json_null()
							      : utf8_json_lossy(err, strlen(err)));
	}
	pthread_mutex_lock(&ts->lock);
	json_object_set_new(o, "build", build_json(find_build(ts, name)));
	pthread_mutex_unlock(&ts->lock);
	return o;
}

static int has_name(char **names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return 1;
	return 0;
}

json_t *templates_list_json(struct templates *ts)
{
	json_t *arr = json_array();
	if (!arr)
		return NULL;
	char **names = NULL;
	int n = template_list(ts->cache_dir, &names);
	if (n < 0)
		n = 0;
	for (int i = 0; i < n; i++) {
		json_t *o = templates_status_json(ts, names[i]);
		if (o)
			json_array_append_new(arr, o);
	}
	/* Bakes of templates that do not exist yet. */
	char extra[64][NAME_CAP];
	int nextra = 0;
	pthread_mutex_lock(&ts->lock);
	for (struct build *b = ts->builds; b && nextra < 64; b = b->next)
		if (!has_name(names, n, b->name))
			snprintf(extra[nextra++], NAME_CAP, "%s", b->name);
	pthread_mutex_unlock(&ts->lock);
	for (int i = 0; i < nextra; i++) {
		json_t *o = templates_status_json(ts, extra[i]);
		if (o)
			json_array_append_new(arr, o);
	}
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return arr;
}

struct build_job {
	struct templates *ts;
	struct build *b;
	int force;
};

static void on_progress(void *arg, const char *line)
{
	struct build_job *job = arg;
	char q[300];
	log_kv(LOG_INFO, "template.build.progress", "name=%s line=%s", job->b->name,
	       log_quote(line, q, sizeof(q)));
	pthread_mutex_lock(&job->ts->lock);
	snprintf(job->b->progress, sizeof(job->b->progress), "%s", line);
	pthread_mutex_unlock(&job->ts->lock);
}

static void *build_thread(void *arg)
{
	struct build_job *job = arg;
	struct templates *ts = job->ts;
	struct build *b = job->b;
	char err[256] = "";
	int64_t t0 = util_now_ms();
	int r = template_bake(ts->cache_dir, b->name, ts->accel, job->force, on_progress, job, err,
			      sizeof(err));
	char q[300];
	log_kv(r ? LOG_WARN : LOG_INFO, "template.build.done", "name=%s err=%d ms=%lld msg=%s",
	       b->name, r, (long long)(util_now_ms() - t0), log_quote(err, q, sizeof(q)));
	struct tpl *old_free = NULL;
	pthread_mutex_lock(&ts->lock);
	b->running = 0;
	b->ok = r == 0;
	b->finished_ms = wall_ms();
	if (r)
		snprintf(b->error, sizeof(b->error), "%s", err[0] ? err : strerror(-r));
	struct tpl *old = r ? NULL : find(ts->live, b->name);
	if (old) /* the next get loads the new bake */
		old_free = retire_locked(ts, old);
	ts->builds_running--;
	pthread_mutex_unlock(&ts->lock);
	if (old_free)
		destroy_retired(ts, old_free);
	if (!r) { /* load it and start its pool now rather than at the first create */
		struct tpl *t;
		if (templates_get(ts, b->name, &t, err, sizeof(err)) == 0)
			templates_put(t);
	}
	free(job);
	return NULL;
}

int templates_build_start(struct templates *ts, const char *name, int force)
{
	char recipe[PATH_MAX];
	if (snprintf(recipe, sizeof(recipe), "%s/images/%s.json", ts->cache_dir, name) >=
	    (int)sizeof(recipe))
		return -ENAMETOOLONG;
	if (access(recipe, R_OK) != 0)
		return -ENOENT;
	struct build_job *job = calloc(1, sizeof(*job));
	if (!job)
		return -ENOMEM;
	pthread_mutex_lock(&ts->lock);
	struct build *b = find_build(ts, name);
	if (b && b->running) {
		pthread_mutex_unlock(&ts->lock);
		free(job);
		return -EBUSY;
	}
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b) {
			pthread_mutex_unlock(&ts->lock);
			free(job);
			return -ENOMEM;
		}
		snprintf(b->name, sizeof(b->name), "%s", name);
		b->next = ts->builds;
		ts->builds = b;
	}
	b->running = 1;
	b->ok = 0;
	b->error[0] = b->progress[0] = '\0';
	b->started_ms = wall_ms();
	b->finished_ms = 0;
	ts->builds_running++;
	job->ts = ts;
	job->b = b;
	job->force = force;
	int e = -thread_start_detached(build_thread, job);
	if (e) {
		b->running = 0;
		snprintf(b->error, sizeof(b->error), "cannot start the build thread");
		ts->builds_running--;
		pthread_mutex_unlock(&ts->lock);
		free(job);
		return -e;
	}
	pthread_mutex_unlock(&ts->lock);
	log_kv(LOG_INFO, "template.build.start", "name=%s force=%d", name, force);
	return 0;
}

void templates_free(struct templates *ts)
{
	if (!ts)
		return;
	pthread_mutex_lock(&ts->lock);
	struct tpl *live = ts->live, *retired = ts->retired;
	ts->live = ts->retired = NULL;
	int building = ts->builds_running;
	pthread_mutex_unlock(&ts->lock);
	/* Every HTTP thread is gone, so nobody holds a reference any more. */
	while (live) {
		struct tpl *n = live->next;
		tpl_destroy(live);
		live = n;
	}
	while (retired) {
		struct tpl *n = retired->next;
		tpl_destroy(retired);
		retired = n;
	}
	if (building) {
		/* A bake thread still uses ts; the process is exiting, so leave the
		 * bookkeeping to it rather than freeing under it. */
		log_kv(LOG_WARN, "template.build.abandoned", "running=%d", building);
		return;
	}
	for (struct build *b = ts->builds; b;) {
		struct build *n = b->next;
		free(b);
		b = n;
	}
	pthread_mutex_destroy(&ts->lock);
	free(ts);
}
