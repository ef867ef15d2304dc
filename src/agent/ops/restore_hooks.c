/*
 * restore_hooks.c - the guest's after-restore hooks (see restore_hooks.h).
 *
 * One hook runs at a time.  Its two pipes are read into one capped buffer
 * as they fill; its exit (the loop's reaper) ends it, or its timer (its own
 * timeout or the caller's deadline, whichever comes first) kills its tree
 * and waits RESTORE_HOOK_KILL_WAIT_MS for the exit.  Then the next hook
 * starts, from the loop (a timer due at once), never from inside a callback
 * of the one that ended.
 *
 * Threads: the loop thread only.
 */
#include "agent/ops/restore_hooks.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/child.h"
#include "common/log.h"
#include "common/utf8.h"
#include "common/util.h"

#define NAME_MAX_BYTES 255

/* One hook: its name, then what happened. */
struct hook {
	char name[NAME_MAX_BYTES + 1];
	int ran;                 /* started (or tried to) */
	int skipped;             /* not started: the deadline, or past the count */
	int spawn_err;           /* could not be started: its errno */
	int status;              /* wait status once reaped */
	int reaped;
	int lost;                /* killed, not reaped in time: left to the reaper */
	int timed_out;
	int64_t start_ms, end_ms;
	char out[RESTORE_HOOK_OUTPUT_MAX];
	size_t outlen;
	int truncated;
};

struct restore_hooks {
	struct agent_env *env;
	char dir[AGENT_REQ_PATH_MAX + 1];
	char id_var[64 + AGENT_REQ_CTX_ID_MAX];   /* PANDASTACK_SANDBOX_ID=... */
	int64_t deadline_ms;
	restore_hooks_done_cb done;
	void *ctx;
	struct hook *hooks;
	size_t n, cur;            /* cur: the running one, or n when none runs */
	size_t next;              /* the next to start */
	int finished;
	struct child ch;
	int ch_live;              /* ch holds a started hook not yet settled */
	int fd[2];                /* its stdout and stderr, -1 once closed */
	struct loop_watch w[2];
	struct loop_timer timer;  /* the running hook's time, then its kill wait */
	struct loop_timer kick;   /* start the next hook from the loop */
	int killing;
};

static int name_ok(const char *n)
{
	size_t len = strlen(n);
	if (len == 0 || len > NAME_MAX_BYTES || n[0] == '.')
		return 0;
	return strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
	       len;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct hook *)a)->name, ((const struct hook *)b)->name);
}

/*
 * The folder as it was when it was last found empty (no entry at all), so
 * that a restore of a guest without hooks (the usual case) costs one stat:
 * under TCG a clone's first directory read runs much guest code that was
 * never translated in its QEMU.  Any entry added since changes the
 * folder's mtime; an entry that is there but not a hook is no "empty".
 */
static struct {
	int valid;
	char dir[AGENT_REQ_PATH_MAX + 1];
	dev_t dev;
	ino_t ino;
	struct timespec mtime, ctime;
} empty_seen;

static int same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* The hooks of h->dir, sorted; those past RESTORE_HOOKS_MAX skipped.  A
 * folder that cannot be read holds none (logged unless missing). */
static int list_hooks(struct restore_hooks *h)
{
	struct stat ds;
	int have_stat = stat(h->dir, &ds) == 0;
	if (have_stat && empty_seen.valid && !strcmp(empty_seen.dir, h->dir) &&
	    empty_seen.dev == ds.st_dev && empty_seen.ino == ds.st_ino &&
	    same_time(&empty_seen.mtime, &ds.st_mtim) && same_time(&empty_seen.ctime, &ds.st_ctim))
		return 0;
	DIR *d = opendir(h->dir);
	if (!d) {
		if (errno != ENOENT && errno != ENOTDIR)
			log_kv(LOG_WARN, "agent.restore_hooks_dir", "errno=%d", errno);
		return 0;
	}
	size_t cap = 0;
	struct dirent *de;
	unsigned ignored = 0, entries = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		entries++;
		char path[AGENT_REQ_PATH_MAX + NAME_MAX_BYTES + 2];
		struct stat st;
		if (!name_ok(de->d_name) ||
		    snprintf(path, sizeof(path), "%s/%s", h->dir, de->d_name) >= (int)sizeof(path) ||
		    stat(path, &st) < 0 || !S_ISREG(st.st_mode) || access(path, X_OK) < 0) {
			ignored++;
			continue;
		}
		if (h->n == cap) {
			size_t ncap = cap ? 2 * cap : 8;
			struct hook *nh = realloc(h->hooks, ncap * sizeof(*nh));
			if (!nh) {
				closedir(d);
				return -ENOMEM;
			}
			h->hooks = nh;
			cap = ncap;
		}
		struct hook *k = &h->hooks[h->n++];
		memset(k, 0, sizeof(*k));
		snprintf(k->name, sizeof(k->name), "%s", de->d_name);
	}
	closedir(d);
	/* only a folder quiet for a second: an entry added within the
	 * timestamps' granularity of the last change would not show */
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	empty_seen.valid = entries == 0 && have_stat && ds.st_mtim.tv_sec + 1 < now.tv_sec &&
			   ds.st_ctim.tv_sec + 1 < now.tv_sec;
	if (empty_seen.valid) {
		snprintf(empty_seen.dir, sizeof(empty_seen.dir), "%s", h->dir);
		empty_seen.dev = ds.st_dev;
		empty_seen.ino = ds.st_ino;
		empty_seen.mtime = ds.st_mtim;
		empty_seen.ctime = ds.st_ctim;
	}
	if (h->n > 1)
		qsort(h->hooks, h->n, sizeof(*h->hooks), by_name);
	for (size_t i = RESTORE_HOOKS_MAX; i < h->n; i++)
		h->hooks[i].skipped = 1;
	if (ignored)
		log_kv(LOG_INFO, "agent.restore_hooks_ignored", "entries=%u", ignored);
	return 0;
}

/* Single-quote s for sh -c into out (n bytes).  0, or -ENAMETOOLONG. */
static int sh_quote(const char *s, char *out, size_t n)
{
	size_t o = 0;
	if (n < 3)
		return -ENAMETOOLONG;
	out[o++] = '\'';
	for (; *s; s++) {
		const char *piece = *s == '\'' ? "'\\''" : NULL;
		size_t pl = piece ? 4 : 1;
		if (o + pl + 2 > n)
			return -ENAMETOOLONG;
		if (piece)
			memcpy(out + o, piece, pl);
		else
			out[o] = *s;
		o += pl;
	}
	out[o++] = '\'';
	out[o] = '\0';
	return 0;
}

/* --- the running hook ------------------------------------------------------- */

static void close_pipe(struct restore_hooks *h, int i)
{
	loop_watch_del(h->env->loop, &h->w[i]);
	if (h->fd[i] >= 0)
		close(h->fd[i]);
	h->fd[i] = -1;
}

/* Read what pipe i holds now (at most a few reads), keeping the first
 * RESTORE_HOOK_OUTPUT_MAX bytes of the hook's output. */
static void read_pipe(struct restore_hooks *h, int i)
{
	struct hook *k = &h->hooks[h->cur];
	char buf[16384];
	for (int reads = 0; reads < 8 && h->fd[i] >= 0; reads++) {
		ssize_t r = read(h->fd[i], buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (r <= 0) {
			close_pipe(h, i);
			return;
		}
		size_t keep = (size_t)r;
		if (keep > sizeof(k->out) - k->outlen) {
			keep = sizeof(k->out) - k->outlen;
			k->truncated = 1;
		}
		memcpy(k->out + k->outlen, buf, keep);
		k->outlen += keep;
	}
}

static void on_pipe(struct loop_watch *w, uint32_t ev)
{
	(void)ev;
	struct restore_hooks *h = w->ctx;
	read_pipe(h, w == &h->w[0] ? 0 : 1);
}

/* The running hook is over (reaped, or lost after a kill): read what is
 * left, close everything, log it and start the next one from the loop. */
static void settle(struct restore_hooks *h)
{
	struct hook *k = &h->hooks[h->cur];
	struct loop *l = h->env->loop;
	for (int i = 0; i < 2; i++) {
		if (h->fd[i] >= 0)
			read_pipe(h, i);
		close_pipe(h, i);
	}
	loop_timer_cancel(l, &h->timer);
	if (h->ch.err_fd >= 0) {
		int e = 0;
		if (k->reaped && child_read_error(&h->ch, &e) && e)
			k->spawn_err = e;
		close(h->ch.err_fd);
		h->ch.err_fd = -1;
	}
	if (h->ch.has_cg)
		cgroup_exec_release(&h->ch.cg);
	h->ch.has_cg = 0;
	h->ch_live = 0;
	h->killing = 0;
	k->end_ms = util_now_ms();
	char q[300];
	log_kv(k->timed_out || !k->reaped || k->status || k->spawn_err ? LOG_WARN : LOG_INFO,
	       "agent.restore_hook", "name=%s status=%d timed_out=%d lost=%d ms=%lld",
	       log_quote(k->name, q, sizeof(q)), k->reaped ? k->status : -1, k->timed_out, k->lost,
	       (long long)(k->end_ms - k->start_ms));
	h->cur = h->n;
	loop_timer_arm(l, &h->kick, util_now_ms());
}

static void on_exit_status(void *ctx, pid_t pid, int status)
{
	(void)pid;
	struct restore_hooks *h = ctx;
	struct hook *k = &h->hooks[h->cur];
	k->reaped = 1;
	k->status = status;
	settle(h);
}

static void on_timer(struct loop_timer *t, int64_t now)
{
	(void)now;
	struct restore_hooks *h = t->ctx;
	struct hook *k = &h->hooks[h->cur];
	if (!h->killing) {
		/* over its time: kill the tree, give it a moment to be reaped */
		k->timed_out = 1;
		h->killing = 1;
		child_kill_tree(&h->ch, 0);
		loop_timer_arm(h->env->loop, t, util_now_ms() + RESTORE_HOOK_KILL_WAIT_MS);
		return;
	}
	/* killed and still not reaped (stuck in the kernel): move on */
	k->lost = 1;
	loop_child_forget(h->env->loop, h->ch.pid);
	settle(h);
}

/* Start hook i.  0, or -errno (the hook is then recorded as failed). */
static int start_one(struct restore_hooks *h, size_t i)
{
	struct hook *k = &h->hooks[i];
	char path[AGENT_REQ_PATH_MAX + NAME_MAX_BYTES + 2];
	char cmd[2 * sizeof(path) + 16], quoted[2 * sizeof(path) + 8];
	snprintf(path, sizeof(path), "%s/%s", h->dir, k->name);
	if (sh_quote(path, quoted, sizeof(quoted)) < 0)
		return -ENAMETOOLONG;
	snprintf(cmd, sizeof(cmd), "exec %s", quoted);
	char *envp_add[] = {h->id_var, NULL};
	struct agent_req req = {.env = envp_add, .nenv = h->id_var[0] ? 1 : 0};
	char **envp = agent_env_build(&req);
	if (!envp)
		return -ENOMEM;
	struct stat st;
	const char *cwd = stat(h->env->workdir, &st) == 0 && S_ISDIR(st.st_mode) ? h->env->workdir
										 : "/";
	struct child_spec sp = {.cmd = cmd, .envp = envp, .cwd = cwd};
	int r = child_spawn(h->env, &sp, &h->ch);
	free(envp);
	if (r < 0)
		return r;
	struct loop *l = h->env->loop;
	h->ch_live = 1;
	h->cur = i;
	k->start_ms = util_now_ms();
	if (loop_child_watch(l, h->ch.pid, on_exit_status, h) < 0) {
		child_kill_tree(&h->ch, 0); /* cannot track it: do not leave it running */
		for (int j = 0; j < 2; j++)
			close(h->ch.out_fd[j]);
		close(h->ch.err_fd);
		if (h->ch.has_cg)
			cgroup_exec_release(&h->ch.cg);
		h->ch_live = 0;
		h->cur = h->n;
		return -ENOMEM;
	}
	for (int j = 0; j < 2; j++) {
		h->fd[j] = h->ch.out_fd[j];
		h->ch.out_fd[j] = -1;
		loop_watch_add(l, &h->w[j], h->fd[j], EPOLLIN);
	}
	int64_t due = k->start_ms + RESTORE_HOOK_TIMEOUT_MS;
	loop_timer_arm(l, &h->timer, due < h->deadline_ms ? due : h->deadline_ms);
	return 0;
}

/* Start the next hook that can run, or finish. */
static void advance(struct restore_hooks *h)
{
	while (h->next < h->n) {
		size_t i = h->next++;
		struct hook *k = &h->hooks[i];
		if (k->skipped)
			continue;
		if (util_now_ms() >= h->deadline_ms) {
			k->skipped = 1;
			continue;
		}
		k->ran = 1;
		int r = start_one(h, i);
		if (r == 0)
			return;
		k->spawn_err = -r;
		k->start_ms = k->end_ms = util_now_ms();
		char q[300];
		log_kv(LOG_WARN, "agent.restore_hook_failed", "name=%s errno=%d",
		       log_quote(k->name, q, sizeof(q)), -r);
	}
	if (!h->finished) {
		h->finished = 1;
		if (h->done)
			h->done(h->ctx);
	}
}

static void on_kick(struct loop_timer *t, int64_t now)
{
	(void)now;
	advance(t->ctx);
}

/* --- API ---------------------------------------------------------------------- */

int restore_hooks_start(struct agent_env *env, const char *dir, const char *sandbox_id,
			int64_t deadline_ms, restore_hooks_done_cb done, void *ctx,
			struct restore_hooks **out)
{
	if (!dir || dir[0] != '/' || strlen(dir) > AGENT_REQ_PATH_MAX ||
	    (sandbox_id && strlen(sandbox_id) > AGENT_REQ_CTX_ID_MAX))
		return -EINVAL;
	struct restore_hooks *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->env = env;
	snprintf(h->dir, sizeof(h->dir), "%s", dir);
	if (sandbox_id)
		snprintf(h->id_var, sizeof(h->id_var), "PANDASTACK_SANDBOX_ID=%s", sandbox_id);
	h->deadline_ms = deadline_ms;
	h->done = done;
	h->ctx = ctx;
	h->fd[0] = h->fd[1] = -1;
	h->ch.err_fd = -1;
	for (int i = 0; i < 2; i++)
		loop_watch_init(&h->w[i], on_pipe, h);
	loop_timer_init(&h->timer, on_timer, h);
	loop_timer_init(&h->kick, on_kick, h);
	int r = list_hooks(h);
	if (r < 0) {
		free(h->hooks);
		free(h);
		return r;
	}
	h->cur = h->n;
	h->done = NULL; /* never called from inside this call */
	advance(h);
	h->done = done;
	*out = h;
	return 0;
}

int restore_hooks_count(const char *dir)
{
	if (!dir || dir[0] != '/' || strlen(dir) > AGENT_REQ_PATH_MAX)
		return 0;
	struct restore_hooks h = {0};
	snprintf(h.dir, sizeof(h.dir), "%s", dir);
	int r = list_hooks(&h);
	free(h.hooks);
	if (r < 0)
		return 0;
	return h.n < RESTORE_HOOKS_MAX ? (int)h.n : RESTORE_HOOKS_MAX;
}

int restore_hooks_finished(const struct restore_hooks *h)
{
	return h->finished;
}

json_t *restore_hooks_report(const struct restore_hooks *h, int *failed)
{
	json_t *a = json_array();
	int bad = 0;
	for (size_t i = 0; a && i < h->n; i++) {
		const struct hook *k = &h->hooks[i];
		json_t *o = json_object();
		if (!o || json_array_append_new(a, o) < 0) {
			json_decref(a);
			return NULL;
		}
		json_object_set_new(o, "name", json_string(k->name));
		if (!k->ran || k->skipped) {
			json_object_set_new(o, "skipped", json_true());
			continue;
		}
		int code = 127;
		json_t *sig = json_null();
		if (k->reaped && WIFEXITED(k->status)) {
			code = WEXITSTATUS(k->status);
		} else if (k->reaped && WIFSIGNALED(k->status)) {
			code = 128 + WTERMSIG(k->status);
			json_decref(sig);
			sig = json_integer(WTERMSIG(k->status));
		} else if (!k->spawn_err) {
			code = 128 + SIGKILL; /* killed, never reaped */
			json_decref(sig);
			sig = json_integer(SIGKILL);
		}
		if (k->spawn_err)
			code = 127;
		bad += code != 0 || k->timed_out;
		json_object_set_new(o, "exit_code", json_integer(code));
		json_object_set_new(o, "signal", sig);
		json_object_set_new(o, "timed_out", json_boolean(k->timed_out));
		json_object_set_new(o, "ms", json_integer(k->end_ms - k->start_ms));
		json_object_set_new(o, "output", utf8_json_lossy(k->out, k->outlen));
		json_object_set_new(o, "output_truncated", json_boolean(k->truncated));
		if (k->spawn_err)
			json_object_set_new(o, "error", json_string(strerror(k->spawn_err)));
	}
	if (failed)
		*failed = bad;
	return a;
}

void restore_hooks_free(struct restore_hooks *h)
{
	if (!h)
		return;
	struct loop *l = h->env->loop;
	if (h->ch_live) {
		child_kill_tree(&h->ch, h->hooks[h->cur].reaped);
		loop_child_forget(l, h->ch.pid); /* reaped later as an orphan */
		for (int i = 0; i < 2; i++)
			close_pipe(h, i);
		if (h->ch.err_fd >= 0)
			close(h->ch.err_fd);
		if (h->ch.has_cg)
			cgroup_exec_release(&h->ch.cg);
	}
	loop_timer_cancel(l, &h->timer);
	loop_timer_cancel(l, &h->kick);
	free(h->hooks);
	free(h);
}
