/*
 * outq.c - encoded frame queues and the nonblocking wire writer (see
 * outq.h).  Threads: the loop thread only.
 */
#include "agent/outq.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

struct outq_frame *outq_frame_new(uint8_t type, uint8_t flags, uint32_t stream, const void *p,
				  uint32_t len)
{
	uint8_t hdr[PROTO_HDR_SIZE];
	if (proto_encode_hdr(hdr, type, flags, stream, len) < 0)
		return NULL;
	struct outq_frame *it = malloc(sizeof(*it) + len);
	if (!it)
		return NULL;
	it->next = NULL;
	it->stream = stream;
	it->type = type;
	it->droppable = 0;
	it->closes = 0;
	it->len = len;
	memcpy(it->hdr, hdr, sizeof(hdr));
	if (len)
		memcpy(it->payload, p, len);
	return it;
}

void outq_push(struct outq *q, struct outq_frame *it)
{
	it->next = NULL;
	if (q->tail)
		q->tail->next = it;
	else
		q->head = it;
	q->tail = it;
	q->bytes += it->len;
	q->count++;
}

struct outq_frame *outq_pop(struct outq *q)
{
	struct outq_frame *it = q->head;
	if (!it)
		return NULL;
	q->head = it->next;
	if (!q->head)
		q->tail = NULL;
	q->bytes -= it->len;
	q->count--;
	it->next = NULL;
	return it;
}

void outq_clear(struct outq *q)
{
	struct outq_frame *it;
	while ((it = outq_pop(q)))
		free(it);
}

int outq_wire_room(const struct outq_wire *w)
{
	return w->n < OUTQ_WIRE_MAX_ITEMS && w->bytes < OUTQ_WIRE_MAX_BYTES;
}

void outq_wire_add(struct outq_wire *w, struct outq_frame *it)
{
	w->item[w->n++] = it;
	w->bytes += PROTO_HDR_SIZE + it->len;
}

/* Remove the first n items (all written) from the wire, then report and
 * free them: done() may look at the wire, which must not hold them then. */
static void wire_drop_front(struct outq_wire *w, int n,
			    void (*done)(void *ctx, const struct outq_frame *it), void *ctx)
{
	struct outq_frame *gone[OUTQ_WIRE_MAX_ITEMS];
	for (int i = 0; i < n; i++) {
		gone[i] = w->item[i];
		w->bytes -= PROTO_HDR_SIZE + gone[i]->len;
	}
	memmove(w->item, w->item + n, (size_t)(w->n - n) * sizeof(w->item[0]));
	w->n -= n;
	for (int i = 0; i < n; i++) {
		if (done)
			done(ctx, gone[i]);
		free(gone[i]);
	}
}

ssize_t outq_wire_write(struct outq_wire *w, int fd, int *again,
			void (*done)(void *ctx, const struct outq_frame *it), void *ctx)
{
	*again = 0;
	size_t total = 0;
	while (w->n > 0) {
		/* one iovec per frame: hdr and payload are adjacent in the item,
		 * so a device that takes one write per buffer (virtio-serial, at
		 * most 32 KiB each) gets whole frames, not a lone 16-byte header */
		struct iovec iov[OUTQ_WIRE_MAX_ITEMS];
		int niov = 0;
		for (int i = 0; i < w->n; i++) {
			struct outq_frame *it = w->item[i];
			size_t skip = i == 0 ? w->off : 0;
			iov[niov].iov_base = it->hdr + skip;
			iov[niov++].iov_len = PROTO_HDR_SIZE + it->len - skip;
		}
		ssize_t r = writev(fd, iov, niov);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				*again = 1;
				return (ssize_t)total;
			}
			return -errno;
		}
		if (r == 0) {
			*again = 1;
			return (ssize_t)total;
		}
		total += (size_t)r;
		size_t adv = w->off + (size_t)r;
		int full = 0;
		while (full < w->n && adv >= PROTO_HDR_SIZE + w->item[full]->len) {
			adv -= PROTO_HDR_SIZE + w->item[full]->len;
			full++;
		}
		w->off = adv; /* into the item that becomes item[0] */
		wire_drop_front(w, full, done, ctx);
	}
	return (ssize_t)total;
}

void outq_wire_clear(struct outq_wire *w, int keep_partial)
{
	int keep = (keep_partial && w->n > 0 && w->off > 0) ? 1 : 0;
	for (int i = keep; i < w->n; i++) {
		w->bytes -= PROTO_HDR_SIZE + w->item[i]->len;
		free(w->item[i]);
	}
	w->n = keep;
	if (!keep) {
		w->off = 0;
		w->bytes = 0;
	}
}
