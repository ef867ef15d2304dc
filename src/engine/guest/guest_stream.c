/*
 * guest_stream.c - streams on a guest connection (guest_stream.h): open,
 * write under credit, read queued messages (granting credit back), cancel,
 * close, guest_call; and the connection's reader thread, which decodes the
 * agent's frames and files them into these streams' queues.
 * guest_conn_int.h has the shared structs and the locking rules.
 *
 * Trust: the agent is hostile.  Frames pass the decoder's caps and
 * proto_mux_check (roles, credit) first.  A stream's DATA queue is bounded by
 * the credit we granted (we grant only what the owner has taken); EVENT and
 * other JSON messages are capped per stream and per connection.  A violation
 * on a stream fails that stream (-EPROTO to its reader, CANCEL to the
 * agent); garbage on stream 0 kills the connection (the owner reconnects).
 *
 * Stream memory: a stream is owned by its opener until guest_stream_close,
 * and known to the connection (slot[], parallel to mux.s[]) while it is open
 * on the wire.  It is freed when both are over.  The connection itself is
 * freed when its handle and every stream are gone.
 *
 * Threads: any; a stream handle is used by one thread at a time (see
 * guest_stream.h); the reader thread runs guest_stream_reader_main.
 */
#include "engine/guest/guest_conn_int.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/deadline.h"
#include "common/log.h"
#include "common/util.h"

/* --- stream bookkeeping (c->lock held) ------------------------------------------ */

static void msg_free(struct msg_node *n)
{
	guest_msg_clear(&n->m);
	free(n);
}

/* Free every queued message of s and release their cost. */
static void drop_msgs(struct guest_stream *s)
{
	struct msg_node *n = s->head;
	while (n) {
		struct msg_node *next = n->next;
		s->c->json_bytes -= n->cost;
		guest_link_global_charge(-(long)n->cost);
		msg_free(n);
		n = next;
	}
	s->head = s->tail = NULL;
	s->nmsgs = 0;
	s->json_bytes = 0;
}

/* Take s off the wire: forget its slot and mux entry. */
static void off_wire(struct guest_stream *s)
{
	if (!s->on_wire)
		return;
	struct guest_conn *c = s->c;
	struct proto_stream_state *st = proto_mux_find(&c->mux, s->id);
	if (st && c->slot[st - c->mux.s] == s)
		c->slot[st - c->mux.s] = NULL;
	proto_mux_close(&c->mux, s->id);
	s->on_wire = 0;
}

/* Free s.  Returns 1 if the connection must be freed too (after unlocking). */
static int stream_free_locked(struct guest_stream *s)
{
	struct guest_conn *c = s->c;
	off_wire(s);
	drop_msgs(s);
	pthread_cond_destroy(&s->cond);
	free(s);
	return guest_link_unref_locked(c);
}

/* The stream open on the wire with id, or NULL. */
static struct guest_stream *stream_of(struct guest_conn *c, uint32_t id)
{
	struct proto_stream_state *st = proto_mux_find(&c->mux, id);
	return st ? c->slot[st - c->mux.s] : NULL;
}

/* --- the reader thread: frames into queues --------------------------------------- */

/* Frames the reader must send once it has dropped c->lock. */
struct reader_out {
	uint32_t cancel[64];
	int ncancel;
	uint8_t pong[8];
	int pong_due;
};

/* Queue m on s and wake its owner (c->lock held). */
static int stream_push(struct guest_stream *s, struct guest_msg *m, size_t cost)
{
	struct msg_node *n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->m = *m;
	n->cost = cost;
	if (s->tail)
		s->tail->next = n;
	else
		s->head = n;
	s->tail = n;
	if (m->kind != GUEST_MSG_DATA) {
		s->nmsgs++;
		s->json_bytes += cost;
		s->c->json_bytes += cost;
	}
	pthread_cond_broadcast(&s->cond);
	return 0;
}

/* Fail s: its reader gets err after the queued messages; the agent gets
 * CANCEL (c->lock held). */
static void stream_fail(struct guest_stream *s, int err, struct reader_out *out)
{
	if (!s->failed)
		s->failed = err;
	if (!s->ended && !s->cancel_sent && out->ncancel < (int)(sizeof(out->cancel) / 4)) {
		out->cancel[out->ncancel++] = s->id;
		s->cancel_sent = 1;
	}
	s->ended = 1;
	off_wire(s);
	pthread_cond_broadcast(&s->cond);
	/* the connection cannot reach zero references here: its handle holds
	 * one until after the reader is joined and the streams were failed */
	if (s->owner_closed)
		(void)stream_free_locked(s);
}

static void handle_stream_frame(struct guest_conn *c, struct guest_stream *s,
				const struct proto_frame *f, struct reader_out *out)
{
	struct guest_msg m = {.channel = f->flags};
	size_t cost = 0;
	switch (f->type) {
	case PROTO_DATA:
	case PROTO_EOF:
		if (f->flags != PROTO_CH_STDOUT && f->flags != PROTO_CH_STDERR) {
			log_kv(LOG_WARN, "guest_conn.bad_channel", "stream=%u channel=%u", s->id,
			       (unsigned)f->flags);
			stream_fail(s, -EPROTO, out);
			return;
		}
		if (s->owner_closed) /* nobody will read it */
			return;
		m.kind = f->type == PROTO_DATA ? GUEST_MSG_DATA : GUEST_MSG_EOF;
		if (f->type == PROTO_DATA) {
			m.data = malloc(f->len ? f->len : 1);
			if (!m.data) {
				stream_fail(s, -ENOMEM, out);
				return;
			}
			memcpy(m.data, f->payload, f->len);
			m.len = f->len;
		} else {
			cost = 64;
		}
		break;
	case PROTO_EVENT:
	case PROTO_END:
	case PROTO_ERROR:
		m.kind = f->type == PROTO_EVENT ? GUEST_MSG_EVENT
			 : f->type == PROTO_END ? GUEST_MSG_END
						 : GUEST_MSG_ERROR;
		m.channel = 0;
		cost = f->len + sizeof(struct msg_node);
		if (f->type != PROTO_EVENT) {
			s->ended = 1;
			off_wire(s);
		}
		if (s->owner_closed) {
			if (s->ended)
				(void)stream_free_locked(s); /* the handle keeps c alive */
			return;
		}
		break;
	case PROTO_WINDOW:
		pthread_cond_broadcast(&s->cond); /* credit was added by mux_check */
		return;
	default:
		stream_fail(s, -EPROTO, out);
		return;
	}
	if (m.kind != GUEST_MSG_DATA &&
	    (s->nmsgs >= STREAM_MSG_CAP || s->json_bytes + cost > STREAM_JSON_CAP ||
	     c->json_bytes + cost > CONN_JSON_CAP || guest_link_global_charge((long)cost) < 0)) {
		guest_msg_clear(&m);
		stream_fail(s, -EPROTO, out); /* the agent floods us */
		return;
	}
	if (m.kind != GUEST_MSG_DATA && m.kind != GUEST_MSG_EOF) {
		/* Kept as sent; parsed when its owner takes it. */
		m.data = malloc(f->len ? f->len : 1);
		if (!m.data) {
			guest_link_global_charge(-(long)cost);
			stream_fail(s, -ENOMEM, out);
			return;
		}
		memcpy(m.data, f->payload, f->len);
		m.len = f->len;
	}
	if (stream_push(s, &m, cost) < 0) {
		if (m.kind != GUEST_MSG_DATA)
			guest_link_global_charge(-(long)cost);
		guest_msg_clear(&m);
		stream_fail(s, -ENOMEM, out);
	}
}

/* An ERROR frame on stream 0: the agent's complaint about the connection.
 * Logged at most AGENT_ERRORS_LOGGED_PER_MIN times a minute per connection
 * (the guest must not be able to fill the daemon's log); the rest are
 * counted and the count logged when the minute is over (c->lock held). */
static void log_agent_error(struct guest_conn *c, const struct proto_frame *f)
{
	int64_t now = util_now_ms();
	if (now - c->errlog_since >= 60000) {
		if (c->errlog_dropped)
			log_kv(LOG_WARN, "guest_conn.agent_errors_dropped",
			       "sandbox=%s count=%u minute_ms=%lld", c->label[0] ? c->label : "-",
			       c->errlog_dropped, (long long)(now - c->errlog_since));
		c->errlog_since = now;
		c->errlog_n = 0;
		c->errlog_dropped = 0;
	}
	if (c->errlog_n >= AGENT_ERRORS_LOGGED_PER_MIN) {
		c->errlog_dropped++;
		return;
	}
	c->errlog_n++;
	char txt[200], q[240];
	size_t n = f->len < sizeof(txt) - 1 ? f->len : sizeof(txt) - 1;
	memcpy(txt, f->payload, n);
	txt[n] = '\0';
	log_kv(LOG_WARN, "guest_conn.agent_error", "sandbox=%s msg=%s", c->label[0] ? c->label : "-",
	       log_quote(txt, q, sizeof(q)));
}

static void handle_frame(struct guest_conn *c, const struct proto_frame *f,
			 struct reader_out *out)
{
	int r = proto_mux_check(&c->mux, f);
	if (r == -ENOENT)
		return; /* for a stream we already closed */
	if (r < 0) {
		struct guest_stream *s = f->stream ? stream_of(c, f->stream) : NULL;
		if (s)
			stream_fail(s, -EPROTO, out);
		else if (f->stream == 0)
			guest_link_kill_locked(c);
		return;
	}
	if (f->stream == 0) {
		switch (f->type) {
		case PROTO_PING:
			memcpy(out->pong, f->payload, 8);
			out->pong_due = 1;
			break;
		case PROTO_ERROR:
			log_agent_error(c, f);
			break;
		default: /* HELLO_ACK repeats (we resent HELLO), PONG */
			break;
		}
		return;
	}
	struct guest_stream *s = stream_of(c, f->stream);
	if (s)
		handle_stream_frame(c, s, f, out);
}

void guest_stream_fail_all_locked(struct guest_conn *c)
{
	struct reader_out dummy = {.ncancel = (int)(sizeof(dummy.cancel) / 4)};
	for (unsigned i = 0; i < PROTO_MAX_STREAMS; i++) {
		struct guest_stream *s = c->slot[i];
		if (!s)
			continue;
		s->cancel_sent = 1; /* nobody to tell */
		stream_fail(s, -ECONNRESET, &dummy);
	}
}

void *guest_stream_reader_main(void *arg)
{
	struct guest_conn *c = arg;
	uint8_t *buf = malloc(READ_CHUNK);
	while (buf) {
		ssize_t n = read(c->fd, buf, READ_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd p = {.fd = c->fd, .events = POLLIN};
			poll(&p, 1, -1);
			continue;
		}
		if (n <= 0)
			break;
		struct reader_out out = {0};
		pthread_mutex_lock(&c->lock);
		const uint8_t *p = buf;
		size_t left = (size_t)n;
		int dead = 0;
		while (left > 0 && !dead) {
			size_t held = c->dec.len - c->dec.off - c->dec.skip;
			size_t chunk = DECODER_CAP - held < left ? DECODER_CAP - held : left;
			if (proto_decoder_feed(&c->dec, p, chunk) < 0) {
				guest_link_kill_locked(c);
				break;
			}
			p += chunk;
			left -= chunk;
			struct proto_frame f;
			int r;
			while ((r = proto_decoder_next(&c->dec, &f)) != 0) {
				if (r == 1) {
					handle_frame(c, &f, &out);
				} else {
					struct guest_stream *s =
						r != -EBADMSG && f.stream ? stream_of(c, f.stream) : NULL;
					if (s)
						stream_fail(s, -EPROTO, &out);
					else
						guest_link_kill_locked(c); /* garbage on the connection */
				}
				if (!c->alive) {
					dead = 1;
					break;
				}
			}
		}
		pthread_mutex_unlock(&c->lock);
		for (int i = 0; i < out.ncancel; i++)
			guest_link_send(c, PROTO_CANCEL, 0, out.cancel[i], NULL, 0,
					CONTROL_SEND_TIMEOUT_MS);
		if (out.pong_due)
			guest_link_send(c, PROTO_PONG, 0, 0, out.pong, 8, CONTROL_SEND_TIMEOUT_MS);
		if (dead)
			break;
	}
	free(buf);
	pthread_mutex_lock(&c->lock);
	guest_link_kill_locked(c);
	guest_stream_fail_all_locked(c);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* --- the stream API -------------------------------------------------------------- */

/* Open a stream with req, gate or not. */
static int stream_open(struct guest_conn *c, json_t *req, struct guest_stream **out)
{
	char *txt = json_dumps(req, JSON_COMPACT);
	if (!txt)
		return -ENOMEM;
	size_t len = strlen(txt);
	if (len > PROTO_MAX_PAYLOAD) {
		free(txt);
		return -E2BIG;
	}
	struct guest_stream *s = calloc(1, sizeof(*s));
	if (!s) {
		free(txt);
		return -ENOMEM;
	}
	if (deadline_cond_init(&s->cond) < 0) {
		free(s);
		free(txt);
		return -ENOMEM;
	}
	s->c = c;
	pthread_mutex_lock(&c->lock);
	int r = c->alive ? 0 : -ECONNRESET;
	if (!r && c->mux.nopen >= PROTO_MAX_STREAMS)
		r = -EMFILE;
	if (!r) {
		do {
			s->id = c->next_id++;
		} while (s->id == 0 || proto_mux_find(&c->mux, s->id));
		r = proto_mux_open(&c->mux, s->id);
	}
	if (!r) {
		struct proto_stream_state *st = proto_mux_find(&c->mux, s->id);
		c->slot[st - c->mux.s] = s;
		s->on_wire = 1;
		c->refs++;
	}
	pthread_mutex_unlock(&c->lock);
	if (r < 0) {
		pthread_cond_destroy(&s->cond);
		free(s);
		free(txt);
		return r;
	}
	r = guest_link_send(c, PROTO_OPEN, 0, s->id, txt, (uint32_t)len, CONTROL_SEND_TIMEOUT_MS);
	free(txt);
	if (r < 0) {
		pthread_mutex_lock(&c->lock);
		int last = stream_free_locked(s);
		pthread_mutex_unlock(&c->lock);
		if (last)
			guest_link_free(c);
		return r == -ETIMEDOUT ? -ETIMEDOUT : -ECONNRESET;
	}
	*out = s;
	return 0;
}

/* --- the gate ---------------------------------------------------------------------- */

/* Read s to its END or ERROR (at most until deadline, monotonic ms), then
 * close it: guest_call's contract. */
static int call_finish(struct guest_stream *s, int64_t deadline, json_t **result)
{
	int r;
	for (;;) {
		struct guest_msg m;
		r = guest_stream_read(s, &m, (int)deadline_left(deadline));
		if (r == 0) {
			r = -ECONNRESET; /* ended without END: cannot happen, be safe */
			break;
		}
		if (r < 0)
			break;
		if (m.kind == GUEST_MSG_END || m.kind == GUEST_MSG_ERROR) {
			*result = m.json;
			m.json = NULL;
			r = m.kind == GUEST_MSG_END ? 0 : -EPROTO;
			guest_msg_clear(&m);
			break;
		}
		guest_msg_clear(&m);
	}
	guest_stream_close(s); /* cancels first if it did not end */
	return r;
}

/* Read the gate's END (c->lock not held; this thread took c->gate) and
 * publish the outcome.  An END with an "error" member or an ERROR is -EIO. */
static int gate_read(struct guest_conn *c, struct guest_stream *s, int64_t deadline)
{
	json_t *res = NULL;
	int r = call_finish(s, deadline, &res);
	if (r == 0 && json_object_get(res, "error"))
		r = -EIO;
	if (r == -EPROTO)
		r = -EIO;
	if (r < 0) {
		char *txt = res ? json_dumps(res, JSON_COMPACT) : NULL;
		char q[300];
		log_kv(LOG_WARN, "guest_conn.gate_failed", "err=%d reply=%s", r,
		       log_quote(txt ? txt : "", q, sizeof(q)));
		free(txt);
	}
	pthread_mutex_lock(&c->lock);
	c->gate_state = r < 0 ? GATE_FAILED : GATE_OK;
	c->gate_err = r;
	json_decref(c->gate_end);
	c->gate_end = r < 0 ? NULL : res;
	if (r < 0)
		json_decref(res);
	pthread_cond_broadcast(&c->gate_cond);
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* Wait until c's gate, if any, has ended: 0 when it passed (or there is
 * none), its -errno when it failed. */
static int gate_pass(struct guest_conn *c)
{
	pthread_mutex_lock(&c->lock);
	for (;;) {
		int st = c->gate_state;
		if (st == GATE_NONE || st == GATE_OK) {
			pthread_mutex_unlock(&c->lock);
			return 0;
		}
		if (st == GATE_FAILED) {
			int r = c->gate_err;
			pthread_mutex_unlock(&c->lock);
			return r;
		}
		if (st == GATE_PENDING) {
			struct guest_stream *s = c->gate;
			int64_t deadline = c->gate_deadline;
			c->gate = NULL;
			c->gate_state = GATE_READING;
			pthread_mutex_unlock(&c->lock);
			return gate_read(c, s, deadline);
		}
		/* another opener reads it; it gives up at the same deadline */
		if (deadline_cond_wait(&c->gate_cond, &c->lock, c->gate_deadline + 1000) ==
		    -ETIMEDOUT) {
			pthread_mutex_unlock(&c->lock);
			return -ETIMEDOUT;
		}
	}
}

int guest_stream_gate_open(struct guest_conn *c, json_t *req, int timeout_ms)
{
	int r = gate_pass(c); /* one gate at a time, in order */
	if (r < 0)
		return r;
	struct guest_stream *s;
	if ((r = stream_open(c, req, &s)) < 0)
		return r;
	pthread_mutex_lock(&c->lock);
	c->gate = s;
	c->gate_state = GATE_PENDING;
	c->gate_err = 0;
	c->gate_deadline = deadline_after(timeout_ms);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int guest_stream_gate_wait(struct guest_conn *c)
{
	return gate_pass(c);
}

json_t *guest_stream_gate_end(struct guest_conn *c)
{
	pthread_mutex_lock(&c->lock);
	json_t *end = json_incref(c->gate_end);
	pthread_mutex_unlock(&c->lock);
	return end;
}

void guest_stream_gate_drop(struct guest_conn *c)
{
	pthread_mutex_lock(&c->lock);
	struct guest_stream *s = c->gate;
	c->gate = NULL;
	if (c->gate_state == GATE_PENDING) {
		c->gate_state = GATE_FAILED;
		c->gate_err = -ECONNRESET;
	}
	pthread_cond_broadcast(&c->gate_cond);
	pthread_mutex_unlock(&c->lock);
	guest_stream_close(s);
}

int guest_stream_open(struct guest_conn *c, json_t *req, struct guest_stream **out)
{
	int r = gate_pass(c);
	return r < 0 ? r : stream_open(c, req, out);
}

uint32_t guest_stream_id(const struct guest_stream *s)
{
	return s->id;
}

/* Why s cannot take input now (c->lock held): -errno, or 0. */
static int write_blocked(struct guest_stream *s)
{
	if (s->failed)
		return s->failed;
	if (s->ended)
		return -EPIPE;
	return s->c->alive ? 0 : -ECONNRESET;
}

/*
 * Send up to len bytes (<= one DATA frame) under the credit there is,
 * waiting for credit until the deadline dl (deadline.h; negative: none)
 * when wait is set.
 * Returns the bytes sent, 0 when there is no credit and wait is not set,
 * or -errno.
 */
static ssize_t send_some(struct guest_stream *s, const uint8_t *p, size_t len, int wait,
			 int64_t dl, int timeout_ms)
{
	struct guest_conn *c = s->c;
	uint32_t want = len < PROTO_MAX_DATA ? (uint32_t)len : PROTO_MAX_DATA;
	uint32_t got = 0;
	int r;
	pthread_mutex_lock(&c->lock);
	for (;;) {
		r = write_blocked(s);
		if (!r)
			got = proto_mux_take_credit(&c->mux, s->id, want);
		if (r || got || !wait)
			break;
		if (deadline_cond_wait(&s->cond, &c->lock, dl) == -ETIMEDOUT) {
			r = -ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	if (r < 0 || got == 0)
		return r;
	r = guest_link_send(c, PROTO_DATA, PROTO_CH_IN, s->id, p, got, timeout_ms);
	if (r == -ETIMEDOUT) { /* nothing was sent: give the credit back */
		pthread_mutex_lock(&c->lock);
		struct proto_stream_state *st = proto_mux_find(&c->mux, s->id);
		if (st && s->on_wire)
			st->send_credit += got;
		pthread_mutex_unlock(&c->lock);
	}
	return r < 0 ? r : (ssize_t)got;
}

int guest_stream_write(struct guest_stream *s, const void *buf, size_t len, int timeout_ms)
{
	const uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = send_some(s, p, len, 1, deadline_after(timeout_ms), timeout_ms);
		if (n < 0)
			return (int)n;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t guest_stream_write_some(struct guest_stream *s, const void *buf, size_t len,
				int timeout_ms)
{
	const uint8_t *p = buf;
	size_t done = 0;
	while (done < len) {
		ssize_t n = send_some(s, p + done, len - done, 0, -1, timeout_ms);
		if (n == -ETIMEDOUT || n == 0)
			break;
		if (n < 0)
			return done ? (ssize_t)done : n;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

int guest_stream_write_eof(struct guest_stream *s)
{
	struct guest_conn *c = s->c;
	pthread_mutex_lock(&c->lock);
	int r = s->failed ? s->failed : s->ended ? -EPIPE : s->eof_sent ? -EALREADY : 0;
	s->eof_sent = 1;
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	return guest_link_send(c, PROTO_EOF, PROTO_CH_IN, s->id, NULL, 0, CONTROL_SEND_TIMEOUT_MS);
}

/* What of guest_stream_poll holds now (c->lock held). */
static int poll_bits(struct guest_stream *s, int want_write)
{
	int bits = s->head || s->end_taken || s->failed ? GUEST_POLL_READ : 0;
	if (want_write && !write_blocked(s)) {
		struct proto_stream_state *st = proto_mux_find(&s->c->mux, s->id);
		if (st && s->on_wire && st->send_credit > 0)
			bits |= GUEST_POLL_WRITE;
	}
	return bits;
}

int guest_stream_poll(struct guest_stream *s, int want_write, int timeout_ms)
{
	struct guest_conn *c = s->c;
	int64_t dl = deadline_after(timeout_ms);
	pthread_mutex_lock(&c->lock);
	int bits;
	while (!(bits = poll_bits(s, want_write)) && timeout_ms != 0) {
		if (deadline_cond_wait(&s->cond, &c->lock, dl) == -ETIMEDOUT) {
			bits = poll_bits(s, want_write);
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return bits;
}

int guest_stream_read(struct guest_stream *s, struct guest_msg *m, int timeout_ms)
{
	struct guest_conn *c = s->c;
	int64_t dl = deadline_after(timeout_ms);
	memset(m, 0, sizeof(*m));
	pthread_mutex_lock(&c->lock);
	for (;;) {
		if (s->head)
			break;
		if (s->end_taken) {
			pthread_mutex_unlock(&c->lock);
			return 0;
		}
		if (s->failed) {
			int f = s->failed;
			pthread_mutex_unlock(&c->lock);
			return f;
		}
		if (deadline_cond_wait(&s->cond, &c->lock, dl) == -ETIMEDOUT &&
		    !s->head) {
			pthread_mutex_unlock(&c->lock);
			return -ETIMEDOUT;
		}
	}
	struct msg_node *n = s->head;
	s->head = n->next;
	if (!s->head)
		s->tail = NULL;
	uint32_t grant = 0;
	if (n->m.kind == GUEST_MSG_DATA) {
		if (s->on_wire)
			grant = proto_mux_consumed(&c->mux, s->id, (uint32_t)n->m.len);
	} else {
		s->nmsgs--;
		s->json_bytes -= n->cost;
		c->json_bytes -= n->cost;
		guest_link_global_charge(-(long)n->cost);
	}
	if (n->m.kind == GUEST_MSG_END || n->m.kind == GUEST_MSG_ERROR)
		s->end_taken = 1;
	pthread_mutex_unlock(&c->lock);
	*m = n->m;
	free(n);
	if (m->kind == GUEST_MSG_EVENT || m->kind == GUEST_MSG_END || m->kind == GUEST_MSG_ERROR) {
		/* Parsed now, by the owner's thread, one message at a time. */
		m->json = guest_link_parse_object(m->data, m->len);
		free(m->data);
		m->data = NULL;
		m->len = 0;
		if (!m->json) {
			/* Not a JSON object: the stream fails as if it had
			 * arrived so (what was queued after it is dropped). */
			struct reader_out out = {0};
			pthread_mutex_lock(&c->lock);
			drop_msgs(s);
			stream_fail(s, -EPROTO, &out);
			pthread_mutex_unlock(&c->lock);
			for (int i = 0; i < out.ncancel; i++)
				guest_link_send(c, PROTO_CANCEL, 0, out.cancel[i], NULL, 0,
						CONTROL_SEND_TIMEOUT_MS);
			memset(m, 0, sizeof(*m));
			return -EPROTO;
		}
	}
	if (grant) {
		uint8_t w[4];
		proto_put_u32(w, grant);
		guest_link_send(c, PROTO_WINDOW, 0, s->id, w, 4, CONTROL_SEND_TIMEOUT_MS);
	}
	return 1;
}

void guest_msg_clear(struct guest_msg *m)
{
	free(m->data);
	json_decref(m->json);
	memset(m, 0, sizeof(*m));
}

int guest_stream_cancel(struct guest_stream *s)
{
	struct guest_conn *c = s->c;
	pthread_mutex_lock(&c->lock);
	int send = s->on_wire && !s->ended && !s->cancel_sent && c->alive;
	if (send)
		s->cancel_sent = 1;
	pthread_mutex_unlock(&c->lock);
	return send ? guest_link_send(c, PROTO_CANCEL, 0, s->id, NULL, 0, CONTROL_SEND_TIMEOUT_MS)
		    : 0;
}

void guest_stream_close(struct guest_stream *s)
{
	if (!s)
		return;
	struct guest_conn *c = s->c;
	guest_stream_cancel(s);
	pthread_mutex_lock(&c->lock);
	s->owner_closed = 1;
	drop_msgs(s);
	int last = 0;
	if (!s->on_wire)
		last = stream_free_locked(s);
	/* else the reader frees it when END/ERROR arrives or the link dies */
	pthread_mutex_unlock(&c->lock);
	if (last)
		guest_link_free(c);
}

int guest_call(struct guest_conn *c, json_t *req, int timeout_ms, json_t **result)
{
	*result = NULL;
	struct guest_stream *s;
	int r = guest_stream_open(c, req, &s);
	return r < 0 ? r : call_finish(s, deadline_after(timeout_ms), result);
}
