/*
 * op_exec.c - the exec operation (docs/agent-protocol.md, "exec"):
 * /bin/sh -c CMD in its own session and process group (and, when the agent
 * has a cgroup folder, its own cgroup v2 group), stdout and stderr streamed
 * as DATA as they come, then EOF on each and END with the exit status.
 *
 * Output: read from nonblocking pipes only while the stream has room (the
 * host's credit, the queue cap), so a command that writes faster than the
 * host reads is paused by its pipe, never buffered without bound.  Beyond
 * output_cap bytes on a channel the rest is read and discarded and the
 * truncation marker is sent once.
 *
 * Ending: the command's exit is not the end if its pipes are still open
 * (output in flight, or a background job holding them): the exec waits for
 * EOF, but once the main process has exited and the pipes have been found
 * empty for EXEC_DRAIN_GRACE_MS, or a background job has kept writing for
 * EXEC_DRAIN_BUSY_MS, it closes them and ends (background jobs keep
 * running; they get SIGPIPE if they write).  Output held back only by the
 * host's credit is always delivered.  A timeout, a cancel or
 * the host's departure kills the whole tree: cgroup.kill when there is a
 * group, and SIGKILL to the process group while its leader is unreaped (the
 * pgid cannot be reused before that).
 *
 * Threads: the loop thread only.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/astream.h"
#include "agent/child.h"
#include "agent/infeed.h"
#include "common/log.h"
#include "common/util.h"

/* After the main process exits, pipes that stay empty this long are closed. */
#define EXEC_DRAIN_GRACE_MS 300
/* After a kill, pipes still open this long are closed regardless. */
#define EXEC_KILL_DRAIN_MS 2000
/* A background job still writing this long after the command exited:
 * its pipes are closed (the host is not waiting on them for ever). */
#define EXEC_DRAIN_BUSY_MS 5000
#define READS_PER_EVENT 4

static const char *const base_env[] = {
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/root",
	"LANG=C.UTF-8",
};
#define NBASE (sizeof(base_env) / sizeof(base_env[0]))

struct exec_chan {
	struct exec_op *x;
	uint8_t ch;             /* PROTO_CH_STDOUT or PROTO_CH_STDERR */
	int fd;                 /* read end, -1 once closed */
	struct loop_watch w;
	uint64_t sent;          /* bytes sent as DATA (<= cap) */
	int truncated;          /* over the cap: discarding */
	int marker_pending;     /* the truncation marker still has to go */
	int eof_sent;
};

struct exec_op {
	struct astream *s;
	struct child ch;        /* the command; its pipes move into out[] and in */
	int reaped, status;
	int64_t start_ms, exit_ms;
	int timed_out;
	uint64_t cap;
	struct exec_chan out[2];
	struct loop_watch errw; /* on ch.err_fd */
	int child_errno;        /* why the child could not run the shell */
	struct infeed in;       /* the host's input into its stdin pipe */
	struct loop_timer timeout, drain;
	/* CLOCK_MONOTONIC us, for the debug line agent.exec_timing */
	int64_t t_open, t_spawn, t_reaped;
};

static void maybe_finish(struct exec_op *x);

/* --- teardown helpers ------------------------------------------------------ */

static void close_fd_watch(struct exec_op *x, int *fd, struct loop_watch *w)
{
	loop_watch_del(x->s->env->loop, w);
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void kill_tree(struct exec_op *x)
{
	child_kill_tree(&x->ch, x->reaped);
}

/* --- output ---------------------------------------------------------------- */

static void send_marker(struct exec_chan *c)
{
	if (!c->marker_pending)
		return;
	char m[96];
	int n = snprintf(m, sizeof(m), "\n[pandastack: output truncated at %llu bytes]\n",
			 (unsigned long long)c->x->cap);
	if (astream_room(c->x->s) < (uint32_t)n)
		return;
	if (astream_data(c->x->s, c->ch, m, (uint32_t)n) == 0)
		c->marker_pending = 0;
}

/* Ask for readability only when the bytes can go somewhere. */
static void arm_chan(struct exec_chan *c)
{
	if (c->fd < 0)
		return;
	uint32_t ev = (c->truncated || astream_room(c->x->s) > 0) ? EPOLLIN : 0;
	loop_watch_set(c->x->s->env->loop, &c->w, ev);
}

static void chan_eof(struct exec_chan *c)
{
	close_fd_watch(c->x, &c->fd, &c->w);
}

/* How read_chan stopped. */
enum chan_state {
	CHAN_NO_ROOM = 0, /* the host has not granted credit: data waits */
	CHAN_DRAINED = 1, /* found empty (EAGAIN) or at EOF */
	CHAN_BUSY = 2,    /* read its budget and there may be more */
};

/* Read what the pipe holds, within the room and READS_PER_EVENT reads. */
static enum chan_state read_chan(struct exec_chan *c)
{
	static uint8_t buf[PROTO_MAX_DATA];
	struct exec_op *x = c->x;
	for (int i = 0; i < READS_PER_EVENT && c->fd >= 0; i++) {
		size_t want = sizeof(buf);
		if (!c->truncated) {
			uint32_t room = astream_room(x->s);
			if (room == 0)
				return CHAN_NO_ROOM;
			if (room < want)
				want = room;
		}
		ssize_t n = read(c->fd, buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return CHAN_DRAINED;
		if (n <= 0) {
			chan_eof(c);
			return CHAN_DRAINED;
		}
		if (c->truncated)
			continue;
		uint64_t keep = (uint64_t)n;
		if (c->sent + keep > x->cap) {
			keep = x->cap - c->sent;
			c->truncated = 1;
			c->marker_pending = 1;
		}
		if (keep && astream_data(x->s, c->ch, buf, (uint32_t)keep) == 0)
			c->sent += keep;
		send_marker(c);
	}
	return c->fd < 0 ? CHAN_DRAINED : CHAN_BUSY;
}

static void on_chan(struct loop_watch *w, uint32_t ev)
{
	(void)ev;
	struct exec_chan *c = w->ctx;
	read_chan(c);
	arm_chan(c);
	maybe_finish(c->x);
}

/* --- the end ---------------------------------------------------------------- */

static json_t *result_json(struct exec_op *x)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	int code = 0;
	json_t *sig = json_null();
	if (WIFEXITED(x->status)) {
		code = WEXITSTATUS(x->status);
	} else if (WIFSIGNALED(x->status)) {
		code = 128 + WTERMSIG(x->status);
		json_decref(sig);
		sig = json_integer(WTERMSIG(x->status));
	}
	json_object_set_new(o, "exit_code", json_integer(code));
	json_object_set_new(o, "signal", sig);
	json_object_set_new(o, "timed_out", json_boolean(x->timed_out));
	json_object_set_new(o, "duration_ms", json_integer(x->exit_ms - x->start_ms));
	json_object_set_new(o, "stdout_truncated", json_boolean(x->out[0].truncated));
	json_object_set_new(o, "stderr_truncated", json_boolean(x->out[1].truncated));
	return o;
}

/* END once the child is reaped, its error pipe closed and both channels
 * have sent their marker and EOF. */
static void maybe_finish(struct exec_op *x)
{
	struct astream *s = x->s;
	if (s->ended)
		return;
	for (int i = 0; i < 2; i++) {
		struct exec_chan *c = &x->out[i];
		send_marker(c);
		if (c->fd < 0 && !c->marker_pending && !c->eof_sent && astream_eof(s, c->ch) == 0)
			c->eof_sent = 1;
	}
	if (!x->reaped || x->ch.err_fd >= 0 || !x->out[0].eof_sent || !x->out[1].eof_sent)
		return;
	loop_timer_cancel(s->env->loop, &x->timeout);
	loop_timer_cancel(s->env->loop, &x->drain);
	if (x->child_errno) {
		astream_end_err(s, x->child_errno, "could not run /bin/sh: %s",
				strerror(x->child_errno));
		return;
	}
	/* where an exec's time goes inside the guest (docs/agent.md) */
	log_kv(LOG_DEBUG, "agent.exec_timing",
	       "stream=%u setup_us=%lld cgroup_us=%lld spawn_us=%lld run_us=%lld tail_us=%lld",
	       s->id, (long long)(x->t_spawn - x->t_open), (long long)(x->ch.t_cg_us - x->t_spawn),
	       (long long)(x->ch.t_fork_us - x->ch.t_cg_us),
	       (long long)(x->t_reaped - x->ch.t_fork_us),
	       (long long)(util_now_us() - x->t_reaped));
	astream_end(s, result_json(x));
}

/* Drain timer: the main process is gone.  Close pipes found empty; keep
 * those whose output waits for the host's credit; close those a background
 * job keeps filling once that has gone on for EXEC_DRAIN_BUSY_MS. */
static void on_drain(struct loop_timer *t, int64_t now)
{
	struct exec_op *x = t->ctx;
	int waiting = 0;
	for (int i = 0; i < 2; i++) {
		struct exec_chan *c = &x->out[i];
		if (c->fd < 0)
			continue;
		enum chan_state st = read_chan(c);
		int keep = !x->timed_out &&
			   (st == CHAN_NO_ROOM ||
			    (st == CHAN_BUSY && now - x->exit_ms < EXEC_DRAIN_BUSY_MS));
		if (keep) {
			waiting = 1;
			continue;
		}
		chan_eof(c);
	}
	if (waiting)
		loop_timer_arm(x->s->env->loop, t, now + EXEC_DRAIN_GRACE_MS);
	for (int i = 0; i < 2; i++)
		arm_chan(&x->out[i]);
	maybe_finish(x);
}

static void on_exit_status(void *ctx, pid_t pid, int status)
{
	(void)pid;
	struct exec_op *x = ctx;
	x->reaped = 1;
	x->t_reaped = util_now_us();
	x->status = status;
	x->exit_ms = util_now_ms();
	loop_timer_cancel(x->s->env->loop, &x->timeout);
	/* the shell is gone: stdin has no reader any more */
	infeed_close(&x->in);
	if (x->out[0].fd >= 0 || x->out[1].fd >= 0)
		loop_timer_arm(x->s->env->loop, &x->drain,
			       x->exit_ms + (x->timed_out ? EXEC_KILL_DRAIN_MS : EXEC_DRAIN_GRACE_MS));
	maybe_finish(x);
}

static void on_timeout(struct loop_timer *t, int64_t now)
{
	(void)now;
	struct exec_op *x = t->ctx;
	x->timed_out = 1;
	kill_tree(x);
	log_kv(LOG_INFO, "agent.exec_timeout", "stream=%u pid=%d", x->s->id, (int)x->ch.pid);
}

static void on_errpipe(struct loop_watch *w, uint32_t ev)
{
	(void)ev;
	struct exec_op *x = w->ctx;
	if (!child_read_error(&x->ch, &x->child_errno))
		return;
	close_fd_watch(x, &x->ch.err_fd, &x->errw);
	maybe_finish(x);
}

/* --- stdin ------------------------------------------------------------------ */

static int exec_input(struct astream *s, const uint8_t *p, uint32_t len)
{
	struct exec_op *x = s->op;
	return infeed_add(&x->in, s, p, len);
}

static int exec_input_eof(struct astream *s)
{
	struct exec_op *x = s->op;
	infeed_eof(&x->in);
	return 0;
}

/* --- op callbacks ------------------------------------------------------------ */

static void exec_pump(struct astream *s)
{
	struct exec_op *x = s->op;
	for (int i = 0; i < 2; i++) {
		send_marker(&x->out[i]);
		arm_chan(&x->out[i]);
	}
	maybe_finish(x);
}

static void exec_cancel(struct astream *s)
{
	struct exec_op *x = s->op;
	kill_tree(x);
	log_kv(LOG_INFO, "agent.exec_cancel", "stream=%u pid=%d", s->id, (int)x->ch.pid);
}

static void exec_destroy(struct astream *s)
{
	struct exec_op *x = s->op;
	struct loop *l = s->env->loop;
	if (x->ch.pid > 0 && !x->reaped)
		loop_child_forget(l, x->ch.pid); /* reaped later as an orphan */
	for (int i = 0; i < 2; i++)
		close_fd_watch(x, &x->out[i].fd, &x->out[i].w);
	close_fd_watch(x, &x->ch.err_fd, &x->errw);
	infeed_free(&x->in);
	loop_timer_cancel(l, &x->timeout);
	loop_timer_cancel(l, &x->drain);
	if (x->ch.has_cg)
		cgroup_exec_release(&x->ch.cg);
	free(x);
	s->op = NULL;
}

static const struct op_ops exec_ops = {
	.name = "exec",
	.input = exec_input,
	.input_eof = exec_input_eof,
	.pump = exec_pump,
	.cancel = exec_cancel,
	.destroy = exec_destroy,
};

/* --- spawning ---------------------------------------------------------------- */

/* The base environment with req's variables added (see astream.h). */
int agent_cwd_ready(struct astream *s, const char *req_cwd, const char **out)
{
	const char *cwd = req_cwd ? req_cwd : s->env->workdir;
	struct stat st;
	int r = stat(cwd, &st) < 0 ? -errno : 0;
	if (r == -ENOENT && !req_cwd) {
		/* the default folder is the agent's: a user who removed it
		 * (rm -rf /workspace) still gets somewhere to run */
		r = util_mkdir_p(cwd, 0755);
		if (r == 0)
			r = stat(cwd, &st) < 0 ? -errno : 0;
		log_kv(LOG_INFO, "agent.workdir_recreated", "r=%d", r);
	}
	if (r < 0) {
		astream_end_err(s, -r, "cwd %s: %s", cwd, strerror(-r));
		return 1;
	}
	if (!S_ISDIR(st.st_mode)) {
		astream_end_err(s, ENOTDIR, "cwd %s: not a directory", cwd);
		return 1;
	}
	*out = cwd;
	return 0;
}

char **agent_env_build(const struct agent_req *req)
{
	char **envp = calloc(NBASE + req->nenv + 1, sizeof(char *));
	if (!envp)
		return NULL;
	size_t n = 0;
	for (size_t i = 0; i < NBASE; i++)
		envp[n++] = (char *)base_env[i];
	for (size_t i = 0; i < req->nenv; i++) {
		const char *kv = req->env[i];
		size_t kl = strcspn(kv, "=");
		size_t j = 0;
		while (j < NBASE && !(strncmp(envp[j], kv, kl) == 0 && envp[j][kl] == '='))
			j++;
		if (j < NBASE)
			envp[j] = req->env[i];
		else
			envp[n++] = req->env[i];
	}
	envp[n] = NULL;
	return envp;
}

int op_exec_start(struct astream *s, struct agent_req *req)
{
	int64_t t_open = util_now_us();
	const char *cwd;
	if (agent_cwd_ready(s, req->cwd, &cwd))
		return 0;
	struct exec_op *x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->s = s;
	x->t_open = t_open;
	x->cap = req->output_cap;
	infeed_init(&x->in, s->env->loop, -1, NULL, NULL); /* none until spawned */
	loop_watch_init(&x->errw, on_errpipe, x);
	loop_timer_init(&x->timeout, on_timeout, x);
	loop_timer_init(&x->drain, on_drain, x);
	for (int i = 0; i < 2; i++) {
		x->out[i].x = x;
		x->out[i].ch = i == 0 ? PROTO_CH_STDOUT : PROTO_CH_STDERR;
		x->out[i].fd = -1;
		loop_watch_init(&x->out[i].w, on_chan, &x->out[i]);
	}
	s->op = x;
	s->ops = &exec_ops;

	char **envp = agent_env_build(req);
	if (!envp)
		return -ENOMEM;
	struct child_spec sp = {
		.cmd = req->cmd, .envp = envp, .cwd = cwd, .want_stdin = req->want_stdin,
	};
	x->start_ms = util_now_ms();
	x->t_spawn = util_now_us();
	int r = child_spawn(s->env, &sp, &x->ch);
	free(envp);
	if (r < 0)
		return r;
	pid_t pid = x->ch.pid;
	/* from here on x owns the parent's ends; destroy closes them */
	x->out[0].fd = x->ch.out_fd[0];
	x->out[1].fd = x->ch.out_fd[1];
	int in_fd = x->ch.in_fd;
	x->ch.out_fd[0] = x->ch.out_fd[1] = x->ch.in_fd = -1;
	struct loop *l = s->env->loop;
	if (loop_child_watch(l, pid, on_exit_status, x) < 0) {
		kill(-pid, SIGKILL); /* cannot track it: do not leave it running */
		return -ENOMEM;
	}
	loop_watch_add(l, &x->out[0].w, x->out[0].fd, EPOLLIN);
	loop_watch_add(l, &x->out[1].w, x->out[1].fd, EPOLLIN);
	loop_watch_add(l, &x->errw, x->ch.err_fd, EPOLLIN);
	int r2 = infeed_init(&x->in, l, in_fd, NULL, NULL);
	if (r2 < 0)
		log_kv(LOG_WARN, "agent.exec_stdin_watch", "stream=%u errno=%d", s->id, -r2);
	if (req->timeout_ms)
		loop_timer_arm(l, &x->timeout, x->start_ms + (int64_t)req->timeout_ms);
	json_t *ev = json_object();
	if (ev) {
		json_object_set_new(ev, "event", json_string("started"));
		json_object_set_new(ev, "pid", json_integer(pid));
		astream_event(s, ev);
	}
	for (int i = 0; i < 2; i++)
		arm_chan(&x->out[i]);
	return 0;
}
