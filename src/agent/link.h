/*
 * link.h - what the session and its streams share about the connection to
 * the host: the stream table's credit (the protocol's struct proto_mux), the
 * queue of priority frames (connection frames and WINDOW grants, written
 * before any stream's frames) and the flag that says work is ready now.
 *
 * The session (session.c) owns the link, drives the transport and empties
 * the priority queue onto the wire; streams (stream.c) take and grant credit
 * and queue grants here.  The link calls neither: it is the one thing both
 * sides use, so neither has to call back into the other.
 *
 * Threads: the loop thread only.
 */
#ifndef PANDASTACK_AGENT_LINK_H
#define PANDASTACK_AGENT_LINK_H

#include <stddef.h>

#include "agent/outq.h"
#include "common/proto.h"

/* Cap on droppable priority frames (PONG, ERROR notices) queued, bytes. */
#define LINK_PRIO_DROP_CAP (256u * 1024u)

struct link {
	struct proto_mux mux;   /* open streams and their credit */
	struct outq prio;     /* connection frames and WINDOW grants */
	size_t prio_drop_bytes; /* droppable bytes in prio (header included) */
	int busy;               /* more work is ready without waiting */
};

/* link_init - an empty link: no stream open, nothing queued, not busy. */
void link_init(struct link *L);

/* link_reset - forget every stream's credit and free the queued priority
 * frames (the host left or greeted again). */
void link_reset(struct link *L);

/* link_queue_prio - queue it ahead of all stream frames (takes ownership);
 * a droppable frame beyond LINK_PRIO_DROP_CAP is freed instead.  Sets
 * busy. */
void link_queue_prio(struct link *L, struct outq_frame *it);

/* link_pop_prio - take the first priority frame (the caller owns it), or
 * NULL when there is none. */
struct outq_frame *link_pop_prio(struct link *L);

#endif
