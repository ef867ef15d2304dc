/*
 * guest_run.c - the one reader of an exec or a code cell (guest_run.h):
 * stdin fed between reads, the agent's messages turned into typed events,
 * the output cap, the run's deadline.
 */
#include "engine/guest/guest_run.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/deadline.h"
#include "common/proto.h"

/* Output kinds the cap counts: stdout, stderr, results. */
enum { OUT_STDOUT, OUT_STDERR, OUT_RESULT, OUT_KINDS };

struct guest_run {
	struct guest_stream *st;
	enum guest_run_kind kind;
	uint8_t *in;              /* stdin still to feed (owned copy), or NULL */
	size_t in_len, in_off;
	int feeding;              /* stdin bytes or its EOF still to send */
	size_t cap;
	int cap_shared;
	size_t used[OUT_KINDS];   /* bytes delivered (cap_shared: all in [0]) */
	int cap_hit[OUT_KINDS];   /* (cap_shared: [0]) */
	uint64_t received[OUT_KINDS];
	int64_t deadline;         /* of the whole run (deadline.h; -1: none) */
	struct guest_msg cur;     /* the message the last event borrows from */
	struct guest_event ev;    /* the last event */
	int has_ev;
	int replay;               /* guest_run_again was called */
	int done;                 /* the last event was returned */
};

int guest_run_start(struct guest_stream *st, const struct guest_run_opts *o,
		    struct guest_run **out)
{
	*out = NULL;
	if (o->kind != GUEST_RUN_EXEC && o->kind != GUEST_RUN_CELL) {
		guest_stream_close(st);
		return -EINVAL;
	}
	struct guest_run *x = calloc(1, sizeof(*x));
	if (x && o->stdin_data) {
		x->in = malloc(o->stdin_len ? o->stdin_len : 1);
		if (x->in) {
			memcpy(x->in, o->stdin_data, o->stdin_len);
			x->in_len = o->stdin_len;
			x->feeding = 1;
		}
	}
	if (!x || (o->stdin_data && !x->in)) {
		free(x);
		guest_stream_close(st);
		return -ENOMEM;
	}
	x->st = st;
	x->kind = o->kind;
	x->cap = o->output_cap;
	x->cap_shared = o->cap_shared;
	x->deadline = o->deadline_ms > 0 ? deadline_after(o->deadline_ms) : -1;
	*out = x;
	return 0;
}

int guest_run_open(struct guest_conn *c, json_t *req, const struct guest_run_opts *o,
		   struct guest_run **out)
{
	*out = NULL;
	struct guest_stream *st;
	int r = guest_stream_open(c, req, &st);
	return r < 0 ? r : guest_run_start(st, o, out);
}

/* --- stdin -------------------------------------------------------------- */

static void stop_feeding(struct guest_run *x)
{
	x->feeding = 0;
	free(x->in);
	x->in = NULL;
}

/*
 * Send what stdin the agent has credit for, then EOF once all is sent;
 * wait_ms bounds the wait for the socket (-1: none).  Failures end the
 * feeding quietly: a stream that ended (-EPIPE: the command no longer
 * takes input, its END says how it went) or failed reports it on the read
 * side.
 */
static void feed(struct guest_run *x, int wait_ms)
{
	if (!x->feeding)
		return;
	if (x->in_off < x->in_len) {
		ssize_t n = guest_stream_write_some(x->st, x->in + x->in_off, x->in_len - x->in_off,
						    wait_ms);
		if (n < 0) {
			stop_feeding(x);
			return;
		}
		x->in_off += (size_t)n;
	}
	if (x->in_off == x->in_len) {
		/* -ETIMEDOUT: the agent stopped reading its port; the deadline
		 * or the caller ends the run */
		(void)guest_stream_write_eof(x->st);
		stop_feeding(x);
	}
}

/* --- messages into events ---------------------------------------------------- */

/*
 * Apply the output cap to an output event of kind k carrying n bytes.
 * whole: the item cannot be cut (a cell's text or result).  Returns 1 to
 * deliver ev (maybe cut and flagged), 0 to drop it (past the cap).
 */
static int cap_output(struct guest_run *x, struct guest_event *ev, int k, size_t n, int whole)
{
	if (k != OUT_RESULT)
		x->received[k] += n;
	if (!x->cap)
		return 1;
	int i = x->cap_shared ? 0 : k;
	if (x->cap_hit[i])
		return 0;
	if (x->used[i] + n <= x->cap) {
		x->used[i] += n;
		return 1;
	}
	x->cap_hit[i] = 1;
	ev->truncated = 1;
	if (whole) {
		ev->data = NULL;
		ev->len = 0;
		ev->json = NULL;
	} else {
		ev->len = x->cap - x->used[i];
		x->used[i] = x->cap;
	}
	return 1;
}

/* A final ERROR event with err (and the agent's json, or NULL). */
static int error_event(struct guest_event *ev, int err, json_t *json)
{
	ev->type = GUEST_EV_ERROR;
	ev->err = err;
	ev->json = json;
	return 1;
}

/* 1 if an END object reports the operation's failure (not a cell's
 * exception, which is {"name", "value", "traceback"}). */
static int end_failed(enum guest_run_kind kind, json_t *end)
{
	json_t *e = json_object_get(end, "error");
	if (kind == GUEST_RUN_EXEC)
		return json_is_object(e);
	return json_is_string(json_object_get(e, "code"));
}

static int exec_event(struct guest_run *x, struct guest_msg *m, struct guest_event *ev)
{
	switch (m->kind) {
	case GUEST_MSG_DATA:
		if (m->channel != PROTO_CH_STDOUT && m->channel != PROTO_CH_STDERR)
			return error_event(ev, -EPROTO, NULL); /* guest_stream lets none through */
		ev->type = m->channel == PROTO_CH_STDOUT ? GUEST_EV_STDOUT : GUEST_EV_STDERR;
		ev->data = m->data;
		ev->len = m->len;
		return cap_output(x, ev, m->channel == PROTO_CH_STDOUT ? OUT_STDOUT : OUT_STDERR,
				  m->len, 0);
	case GUEST_MSG_EVENT: {
		const char *name = json_string_value(json_object_get(m->json, "event"));
		if (!name || strcmp(name, "started") != 0)
			return 0;
		json_t *pid = json_object_get(m->json, "pid");
		ev->type = GUEST_EV_STARTED;
		ev->pid = json_is_integer(pid) ? json_integer_value(pid) : -1;
		ev->json = m->json;
		return 1;
	}
	default: /* EOF of a channel */
		return 0;
	}
}

static int cell_event(struct guest_run *x, struct guest_msg *m, struct guest_event *ev)
{
	if (m->kind != GUEST_MSG_EVENT)
		return 0; /* a run carries no DATA */
	const char *type = json_string_value(json_object_get(m->json, "type"));
	if (!type)
		return 0;
	if (!strcmp(type, "accepted")) {
		ev->type = GUEST_EV_STARTED;
		ev->json = m->json;
		return 1;
	}
	if (!strcmp(type, "result")) {
		ev->type = GUEST_EV_RESULT;
		ev->json = m->json;
		return cap_output(x, ev, OUT_RESULT, m->len, 1);
	}
	json_t *txt = json_object_get(m->json, "text");
	int out = !strcmp(type, "stdout");
	if (!(out || !strcmp(type, "stderr")) || !json_is_string(txt))
		return 0;
	ev->type = out ? GUEST_EV_STDOUT : GUEST_EV_STDERR;
	ev->data = (const uint8_t *)json_string_value(txt);
	ev->len = json_string_length(txt);
	return cap_output(x, ev, out ? OUT_STDOUT : OUT_STDERR, ev->len, 1);
}

/* Turn x->cur into *ev.  Returns 1 for an event, 0 for a message that
 * makes none. */
static int to_event(struct guest_run *x, struct guest_event *ev)
{
	struct guest_msg *m = &x->cur;
	memset(ev, 0, sizeof(*ev));
	ev->pid = -1;
	if (m->kind == GUEST_MSG_ERROR)
		return error_event(ev, -EPROTO, m->json);
	if (m->kind == GUEST_MSG_END) {
		if (end_failed(x->kind, m->json))
			return error_event(ev, -EPROTO, m->json);
		ev->type = GUEST_EV_EXIT;
		ev->json = m->json;
		return 1;
	}
	return x->kind == GUEST_RUN_EXEC ? exec_event(x, m, ev) : cell_event(x, m, ev);
}

/* --- the loop ------------------------------------------------------------------ */

/* The sooner of two waits (-1: none). */
static int64_t sooner(int64_t a, int64_t b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

static int deliver(struct guest_run *x, struct guest_event *ev)
{
	x->ev = *ev;
	x->has_ev = 1;
	if (ev->type == GUEST_EV_EXIT || ev->type == GUEST_EV_ERROR) {
		x->done = 1;
		stop_feeding(x);
	}
	return 1;
}

/* End the run with an ERROR the host found (err), and return it. */
static int host_error(struct guest_run *x, struct guest_event *ev, int err)
{
	memset(ev, 0, sizeof(*ev));
	ev->pid = -1;
	error_event(ev, err, NULL);
	return deliver(x, ev);
}

int guest_run_next(struct guest_run *x, struct guest_event *ev, int timeout_ms)
{
	if (x->replay) {
		x->replay = 0;
		*ev = x->ev;
		return 1;
	}
	guest_msg_clear(&x->cur);
	x->has_ev = 0;
	if (x->done)
		return 0;
	int64_t until = deadline_after(timeout_ms);
	for (;;) {
		feed(x, (int)sooner(deadline_left(until), deadline_left(x->deadline)));
		int k = guest_stream_read(x->st, &x->cur, 0);
		if (k == 1) {
			if (to_event(x, ev))
				return deliver(x, ev);
			guest_msg_clear(&x->cur);
			continue;
		}
		if (k == 0) /* ended without END or ERROR: cannot happen, be safe */
			return host_error(x, ev, -ECONNRESET);
		if (k != -ETIMEDOUT)
			return host_error(x, ev, k);
		if (deadline_left(x->deadline) == 0) {
			guest_stream_cancel(x->st);
			return host_error(x, ev, -ETIMEDOUT);
		}
		if (deadline_left(until) == 0)
			return -ETIMEDOUT;
		int64_t wait = sooner(deadline_left(until), deadline_left(x->deadline));
		guest_stream_poll(x->st, x->feeding && x->in_off < x->in_len, (int)wait);
	}
}

void guest_run_again(struct guest_run *x)
{
	if (x->has_ev)
		x->replay = 1;
}

uint64_t guest_run_received(const struct guest_run *x, enum guest_event_type type)
{
	if (type == GUEST_EV_STDOUT)
		return x->received[OUT_STDOUT];
	if (type == GUEST_EV_STDERR)
		return x->received[OUT_STDERR];
	return 0;
}

int guest_run_cancel(struct guest_run *x)
{
	stop_feeding(x);
	return guest_stream_cancel(x->st);
}

void guest_run_close(struct guest_run *x)
{
	if (!x)
		return;
	guest_msg_clear(&x->cur);
	guest_stream_close(x->st); /* cancels a run still going */
	free(x->in);
	free(x);
}
