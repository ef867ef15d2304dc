/*
 * ring.h - a byte ring that keeps the last `cap` bytes of an unbounded
 * stream and numbers every byte by its offset in that stream (0 for the
 * first byte ever written): a background command's output, which callers
 * read "from offset N" while older bytes make room for newer ones.
 *
 * Memory grows with what was written, doubling up to cap, so a command
 * that prints little costs little; once cap bytes were written the ring
 * wraps and the oldest bytes are overwritten.
 *
 * Threads: a ring is used by one thread at a time (no locking inside).
 */
#ifndef PANDASTACK_RING_H
#define PANDASTACK_RING_H

#include <stddef.h>
#include <stdint.h>

struct ring {
	uint8_t *p;      /* storage, alloc bytes; NULL until the first write */
	size_t alloc;    /* bytes allocated (<= cap) */
	size_t cap;      /* most bytes kept */
	size_t len;      /* bytes held (<= alloc) */
	size_t head;     /* index in p of the oldest byte held */
	uint64_t end;    /* offset just past the newest byte: bytes ever written */
};

/* ring_init - an empty ring keeping at most cap bytes (cap > 0).
 * Allocates nothing. */
void ring_init(struct ring *r, size_t cap);

/*
 * ring_write - append n bytes of data; the oldest bytes are dropped when
 * more than cap would be held (of data longer than cap only its last cap
 * bytes are kept).  Returns 0, or -ENOMEM when the storage could not grow
 * (then the bytes that fit the current storage are kept as if it were the
 * cap: the stream's offsets stay right, older bytes are dropped sooner).
 */
int ring_write(struct ring *r, const void *data, size_t n);

/* ring_start - the offset of the oldest byte held (== r->end when empty). */
uint64_t ring_start(const struct ring *r);

/*
 * ring_read - copy up to max bytes starting at offset from into out.
 * An offset before ring_start reads from ring_start (the bytes between were
 * dropped); one past r->end reads nothing.  *at gets the offset of the
 * first byte copied.  Returns the bytes copied.
 */
size_t ring_read(const struct ring *r, uint64_t from, void *out, size_t max, uint64_t *at);

/* ring_free - release the storage; the ring is empty again (end is kept,
 * so offsets continue). */
void ring_free(struct ring *r);

#endif
