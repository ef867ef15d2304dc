/*
 * pool.c - pre-started clone QEMUs per template (see pool.h).
 *
 * One refill thread per pool keeps `size` entries ready: each is a run
 * directory <pool_dir>/e-<random> with QEMU waiting in -incoming defer,
 * QMP connected and the migration capabilities set.  pool_take hands the
 * oldest entry to the caller (rename into run_dir, then the rest of the
 * restore on the caller's thread).  Dead entries are replaced.
 * Locking: mu guards ready[], nready and stop; QEMU is started and
 * discarded outside the lock.
 */
#include "engine/pool.h"

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
#include "engine/vm_int.h"

#define POOL_MAX_SIZE 64u
#define POOL_LAUNCH_MS 30000
#define POOL_BACKOFF_MS 2000

struct pool {
	const struct template *t;
	char dir[PATH_MAX];
	unsigned size;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct vm *ready[POOL_MAX_SIZE]; /* oldest first */
	unsigned nready;
	int stop;
	int have_thread;
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

static void *refill(void *arg)
{
	struct pool *p = arg;
	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		/* Replace entries whose QEMU died. */
		for (unsigned i = 0; i < p->nready;) {
			if (vm_alive(p->ready[i])) {
				i++;
				continue;
			}
			struct vm *dead = p->ready[i];
			memmove(&p->ready[i], &p->ready[i + 1], (p->nready - i - 1) * sizeof(p->ready[0]));
			p->nready--;
			pthread_mutex_unlock(&p->mu);
			log_kv(LOG_WARN, "pool.entry_died", "template=%s pid=%d", p->t->name, (int)dead->pid);
			vm_discard(dead);
			pthread_mutex_lock(&p->mu);
		}
		if (p->nready < p->size) {
			pthread_mutex_unlock(&p->mu);
			char dir[PATH_MAX], name[32], rnd[8], hex[17];
			util_random(rnd, sizeof(rnd));
			util_hex(rnd, sizeof(rnd), hex);
			snprintf(name, sizeof(name), "e-%s", hex);
			struct vm *v = NULL;
			struct vm_err err;
			int r = engine_path_join(dir, p->dir, name);
			if (r == 0)
				r = vm_launch_clone(p->t, dir, 1, util_now_ms() + POOL_LAUNCH_MS, &v, &err);
			pthread_mutex_lock(&p->mu);
			if (r == 0) {
				if (p->stop || p->nready >= p->size) {
					pthread_mutex_unlock(&p->mu);
					vm_discard(v);
					pthread_mutex_lock(&p->mu);
				} else {
					p->ready[p->nready++] = v;
				}
				continue;
			}
			log_kv(LOG_WARN, "pool.launch_failed", "template=%s err=%d", p->t->name, r);
			deadline_cond_wait(&p->cv, &p->mu, deadline_after(POOL_BACKOFF_MS));
			continue;
		}
		deadline_cond_wait(&p->cv, &p->mu, deadline_after(500));
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

int pool_take(struct pool *p, const char *run_dir, const struct guest_restore_opts *gopts,
	      int timeout_ms, struct vm **out, struct vm_err *err)
{
	int64_t deadline = util_now_ms() + timeout_ms;
	err->msg[0] = '\0';
	if (strlen(run_dir) >= PATH_MAX - 32 || run_dir[0] != '/')
		return -EINVAL;
	struct vm *v = NULL;
	pthread_mutex_lock(&p->mu);
	while (p->nready > 0 && !v) {
		v = p->ready[0];
		memmove(&p->ready[0], &p->ready[1], (p->nready - 1) * sizeof(p->ready[0]));
		p->nready--;
		if (!vm_alive(v)) {
			pthread_mutex_unlock(&p->mu);
			vm_discard(v);
			v = NULL;
			pthread_mutex_lock(&p->mu);
		}
	}
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (!v)
		return -EAGAIN;
	if (rename(v->run_dir, run_dir) < 0) {
		int e = -errno;
		snprintf(err->msg, sizeof(err->msg), "cannot move a pool entry: %s", strerror(-e));
		vm_discard(v);
		return e;
	}
	snprintf(v->run_dir, sizeof(v->run_dir), "%s", run_dir);
	int r = vm_finish_restore(v, p->t, gopts, deadline, err);
	if (r == 0)
		r = vm_handed_out(v);
	if (r < 0) {
		vm_discard(v);
		return r;
	}
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

void pool_free(struct pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
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
