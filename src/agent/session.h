/*
 * session.h - the agent's side of the protocol connection: the transport
 * (a listening Unix socket in test mode, the virtio-serial port otherwise),
 * the handshake, frame decoding and dispatch, the stream table and the
 * writer (docs/agent-protocol.md).
 *
 * Host presence: on a socket, the host is away between connections; on the
 * virtio-serial port, reading returns EOF / poll reports POLLHUP while no
 * host is connected, so the port is then watched edge-triggered (the driver
 * wakes the port's waiters when the host opens it: no spinning, no periodic
 * wake-ups) with a probe every SESSION_AWAY_POLL_MS as a fallback.  Whenever
 * the host goes away every stream is cancelled (their processes killed) and
 * the decoder goes back to sync mode; the next host must start with HELLO.
 * A HELLO on a live connection also starts over (the host re-handshakes
 * after a restore).
 *
 * Threads: the loop thread only.
 */
#ifndef PANDASTACK_AGENT_SESSION_H
#define PANDASTACK_AGENT_SESSION_H

#include <stdint.h>

#include "agent/astream.h"
#include "agent/link.h"
#include "agent/loop.h"
#include "agent/outq.h"
#include "common/proto.h"

/* How often a port whose host is away is probed as well, ms (the
 * edge-triggered watch sees the host at once; this only covers a driver
 * that would not wake its waiters). */
#define SESSION_AWAY_POLL_MS 1000
/* The same when the watch could not be set up, ms. */
#define SESSION_AWAY_FAST_MS 10
/* How often a port that does not exist yet is looked for, ms. */
#define SESSION_FIND_POLL_MS 100

enum session_transport {
	SESSION_LISTEN = 1, /* path is a Unix socket to listen on */
	SESSION_PORT = 2,   /* path is a device (virtio-serial port) */
	SESSION_PORT_NAMED, /* path is a virtio-serial port name to look up */
};

struct session {
	struct agent_env *env;
	enum session_transport kind;
	char *path;             /* socket path, device path or port name */
	int lfd;                /* listening socket (SESSION_LISTEN) */
	int fd;                 /* connection or device; -1 when none */
	int host_present;       /* the transport has a host on it */
	int greeted;            /* a HELLO was accepted on this connection */
	uint64_t last_nonce;    /* of the last HELLO (repeats are logged quietly) */
	int64_t arrived_us;     /* CLOCK_MONOTONIC us when the host was seen */
	struct loop_watch lwatch, watch;
	struct loop_timer probe; /* away / not-found probing */
	struct proto_decoder dec;
	struct link link;       /* credit, priority frames, busy: shared with streams */
	struct astream *slot[PROTO_MAX_STREAMS]; /* parallel to link.mux.s[] */
	struct outq_wire wire;
	unsigned rr;            /* round-robin cursor over slot[] */
	uint64_t frames_in, frames_out, garbage_errors;
};

/*
 * session_new - set up the transport and register it with env->loop.
 * For SESSION_LISTEN, path is bound (an existing socket file is replaced)
 * and listened on; for SESSION_PORT it is opened O_RDWR|O_NONBLOCK (retried
 * while missing); for SESSION_PORT_NAMED the device is found through
 * /sys/class/virtio-ports/ (retried while missing).  Returns 0 with *out,
 * or -errno.
 */
int session_new(struct agent_env *env, enum session_transport kind, const char *path,
		struct session **out);

/* session_busy - 1 if the loop should not sleep (work is ready now). */
int session_busy(struct session *S);

/* session_free - cancel every stream, close the transport, free. */
void session_free(struct session *S);


#endif
