/*
 * agent_stream.c - the stream half of the agent protocol's host side (see
 * agent_conn.h): open, write under credit, read queued messages (granting
 * credit back), cancel, close, and agent_call.  The reader thread that
 * fills the queues is in agent_conn.c; agent_conn_int.h has the shared
 * structs and the locking rules.
 *
 * Threads: any; a stream handle is used by one thread at a time.
 */
#include "engine/agent_conn_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/* --- stream bookkeeping (shared with the reader) ------------------------------ */

void aconn_msg_free(struct msg_node *n)
{
	agent_msg_clear(&n->m);
	free(n);
}

/* Free every queued message of s and release their cost (c->lock held). */
void aconn_stream_drop_msgs(struct agent_stream *s)
{
	struct msg_node *n = s->head;
	while (n) {
		struct msg_node *next = n->next;
		s->c->json_bytes -= n->cost;
		aconn_msg_free(n);
		n = next;
	}
	s->head = s->tail = NULL;
	s->nmsgs = 0;
	s->json_bytes = 0;
}

/* Take s off the wire: forget its slot and mux entry (c->lock held). */
void aconn_stream_off_wire(struct agent_stream *s)
{
	if (!s->on_wire)
		return;
	struct agent_conn *c = s->c;
	struct proto_stream_state *st = proto_mux_find(&c->mux, s->id);
	if (st && c->slot[st - c->mux.s] == s)
		c->slot[st - c->mux.s] = NULL;
	proto_mux_close(&c->mux, s->id);
	s->on_wire = 0;
}

/* Free s (c->lock held).  Returns 1 if the connection must be freed too. */
int aconn_stream_free_locked(struct agent_stream *s)
{
	struct agent_conn *c = s->c;
	aconn_stream_off_wire(s);
	aconn_stream_drop_msgs(s);
	pthread_cond_destroy(&s->cond);
	free(s);
	return aconn_unref_locked(c);
}

struct agent_stream *aconn_stream_of(struct agent_conn *c, uint32_t id)
{
	struct proto_stream_state *st = proto_mux_find(&c->mux, id);
	return st ? c->slot[st - c->mux.s] : NULL;
}

/* --- streams ----------------------------------------------------------------------- */

int agent_stream_open(struct agent_conn *c, json_t *req, struct agent_stream **out)
{
	char *txt = json_dumps(req, JSON_COMPACT);
	if (!txt)
		return -ENOMEM;
	size_t len = strlen(txt);
	if (len > PROTO_MAX_PAYLOAD) {
		free(txt);
		return -E2BIG;
	}
	struct agent_stream *s = calloc(1, sizeof(*s));
	if (!s) {
		free(txt);
		return -ENOMEM;
	}
	aconn_cond_init(&s->cond);
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
	r = aconn_send(c, PROTO_OPEN, 0, s->id, txt, (uint32_t)len, CONTROL_SEND_TIMEOUT_MS);
	free(txt);
	if (r < 0) {
		pthread_mutex_lock(&c->lock);
		int last = aconn_stream_free_locked(s);
		pthread_mutex_unlock(&c->lock);
		if (last)
			aconn_free(c);
		return r == -ETIMEDOUT ? -ETIMEDOUT : -ECONNRESET;
	}
	*out = s;
	return 0;
}

uint32_t agent_stream_id(const struct agent_stream *s)
{
	return s->id;
}

int agent_stream_write(struct agent_stream *s, const void *buf, size_t len, int timeout_ms)
{
	struct agent_conn *c = s->c;
	const uint8_t *p = buf;
	while (len > 0) {
		struct timespec dl;
		if (timeout_ms >= 0)
			aconn_abs_deadline(&dl, timeout_ms);
		pthread_mutex_lock(&c->lock);
		uint32_t got = 0;
		int r = 0;
		for (;;) {
			if (s->failed)
				r = s->failed;
			else if (s->ended)
				r = -EPIPE;
			else if (!c->alive)
				r = -ECONNRESET;
			else
				got = proto_mux_take_credit(&c->mux, s->id,
							    len < PROTO_MAX_DATA ? (uint32_t)len
										 : PROTO_MAX_DATA);
			if (r || got)
				break;
			if (aconn_cond_wait_until(&s->cond, &c->lock, timeout_ms >= 0 ? &dl : NULL) ==
			    ETIMEDOUT) {
				r = -ETIMEDOUT;
				break;
			}
		}
		pthread_mutex_unlock(&c->lock);
		if (r < 0)
			return r;
		r = aconn_send(c, PROTO_DATA, PROTO_CH_IN, s->id, p, got, timeout_ms);
		if (r < 0) {
			if (r == -ETIMEDOUT) { /* not sent: give the credit back */
				pthread_mutex_lock(&c->lock);
				struct proto_stream_state *st = proto_mux_find(&c->mux, s->id);
				if (st && s->on_wire)
					st->send_credit += got;
				pthread_mutex_unlock(&c->lock);
			}
			return r;
		}
		p += got;
		len -= got;
	}
	return 0;
}

int agent_stream_write_eof(struct agent_stream *s)
{
	struct agent_conn *c = s->c;
	pthread_mutex_lock(&c->lock);
	int r = s->failed ? s->failed : s->ended ? -EPIPE : s->eof_sent ? -EALREADY : 0;
	s->eof_sent = 1;
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	return aconn_send(c, PROTO_EOF, PROTO_CH_IN, s->id, NULL, 0, CONTROL_SEND_TIMEOUT_MS);
}

int agent_stream_read(struct agent_stream *s, struct agent_msg *m, int timeout_ms)
{
	struct agent_conn *c = s->c;
	struct timespec dl;
	if (timeout_ms >= 0)
		aconn_abs_deadline(&dl, timeout_ms);
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
		if (aconn_cond_wait_until(&s->cond, &c->lock, timeout_ms >= 0 ? &dl : NULL) == ETIMEDOUT &&
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
	if (n->m.kind == AGENT_MSG_DATA) {
		if (s->on_wire)
			grant = proto_mux_consumed(&c->mux, s->id, (uint32_t)n->m.len);
	} else {
		s->nmsgs--;
		s->json_bytes -= n->cost;
		c->json_bytes -= n->cost;
	}
	if (n->m.kind == AGENT_MSG_END || n->m.kind == AGENT_MSG_ERROR)
		s->end_taken = 1;
	pthread_mutex_unlock(&c->lock);
	*m = n->m;
	free(n);
	if (grant) {
		uint8_t w[4];
		proto_put_u32(w, grant);
		aconn_send(c, PROTO_WINDOW, 0, s->id, w, 4, CONTROL_SEND_TIMEOUT_MS);
	}
	return 1;
}

void agent_msg_clear(struct agent_msg *m)
{
	free(m->data);
	json_decref(m->json);
	memset(m, 0, sizeof(*m));
}

int agent_stream_cancel(struct agent_stream *s)
{
	struct agent_conn *c = s->c;
	pthread_mutex_lock(&c->lock);
	int send = s->on_wire && !s->ended && !s->cancel_sent && c->alive;
	if (send)
		s->cancel_sent = 1;
	pthread_mutex_unlock(&c->lock);
	return send ? aconn_send(c, PROTO_CANCEL, 0, s->id, NULL, 0, CONTROL_SEND_TIMEOUT_MS) : 0;
}

void agent_stream_close(struct agent_stream *s)
{
	if (!s)
		return;
	struct agent_conn *c = s->c;
	agent_stream_cancel(s);
	pthread_mutex_lock(&c->lock);
	s->owner_closed = 1;
	aconn_stream_drop_msgs(s);
	int last = 0;
	if (!s->on_wire)
		last = aconn_stream_free_locked(s);
	/* else the reader frees it when END/ERROR arrives or the link dies */
	pthread_mutex_unlock(&c->lock);
	if (last)
		aconn_free(c);
}

int agent_call(struct agent_conn *c, json_t *req, int timeout_ms, json_t **result)
{
	*result = NULL;
	struct agent_stream *s;
	int r = agent_stream_open(c, req, &s);
	if (r < 0)
		return r;
	int64_t deadline = timeout_ms < 0 ? -1 : util_now_ms() + timeout_ms;
	for (;;) {
		int left = -1;
		if (deadline >= 0) {
			int64_t l = deadline - util_now_ms();
			left = l > 0 ? (int)l : 0;
		}
		struct agent_msg m;
		r = agent_stream_read(s, &m, left);
		if (r == 0) {
			r = -ECONNRESET; /* ended without END: cannot happen, be safe */
			break;
		}
		if (r < 0)
			break;
		if (m.kind == AGENT_MSG_END || m.kind == AGENT_MSG_ERROR) {
			*result = m.json;
			m.json = NULL;
			r = m.kind == AGENT_MSG_END ? 0 : -EPROTO;
			agent_msg_clear(&m);
			break;
		}
		agent_msg_clear(&m);
	}
	agent_stream_close(s); /* cancels first if it did not end */
	return r;
}
