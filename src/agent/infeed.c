/*
 * infeed.c - host input into a command's stdin pipe (see infeed.h).
 *
 * Threads: the loop thread only.
 */
#include "agent/infeed.h"

#include <errno.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/proto.h"

static void on_pipe(struct loop_watch *w, uint32_t ev);

int infeed_init(struct infeed *f, struct loop *loop, int fd, infeed_cb cb, void *ctx)
{
	f->loop = loop;
	f->fd = fd;
	f->s = NULL;
	f->eof = 0;
	f->written = 0;
	f->cb = cb;
	f->ctx = ctx;
	dynbuf_init(&f->held, PROTO_MAX_WINDOW);
	loop_watch_init(&f->w, on_pipe, f);
	if (fd < 0)
		return 0;
	int r = loop_watch_add(loop, &f->w, fd, 0);
	if (r < 0) {
		close(fd);
		f->fd = -1;
	}
	return r;
}

/* Drop what is held, granting its stream the credit back. */
static void drop_held(struct infeed *f)
{
	if (f->held.len && f->s)
		astream_consumed(f->s, (uint32_t)f->held.len);
	dynbuf_reset(&f->held);
}

static void close_pipe(struct infeed *f)
{
	loop_watch_del(f->loop, &f->w);
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	drop_held(f);
}

void infeed_close(struct infeed *f)
{
	int was_open = f->fd >= 0;
	close_pipe(f);
	if (was_open && f->cb)
		f->cb(f);
}

/* Write what is held; stops at EAGAIN, when empty or when the pipe
 * closes.  Then the callback. */
static void flush(struct infeed *f)
{
	int changed = 0;
	while (f->fd >= 0 && f->held.len > 0) {
		ssize_t n = write(f->fd, f->held.p, f->held.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) { /* EPIPE: the command stopped reading */
			close_pipe(f);
			changed = 1;
			break;
		}
		dynbuf_consume(&f->held, (size_t)n);
		f->written += (uint64_t)n;
		if (f->s)
			astream_consumed(f->s, (uint32_t)n);
		changed = 1;
	}
	if (f->fd >= 0 && f->held.len == 0 && f->eof) {
		close_pipe(f);
		changed = 1;
	}
	if (f->fd >= 0)
		loop_watch_set(f->loop, &f->w, f->held.len ? EPOLLOUT : 0);
	if (changed && f->cb)
		f->cb(f);
}

static void on_pipe(struct loop_watch *w, uint32_t ev)
{
	struct infeed *f = w->ctx;
	if (ev & (EPOLLERR | EPOLLHUP)) {
		infeed_close(f);
		return;
	}
	flush(f);
}

int infeed_add(struct infeed *f, struct astream *s, const uint8_t *p, uint32_t n)
{
	if (f->fd < 0 || f->eof) {
		astream_consumed(s, n); /* nobody reads it: drop */
		return 0;
	}
	if (f->s != s) {
		drop_held(f); /* a stream that left without detaching */
		f->s = s;
	}
	/* the credit bounds what the host may send, hence the cap: more is a
	 * broken host, and the error ends the stream */
	int r = dynbuf_add(&f->held, p, n);
	if (r < 0)
		return r;
	flush(f);
	return 0;
}

void infeed_eof(struct infeed *f)
{
	f->eof = 1;
	flush(f);
}

void infeed_detach(struct infeed *f, struct astream *s)
{
	if (f->s != s)
		return;
	drop_held(f);
	f->s = NULL;
	if (f->fd >= 0)
		loop_watch_set(f->loop, &f->w, 0);
}

void infeed_free(struct infeed *f)
{
	close_pipe(f);
	dynbuf_free(&f->held);
}
