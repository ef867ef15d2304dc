/*
 * agent_conn_int.h - private to agent_conn.c (the connection: handshake,
 * reader thread, writes) and agent_stream.c (the stream API): the structs
 * and the helpers they share.  Not for other parts.
 *
 * Locking: c->lock guards every field below except fd, reader and info
 * (set before the reader starts); c->wlock serialises writes to fd.  Lock
 * order: c->lock is never held while taking c->wlock.
 */
#ifndef PANDASTACK_AGENT_CONN_INT_H
#define PANDASTACK_AGENT_CONN_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/proto.h"
#include "engine/agent_conn.h"

#define CONTROL_SEND_TIMEOUT_MS 10000           /* OPEN, WINDOW, CANCEL, EOF, PONG */
#define STREAM_JSON_CAP (16u * 1024u * 1024u)   /* queued non-DATA bytes per stream */
#define CONN_JSON_CAP (64u * 1024u * 1024u)     /* the same, whole connection */
#define STREAM_MSG_CAP 4096u                    /* queued non-DATA messages per stream */

struct msg_node {
	struct msg_node *next;
	struct agent_msg m;
	size_t cost;            /* bytes charged to the JSON caps */
};

struct agent_stream {
	struct agent_conn *c;
	uint32_t id;
	pthread_cond_t cond;    /* messages, credit, end, failure */
	struct msg_node *head, *tail;
	unsigned nmsgs;         /* non-DATA messages queued */
	size_t json_bytes;      /* their cost */
	int on_wire;            /* open in the mux (slot holds us) */
	int ended;              /* END or ERROR received (queued) */
	int end_taken;          /* ... and handed to the owner */
	int failed;             /* -ECONNRESET / -EPROTO once delivered after the queue */
	int owner_closed;       /* agent_stream_close ran: free when off the wire */
	int cancel_sent;
	int eof_sent;
};

struct agent_conn {
	int fd;
	pthread_mutex_t lock;
	pthread_mutex_t wlock;
	pthread_t reader;
	int reader_started;
	int alive;
	unsigned refs;          /* the handle + every stream not yet freed */
	struct proto_decoder dec;
	struct proto_mux mux;
	struct agent_stream *slot[PROTO_MAX_STREAMS];
	uint32_t next_id;
	size_t json_bytes;      /* non-DATA bytes queued on all streams */
	json_t *info;
	uint64_t nonce;
	struct agent_conn_stats stats; /* set before the reader starts */
};

/* --- agent_conn.c ---------------------------------------------------------- */

/* aconn_abs_deadline - CLOCK_MONOTONIC now + timeout_ms into *ts. */
void aconn_abs_deadline(struct timespec *ts, int timeout_ms);

/* aconn_cond_init - a condition variable timed on CLOCK_MONOTONIC. */
void aconn_cond_init(pthread_cond_t *cv);

/* aconn_cond_wait_until - wait on cv (m held) until woken or the deadline
 * (NULL: none).  Returns 0 or ETIMEDOUT. */
int aconn_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *m, const struct timespec *dl);

/* aconn_free - release a connection with no references left. */
void aconn_free(struct agent_conn *c);

/* aconn_unref_locked - drop one reference (c->lock held); 1 if c must be
 * freed now (after unlocking). */
int aconn_unref_locked(struct agent_conn *c);

/* aconn_kill_locked - mark c dead and shut the socket so the reader and
 * every waiter wake (c->lock held). */
void aconn_kill_locked(struct agent_conn *c);

/*
 * aconn_send - write one frame, waiting up to timeout_ms (-1: no bound) for
 * the socket to take its first byte; takes c->wlock (c->lock must not be
 * held).  Once started, the frame is finished unless the agent stalls for
 * max(timeout_ms, CONTROL_SEND_TIMEOUT_MS); a frame cut in the middle kills
 * the connection.  Returns 0, -ETIMEDOUT, -ECONNRESET, -EINVAL/-EMSGSIZE.
 */
int aconn_send(struct agent_conn *c, uint8_t type, uint8_t flags, uint32_t id,
	       const void *payload, uint32_t len, int timeout_ms);

/* --- agent_stream.c -------------------------------------------------------- */

/* aconn_msg_free - free a queued message node and what it holds. */
void aconn_msg_free(struct msg_node *n);

/* aconn_stream_drop_msgs - free s's queued messages, releasing their cost
 * from the caps (c->lock held). */
void aconn_stream_drop_msgs(struct agent_stream *s);

/* aconn_stream_off_wire - forget s's slot and mux entry (c->lock held). */
void aconn_stream_off_wire(struct agent_stream *s);

/* aconn_stream_free_locked - free s (c->lock held).  Returns 1 if the
 * connection lost its last reference and must be freed after unlocking. */
int aconn_stream_free_locked(struct agent_stream *s);

/* aconn_stream_of - the stream open on the wire with id, or NULL
 * (c->lock held). */
struct agent_stream *aconn_stream_of(struct agent_conn *c, uint32_t id);

#endif
