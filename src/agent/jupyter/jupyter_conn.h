/*
 * jupyter_conn.h - the client side of one kernel connection over libzmq
 * (Jupyter kernels.rst "Connection files"; messaging.rst "Sockets").
 *
 * The connection file uses the ipc transport inside a private folder, so
 * nothing listens on TCP: endpoints are ipc://<dir>/k-<port> with ports
 * 1 shell, 2 iopub, 3 stdin, 4 control, 5 heartbeat (ipykernel binds
 * "<ip>-<port>" for ipc).  The key is 32 random bytes as 64 hex digits; the
 * digits' bytes are the HMAC key.
 *
 * Client sockets: shell, control and stdin are DEALERs sharing one routing
 * id (stdin must match shell, or input_request never arrives); iopub is a
 * SUB subscribed to everything with RCVHWM 0 (the caller drains it
 * continuously); heartbeat is a REQ that is recreated after a timeout
 * (a REQ that missed its reply is stuck).  All sockets have LINGER 0 and a
 * per-frame size cap (ZMQ_MAXMSGSIZE).
 *
 * Threads: a struct jupyter_conn is used by one thread (zmq sockets are not
 * thread-safe); the shared zmq context is.
 */
#ifndef PANDASTACK_AGENT_JUPYTER_CONN_H
#define PANDASTACK_AGENT_JUPYTER_CONN_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "agent/jupyter/jupyter_msg.h"

/* Largest frame accepted from the kernel, bytes (larger drops the link). */
#define JUPYTER_FRAME_MAX (64ll * 1024 * 1024)
/* Frames kept per message; more are received and discarded. */
#define JUPYTER_FRAMES_MAX 32
/* Longest private folder path: the ipc path must fit sun_path (108). */
#define JUPYTER_DIR_MAX 96

enum jupyter_channel {
	JUPYTER_SHELL = 0,
	JUPYTER_IOPUB,
	JUPYTER_STDIN,
	JUPYTER_CONTROL,
	JUPYTER_HB,
	JUPYTER_NCHANNELS
};

struct jupyter_conn {
	void *sock[JUPYTER_NCHANNELS];     /* NULL when closed */
	void *iopub_watch;                 /* PAIR: iopub's monitor events, NULL when closed */
	char dir[JUPYTER_DIR_MAX];         /* private folder (caller's) */
	char file[JUPYTER_DIR_MAX + 32];   /* the connection file */
	char key[65];                      /* hex key; its bytes sign */
	char session[JUPYTER_ID_SIZE];     /* our header.session */
	uint8_t routing_id[16];
	/* set by the owner: iopub output messages (jupyter_msg_is_output) are
	 * received and dropped unread, jupyter_conn_recv answering -ECANCELED */
	int drop_output;
	/* set by the owner, NULL or a request's msg_id: iopub output messages
	 * of that request (jupyter_msg_is_output_of) are dropped the same way */
	const char *drop_parent;
	/* heartbeat state (jupyter_conn_hb_*) */
	int hb_waiting;
	int64_t hb_sent_ms;
	uint64_t hb_seq;
};

/* jupyter_zmq_context - the process-wide zmq context (created on first
 * use, never destroyed).  NULL if libzmq could not create one. */
void *jupyter_zmq_context(void);

/*
 * jupyter_conn_prepare - new key, session and routing id; write the
 * connection file (mode 0600) into dir, an existing private folder
 * (strlen < JUPYTER_DIR_MAX).  Stale ipc files of an earlier kernel in dir
 * are removed.  Returns 0, -ENAMETOOLONG, or -errno from writing.
 */
int jupyter_conn_prepare(struct jupyter_conn *c, const char *dir);

/* jupyter_conn_open - create and connect the five sockets (the kernel may
 * bind later: zmq reconnects).  0, or -errno (sockets closed again). */
int jupyter_conn_open(struct jupyter_conn *c);

/* jupyter_conn_close - close every socket (pending messages dropped) and
 * remove the connection file and ipc files.  Safe to call twice. */
void jupyter_conn_close(struct jupyter_conn *c);

/* jupyter_conn_socket - the zmq socket of ch for zmq_poll (NULL if closed). */
void *jupyter_conn_socket(const struct jupyter_conn *c, enum jupyter_channel ch);

/*
 * jupyter_conn_send - send a request of msg_type with content (borrowed;
 * NULL is {}) on ch (shell, control or stdin) without blocking; the new
 * msg_id goes to msg_id (may be NULL).  0, -EAGAIN (queue full), -errno.
 */
int jupyter_conn_send(struct jupyter_conn *c, enum jupyter_channel ch, const char *msg_type,
		      const json_t *content, char msg_id[JUPYTER_ID_SIZE]);

/*
 * jupyter_conn_recv - receive one message from ch (not hb) without
 * blocking.  Returns 0 with *m filled (caller clears), -EAGAIN when nothing
 * is waiting, -EBADMSG or -EPERM for a message that was received but
 * dropped (malformed, bad signature: the caller just reads on),
 * -ECANCELED for an output message dropped unread (drop_output, drop_parent),
 * -errno.
 */
int jupyter_conn_recv(struct jupyter_conn *c, enum jupyter_channel ch, struct jupyter_msg *m);

/* jupyter_conn_hb_ping - send a heartbeat (8 bytes) if none is waiting;
 * now in ms.  0 or -errno. */
int jupyter_conn_hb_ping(struct jupyter_conn *c, int64_t now);

/* jupyter_conn_hb_recv - read the echo if there: 1 answered, 0 nothing
 * (yet), -errno. */
int jupyter_conn_hb_recv(struct jupyter_conn *c);

/* jupyter_conn_hb_reset - recreate the heartbeat REQ after a timeout.
 * 0 or -errno. */
int jupyter_conn_hb_reset(struct jupyter_conn *c);

/*
 * The iopub link's watch.  libzmq drops a link whose peer sent a frame
 * over ZMQ_MAXMSGSIZE (JUPYTER_FRAME_MAX; ipykernel's stream output under
 * a flood comes in frames of tens of MiB) and the subscriber never
 * reconnects by itself: without a watch, every later output of the kernel
 * would be lost.
 *   jupyter_conn_iopub_watch - a socket for zmq_poll (POLLIN) that becomes
 *                              readable when the iopub link dropped (NULL
 *                              if closed)
 *   jupyter_conn_iopub_dropped - read the watch's events: 1 if the link
 *                              dropped, else 0
 *   jupyter_conn_iopub_reopen  - recreate the iopub SUB and its watch (what
 *                              was in flight is lost): 0, or -errno (iopub
 *                              is then closed)
 * Client thread only, like the rest of the connection.
 */
void *jupyter_conn_iopub_watch(const struct jupyter_conn *c);
int jupyter_conn_iopub_dropped(struct jupyter_conn *c);
int jupyter_conn_iopub_reopen(struct jupyter_conn *c);

#endif
