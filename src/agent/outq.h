/*
 * outq.h - the agent's outgoing frames: queues of encoded frames and the
 * "wire", the short list of frames being written to the host right now.
 *
 * Every stream has its own queue (bounded by the credit the host granted,
 * see stream.h), the session has a priority queue for connection frames and
 * credit grants.  The wire is refilled by taking the priority queue first,
 * then one frame from each non-empty stream queue in turn (round-robin), so
 * a large download never holds other streams' frames back by more than one
 * 64 KiB frame per stream.  Writes are nonblocking and may stop in the
 * middle of a frame; the next write continues there.
 *
 * Threads: the loop thread only.
 */
#ifndef PANDASTACK_AGENT_OUTQ_H
#define PANDASTACK_AGENT_OUTQ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/proto.h"

/* One encoded frame.  Owned by the queue or wire holding it. */
struct frame_item {
	struct frame_item *next;
	uint32_t stream;
	uint8_t type;
	uint8_t droppable;  /* may be discarded when the priority queue is full */
	uint8_t closes;     /* the stream's final END/ERROR: close it once written */
	uint32_t len;       /* payload bytes */
	uint8_t hdr[PROTO_HDR_SIZE];
	uint8_t payload[];  /* directly after hdr: the frame is contiguous */
};
_Static_assert(offsetof(struct frame_item, payload) ==
		       offsetof(struct frame_item, hdr) + PROTO_HDR_SIZE,
	       "frame header and payload must be contiguous");

struct fqueue {
	struct frame_item *head, *tail;
	size_t bytes;       /* payload bytes held */
	size_t count;
};

/* Frames in flight to the transport. */
#define WIRE_MAX_ITEMS 32
#define WIRE_MAX_BYTES (256u * 1024u)

struct wire {
	struct frame_item *item[WIRE_MAX_ITEMS];
	int n;
	size_t off;         /* bytes of item[0] (header + payload) already written */
	size_t bytes;       /* total bytes of the items */
};

/*
 * frame_new - allocate a frame of type/flags/stream with a copy of len
 * payload bytes (p may be NULL when len is 0).  Returns the item (owned by
 * the caller until queued) or NULL on -ENOMEM or a len over the type's cap.
 */
struct frame_item *frame_new(uint8_t type, uint8_t flags, uint32_t stream, const void *p,
			     uint32_t len);

/* fq_push - append it to q (takes ownership). */
void fq_push(struct fqueue *q, struct frame_item *it);

/* fq_pop - remove and return the first item, or NULL. */
struct frame_item *fq_pop(struct fqueue *q);

/* fq_clear - free every item of q. */
void fq_clear(struct fqueue *q);

/* wire_room - 1 if the wire can take another frame. */
int wire_room(const struct wire *w);

/* wire_add - append it (takes ownership).  Caller checked wire_room. */
void wire_add(struct wire *w, struct frame_item *it);

/*
 * wire_write - write as much of the wire as fd takes (nonblocking writev).
 * done(ctx, item) is called for every frame written completely, and then
 * the item is freed.  Returns bytes written (>= 0; 0 with *again set when
 * the fd would block), or -errno (-EPIPE etc.: the host went away).
 */
ssize_t wire_write(struct wire *w, int fd, int *again,
		   void (*done)(void *ctx, const struct frame_item *it), void *ctx);

/*
 * wire_clear - drop every frame; with keep_partial, a frame written in part
 * stays (its remaining bytes must still go out so the peer's decoder stays
 * in step) and the rest are freed.
 */
void wire_clear(struct wire *w, int keep_partial);

#endif
