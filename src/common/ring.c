/*
 * ring.c - a byte ring numbered by stream offsets (see ring.h).
 */
#include "common/ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* First allocation, bytes (or cap, if smaller). */
#define RING_FIRST_ALLOC 4096u

void ring_init(struct ring *r, size_t cap)
{
	memset(r, 0, sizeof(*r));
	r->cap = cap ? cap : 1;
}

uint64_t ring_start(const struct ring *r)
{
	return r->end - r->len;
}

/* Grow the storage (never wrapped while it grows: head is 0) to hold
 * want bytes, up to cap.  Returns 0 or -ENOMEM. */
static int grow(struct ring *r, size_t want)
{
	if (want <= r->alloc || r->alloc == r->cap)
		return 0;
	size_t n = r->alloc ? r->alloc : RING_FIRST_ALLOC;
	while (n < want && n < r->cap)
		n = n > r->cap / 2 ? r->cap : n * 2;
	if (n > r->cap)
		n = r->cap;
	uint8_t *p = realloc(r->p, n);
	if (!p)
		return -ENOMEM;
	r->p = p;
	r->alloc = n;
	return 0;
}

int ring_write(struct ring *r, const void *data, size_t n)
{
	const uint8_t *src = data;
	int rc = 0;
	r->end += n;
	/* growing happens only while nothing was dropped: data is p[0..len) */
	if (r->head == 0 && r->len + n > r->alloc)
		rc = grow(r, r->len + n);
	size_t room = r->alloc;
	if (room == 0)
		return rc ? rc : -ENOMEM;
	if (n >= room) {
		/* only the last `room` bytes survive */
		memcpy(r->p, src + (n - room), room);
		r->head = 0;
		r->len = room;
		return rc;
	}
	size_t drop = r->len + n > room ? r->len + n - room : 0;
	r->head = (r->head + drop) % room;
	r->len -= drop;
	size_t tail = (r->head + r->len) % room;
	size_t first = room - tail < n ? room - tail : n;
	memcpy(r->p + tail, src, first);
	memcpy(r->p, src + first, n - first);
	r->len += n;
	return rc;
}

size_t ring_read(const struct ring *r, uint64_t from, void *out, size_t max, uint64_t *at)
{
	uint64_t start = ring_start(r);
	if (from < start)
		from = start;
	if (from > r->end)
		from = r->end;
	*at = from;
	size_t avail = (size_t)(r->end - from);
	size_t n = avail < max ? avail : max;
	if (n == 0)
		return 0;
	size_t pos = (r->head + (size_t)(from - start)) % r->alloc;
	size_t first = r->alloc - pos < n ? r->alloc - pos : n;
	memcpy(out, r->p + pos, first);
	memcpy((uint8_t *)out + first, r->p, n - first);
	return n;
}

void ring_free(struct ring *r)
{
	free(r->p);
	r->p = NULL;
	r->alloc = r->len = r->head = 0;
}
