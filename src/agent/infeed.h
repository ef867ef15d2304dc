/*
 * infeed.h - input from the host into a command's stdin pipe: the bytes a
 * stream received as DATA on channel 0 are held (at most the stream's
 * credit, PROTO_MAX_WINDOW) and written to the pipe as it takes them, and
 * only then reported to the stream with astream_consumed, so the host's
 * credit, not the agent's memory, bounds what waits.  Used by exec (its
 * stdin) and by background commands (command_stdin: one stream after
 * another feeds the same pipe).
 *
 * The pipe is closed when an EOF was asked for and everything held was
 * written, or when the command stops reading (EPIPE, POLLERR/POLLHUP): the
 * bytes held then are dropped (and reported consumed).  After every change
 * (bytes written, the pipe closed) the owner's callback runs, so it can
 * tell its stream how far the input got.
 *
 * Threads: the loop thread only.
 */
#ifndef PANDASTACK_AGENT_INFEED_H
#define PANDASTACK_AGENT_INFEED_H

#include <stdint.h>

#include "agent/astream.h"
#include "agent/loop.h"
#include "common/dynbuf.h"

struct infeed;
/* Called after bytes were written or the pipe was closed. */
typedef void (*infeed_cb)(struct infeed *f);

struct infeed {
	struct loop *loop;
	int fd;             /* the pipe's write end, -1 once closed */
	struct loop_watch w;
	struct dynbuf held; /* bytes not yet written */
	struct astream *s;  /* the stream the held bytes came from (credit), or NULL */
	int eof;            /* close the pipe once held is written */
	uint64_t written;   /* bytes written to the pipe, ever */
	infeed_cb cb;       /* may be NULL */
	void *ctx;          /* the owner's */
};

/* infeed_init - feed fd (nonblocking write end, taken; -1: none, every
 * byte is dropped) on loop.  cb(f) after changes; ctx is the owner's.
 * Returns 0 or -errno of adding the watch (fd is then closed). */
int infeed_init(struct infeed *f, struct loop *loop, int fd, infeed_cb cb, void *ctx);

/*
 * infeed_add - n bytes of DATA from stream s: written now as far as the
 * pipe takes them, the rest held.  When the pipe is closed (or an EOF was
 * asked for) they are dropped and reported consumed at once.  Returns 0, or
 * -EFBIG / -ENOMEM (more than the credit allows: a broken host; end s).
 */
int infeed_add(struct infeed *f, struct astream *s, const uint8_t *p, uint32_t n);

/* infeed_eof - close the pipe once everything held is written. */
void infeed_eof(struct infeed *f);

/* infeed_detach - stream s goes away: its held bytes are dropped (its
 * credit no longer matters).  No-op if s is not the feed's stream. */
void infeed_detach(struct infeed *f, struct astream *s);

/* infeed_close - close the pipe now, dropping what is held. */
void infeed_close(struct infeed *f);

/* infeed_free - infeed_close and release the buffer. */
void infeed_free(struct infeed *f);

#endif
