/*
 * link.c - the connection state the session and its streams share (see
 * link.h).  Threads: the loop thread only.
 */
#include "agent/link.h"

#include <stdlib.h>
#include <string.h>

void link_init(struct link *L)
{
	memset(L, 0, sizeof(*L));
	proto_mux_init(&L->mux, PROTO_ROLE_AGENT);
}

void link_reset(struct link *L)
{
	outq_clear(&L->prio);
	int busy = L->busy;
	link_init(L);
	L->busy = busy;
}

void link_queue_prio(struct link *L, struct outq_frame *it)
{
	if (it->droppable) {
		if (L->prio_drop_bytes + it->len + PROTO_HDR_SIZE > LINK_PRIO_DROP_CAP) {
			free(it);
			return;
		}
		L->prio_drop_bytes += it->len + PROTO_HDR_SIZE;
	}
	outq_push(&L->prio, it);
	L->busy = 1;
}

struct outq_frame *link_pop_prio(struct link *L)
{
	struct outq_frame *it = outq_pop(&L->prio);
	if (it && it->droppable)
		L->prio_drop_bytes -= it->len + PROTO_HDR_SIZE;
	return it;
}
