/*
 * guest_conn.h - the host's connection to the guest agent
 * (docs/agent-protocol.md): one connection per sandbox to QEMU's
 * agent.sock, many concurrent streams (guest_stream.h) over it.
 *
 * Thread safety: every function may be called from any thread.  One reader
 * thread per connection demultiplexes the agent's frames into per-stream
 * queues; writers serialise on a write lock one frame (<= 64 KiB) at a time,
 * so streams interleave.
 *
 * The guest is hostile: every frame it sends is checked (proto_mux_check),
 * JSON is parsed with caps, a stream's queue never holds more than the window
 * it granted, and a protocol violation fails that stream (or, for garbage on
 * stream 0, the connection), never the daemon.
 *
 * Files: guest_conn.c (open: connect and handshake; close; restore),
 * guest_stream.c (streams and the reader thread that fills them),
 * guest_link.c (writing frames; the connection's memory).  Calls go one
 * way: guest_conn.c -> guest_stream.c -> guest_link.c.
 */
#ifndef PANDASTACK_GUEST_CONN_H
#define PANDASTACK_GUEST_CONN_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct guest_conn;

/*
 * guest_conn_open - connect to the agent socket at sock_path, handshake
 * (HELLO every 50 ms until the matching HELLO_ACK), start the reader thread.
 * timeout_ms bounds the whole call.  On success *out is owned by the caller
 * (free with guest_conn_close).  Returns 0, -ETIMEDOUT, -ECONNREFUSED/-ENOENT
 * (no socket), -EPROTONOSUPPORT (agent speaks another version), -ENOMEM.
 */
int guest_conn_open(const char *sock_path, int timeout_ms, struct guest_conn **out);

/*
 * guest_conn_close - close the socket, fail every open stream with
 * -ECONNRESET (their readers wake), join the reader thread, free.  Streams
 * still held must be closed by their owners before or after; the connection
 * memory lives until the last stream is closed.  NULL is a no-op.
 */
void guest_conn_close(struct guest_conn *c);

/* guest_conn_alive - 1 while the connection is up, 0 after EOF or a fatal
 * protocol error. */
int guest_conn_alive(struct guest_conn *c);

/* Longest label of a connection, with its NUL. */
#define GUEST_CONN_LABEL_MAX 64

/* guest_conn_set_label - name c in its log lines (the sandbox's id; "-"
 * until set): label is copied, cut at GUEST_CONN_LABEL_MAX - 1 bytes.
 * Any thread. */
void guest_conn_set_label(struct guest_conn *c, const char *label);

/* What the restore message carries besides the clock and the entropy
 * (docs/agent-protocol.md, "restore").  A zeroed struct: nothing. */
struct guest_restore_opts {
	/* the package index the guest's pip uses (common/pip_index.h; the
	 * caller checked it), or NULL / "": none (pip's default) */
	const char *pip_index_url;
	/* the sandbox this restore hands out ([A-Za-z0-9_-], at most
	 * GUEST_SANDBOX_ID_MAX bytes), or NULL / "": none (a bake, a pool entry
	 * made ahead).  The agent then runs the guest's after-restore hooks
	 * before its END; sent only to an agent whose HELLO_ACK lists the
	 * "restore_hooks" feature (an older one refuses the field). */
	const char *sandbox_id;
};

/* Longest sandbox id the restore carries, bytes. */
#define GUEST_SANDBOX_ID_MAX 64

/*
 * guest_conn_restore - send the restore operation: the host's wall clock
 * (CLOCK_REALTIME, ns), 64 bytes from getrandom() and what opts holds
 * (borrowed; NULL: nothing); wait for its END (with a sandbox id, that
 * includes the guest's after-restore hooks: at most ~23 s, see
 * docs/agent-protocol.md), then log what the agent reports of the hooks
 * (failures at warn, under c's label).  Call after every boot and every
 * restore before anything else.
 * Returns 0, -ETIMEDOUT, -ECONNRESET, -EIO (the agent reported an error),
 * -EINVAL (a bad opts->pip_index_url or opts->sandbox_id; nothing sent).
 */
int guest_conn_restore(struct guest_conn *c, const struct guest_restore_opts *opts,
		       int timeout_ms);

/*
 * guest_conn_restore_send - the same message, sent as the connection's gate
 * (guest_stream.h) without waiting for its END: every stream opened later
 * (every exec, file or context call) waits for that END first, and fails
 * with the restore's error if it failed.  timeout_ms bounds that wait.
 * Returns 0 (sent), -EINVAL (bad opts; nothing sent), -ENOMEM, -ECONNRESET,
 * -ETIMEDOUT (the socket did not take it).
 */
int guest_conn_restore_send(struct guest_conn *c, const struct guest_restore_opts *opts,
			    int timeout_ms);

/*
 * guest_conn_restore_hooks_found - the after-restore hooks the guest holds,
 * as the END of the last restore that passed reported them ("hooks_found":
 * a restore without a sandbox id lists them without running any); 0 when
 * it said nothing (an older agent, a restore not yet passed).  The guest's
 * word: it decides only whether a hand-out of that guest waits for its
 * hooks (pool.c).  Any thread.
 */
int guest_conn_restore_hooks_found(struct guest_conn *c);

/*
 * guest_conn_info - the JSON object the agent sent in HELLO_ACK (borrowed;
 * valid until guest_conn_close).
 */
json_t *guest_conn_info(struct guest_conn *c);

/* How guest_conn_open went, for phase timings (docs/engine.md). */
struct guest_conn_stats {
	int64_t connect_us;    /* socket + connect(2) */
	int64_t handshake_us;  /* first HELLO sent -> matching HELLO_ACK decoded */
	unsigned hellos;       /* HELLO frames sent (1 when the first was answered) */
};

/* guest_conn_stats - copy c's handshake figures into *out.  Any thread. */
void guest_conn_stats(const struct guest_conn *c, struct guest_conn_stats *out);

#endif
