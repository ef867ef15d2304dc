/*
 * commands.c - the registry of background commands: their processes, the
 * rings their output is read into, their stdin and their watchers (see
 * commands.h).
 *
 * Threads: the loop thread only.
 */
#include "agent/commands.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/proto.h"
#include "common/utf8.h"
#include "common/util.h"

/* Reads of one pipe per wake-up (64 KiB each), so one chatty command
 * cannot hold the loop. */
#define READS_PER_EVENT 4

static struct agent_command *head; /* oldest first */
static unsigned count;
static struct loop *g_loop;       /* the loop of the first start */

struct agent_command *commands_find(const char *id)
{
	for (struct agent_command *c = head; c; c = c->next)
		if (strcmp(c->id, id) == 0)
			return c;
	return NULL;
}

int commands_running(const struct agent_command *c)
{
	return !c->reaped;
}

void commands_watch(struct agent_command *c, struct command_watch *w)
{
	w->cmd = c;
	w->next = c->watches;
	c->watches = w;
}

void commands_unwatch(struct command_watch *w)
{
	struct agent_command *c = w->cmd;
	if (!c)
		return;
	for (struct command_watch **pp = &c->watches; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	}
	w->cmd = NULL;
	w->next = NULL;
}

/* Tell every watcher that c changed.  A callback may unlink its own watch. */
static void notify(struct agent_command *c)
{
	struct command_watch *w = c->watches;
	while (w) {
		struct command_watch *next = w->next;
		w->cb(w);
		w = next;
	}
}

/* --- output ------------------------------------------------------------------ */

static void chan_close(struct command_chan *ch)
{
	loop_watch_del(g_loop, &ch->w);
	if (ch->fd >= 0)
		close(ch->fd);
	ch->fd = -1;
}

static void on_chan(struct loop_watch *w, uint32_t ev)
{
	(void)ev;
	static uint8_t buf[PROTO_MAX_DATA];
	struct command_chan *ch = w->ctx;
	int got = 0;
	for (int i = 0; i < READS_PER_EVENT && ch->fd >= 0; i++) {
		ssize_t n = read(ch->fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			chan_close(ch);
			got = 1;
			break;
		}
		if (ring_write(&ch->ring, buf, (size_t)n) < 0)
			log_kv(LOG_WARN, "command.ring_short", "id=%s", ch->c->id);
		got = 1;
	}
	if (got)
		notify(ch->c);
}

/* --- the process ------------------------------------------------------------ */

/* The shell is gone: give its group back (processes it left keep it, see
 * cgroup.h), keeping the path for a later kill. */
static void release_group(struct agent_command *c)
{
	if (!c->ch.has_cg || c->cg_released)
		return;
	c->kill_cg = c->ch.cg;
	c->kill_cg.dir_fd = -1;
	cgroup_exec_release(&c->ch.cg);
	c->cg_released = 1;
}

static void on_exit_status(void *ctx, pid_t pid, int status)
{
	(void)pid;
	struct agent_command *c = ctx;
	c->reaped = 1;
	c->status = status;
	c->exit_ms = util_now_ms();
	c->ended_wall_ms = (int64_t)(util_wall_ns() / 1000000u);
	loop_timer_cancel(g_loop, &c->timeout);
	release_group(c);
	log_kv(LOG_INFO, "command.ended", "id=%s status=%d ms=%lld", c->id, status,
	       (long long)(c->exit_ms - c->start_ms));
	/* the shell is gone: its stdin has no reader (its children may keep
	 * the pipe, but the host's input was for the command) */
	infeed_close(&c->in); /* notifies */
	notify(c);
}

static void on_errpipe(struct loop_watch *w, uint32_t ev)
{
	(void)ev;
	struct agent_command *c = w->ctx;
	if (!child_read_error(&c->ch, &c->child_errno))
		return;
	loop_watch_del(g_loop, &c->errw);
	close(c->ch.err_fd);
	c->ch.err_fd = -1;
	c->started = 1;
	notify(c);
}

static void on_timeout(struct loop_timer *t, int64_t now)
{
	(void)now;
	struct agent_command *c = t->ctx;
	c->timed_out = 1;
	child_kill_tree(&c->ch, c->reaped);
	log_kv(LOG_INFO, "command.timeout", "id=%s pid=%d", c->id, (int)c->ch.pid);
}

static void on_stdin_change(struct infeed *f)
{
	notify(f->ctx);
}

int commands_kill(struct agent_command *c, int sig)
{
	if (sig == SIGKILL && c->cg_released) {
		/* the shell is gone; what it left runs in its old group */
		int r = cgroup_exec_kill(&c->kill_cg);
		return r < 0 ? -ESRCH : 0;
	}
	return child_signal(&c->ch, sig, c->reaped);
}

/* --- the registry ------------------------------------------------------------ */

static void unlink_command(struct agent_command *c)
{
	for (struct agent_command **pp = &head; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			count--;
			return;
		}
	}
}

void commands_destroy(struct agent_command *c)
{
	if (!c)
		return;
	unlink_command(c);
	if (!c->reaped) {
		child_kill_tree(&c->ch, 0);
		loop_child_forget(g_loop, c->ch.pid); /* reaped later as an orphan */
	} else if (c->cg_released) {
		cgroup_exec_kill(&c->kill_cg); /* what the shell left behind */
	}
	while (c->watches) {
		struct command_watch *w = c->watches;
		commands_unwatch(w);
		w->cb(w);
	}
	for (int i = 0; i < 2; i++) {
		chan_close(&c->out[i]);
		ring_free(&c->out[i].ring);
	}
	loop_watch_del(g_loop, &c->errw);
	if (c->ch.err_fd >= 0)
		close(c->ch.err_fd);
	c->in.cb = NULL;
	infeed_free(&c->in);
	loop_timer_cancel(g_loop, &c->timeout);
	if (c->ch.has_cg && !c->cg_released)
		cgroup_exec_release(&c->ch.cg);
	log_kv(LOG_INFO, "command.forgotten", "id=%s commands=%u", c->id, count);
	free(c->cmd_shown);
	free(c);
}

/* Make room for one more record: drop the oldest ended one.  Returns 0 or
 * -EMFILE when every record runs. */
static int make_room(void)
{
	if (count < COMMANDS_MAX)
		return 0;
	for (struct agent_command *c = head; c; c = c->next) {
		if (c->reaped) {
			commands_destroy(c);
			return 0;
		}
	}
	return -EMFILE;
}

int commands_start(struct agent_env *env, const char *id, const struct child_spec *sp,
		   uint64_t timeout_ms, struct agent_command **out)
{
	*out = NULL;
	if (!id || strlen(id) > AGENT_REQ_CTX_ID_MAX)
		return -EINVAL;
	if (commands_find(id))
		return -EEXIST;
	int r = make_room();
	if (r < 0)
		return r;
	g_loop = env->loop;
	struct agent_command *c = calloc(1, sizeof(*c));
	size_t shown = utf8_cut(sp->cmd, strlen(sp->cmd), COMMAND_CMD_SHOWN);
	char *cmd_shown = c ? strndup(sp->cmd, shown) : NULL;
	if (!cmd_shown) {
		free(c);
		return -ENOMEM;
	}
	c->cmd_shown = cmd_shown;
	snprintf(c->id, sizeof(c->id), "%s", id);
	snprintf(c->cwd, sizeof(c->cwd), "%s", sp->cwd);
	loop_watch_init(&c->errw, on_errpipe, c);
	loop_timer_init(&c->timeout, on_timeout, c);
	for (int i = 0; i < 2; i++) {
		c->out[i].c = c;
		c->out[i].fd = -1;
		ring_init(&c->out[i].ring, COMMAND_OUTPUT_KEEP);
		loop_watch_init(&c->out[i].w, on_chan, &c->out[i]);
	}
	infeed_init(&c->in, env->loop, -1, NULL, NULL); /* none until spawned */
	struct child_spec with_stdin = *sp;
	with_stdin.want_stdin = 1;
	c->start_ms = util_now_ms();
	c->started_wall_ms = (int64_t)(util_wall_ns() / 1000000u);
	r = child_spawn(env, &with_stdin, &c->ch);
	if (r < 0) {
		free(c->cmd_shown);
		free(c);
		return r;
	}
	/* linked first: from here on commands_destroy undoes everything */
	struct agent_command **pp = &head;
	while (*pp)
		pp = &(*pp)->next;
	*pp = c;
	count++;
	for (int i = 0; i < 2; i++) {
		c->out[i].fd = c->ch.out_fd[i];
		c->ch.out_fd[i] = -1;
	}
	int in_fd = c->ch.in_fd;
	c->ch.in_fd = -1;
	r = loop_child_watch(env->loop, c->ch.pid, on_exit_status, c);
	for (int i = 0; i < 2 && r == 0; i++)
		r = loop_watch_add(env->loop, &c->out[i].w, c->out[i].fd, EPOLLIN);
	if (r == 0)
		r = loop_watch_add(env->loop, &c->errw, c->ch.err_fd, EPOLLIN);
	if (r == 0)
		r = infeed_init(&c->in, env->loop, in_fd, on_stdin_change, c);
	else
		close(in_fd);
	if (r < 0) {
		/* cannot track it: do not leave it running */
		loop_child_forget(env->loop, c->ch.pid);
		commands_destroy(c);
		return r;
	}
	if (timeout_ms)
		loop_timer_arm(env->loop, &c->timeout, c->start_ms + (int64_t)timeout_ms);
	log_kv(LOG_INFO, "command.started", "id=%s pid=%d commands=%u", c->id, (int)c->ch.pid,
	       count);
	*out = c;
	return 0;
}

json_t *commands_json(const struct agent_command *c)
{
	json_t *code = json_null(), *sig = json_null(), *ended = json_null();
	if (c->reaped) {
		ended = json_integer(c->ended_wall_ms);
		if (WIFEXITED(c->status)) {
			code = json_integer(WEXITSTATUS(c->status));
		} else if (WIFSIGNALED(c->status)) {
			code = json_integer(128 + WTERMSIG(c->status));
			sig = json_integer(WTERMSIG(c->status));
		}
	}
	return json_pack("{s:s, s:I, s:s, s:s, s:I, s:b, s:o, s:o, s:o, s:b, s:I, s:I, s:b}", "id",
			 c->id, "pid", (json_int_t)c->ch.pid, "cmd", c->cmd_shown, "cwd", c->cwd,
			 "started_at_ms", (json_int_t)c->started_wall_ms, "running", !c->reaped,
			 "ended_at_ms", ended, "exit_code", code, "signal", sig, "timed_out",
			 c->timed_out, "stdout_bytes", (json_int_t)c->out[0].ring.end,
			 "stderr_bytes", (json_int_t)c->out[1].ring.end, "stdin_open",
			 c->in.fd >= 0 && !c->in.eof);
}

json_t *commands_list_json(void)
{
	json_t *arr = json_array();
	for (struct agent_command *c = head; arr && c; c = c->next) {
		json_t *o = commands_json(c);
		if (!o || json_array_append_new(arr, o) < 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr ? json_pack("{s:o}", "commands", arr) : NULL;
}

void commands_shutdown(void)
{
	while (head)
		commands_destroy(head);
}
