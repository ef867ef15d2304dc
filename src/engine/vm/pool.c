/*
 * pool.c - ready sandboxes per template (see pool.h).
 *
 * One refill thread per pool keeps `size` entries: each is a run directory
 * <pool_dir>/e-<random> whose QEMU is restored and running, its agent
 * connected and its exec path warm.  pool_take hands the oldest entry to
 * the caller's thread (rename into run_dir, then the hand-out steps of
 * pool.h).  Entries whose QEMU or agent died are replaced.
 * Locking: mu guards ready[], nready, size, stats and stop; entries are
 * made, warmed and discarded outside it.
 */
#include "engine/vm/pool.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/deadline.h"
#include "common/log.h"
#include "common/util.h"
#include "engine/guest/guest_conn.h"
#include "engine/guest/guest_run.h"
#include "engine/vm/vm_int.h"

/* Bound on making one entry (launch, restore, warm-up), ms. */
#define POOL_MAKE_MS 120000
/* After a failed entry, wait this long before the next attempt, ms; it
 * doubles with each failure in a row, up to POOL_BACKOFF_MAX_MS (a host too
 * loaded to finish one should not spend its CPU on restores that time out). */
#define POOL_BACKOFF_MS 2000
#define POOL_BACKOFF_MAX_MS 64000
/* How often a full pool looks for dead entries, ms. */
#define POOL_CHECK_MS 5000
/* Guest-side bound on one warm-up exec, ms. */
#define POOL_WARM_EXEC_MS 60000

struct pool {
	const struct template *t;
	char dir[PATH_MAX];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct vm *ready[POOL_MAX_SIZE]; /* oldest first */
	unsigned nready;
	unsigned size;
	struct pool_stats st;
	int stop;
	int have_thread;
	int low_warned;                  /* a CPU weight that could not be set was logged */
	pid_t making;                    /* QEMU of the entry being made, 0 if none */
	unsigned fails;                  /* entries that failed in a row */
	pthread_t thr;
};

/* Kill and remove entries left by an earlier process. */
static void clean_stale(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "e-", 2) != 0)
			continue;
		char sub[PATH_MAX], pidpath[PATH_MAX], *data = NULL;
		size_t len = 0;
		if (engine_path_join(sub, dir, de->d_name) < 0 ||
		    engine_path_join(pidpath, sub, "qemu.pid") < 0)
			continue;
		if (util_read_file(pidpath, 64, &data, &len) == 0) {
			long pid = strtol(data, NULL, 10);
			free(data);
			char cmd[64], *cl = NULL;
			snprintf(cmd, sizeof(cmd), "/proc/%ld/cmdline", pid);
			/* Only a QEMU whose command line names this entry. */
			if (pid > 1 && util_read_file(cmd, 256 * 1024, &cl, &len) == 0) {
				int mine = 0;
				for (size_t off = 0; off < len && !mine; off += strlen(cl + off) + 1)
					mine = strstr(cl + off, sub) != NULL;
				free(cl);
				if (mine)
					kill((pid_t)pid, SIGKILL);
			}
		}
		util_rm_rf(sub);
		log_kv(LOG_INFO, "pool.stale_removed", "entry=%s", de->d_name);
	}
	closedir(d);
}

/* 1 if entry v can still be handed out: QEMU alive, agent connected. */
static int entry_ok(struct vm *v)
{
	return vm_alive(v) && vm_agent(v) != NULL;
}

/* Lower v's CPU weight (low 1) or give it back (0); a host where that
 * cannot be done is logged once (the pool then works at normal priority). */
static void set_low(struct pool *p, struct vm *v, int low)
{
	int r = vm_set_cpu_low(v, low);
	if (r < 0 && !p->low_warned) {
		p->low_warned = 1;
		log_kv(LOG_WARN, "pool.cpu_weight_unavailable", "template=%s err=%d", template_name(p->t), r);
	}
}

/* Run `true` in the new entry so that its exec path is translated. */
static int warm(struct vm *v, struct vm_err *err)
{
	struct guest_run_exec_opts o = {.timeout_ms = POOL_WARM_EXEC_MS};
	for (int i = 0; i < POOL_WARM_EXECS; i++) {
		struct guest_run_result res;
		int r = guest_run_exec(vm_agent(v), "true", &o, &res);
		int code = res.exit_code;
		guest_run_result_free(&res);
		if (r == 0 && code != 0)
			r = -EIO;
		if (r < 0) {
			snprintf(err->msg, sizeof(err->msg), "warm-up exec failed: %s", strerror(-r));
			return r;
		}
	}
	return 0;
}

/* Make one ready entry in a fresh folder under p->dir. */
static int make_entry(struct pool *p, struct vm **out, struct vm_err *err)
{
	char dir[PATH_MAX], name[32], hex[17];
	unsigned char rnd[8];
	int64_t deadline = util_now_ms() + POOL_MAKE_MS, t0 = util_now_ms();
	util_random(rnd, sizeof(rnd));
	util_hex(rnd, sizeof(rnd), hex);
	snprintf(name, sizeof(name), "e-%s", hex);
	struct vm *v = NULL;
	int r = engine_path_join(dir, p->dir, name);
	if (r == 0)
		r = vm_launch_clone(p->t, dir, 1, deadline, &v, err);
	if (r < 0)
		return r;
	set_low(p, v, 1);
	/* pool_free kills it to end a make that would wait for its deadline */
	pthread_mutex_lock(&p->mu);
	p->making = p->stop ? 0 : vm_pid(v);
	r = p->stop ? -ECANCELED : 0;
	pthread_mutex_unlock(&p->mu);
	if (r == 0 && (r = vm_finish_restore(v, p->t, NULL, deadline, err)) == 0)
		r = warm(v, err);
	pthread_mutex_lock(&p->mu);
	p->making = 0;
	pthread_mutex_unlock(&p->mu);
	if (r < 0) {
		vm_discard(v);
		return r;
	}
	log_kv(LOG_DEBUG, "pool.entry_ready", "template=%s pid=%d ms=%lld", template_name(p->t),
	       (int)vm_pid(v), (long long)(util_now_ms() - t0));
	*out = v;
	return 0;
}

/* Drop ready entries that died; mu held (released while discarding). */
static void drop_dead_locked(struct pool *p)
{
	for (unsigned i = 0; i < p->nready;) {
		if (entry_ok(p->ready[i])) {
			i++;
			continue;
		}
		struct vm *dead = p->ready[i];
		memmove(&p->ready[i], &p->ready[i + 1], (p->nready - i - 1) * sizeof(p->ready[0]));
		p->nready--;
		p->st.died++;
		pthread_mutex_unlock(&p->mu);
		log_kv(LOG_WARN, "pool.entry_died", "template=%s pid=%d", template_name(p->t),
		       (int)vm_pid(dead));
		vm_discard(dead);
		pthread_mutex_lock(&p->mu);
	}
}

static void *refill(void *arg)
{
	struct pool *p = arg;
	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		drop_dead_locked(p);
		if (p->stop)
			break;
		if (p->nready >= p->size) {
			deadline_cond_wait(&p->cv, &p->mu, deadline_after(POOL_CHECK_MS));
			continue;
		}
		pthread_mutex_unlock(&p->mu);
		struct vm *v = NULL;
		struct vm_err err = {{0}};
		int r = make_entry(p, &v, &err);
		pthread_mutex_lock(&p->mu);
		if (r < 0) {
			p->st.make_failed++;
			int64_t wait = (int64_t)POOL_BACKOFF_MS << (p->fails < 5 ? p->fails : 5);
			if (wait > POOL_BACKOFF_MAX_MS)
				wait = POOL_BACKOFF_MAX_MS;
			p->fails++;
			char q[300];
			log_kv(LOG_WARN, "pool.make_failed",
			       "template=%s err=%d in_a_row=%u retry_ms=%lld msg=%s", template_name(p->t), r,
			       p->fails, (long long)wait, log_quote(err.msg, q, sizeof(q)));
			/* takes wake the thread: wait out the whole backoff */
			int64_t until = deadline_after(wait);
			while (!p->stop && deadline_cond_wait(&p->cv, &p->mu, until) == 0)
				;
			continue;
		}
		p->fails = 0;
		if (p->stop || p->nready >= p->size) {
			pthread_mutex_unlock(&p->mu);
			vm_discard(v);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		p->ready[p->nready++] = v;
		p->st.made++;
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int pool_new(const struct template *t, const char *pool_dir, unsigned size, struct pool **out)
{
	if (!t || !pool_dir || pool_dir[0] != '/' || strlen(pool_dir) >= PATH_MAX - 64)
		return -EINVAL;
	if (size > POOL_MAX_SIZE)
		return -E2BIG;
	struct pool *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->t = t;
	p->size = size;
	p->st.size = size;
	snprintf(p->dir, sizeof(p->dir), "%s", pool_dir);
	int r = util_mkdir_p(p->dir, 0750);
	if (r < 0) {
		free(p);
		return r;
	}
	clean_stale(p->dir);
	if ((r = deadline_cond_init(&p->cv)) < 0) {
		free(p);
		return r;
	}
	pthread_mutex_init(&p->mu, NULL);
	if (size > 0) {
		if ((r = pthread_create(&p->thr, NULL, refill, p)) != 0) {
			pthread_cond_destroy(&p->cv);
			pthread_mutex_destroy(&p->mu);
			free(p);
			return -r;
		}
		p->have_thread = 1;
	}
	*out = p;
	return 0;
}

/* Take the oldest entry that is still fine; NULL if none. */
static struct vm *pop_ready(struct pool *p)
{
	struct vm *v = NULL;
	pthread_mutex_lock(&p->mu);
	while (p->nready > 0 && !v) {
		v = p->ready[0];
		memmove(&p->ready[0], &p->ready[1], (p->nready - 1) * sizeof(p->ready[0]));
		p->nready--;
		if (!entry_ok(v)) {
			p->st.died++;
			pthread_mutex_unlock(&p->mu);
			vm_discard(v);
			v = NULL;
			pthread_mutex_lock(&p->mu);
		}
	}
	if (!v)
		p->st.misses++;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return v;
}

/* ms with one decimal from us, for the log. */
static double ms1(int64_t us)
{
	return (double)us / 1000.0;
}

int pool_take(struct pool *p, const char *run_dir, const struct guest_restore_opts *gopts,
	      int timeout_ms, struct vm **out, struct vm_err *err)
{
	int64_t deadline = util_now_ms() + timeout_ms, t0 = util_now_us();
	err->msg[0] = '\0';
	if (!run_dir || strlen(run_dir) >= PATH_MAX - 64 || run_dir[0] != '/')
		return -EINVAL;
	struct vm *v = pop_ready(p);
	if (!v)
		return -EAGAIN;
	int r = 0;
	if (rename(v->run_dir, run_dir) < 0) {
		r = -errno;
		snprintf(err->msg, sizeof(err->msg), "cannot move a pool entry: %s", strerror(-r));
	} else {
		snprintf(v->run_dir, sizeof(v->run_dir), "%s", run_dir);
	}
	int64_t t1 = util_now_us();
	if (r == 0)
		set_low(p, v, 0);
	int64_t t2 = util_now_us();
	/* The restore's END comes after the guest's after-restore hooks, which
	 * must have run before the sandbox is handed out (docs/snapshots.md):
	 * awaited when the entry's guest has hooks (its first restore listed
	 * them).  Otherwise sent, not awaited (a pooled create stays a few ms
	 * under TCG): the new owner's first request waits for its END. */
	int hooks = r == 0 ? guest_conn_restore_hooks_found(v->agent) : 0;
	if (r == 0 && hooks > 0)
		r = guest_conn_restore(v->agent, gopts, vm_left_ms(deadline) + 1);
	else if (r == 0)
		r = guest_conn_restore_send(v->agent, gopts, vm_left_ms(deadline) + 1);
	if (r < 0)
		vm_fail_msg(v, err, "the agent's restore failed", r);
	int64_t t3 = util_now_us();
	if (r == 0 && (r = vm_write_json(v)) < 0)
		snprintf(err->msg, sizeof(err->msg), "cannot write vm.json: %s", strerror(-r));
	if (r == 0)
		r = vm_handed_out(v);
	pthread_mutex_lock(&p->mu);
	if (r < 0)
		p->st.take_failed++;
	else
		p->st.hits++;
	pthread_mutex_unlock(&p->mu);
	if (r < 0) {
		vm_discard(v); /* removes run_dir too when the rename was done */
		return r == -EAGAIN ? -EIO : r;
	}
	int64_t t4 = util_now_us();
	log_kv(LOG_DEBUG, "pool.take_phases",
	       "template=%s pid=%d hooks=%d rename_ms=%.1f weight_ms=%.1f restore_ms=%.1f "
	       "vm_json_ms=%.1f total_ms=%.1f",
	       template_name(p->t), (int)v->pid, hooks, ms1(t1 - t0), ms1(t2 - t1), ms1(t3 - t2),
	       ms1(t4 - t3),
	       ms1(t4 - t0));
	*out = v;
	return 0;
}

unsigned pool_ready(struct pool *p)
{
	pthread_mutex_lock(&p->mu);
	unsigned n = p->nready;
	pthread_mutex_unlock(&p->mu);
	return n;
}

void pool_get_stats(struct pool *p, struct pool_stats *out)
{
	pthread_mutex_lock(&p->mu);
	*out = p->st;
	out->size = p->size;
	out->ready = p->nready;
	pthread_mutex_unlock(&p->mu);
}

void pool_free(struct pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	if (p->making > 0)
		kill(p->making, SIGKILL);
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (p->have_thread)
		pthread_join(p->thr, NULL);
	for (unsigned i = 0; i < p->nready; i++)
		vm_discard(p->ready[i]);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
