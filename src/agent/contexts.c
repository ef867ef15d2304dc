/*
 * contexts.c - the registry of code contexts, the routing of their kernel
 * events to streams, and the idle reaper (see contexts.h).
 *
 * Threads: the loop thread only (the kernels' own threads never call in
 * here; they signal kernel_ctx_fd).
 */
#include "agent/contexts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "common/log.h"
#include "common/util.h"

/* Bounds on the reaper's sleep, ms. */
#define REAP_MIN_MS 100
#define REAP_MAX_MS 60000
/* Kernel events handled per wake of the loop (on_events). */
#define CONTEXT_EVENTS_BATCH 64

static struct agent_context *head;      /* oldest first */
static unsigned count;
static struct agent_env *g_env;         /* the loop's, from the first create */
static struct loop_timer reaper;
static int reaper_ready;

static void on_events(struct loop_watch *w, uint32_t ev);
static void on_reap(struct loop_timer *t, int64_t now);

struct agent_context *contexts_find(const char *id)
{
	for (struct agent_context *c = head; c; c = c->next)
		if (strcmp(c->id, id) == 0)
			return c;
	return NULL;
}

/*
 * ms the context has been idle: since its kernel last worked, or since a
 * caller last waited on it if that is later.  A run's answer can reach the
 * host long after the kernel finished it (17 MiB of output took seconds
 * under TCG): the reaper must not count that time as idle.
 */
static int64_t ctx_idle_ms(const struct agent_context *c)
{
	int64_t idle = kernel_ctx_idle_ms(c->k);
	int64_t since = util_now_ms() - c->last_wait_ms;
	if (since < 0)
		since = 0;
	return since < idle ? since : idle;
}

void contexts_wait_link(struct agent_context *c, struct context_wait *w)
{
	w->ctx = c;
	c->last_wait_ms = util_now_ms();
	if (w->exec_id == 0) {
		c->creator = w;
		return;
	}
	w->next = c->runs;
	c->runs = w;
}

void contexts_wait_unlink(struct context_wait *w)
{
	struct agent_context *c = w->ctx;
	if (!c)
		return;
	c->last_wait_ms = util_now_ms();
	if (c->creator == w) {
		c->creator = NULL;
	} else {
		for (struct context_wait **pp = &c->runs; *pp; pp = &(*pp)->next) {
			if (*pp == w) {
				*pp = w->next;
				break;
			}
		}
	}
	w->ctx = NULL;
	w->next = NULL;
}

/* (Re)arm the reaper for the earliest context that could expire. */
static void schedule_reap(void)
{
	if (!g_env || !reaper_ready)
		return;
	if (!head) {
		loop_timer_cancel(g_env->loop, &reaper);
		return;
	}
	int64_t now = util_now_ms(), due = now + REAP_MAX_MS;
	for (struct agent_context *c = head; c; c = c->next) {
		int64_t idle = ctx_idle_ms(c);
		int64_t left = c->idle_timeout_ms - idle;
		if (idle == 0 || c->creator || c->runs)
			left = c->idle_timeout_ms;
		if (now + left < due)
			due = now + left;
	}
	if (due < now + REAP_MIN_MS)
		due = now + REAP_MIN_MS;
	loop_timer_arm(g_env->loop, &reaper, due);
}

void contexts_notebook_path(const char *id, const char *want, char *out, size_t outlen)
{
	if (want) {
		snprintf(out, outlen, "%s", want);
		return;
	}
	for (struct agent_context *c = head; c; c = c->next) {
		if (strcmp(c->nb.path, CONTEXTS_NOTEBOOK_DEFAULT) == 0) {
			snprintf(out, outlen, "%s/notebook-%s.ipynb", CONTEXTS_NOTEBOOK_DIR, id);
			return;
		}
	}
	snprintf(out, outlen, "%s", CONTEXTS_NOTEBOOK_DEFAULT);
}

int contexts_create(struct agent_env *env, const char *id, const struct kernel_opts *o,
		    int64_t idle_timeout_ms, const char *notebook, struct agent_context **out)
{
	*out = NULL;
	if (!id || strlen(id) > AGENT_REQ_CTX_ID_MAX)
		return -EINVAL;
	if (contexts_find(id))
		return -EEXIST;
	if (count >= CONTEXTS_MAX)
		return -EMFILE;
	if (!reaper_ready) {
		loop_timer_init(&reaper, on_reap, NULL);
		reaper_ready = 1;
	}
	g_env = env;
	struct agent_context *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	snprintf(c->id, sizeof(c->id), "%s", id);
	snprintf(c->cwd, sizeof(c->cwd), "%s", o->cwd ? o->cwd : "");
	c->idle_timeout_ms = idle_timeout_ms > 0 ? idle_timeout_ms : CONTEXT_IDLE_DEFAULT_MS;
	c->created_wall_ms = (int64_t)(util_wall_ns() / 1000000u);
	c->last_wait_ms = util_now_ms();
	notebook_init(&c->nb, notebook);
	int r = kernel_ctx_create(o, &c->k);
	if (r < 0) {
		free(c);
		return r;
	}
	loop_watch_init(&c->w, on_events, c);
	r = loop_watch_add(env->loop, &c->w, kernel_ctx_fd(c->k), EPOLLIN);
	if (r < 0) {
		kernel_ctx_destroy(c->k);
		free(c);
		return r;
	}
	struct agent_context **pp = &head;
	while (*pp)
		pp = &(*pp)->next;
	*pp = c;
	count++;
	log_kv(LOG_INFO, "context.created", "id=%s contexts=%u", c->id, count);
	schedule_reap();
	*out = c;
	return 0;
}

/* End w's stream with an error and detach it. */
static void end_wait(struct context_wait *w, int err, const char *why)
{
	struct astream *s = w->s;
	contexts_wait_unlink(w);
	astream_end_err(s, err, "%s", why);
}

void contexts_destroy(struct agent_context *c, int err, const char *why)
{
	if (!c)
		return;
	if (c->creator)
		end_wait(c->creator, err, why);
	while (c->runs)
		end_wait(c->runs, err, why);
	for (struct agent_context **pp = &head; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			count--;
			break;
		}
	}
	if (g_env)
		loop_watch_del(g_env->loop, &c->w);
	kernel_ctx_destroy(c->k);
	notebook_free(&c->nb);
	char q[160];
	log_kv(LOG_INFO, "context.destroyed", "id=%s why=%s contexts=%u", c->id,
	       log_quote(why, q, sizeof(q)), count);
	free(c);
	schedule_reap();
}

json_t *contexts_json(struct agent_context *c)
{
	int64_t idle = ctx_idle_ms(c);
	json_t *o = json_pack("{s:s, s:s, s:s?, s:s?, s:I, s:b, s:b, s:I, s:I, s:s?, s:I, s:s?}",
			      "id", c->id, "language", "python", "kernel",
			      c->ready ? c->kernel : NULL, "language_version",
			      c->ready ? c->version : NULL, "pid", (json_int_t)c->pid, "ready",
			      c->ready, "busy", c->runs != NULL, "idle_ms",
			      (json_int_t)idle, "created_at_ms", (json_int_t)c->created_wall_ms,
			      "cwd", c->cwd[0] ? c->cwd : NULL, "restarts",
			      (json_int_t)c->restarts, "last_restart",
			      c->last_restart[0] ? c->last_restart : NULL);
	if (o)
		json_object_set_new(o, "notebook", c->nb.path[0] ? json_string(c->nb.path) : json_null());
	return o;
}

json_t *contexts_list_json(void)
{
	json_t *arr = json_array();
	for (struct agent_context *c = head; arr && c; c = c->next) {
		json_t *o = contexts_json(c);
		if (!o || json_array_append_new(arr, o) < 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr ? json_pack("{s:o}", "contexts", arr) : NULL;
}

/* Copy a string field of ev into out (outlen bytes), if it is one. */
static void copy_field(json_t *ev, const char *name, char *out, size_t outlen)
{
	const char *v = json_string_value(json_object_get(ev, name));
	if (v)
		snprintf(out, outlen, "%s", v);
}

/*
 * An event of the context itself (exec id 0).  Returns 1 if the context
 * must be destroyed (its kernel never started), else 0.
 */
static int on_context_event(struct agent_context *c, json_t *ev)
{
	const char *type = json_string_value(json_object_get(ev, "type"));
	if (!type)
		return 0;
	if (strcmp(type, "ready") == 0) {
		c->ready = 1;
		copy_field(ev, "kernel", c->kernel, sizeof(c->kernel));
		copy_field(ev, "language_version", c->version, sizeof(c->version));
		json_t *pid = json_object_get(ev, "pid");
		c->pid = json_is_integer(pid) ? (long)json_integer_value(pid) : 0;
		if (c->creator) {
			struct context_wait *w = c->creator;
			struct astream *s = w->s;
			contexts_wait_unlink(w);
			astream_end(s, contexts_json(c));
		}
		return 0;
	}
	if (strcmp(type, "restarted") == 0) {
		c->restarts++;
		c->pid = 0;
		copy_field(ev, "reason", c->last_restart, sizeof(c->last_restart));
		char q[300];
		log_kv(LOG_INFO, "context.kernel_restarted", "id=%s reason=%s", c->id,
		       log_quote(c->last_restart, q, sizeof(q)));
		return 0;
	}
	if (strcmp(type, "failed") == 0) {
		const char *e = json_string_value(json_object_get(ev, "error"));
		char q[300];
		log_kv(LOG_WARN, "context.kernel_failed", "id=%s ready=%d error=%s", c->id,
		       c->ready, log_quote(e ? e : "?", q, sizeof(q)));
		if (!c->ready) {
			if (c->creator)
				end_wait(c->creator, EIO, e ? e : "the kernel could not start");
			return 1;
		}
	}
	return 0;
}

/* An event of run exec_id: to its stream, if it still has one. */
static void on_exec_event(struct agent_context *c, uint64_t exec_id, json_t *ev)
{
	notebook_event(&c->nb, exec_id, ev);
	struct context_wait *w = c->runs;
	while (w && w->exec_id != exec_id)
		w = w->next;
	if (!w) {
		json_decref(ev); /* its stream was cancelled or went away */
		return;
	}
	const char *type = json_string_value(json_object_get(ev, "type"));
	struct astream *s = w->s;
	if (type && strcmp(type, "done") == 0) {
		contexts_wait_unlink(w);
		json_object_del(ev, "type");
		astream_end(s, ev);
		return;
	}
	if (astream_event(s, ev) == -E2BIG) {
		/* a stream text full of escapes can outgrow a frame: say so */
		json_t *m = json_pack("{s:s, s:s}", "type", "stderr", "text",
				      "\n[pandastack: an output event too large for the agent "
				      "protocol was dropped]\n");
		astream_event(s, m);
	}
}

static void on_events(struct loop_watch *lw, uint32_t revents)
{
	(void)revents;
	struct agent_context *c = lw->ctx;
	uint64_t exec_id;
	json_t *ev;
	int doomed = 0;
	/* A bounded batch: a cell flooding output must not keep the loop from
	 * the host's frames (a CANCEL, another request).  The eventfd is read
	 * only once the queue is empty, so the loop comes back for the rest. */
	for (unsigned k = 0; k < CONTEXT_EVENTS_BATCH && !doomed &&
			     kernel_ctx_next_event(c->k, &exec_id, &ev) == 0;
	     k++) {
		if (exec_id == 0) {
			doomed = on_context_event(c, ev);
			json_decref(ev);
		} else {
			on_exec_event(c, exec_id, ev);
		}
	}
	if (doomed)
		contexts_destroy(c, EIO, "the kernel could not start");
}

static void on_reap(struct loop_timer *t, int64_t now)
{
	(void)t;
	(void)now;
	struct agent_context *c = head;
	while (c) {
		struct agent_context *next = c->next;
		if (!c->creator && !c->runs && ctx_idle_ms(c) >= c->idle_timeout_ms) {
			log_kv(LOG_INFO, "context.reaped", "id=%s idle_timeout_ms=%lld", c->id,
			       (long long)c->idle_timeout_ms);
			contexts_destroy(c, ETIMEDOUT, "the context was idle too long");
		}
		c = next;
	}
	schedule_reap();
}

void contexts_shutdown(int64_t wait_ms)
{
	while (head)
		contexts_destroy(head, ESHUTDOWN, "the agent is stopping");
	kernel_pool_stop();
	if (kernel_wait_all(wait_ms) < 0)
		log_kv(LOG_WARN, "context.shutdown_slow", "wait_ms=%lld", (long long)wait_ms);
}
