/*
 * proto.h - the agent protocol: frames and stream multiplexing shared by the
 * host (engine, daemon) and the guest agent.
 *
 * One byte stream (the virtio-serial port) carries length-prefixed binary
 * frames.  Every frame names a stream; stream 0 is the connection itself
 * (handshake, restore, ping).  Streams are opened by the host with OPEN, carry
 * raw bytes in DATA frames under per-stream credit (WINDOW), and are closed by
 * END or ERROR from the agent.  The wire format is documented in
 * docs/agent-protocol.md; this header is its single definition in code.
 *
 * Everything here is pure computation on caller-owned buffers: no I/O, no
 * allocation except inside struct proto_decoder, no threads.  Every byte
 * handed to the decoder is untrusted.
 */
#ifndef PANDASTACK_PROTO_H
#define PANDASTACK_PROTO_H

#include <stddef.h>
#include <stdint.h>

/* Protocol version carried in HELLO / HELLO_ACK. */
#define PROTO_VERSION 1u

/* "PSF1" read as a little-endian u32: 'P' 'S' 'F' '1' on the wire. */
#define PROTO_MAGIC 0x31465350u

/* Size of a frame header on the wire, bytes. */
#define PROTO_HDR_SIZE 16u

/* Largest payload any frame may carry, bytes.  Larger is a protocol error. */
#define PROTO_MAX_PAYLOAD (8u * 1024u * 1024u)

/* Largest payload a DATA frame may carry, bytes (keeps streams interleaved). */
#define PROTO_MAX_DATA (64u * 1024u)

/* Credit each side starts with on a new stream, per direction, bytes. */
#define PROTO_INITIAL_WINDOW (256u * 1024u)

/* Largest window a peer may grant in total on one stream, bytes. */
#define PROTO_MAX_WINDOW (16u * 1024u * 1024u)

/* Most streams open at once on one connection (>= 64 by contract). */
#define PROTO_MAX_STREAMS 256u

/* Frame types.  Direction: H = host to agent, A = agent to host. */
enum proto_type {
	PROTO_HELLO = 1,     /* H, stream 0: struct proto_hello */
	PROTO_HELLO_ACK = 2, /* A, stream 0: struct proto_hello + JSON agent info */
	PROTO_OPEN = 3,      /* H, stream != 0: JSON request {"op": ...} */
	PROTO_DATA = 4,      /* H/A: raw bytes; flags = channel */
	PROTO_EOF = 5,       /* H/A: end of one channel; flags = channel; empty */
	PROTO_WINDOW = 6,    /* H/A: u32 LE credit increment for DATA on stream */
	PROTO_EVENT = 7,     /* A: JSON progress event (started, kernel output) */
	PROTO_END = 8,       /* A: JSON final result; the stream is closed */
	PROTO_CANCEL = 9,    /* H: stop the operation; the agent answers END */
	PROTO_ERROR = 10,    /* H/A: JSON {"code","message"}; the stream is closed */
	PROTO_PING = 11,     /* H/A, stream 0: 8 opaque bytes */
	PROTO_PONG = 12,     /* H/A, stream 0: the PING's 8 bytes echoed */
};

/* Channels named by DATA and EOF flags. */
enum proto_channel {
	PROTO_CH_IN = 0,     /* host to agent: stdin, uploaded file bytes */
	PROTO_CH_STDOUT = 1, /* agent to host: stdout, downloaded file bytes */
	PROTO_CH_STDERR = 2, /* agent to host: stderr */
};

/* A decoded frame.  payload points into the decoder's buffer (borrowed) and
 * stays valid until the next call to proto_decoder_next/feed. */
struct proto_frame {
	uint8_t type;     /* enum proto_type */
	uint8_t flags;    /* channel for DATA/EOF, 0 otherwise */
	uint32_t stream;  /* 0 = connection control */
	uint32_t len;     /* payload length, bytes */
	const uint8_t *payload;
};

/* HELLO / HELLO_ACK fixed prefix, 12 bytes on the wire (u32 version, u64
 * nonce, both LE).  The agent echoes the host's nonce in its HELLO_ACK. */
struct proto_hello {
	uint32_t version;
	uint64_t nonce;
};
#define PROTO_HELLO_SIZE 12u

/*
 * proto_encode_hdr - write the 16-byte header of a frame into out.
 * type, flags, stream, len: the frame's fields (len = payload bytes).
 * Returns 0, or -EINVAL for an unknown type, -EMSGSIZE if len exceeds
 * PROTO_MAX_PAYLOAD (or PROTO_MAX_DATA for DATA).  Any thread.
 */
int proto_encode_hdr(uint8_t out[PROTO_HDR_SIZE], uint8_t type, uint8_t flags,
		     uint32_t stream, uint32_t len);

/* proto_hello_encode - write h as 12 bytes into out.  Any thread. */
void proto_hello_encode(uint8_t out[PROTO_HELLO_SIZE], const struct proto_hello *h);

/* proto_hello_decode - parse a HELLO/HELLO_ACK payload of len bytes.
 * Returns 0, or -EBADMSG if shorter than PROTO_HELLO_SIZE. */
int proto_hello_decode(const uint8_t *p, size_t len, struct proto_hello *h);

/* proto_window_decode - parse a WINDOW payload (exactly 4 bytes, LE u32,
 * non-zero).  Returns 0, or -EBADMSG. */
int proto_window_decode(const uint8_t *p, size_t len, uint32_t *inc);

/* proto_put_u32 / proto_get_u32 / proto_put_u64 / proto_get_u64: LE helpers. */
void proto_put_u32(uint8_t *p, uint32_t v);
uint32_t proto_get_u32(const uint8_t *p);
void proto_put_u64(uint8_t *p, uint64_t v);
uint64_t proto_get_u64(const uint8_t *p);

/* proto_type_name - static name of a frame type ("DATA"), or "?". */
const char *proto_type_name(uint8_t type);

/*
 * Incremental decoder.  Feed bytes as they arrive; take frames out one by
 * one.  The buffer is capped at PROTO_HDR_SIZE + PROTO_MAX_PAYLOAD bytes.
 *
 * In sync mode (the state after init and after proto_decoder_resync) the
 * decoder discards bytes until it sees PROTO_MAGIC, so a byte lost on the
 * line (it happens after a snapshot restore) costs one frame, not the link.
 */
struct proto_decoder {
	uint8_t *buf;     /* owned; grows up to the cap */
	size_t cap;       /* allocated bytes */
	size_t len;       /* bytes held */
	size_t off;       /* start of unconsumed bytes */
	size_t skip;      /* bytes of the last returned frame to drop next call */
	uint64_t dropped; /* garbage bytes discarded while resynchronising */
	int syncing;      /* 1: scanning for magic */
};

/* proto_decoder_init - empty decoder.  Returns 0. */
int proto_decoder_init(struct proto_decoder *d);

/* proto_decoder_free - release the buffer; d may be reused after init. */
void proto_decoder_free(struct proto_decoder *d);

/* Most bytes a decoder holds: one frame of the largest size. */
#define PROTO_DECODER_CAP ((size_t)PROTO_HDR_SIZE + PROTO_MAX_PAYLOAD)

/*
 * proto_decoder_feed - append n bytes.  Returns 0, or -ENOBUFS when the held
 * bytes would exceed PROTO_DECODER_CAP (the caller must take frames out
 * first; this cannot happen if it feeds at most proto_decoder_room bytes and
 * then calls proto_decoder_next until it returns 0), -ENOMEM.
 */
int proto_decoder_feed(struct proto_decoder *d, const void *data, size_t n);

/* proto_decoder_room - bytes proto_decoder_feed takes now: the cap less the
 * bytes held that are not yet returned as frames (the feed first drops the
 * frame proto_decoder_next returned last). */
size_t proto_decoder_room(const struct proto_decoder *d);

/*
 * proto_decoder_next - take the next complete frame.
 * Returns 1 with *f filled (payload borrowed until the next call), 0 when more
 * bytes are needed, or an error after which the offending header has been
 * dropped and the decoder is resynchronising:
 *   -EBADMSG   bad magic (bytes lost or garbage on the line)
 *   -EMSGSIZE  length beyond the cap for the frame's type; *f has its type,
 *              flags and stream so the caller can fail that stream
 *   -EPROTO    unknown frame type; *f filled as for -EMSGSIZE
 */
int proto_decoder_next(struct proto_decoder *d, struct proto_frame *f);

/* proto_decoder_resync - drop buffered bytes and scan for the next magic. */
void proto_decoder_resync(struct proto_decoder *d);

/*
 * Stream table: the state one side keeps per open stream, and the checks
 * every incoming frame must pass.  Used by both roles; role decides which
 * frame types the peer may send.
 */
enum proto_role {
	PROTO_ROLE_HOST = 0,  /* we are the host: the peer is the agent */
	PROTO_ROLE_AGENT = 1, /* we are the agent: the peer is the host */
};

struct proto_stream_state {
	uint32_t id;          /* 0 = free slot */
	int64_t send_credit;  /* bytes we may still send as DATA */
	int64_t recv_credit;  /* bytes the peer may still send us as DATA */
	uint32_t recv_unacked;/* bytes consumed but not yet granted back */
	uint8_t in_eof;       /* peer sent EOF on its data channels */
};

struct proto_mux {
	enum proto_role role;
	uint32_t nopen;
	struct proto_stream_state s[PROTO_MAX_STREAMS];
};

/* proto_mux_init - empty table for the given role. */
void proto_mux_init(struct proto_mux *m, enum proto_role role);

/* proto_mux_find - the state of open stream id, or NULL. */
struct proto_stream_state *proto_mux_find(struct proto_mux *m, uint32_t id);

/*
 * proto_mux_open - record a new stream with initial windows both ways.
 * Returns 0, -EINVAL for id 0, -EEXIST if open, -EMFILE when
 * PROTO_MAX_STREAMS are open.
 */
int proto_mux_open(struct proto_mux *m, uint32_t id);

/* proto_mux_close - forget stream id (no-op if unknown). */
void proto_mux_close(struct proto_mux *m, uint32_t id);

/*
 * proto_mux_check - validate an incoming frame against the table and apply
 * its accounting (DATA consumes recv_credit, WINDOW adds send_credit, OPEN
 * opens on the agent side, EOF marks in_eof).  Does not close streams: the
 * caller closes after acting on END/ERROR/CANCEL.
 * Returns 0 if the frame is acceptable, or:
 *   -EPROTO    frame type not allowed from the peer's role or on stream 0 /
 *              not allowed outside stream 0; bad WINDOW payload
 *   -ENOENT    stream not open (late frames after close are expected:
 *              callers usually drop these quietly)
 *   -EEXIST    OPEN of an already open stream
 *   -EMFILE    OPEN beyond PROTO_MAX_STREAMS
 *   -EOVERFLOW DATA beyond the granted credit, or a window above the cap
 */
int proto_mux_check(struct proto_mux *m, const struct proto_frame *f);

/*
 * proto_mux_consumed - note that n bytes of DATA on stream id were consumed
 * by the application.  Returns the credit to grant back in a WINDOW frame
 * now (0: not yet; batches until half the initial window), and adds it to
 * recv_credit.  Unknown id returns 0.
 */
uint32_t proto_mux_consumed(struct proto_mux *m, uint32_t id, uint32_t n);

/* proto_mux_take_credit - reserve up to want bytes of send credit on id.
 * Returns the bytes granted (0 if none or unknown id). */
uint32_t proto_mux_take_credit(struct proto_mux *m, uint32_t id, uint32_t want);

#endif
