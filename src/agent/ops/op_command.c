/*
 * op_command.c - the background-command operations (docs/agent-protocol.md,
 * "Background commands"): command_start, command_list, command_kill,
 * command_output and command_stdin.  The commands themselves are
 * commands.c.
 *
 * Every stream that waits on a command (start: for the shell to start;
 * kill: for the shell to exit; output: for new output or the end; stdin:
 * for its bytes to be written) is a struct cmd_wait whose command_watch
 * callback decides after each change whether the stream can end.  The
 * host cancelling or leaving ends the wait, never the command, except for
 * a start that has not ended: the host was never told the command exists,
 * so it is killed.
 *
 * Threads: the loop thread only.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "agent/commands.h"
#include "common/dynbuf.h"
#include "common/log.h"
#include "common/proto.h"
#include "common/util.h"

/* Most command_output streams waiting on one command at once. */
#define READERS_MAX 4
/* Most command_output answers being sent at once (each holds a copy of
 * what it sends, up to 2 * COMMAND_OUTPUT_KEEP bytes). */
#define SENDING_MAX 8
/* How long command_kill waits for the shell to exit, ms. */
#define KILL_WAIT_MS 2000

enum wait_kind { W_START, W_KILL, W_OUTPUT, W_STDIN };

/* command_output answers holding their copy now. */
static unsigned sending;

struct cmd_wait {
	struct astream *s;
	enum wait_kind kind;
	struct command_watch w;
	struct loop_timer timer;   /* kill: the grace; output: wait_ms; stdin: timeout */
	int finished;              /* END queued (or being sent: output) */
	/* output */
	uint64_t from[2];          /* offsets asked for */
	uint64_t max_bytes;
	int reader;                /* counted in the command's readers */
	int answering;             /* counted in sending */
	struct dynbuf data[2];     /* the answer's bytes */
	size_t sent[2];
	json_t *end;               /* the END once the bytes are out */
	/* stdin */
	uint64_t written0;         /* the feed's count when this stream began */
	int input_eof, want_eof;
};

static struct cmd_wait *wait_new(struct astream *s, enum wait_kind kind, command_watch_cb cb,
				 loop_timer_cb tcb);
static void wait_detach(struct cmd_wait *x);

/* The command named by req, or NULL with the stream ended (ENOENT). */
static struct agent_command *find_or_end(struct astream *s, const struct agent_req *req)
{
	struct agent_command *c = commands_find(req->ctx_id);
	if (!c)
		astream_end_err(s, ENOENT, "no command '%s'", req->ctx_id);
	return c;
}

/* End x's stream with the command's description (or ENOENT if it is gone). */
static void end_with_command(struct cmd_wait *x, struct agent_command *c)
{
	x->finished = 1;
	wait_detach(x);
	if (c)
		astream_end(x->s, commands_json(c));
	else
		astream_end_err(x->s, ENOENT, "the command went away");
}

/* --- command_start ---------------------------------------------------------- */

static void start_changed(struct command_watch *w)
{
	struct cmd_wait *x = w->ctx;
	struct agent_command *c = w->cmd;
	if (x->finished || (c && !c->started))
		return;
	if (c && c->child_errno) {
		int e = c->child_errno;
		x->finished = 1;
		wait_detach(x);
		commands_destroy(c);
		astream_end_err(x->s, e, "could not run /bin/sh: %s", strerror(e));
		return;
	}
	end_with_command(x, c);
}

static int op_start(struct astream *s, struct agent_req *req)
{
	const char *cwd;
	if (agent_cwd_ready(s, req->cwd, &cwd))
		return 0;
	char **envp = agent_env_build(req);
	if (!envp)
		return -ENOMEM;
	struct child_spec sp = {.cmd = req->cmd, .envp = envp, .cwd = cwd};
	struct agent_command *c = NULL;
	int r = commands_start(s->env, req->ctx_id, &sp, req->timeout_ms, &c);
	free(envp);
	if (r == -EEXIST) {
		astream_end_err(s, EEXIST, "command '%s' exists", req->ctx_id);
		return 0;
	}
	if (r == -EMFILE) {
		astream_end_err(s, EMFILE, "at most %d commands at once", COMMANDS_MAX);
		return 0;
	}
	if (r < 0)
		return r;
	struct cmd_wait *x = wait_new(s, W_START, start_changed, NULL);
	if (!x) {
		commands_destroy(c);
		return -ENOMEM;
	}
	commands_watch(c, &x->w);
	start_changed(&x->w); /* the error pipe may have spoken already */
	return 0;
}

/* --- command_kill ------------------------------------------------------------ */

static void kill_changed(struct command_watch *w)
{
	struct cmd_wait *x = w->ctx;
	if (!x->finished && (!w->cmd || !commands_running(w->cmd)))
		end_with_command(x, w->cmd);
}

static void on_kill_grace(struct loop_timer *t, int64_t now)
{
	(void)now;
	struct cmd_wait *x = t->ctx;
	if (!x->finished)
		end_with_command(x, x->w.cmd);
}

static int op_kill(struct astream *s, struct agent_req *req)
{
	struct agent_command *c = find_or_end(s, req);
	if (!c)
		return 0;
	int r = commands_kill(c, req->signal);
	log_kv(LOG_INFO, "command.kill", "id=%s signal=%d r=%d", c->id, req->signal, r);
	if (!commands_running(c)) {
		astream_end(s, commands_json(c));
		return 0;
	}
	if (r < 0 && r != -ESRCH) {
		astream_end_err(s, -r, "kill: %s", strerror(-r));
		return 0;
	}
	struct cmd_wait *x = wait_new(s, W_KILL, kill_changed, on_kill_grace);
	if (!x)
		return -ENOMEM;
	commands_watch(c, &x->w);
	loop_timer_arm(s->env->loop, &x->timer, util_now_ms() + KILL_WAIT_MS);
	return 0;
}

/* --- command_output ---------------------------------------------------------- */

/* Send what the room allows; END once everything is out. */
static void output_pump(struct astream *s)
{
	struct cmd_wait *x = s->op;
	if (!x || !x->end)
		return;
	for (int i = 0; i < 2; i++) {
		while (x->sent[i] < x->data[i].len) {
			uint32_t room = astream_room(s);
			size_t n = x->data[i].len - x->sent[i];
			if (n > PROTO_MAX_DATA)
				n = PROTO_MAX_DATA;
			if (n > room)
				n = room;
			if (n == 0 ||
			    astream_data(s, i == 0 ? PROTO_CH_STDOUT : PROTO_CH_STDERR,
					 x->data[i].p + x->sent[i], (uint32_t)n) < 0)
				return;
			x->sent[i] += n;
		}
	}
	json_t *end = x->end;
	x->end = NULL;
	astream_end(s, end);
}

/* One channel's part of the answer: copy its bytes from x->from[i]. */
static json_t *output_chan(struct cmd_wait *x, struct agent_command *c, int i)
{
	const struct ring *rg = &c->out[i].ring;
	uint64_t avail = rg->end > x->from[i] ? rg->end - x->from[i] : 0;
	size_t max = x->max_bytes && x->max_bytes < COMMAND_OUTPUT_KEEP ? (size_t)x->max_bytes
								   : COMMAND_OUTPUT_KEEP;
	size_t want = avail < max ? (size_t)avail : max;
	uint64_t at = rg->end;
	size_t n = 0;
	if (want && dynbuf_reserve(&x->data[i], want) == 0) {
		n = ring_read(rg, x->from[i], x->data[i].p, want, &at);
		dynbuf_commit(&x->data[i], n);
	} else if (want) {
		at = x->from[i] < rg->end ? x->from[i] : rg->end; /* no memory: send none */
	}
	uint64_t asked = x->from[i] < rg->end ? x->from[i] : rg->end;
	return json_pack("{s:I, s:I, s:I, s:I}", "offset", (json_int_t)at, "next_offset",
			 (json_int_t)(at + n), "dropped", (json_int_t)(at - asked), "total",
			 (json_int_t)rg->end);
}

/* Build the answer and start sending it. */
static void output_answer(struct cmd_wait *x)
{
	struct agent_command *c = x->w.cmd;
	x->finished = 1;
	loop_timer_cancel(x->s->env->loop, &x->timer);
	if (!c) {
		wait_detach(x);
		astream_end_err(x->s, ENOENT, "the command went away");
		return;
	}
	x->answering = 1;
	sending++;
	json_t *o = commands_json(c);
	json_t *a = output_chan(x, c, 0), *b = output_chan(x, c, 1);
	wait_detach(x);
	if (o && a && b)
		x->end = json_pack("{s:o, s:o, s:o}", "stdout", a, "stderr", b, "command", o);
	else {
		json_decref(o);
		json_decref(a);
		json_decref(b);
	}
	if (!x->end) {
		astream_end_err(x->s, ENOMEM, "out of memory");
		return;
	}
	output_pump(x->s);
}

/* 1 if an answer can go now: output beyond the offsets (or dropped before
 * them), or the shell has exited. */
static int output_ready(const struct cmd_wait *x, const struct agent_command *c)
{
	if (!commands_running(c))
		return 1;
	for (int i = 0; i < 2; i++)
		if (c->out[i].ring.end > x->from[i])
			return 1;
	return 0;
}

static void output_changed(struct command_watch *w)
{
	struct cmd_wait *x = w->ctx;
	if (!x->finished && (!w->cmd || output_ready(x, w->cmd)))
		output_answer(x);
}

static void on_output_wait(struct loop_timer *t, int64_t now)
{
	(void)now;
	struct cmd_wait *x = t->ctx;
	if (!x->finished)
		output_answer(x);
}

static int op_output(struct astream *s, struct agent_req *req)
{
	struct agent_command *c = find_or_end(s, req);
	if (!c)
		return 0;
	if (c->readers >= READERS_MAX || sending >= SENDING_MAX) {
		astream_end_err(s, EBUSY, "too many output reads at once (%d per command, %d in all)",
				READERS_MAX, SENDING_MAX);
		return 0;
	}
	struct cmd_wait *x = wait_new(s, W_OUTPUT, output_changed, on_output_wait);
	if (!x)
		return -ENOMEM;
	x->from[0] = req->offset[0];
	x->from[1] = req->offset[1];
	x->max_bytes = req->max_bytes;
	x->reader = 1;
	c->readers++;
	commands_watch(c, &x->w);
	if (!req->wait_ms || output_ready(x, c))
		output_answer(x);
	else
		loop_timer_arm(s->env->loop, &x->timer, util_now_ms() + (int64_t)req->wait_ms);
	return 0;
}

/* --- command_stdin ------------------------------------------------------------ */

/* End the stdin stream with how far its bytes got. */
static void stdin_end(struct cmd_wait *x)
{
	struct agent_command *c = x->w.cmd;
	x->finished = 1;
	loop_timer_cancel(x->s->env->loop, &x->timer);
	wait_detach(x); /* drops what is still held */
	if (!c) {
		astream_end_err(x->s, ENOENT, "the command went away");
		return;
	}
	astream_end(x->s, json_pack("{s:I, s:b}", "written",
				    (json_int_t)(c->in.written - x->written0), "stdin_open",
				    c->in.fd >= 0 && !c->in.eof));
}

static void stdin_changed(struct command_watch *w)
{
	struct cmd_wait *x = w->ctx;
	struct agent_command *c = w->cmd;
	if (x->finished)
		return;
	if (!c || c->in.fd < 0) {
		stdin_end(x);
		return;
	}
	if (!x->input_eof || c->in.held.len > 0)
		return;
	if (x->want_eof && !c->in.eof) {
		infeed_eof(&c->in); /* closes the pipe: this runs again, and ends */
		return;
	}
	stdin_end(x);
}

static void on_stdin_timeout(struct loop_timer *t, int64_t now)
{
	(void)now;
	struct cmd_wait *x = t->ctx;
	if (!x->finished)
		stdin_end(x);
}

static int stdin_input(struct astream *s, const uint8_t *p, uint32_t len)
{
	struct cmd_wait *x = s->op;
	if (x->finished || !x->w.cmd) {
		astream_consumed(s, len);
		return 0;
	}
	return infeed_add(&x->w.cmd->in, s, p, len);
}

static int stdin_input_eof(struct astream *s)
{
	struct cmd_wait *x = s->op;
	x->input_eof = 1;
	if (!x->finished)
		stdin_changed(&x->w);
	return 0;
}

static int op_stdin(struct astream *s, struct agent_req *req)
{
	struct agent_command *c = find_or_end(s, req);
	if (!c)
		return 0;
	if (c->stdin_user) {
		astream_end_err(s, EBUSY, "another command_stdin is writing to '%s'", c->id);
		return 0;
	}
	struct cmd_wait *x = wait_new(s, W_STDIN, stdin_changed, on_stdin_timeout);
	if (!x)
		return -ENOMEM;
	x->want_eof = req->eof;
	x->written0 = c->in.written;
	c->stdin_user = s;
	commands_watch(c, &x->w);
	if (req->timeout_ms)
		loop_timer_arm(s->env->loop, &x->timer, util_now_ms() + (int64_t)req->timeout_ms);
	if (c->in.fd < 0)
		stdin_end(x); /* closed already: nothing will be written */
	return 0;
}

/* --- the waits ------------------------------------------------------------------ */

/* Unhook x from its command (reader count, stdin, watch). */
static void wait_detach(struct cmd_wait *x)
{
	struct agent_command *c = x->w.cmd;
	if (c && x->reader)
		c->readers--;
	x->reader = 0;
	if (c && x->kind == W_STDIN && c->stdin_user == x->s) {
		infeed_detach(&c->in, x->s);
		c->stdin_user = NULL;
	}
	commands_unwatch(&x->w);
}

static void wait_cancel(struct astream *s)
{
	struct cmd_wait *x = s->op;
	struct agent_command *c = x->w.cmd;
	wait_detach(x);
	/* a start nobody will hear about: its command must not run on */
	if (x->kind == W_START && !x->finished && c)
		commands_destroy(c);
}

static void wait_destroy(struct astream *s)
{
	struct cmd_wait *x = s->op;
	if (!x)
		return;
	wait_detach(x);
	loop_timer_cancel(s->env->loop, &x->timer);
	if (x->answering)
		sending--;
	dynbuf_free(&x->data[0]);
	dynbuf_free(&x->data[1]);
	json_decref(x->end);
	free(x);
	s->op = NULL;
}

static const struct op_ops wait_ops = {
	.name = "command",
	.cancel = wait_cancel,
	.destroy = wait_destroy,
};
static const struct op_ops output_ops = {
	.name = "command_output",
	.pump = output_pump,
	.cancel = wait_cancel,
	.destroy = wait_destroy,
};
static const struct op_ops stdin_ops = {
	.name = "command_stdin",
	.input = stdin_input,
	.input_eof = stdin_input_eof,
	.cancel = wait_cancel,
	.destroy = wait_destroy,
};

/* A wait of kind for stream s (s->op, s->ops set), watching with cb and
 * timing with tcb (may be NULL).  NULL when out of memory. */
static struct cmd_wait *wait_new(struct astream *s, enum wait_kind kind, command_watch_cb cb,
				 loop_timer_cb tcb)
{
	struct cmd_wait *x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->s = s;
	x->kind = kind;
	x->w.cb = cb;
	x->w.ctx = x;
	loop_timer_init(&x->timer, tcb, x);
	dynbuf_init(&x->data[0], COMMAND_OUTPUT_KEEP);
	dynbuf_init(&x->data[1], COMMAND_OUTPUT_KEEP);
	s->op = x;
	s->ops = kind == W_OUTPUT ? &output_ops : kind == W_STDIN ? &stdin_ops : &wait_ops;
	return x;
}

/* --- entry ------------------------------------------------------------------------ */

int op_command_start(struct astream *s, struct agent_req *req)
{
	switch (req->op) {
	case AGENT_OP_COMMAND_START:
		return op_start(s, req);
	case AGENT_OP_COMMAND_LIST: {
		json_t *o = commands_list_json();
		if (!o)
			return -ENOMEM;
		astream_end(s, o);
		return 0;
	}
	case AGENT_OP_COMMAND_KILL:
		return op_kill(s, req);
	case AGENT_OP_COMMAND_OUTPUT:
		return op_output(s, req);
	default:
		return op_stdin(s, req);
	}
}
