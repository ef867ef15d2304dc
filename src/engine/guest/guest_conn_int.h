/*
 * guest_conn_int.h - private to the host's guest client: guest_conn.c (open,
 * handshake, close, restore), guest_stream.c (the stream API and the reader
 * thread that fills the streams' queues) and guest_link.c (writing frames,
 * the connection's memory).  Calls go one way: guest_conn.c ->
 * guest_stream.c -> guest_link.c.  Not for other parts.
 *
 * Locking: c->lock guards every field below except fd, reader and info
 * (set before the reader starts); c->wlock serialises writes to fd.  Lock
 * order: c->lock is never held while taking c->wlock.
 */
#ifndef PANDASTACK_GUEST_CONN_INT_H
#define PANDASTACK_GUEST_CONN_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/proto.h"
#include "engine/guest/guest_conn.h"
#include "engine/guest/guest_stream.h"

#define CONTROL_SEND_TIMEOUT_MS 10000           /* OPEN, WINDOW, CANCEL, EOF, PONG */
/* Queued non-DATA messages (EVENT, END, ERROR, EOF) are kept as the bytes
 * the agent sent and parsed only when their owner takes them, so what they
 * cost is what is charged: their payload plus the queue node.  DATA is
 * bounded by the credit the host grants instead. */
#define STREAM_JSON_CAP (16u * 1024u * 1024u)   /* queued non-DATA bytes per stream */
#define CONN_JSON_CAP (64u * 1024u * 1024u)     /* the same, one sandbox's connection */
#define GLOBAL_JSON_CAP (256u * 1024u * 1024u)  /* the same, every connection of the process */
/* Stream-0 ERROR frames logged per connection and minute; the rest are
 * counted and the count logged once the minute is over. */
#define AGENT_ERRORS_LOGGED_PER_MIN 10u
#define STREAM_MSG_CAP 4096u                    /* queued non-DATA messages per stream */
#define READ_CHUNK (64u * 1024u)                /* bytes read from the socket at once */
#define DECODER_CAP ((size_t)PROTO_HDR_SIZE + PROTO_MAX_PAYLOAD)

struct msg_node {
	struct msg_node *next;
	struct guest_msg m;
	size_t cost;            /* bytes charged to the JSON caps (0 for DATA) */
};

struct guest_stream {
	struct guest_conn *c;
	uint32_t id;
	pthread_cond_t cond;    /* messages, credit, end, failure */
	struct msg_node *head, *tail;
	unsigned nmsgs;         /* non-DATA messages queued */
	size_t json_bytes;      /* their cost */
	int on_wire;            /* open in the mux (slot holds us) */
	int ended;              /* END or ERROR received (queued) */
	int end_taken;          /* ... and handed to the owner */
	int failed;             /* -ECONNRESET / -EPROTO once delivered after the queue */
	int owner_closed;       /* guest_stream_close ran: free when off the wire */
	int cancel_sent;
	int eof_sent;
};

struct guest_conn {
	int fd;
	pthread_mutex_t lock;
	pthread_mutex_t wlock;
	pthread_t reader;
	int reader_started;
	int alive;
	unsigned refs;          /* the handle + every stream not yet freed */
	struct proto_decoder dec;
	struct proto_mux mux;
	struct guest_stream *slot[PROTO_MAX_STREAMS];
	uint32_t next_id;
	size_t json_bytes;      /* non-DATA bytes queued on all streams */
	int64_t errlog_since;   /* monotonic ms: start of the ERROR-logging minute */
	unsigned errlog_n;      /* ERROR frames logged in that minute */
	unsigned errlog_dropped; /* ... and not logged */
	char label[GUEST_CONN_LABEL_MAX]; /* for log lines; under lock */
	json_t *info;
	uint64_t nonce;
	struct guest_conn_stats stats; /* set before the reader starts */
	/* The gate (guest_stream_gate_open): a call that every stream opened
	 * after it waits for; the first opener to come reads its END. */
	struct guest_stream *gate;  /* its stream until an opener takes it */
	int gate_state;             /* enum gate_state */
	int gate_err;               /* its -errno once GATE_FAILED */
	int64_t gate_deadline;      /* monotonic ms: when waiting for it gives up */
	json_t *gate_end;           /* the last gate's END once it passed (owned) */
	pthread_cond_t gate_cond;   /* gate_state changed; made by deadline_cond_init */
};

enum gate_state { GATE_NONE, GATE_PENDING, GATE_READING, GATE_OK, GATE_FAILED };

/* --- guest_link.c: frames out, the connection's memory ---------------------- */

/* guest_link_free - release a connection with no references left. */
void guest_link_free(struct guest_conn *c);

/* guest_link_unref_locked - drop one reference (c->lock held); 1 if c must
 * be freed now (after unlocking). */
int guest_link_unref_locked(struct guest_conn *c);

/* guest_link_kill_locked - mark c dead and shut the socket so the reader and
 * every waiter wake (c->lock held). */
void guest_link_kill_locked(struct guest_conn *c);

/*
 * guest_link_send - write one frame, waiting up to timeout_ms (-1: no bound)
 * for the socket to take its first byte; takes c->wlock (c->lock must not be
 * held).  Once started, the frame is finished unless the agent stalls for
 * max(timeout_ms, CONTROL_SEND_TIMEOUT_MS); a frame cut in the middle kills
 * the connection.  Returns 0, -ETIMEDOUT (nothing written), -ECONNRESET,
 * -EINVAL/-EMSGSIZE.
 */
int guest_link_send(struct guest_conn *c, uint8_t type, uint8_t flags, uint32_t id,
		    const void *payload, uint32_t len, int timeout_ms);

/* guest_link_parse_object - the JSON object len bytes at buf hold (new
 * reference; strings may hold U+0000), or NULL if they are not one. */
json_t *guest_link_parse_object(const uint8_t *buf, size_t len);

/* guest_link_global_charge - add n (may be negative) to the bytes queued by
 * every connection of the process; with n > 0, refuses (returns -ENOBUFS,
 * nothing added) if that would pass GLOBAL_JSON_CAP.  Any thread. */
int guest_link_global_charge(long n);

/* --- guest_stream.c: the reader thread ----------------------------------------- */

/* guest_stream_reader_main - the reader thread of c (pthread entry; arg is
 * c): reads the socket, decodes frames, files them into the streams' queues,
 * answers PING; on EOF or a fatal error kills c and fails every stream. */
void *guest_stream_reader_main(void *arg);

/* guest_stream_fail_all_locked - fail every stream still on the wire with
 * -ECONNRESET (c->lock held; the connection is going away). */
void guest_stream_fail_all_locked(struct guest_conn *c);

/* guest_stream_gate_drop - close a gate nobody has read (the connection is
 * closing): later opens fail with -ECONNRESET.  c->lock not held. */
void guest_stream_gate_drop(struct guest_conn *c);

#endif
