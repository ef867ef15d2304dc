/*
 * agent_conn.h - the host side of the agent protocol (docs/agent-protocol.md):
 * one connection per sandbox to QEMU's agent.sock, many concurrent streams.
 *
 * Thread safety: every function may be called from any thread; one reader
 * thread per connection demultiplexes frames into per-stream queues; writers
 * serialise on a write lock one frame (<= 64 KiB) at a time, so streams
 * interleave.  A stream handle is used by one thread at a time, except
 * that one thread may write (agent_stream_write, _write_eof) or cancel while
 * another reads it (the daemon feeds exec stdin that way).
 *
 * The guest is hostile: every frame it sends is checked (proto_mux_check),
 * JSON is parsed with caps, a stream's queue never holds more than the window
 * it granted, and a protocol violation fails that stream (or, for garbage on
 * stream 0, the connection), never the daemon.
 */
#ifndef PANDASTACK_AGENT_CONN_H
#define PANDASTACK_AGENT_CONN_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct agent_conn;
struct agent_stream;

/*
 * agent_conn_open - connect to the agent socket at sock_path, handshake
 * (HELLO every 50 ms until the matching HELLO_ACK), start the reader thread.
 * timeout_ms bounds the whole call.  On success *out is owned by the caller
 * (free with agent_conn_close).  Returns 0, -ETIMEDOUT, -ECONNREFUSED/-ENOENT
 * (no socket), -EPROTONOSUPPORT (agent speaks another version), -ENOMEM.
 */
int agent_conn_open(const char *sock_path, int timeout_ms, struct agent_conn **out);

/*
 * agent_conn_close - close the socket, fail every open stream with
 * -ECONNRESET (their readers wake), join the reader thread, free.  Streams
 * still held must be closed by their owners before or after; the connection
 * memory lives until the last stream is closed.  NULL is a no-op.
 */
void agent_conn_close(struct agent_conn *c);

/* agent_conn_alive - 1 while the connection is up, 0 after EOF or a fatal
 * protocol error. */
int agent_conn_alive(struct agent_conn *c);

/*
 * agent_conn_restore - send the restore operation: the host's wall clock
 * (CLOCK_REALTIME, ns) and 64 bytes from getrandom(); wait for its END.
 * Call after every boot and every restore before anything else.
 * Returns 0, -ETIMEDOUT, -ECONNRESET, -EIO (the agent reported an error).
 */
int agent_conn_restore(struct agent_conn *c, int timeout_ms);

/*
 * agent_conn_info - the JSON object the agent sent in HELLO_ACK (borrowed;
 * valid until agent_conn_close).
 */
json_t *agent_conn_info(struct agent_conn *c);

/* How agent_conn_open went, for phase timings (docs/engine.md). */
struct agent_conn_stats {
	int64_t connect_us;    /* socket + connect(2) */
	int64_t handshake_us;  /* first HELLO sent -> matching HELLO_ACK decoded */
	unsigned hellos;       /* HELLO frames sent (1 when the first was answered) */
};

/* agent_conn_stats - copy c's handshake figures into *out.  Any thread. */
void agent_conn_stats(const struct agent_conn *c, struct agent_conn_stats *out);

/*
 * agent_stream_open - open a stream with request req (borrowed; serialised
 * and sent as OPEN).  Returns 0 with *out owned by the caller, -EMFILE (256
 * streams open), -ECONNRESET, -E2BIG (request over the payload cap), -ENOMEM.
 */
int agent_stream_open(struct agent_conn *c, json_t *req, struct agent_stream **out);

/* agent_stream_id - the stream's id on the wire (for logs). */
uint32_t agent_stream_id(const struct agent_stream *s);

/*
 * agent_stream_write - send len bytes as DATA on channel 0, in frames of at
 * most 64 KiB, blocking while the agent has granted no credit.  timeout_ms
 * bounds each wait for credit and for the socket to take a frame (-1: no
 * bound); a frame already under way is finished unless the agent stops
 * reading for 10 s, which closes the connection.  Returns 0, -ETIMEDOUT,
 * -ECONNRESET, -EPIPE (the stream already ended), -EPROTO (the stream
 * failed, see agent_stream_read).
 */
int agent_stream_write(struct agent_stream *s, const void *buf, size_t len, int timeout_ms);

/* agent_stream_write_eof - send EOF on channel 0.  Returns 0 or -errno. */
int agent_stream_write_eof(struct agent_stream *s);

enum agent_msg_kind {
	AGENT_MSG_DATA = 1,  /* bytes on channel (1 stdout/file, 2 stderr) */
	AGENT_MSG_EOF,       /* the channel ended */
	AGENT_MSG_EVENT,     /* json: an EVENT object */
	AGENT_MSG_END,       /* json: the END object; the stream is over */
	AGENT_MSG_ERROR,     /* json: {"code","message"}; the stream is over */
};

/* One message taken from a stream.  data and json are owned by the message
 * and released by agent_msg_clear. */
struct agent_msg {
	enum agent_msg_kind kind;
	int channel;
	uint8_t *data;
	size_t len;
	json_t *json;
};

/*
 * agent_stream_read - take the next message of the stream, waiting up to
 * timeout_ms (-1: forever).  Taking DATA grants the agent credit back.
 * Returns 1 with *m filled, 0 after the stream ended and every message was
 * taken, -ETIMEDOUT, -ECONNRESET (connection lost before END; a synthetic
 * AGENT_MSG_ERROR is not produced), -EPROTO (the agent broke the protocol on
 * this stream: bad JSON, flooding, wrong channel; it was sent CANCEL),
 * -ENOMEM.  Messages queued before a failure are still delivered first.
 */
int agent_stream_read(struct agent_stream *s, struct agent_msg *m, int timeout_ms);

/* agent_msg_clear - free what m holds; m may be reused. */
void agent_msg_clear(struct agent_msg *m);

/* agent_stream_cancel - send CANCEL; the agent stops the work and ENDs the
 * stream.  Returns 0 or -errno.  Harmless after the stream ended. */
int agent_stream_cancel(struct agent_stream *s);

/* agent_stream_close - cancel if not ended, drop queued messages, free.
 * NULL is a no-op. */
void agent_stream_close(struct agent_stream *s);

/*
 * agent_call - open a stream with req (borrowed), send nothing, wait up to
 * timeout_ms for END or ERROR.  On END, *result is the END object (new
 * reference; may contain "error").  On ERROR, returns -EPROTO with *result
 * the ERROR object.  EVENT and DATA messages are discarded.
 * Returns 0, -EPROTO, -ETIMEDOUT (the stream is cancelled), -ECONNRESET.
 */
int agent_call(struct agent_conn *c, json_t *req, int timeout_ms, json_t **result);

#endif
