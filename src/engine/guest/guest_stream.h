/*
 * guest_stream.h - streams on a guest connection (guest_conn.h): one
 * operation of the agent protocol each (docs/agent-protocol.md).  The host
 * opens a stream with a JSON request, may write bytes on channel 0 under
 * the agent's credit, and reads the agent's messages (DATA on channels 1
 * and 2, EOF, EVENT, and one END or ERROR) from the stream's queue.
 *
 * Threads: a stream handle is used by one thread at a time, except that one
 * thread may write (guest_stream_write, _write_eof) or cancel while another
 * reads it.  A stream stays safe to use after its connection was closed or
 * lost: its reads then return -ECONNRESET.
 *
 * An exec or a code cell is read through guest_run.h, which feeds stdin
 * and turns these messages into typed events; the raw stream is for file
 * transfers and one-shot calls.
 */
#ifndef PANDASTACK_GUEST_STREAM_H
#define PANDASTACK_GUEST_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "engine/guest/guest_conn.h"

struct guest_stream;

/*
 * guest_stream_open - open a stream with request req (borrowed; serialised
 * and sent as OPEN).  When the connection has a gate (below) that has not
 * ended, first waits for it (up to the gate's own timeout): the agent then
 * sees this request only after the gate's work is done.  Returns 0 with *out
 * owned by the caller, -EMFILE (256 streams open), -ECONNRESET, -E2BIG
 * (request over the payload cap), -ENOMEM; the gate's error (-EIO, -ETIMEDOUT,
 * -ECONNRESET) when it failed, for every later open.
 */
int guest_stream_open(struct guest_conn *c, json_t *req, struct guest_stream **out);

/*
 * The gate: a call whose answer the caller does not wait for, but that every
 * stream opened after it waits for.  The restore message uses it so that a
 * pooled sandbox is handed out as soon as the message is sent: the agent
 * handles requests in the order they are opened, and no request of the new
 * owner is even sent before the restore's END says the clock and the entropy
 * are in place (docs/agent-protocol.md, "restore").
 *
 * guest_stream_gate_open - open a stream with req (borrowed) as c's gate;
 * waits for an earlier gate first.  timeout_ms bounds the wait for its END.
 * Returns 0 (sent), or what guest_stream_open returns.
 *
 * guest_stream_gate_wait - wait for c's gate to end.  Returns 0 when it
 * ended with an END without an "error" member (or there is none); -EIO (an
 * ERROR, or an END with "error": logged with the reply), -ETIMEDOUT,
 * -ECONNRESET; the same value again on every later call, and from every
 * later guest_stream_open.  Any thread; the first waiter reads the END.
 */
int guest_stream_gate_open(struct guest_conn *c, json_t *req, int timeout_ms);
int guest_stream_gate_wait(struct guest_conn *c);

/* guest_stream_gate_end - the END of the last gate that passed (a new
 * reference; the guest's words, untrusted), or NULL while none has.  Any
 * thread. */
json_t *guest_stream_gate_end(struct guest_conn *c);

/* guest_stream_id - the stream's id on the wire (for logs). */
uint32_t guest_stream_id(const struct guest_stream *s);

/*
 * guest_stream_write - send len bytes as DATA on channel PROTO_CH_IN, in
 * frames of at most 64 KiB, blocking while the agent has granted no credit.
 * timeout_ms bounds each wait for credit and for the socket to take a frame
 * (-1: no bound); a frame already under way is finished unless the agent
 * stops reading for 10 s, which closes the connection.  Returns 0,
 * -ETIMEDOUT, -ECONNRESET, -EPIPE (the stream already ended), -EPROTO (the
 * stream failed, see guest_stream_read).
 */
int guest_stream_write(struct guest_stream *s, const void *buf, size_t len, int timeout_ms);

/*
 * guest_stream_write_some - send as much of len bytes as the agent's credit
 * allows now, never waiting for credit; timeout_ms bounds the wait for the
 * socket to take each frame (as in guest_stream_write).  Returns the bytes
 * sent (0: no credit now, or the socket was full for timeout_ms), or
 * -ECONNRESET, -EPIPE, -EPROTO as guest_stream_write.
 */
ssize_t guest_stream_write_some(struct guest_stream *s, const void *buf, size_t len,
				int timeout_ms);

/* guest_stream_write_eof - send EOF on channel PROTO_CH_IN.  Returns 0,
 * -EALREADY (sent before), -EPIPE, -EPROTO, -ECONNRESET, -ETIMEDOUT. */
int guest_stream_write_eof(struct guest_stream *s);

/* Bits of guest_stream_poll's answer. */
#define GUEST_POLL_READ 1  /* guest_stream_read will not wait */
#define GUEST_POLL_WRITE 2 /* the agent granted credit for channel-0 DATA */

/*
 * guest_stream_poll - wait up to timeout_ms (-1: no bound; 0: just look)
 * until a message is queued or the stream ended or failed (GUEST_POLL_READ),
 * or, when want_write, the agent granted DATA credit (GUEST_POLL_WRITE).
 * Returns the bits that hold, 0 on timeout.  Lets one thread feed input and
 * read output without a deadlock (guest_run.c).
 */
int guest_stream_poll(struct guest_stream *s, int want_write, int timeout_ms);

enum guest_msg_kind {
	GUEST_MSG_DATA = 1,  /* bytes on channel PROTO_CH_STDOUT or PROTO_CH_STDERR */
	GUEST_MSG_EOF,       /* the channel ended */
	GUEST_MSG_EVENT,     /* json: an EVENT object */
	GUEST_MSG_END,       /* json: the END object; the stream is over */
	GUEST_MSG_ERROR,     /* json: {"code","message"}; the stream is over */
};

/* One message taken from a stream.  data and json are owned by the message
 * and released by guest_msg_clear.  len is the DATA bytes, or for EVENT,
 * END and ERROR the size of the JSON text the agent sent. */
struct guest_msg {
	enum guest_msg_kind kind;
	int channel;         /* enum proto_channel, for DATA and EOF */
	uint8_t *data;
	size_t len;
	json_t *json;
};

/*
 * guest_stream_read - take the next message of the stream, waiting up to
 * timeout_ms (-1: forever).  Taking DATA grants the agent credit back.
 * Returns 1 with *m filled, 0 after the stream ended and every message was
 * taken, -ETIMEDOUT, -ECONNRESET (connection lost before END; a synthetic
 * GUEST_MSG_ERROR is not produced), -EPROTO (the agent broke the protocol on
 * this stream: bad JSON, flooding, an unknown channel; it was sent CANCEL),
 * -ENOMEM.  Messages queued before a failure are still delivered first.
 */
int guest_stream_read(struct guest_stream *s, struct guest_msg *m, int timeout_ms);

/* guest_msg_clear - free what m holds; m may be reused. */
void guest_msg_clear(struct guest_msg *m);

/* guest_stream_cancel - send CANCEL; the agent stops the work and ENDs the
 * stream.  Returns 0 or -errno.  Harmless after the stream ended. */
int guest_stream_cancel(struct guest_stream *s);

/* guest_stream_close - cancel if not ended, drop queued messages, free.
 * NULL is a no-op. */
void guest_stream_close(struct guest_stream *s);

/*
 * guest_call - open a stream with req (borrowed), send nothing, wait up to
 * timeout_ms for END or ERROR.  On END, *result is the END object (new
 * reference; may contain "error").  On ERROR, returns -EPROTO with *result
 * the ERROR object.  EVENT and DATA messages are discarded.
 * Returns 0, -EPROTO, -ETIMEDOUT (the stream is cancelled), -ECONNRESET.
 */
int guest_call(struct guest_conn *c, json_t *req, int timeout_ms, json_t **result);

#endif
