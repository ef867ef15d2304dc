/*
 * outq.h - the agent's outgoing frames: queues of encoded frames and the
 * "wire", the short list of frames being written to the host right now.
 *
 * Every stream has its own queue (bounded by the credit the host granted,
 * see astream.h), the session has a priority queue for connection frames and
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
struct outq_frame {
	struct outq_frame *next;
	uint32_t stream;
	uint8_t type;
	uint8_t droppable;  /* may be discarded when the priority queue is full */
	uint8_t closes;     /* the stream's final END/ERROR: close it once written */
	uint32_t len;       /* payload bytes */
	uint8_t hdr[PROTO_HDR_SIZE];
	uint8_t payload[];  /* directly after hdr: the frame is contiguous */
};
_Static_assert(offsetof(struct outq_frame, payload) ==
		       offsetof(struct outq_frame, hdr) + PROTO_HDR_SIZE,
	       "frame header and payload must be contiguous");

struct outq {
	struct outq_frame *head, *tail;
	size_t bytes;       /* payload bytes held */
	size_t count;
};

/* Frames in flight to the transport. */
#define OUTQ_WIRE_MAX_ITEMS 32
#define OUTQ_WIRE_MAX_BYTES (256u * 1024u)

struct outq_wire {
	struct outq_frame *item[OUTQ_WIRE_MAX_ITEMS];
	int n;
	size_t off;         /* bytes of item[0] (header + payload) already written */
	size_t bytes;       /* total bytes of the items */
};

/*
 * outq_frame_new - allocate a frame of type/flags/stream with a copy of len
 * payload bytes (p may be NULL when len is 0).  Returns the item (owned by
 * the caller until queued) or NULL on -ENOMEM or a len over the type's cap.
 */
struct outq_frame *outq_frame_new(uint8_t type, uint8_t flags, uint32_t stream, const void *p,
				  uint32_t len);

/* outq_push - append it to q (takes ownership). */
void outq_push(struct outq *q, struct outq_frame *it);

/* outq_pop - remove and return the first item, or NULL. */
struct outq_frame *outq_pop(struct outq *q);

/* outq_clear - free every item of q. */
void outq_clear(struct outq *q);

/* outq_wire_room - 1 if the wire can take another frame. */
int outq_wire_room(const struct outq_wire *w);

/* outq_wire_add - append it (takes ownership).  Caller checked outq_wire_room. */
void outq_wire_add(struct outq_wire *w, struct outq_frame *it);

/*
 * outq_wire_write - write as much of the wire as fd takes (nonblocking writev).
 * done(ctx, item) is called for every frame written completely, and then
 * the item is freed.  Returns bytes written (>= 0; 0 with *again set when
 * the fd would block), or -errno (-EPIPE etc.: the host went away).
 */
ssize_t outq_wire_write(struct outq_wire *w, int fd, int *again,
			void (*done)(void *ctx, const struct outq_frame *it), void *ctx);

/*
 * outq_wire_clear - drop every frame; with keep_partial, a frame written in part
 * stays (its remaining bytes must still go out so the peer's decoder stays
 * in step) and the rest are freed.
 */
void outq_wire_clear(struct outq_wire *w, int keep_partial);

#endif
