/*
 * kernel_fallback.c - the plain-Python backend: runs the program of
 * kernel_fallback_py.c with a socketpair on fd 3 for its JSON-lines
 * protocol and pipes on fds 1 and 2 for what bypasses sys.stdout
 * (os.system, subprocesses, C code).
 *
 * Lines are parsed with the same tolerant JSON loader and turned into the
 * same struct jupyter_msg as ipykernel's messages, so the loop and the
 * result mapping are shared.  A line longer than LINE_MAX_BYTES is dropped.  The
 * fd 1/2 bytes go to the running execution as stdout/stderr (a UTF-8
 * character split between two reads is kept until it is whole).
 *
 * Threads: the client thread only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/jupyter/jupyter_json.h"
#include "agent/kernel/kernel_int.h"
#include "common/dynbuf.h"
#include "common/log.h"
#include "common/utf8.h"
#include "common/util.h"

#define LINE_MAX_BYTES JUPYTER_JSON_MAX
#define READ_CHUNK 65536
#define READS_PER_WAKE 64
#define TAIL_MAX 1024
/* Request bytes waiting for the kernel: a request's worst case (every byte
 * of the code escaped as \u00XX) and then some. */
#define WQ_MAX (6u * KERNEL_CODE_MAX + 64u * 1024u)
/* After the channel closed, wait this long for the process to exit. */
#define EOF_GRACE_MS 1000

static const char boot[] =
	"import sys;exec(compile(sys.argv.pop(1),'<pandastack-kernel>','exec'))";

struct fb {
	int chan;                     /* our end of the socketpair */
	int pipe[2];                  /* read ends of the kernel's fd 1, fd 2 */
	struct dynbuf line;           /* partial line from chan */
	int discarding;               /* inside a line over LINE_MAX_BYTES */
	struct dynbuf wq;             /* request bytes, sent up to woff */
	size_t woff;
	char carry[2][4];             /* an unfinished UTF-8 character */
	size_t carry_len[2];
	char tail[TAIL_MAX];          /* last stderr bytes (start failures) */
	size_t tail_len;
	int64_t eof_deadline;         /* chan closed: the process should end */
};

static void fb_free(struct fb *f)
{
	if (!f)
		return;
	if (f->chan >= 0)
		close(f->chan);
	for (int i = 0; i < 2; i++)
		if (f->pipe[i] >= 0)
			close(f->pipe[i]);
	dynbuf_free(&f->line);
	dynbuf_free(&f->wq);
	free(f);
}

static int fb_start(struct kernel_ctx *c)
{
	struct fb *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->chan = f->pipe[0] = f->pipe[1] = -1;
	dynbuf_init(&f->line, LINE_MAX_BYTES + READ_CHUNK);
	dynbuf_init(&f->wq, WQ_MAX);
	int sv[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 }, r = 0;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
	    pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
		r = -errno;
	if (r == 0) {
		f->chan = sv[0];
		f->pipe[0] = out[0];
		f->pipe[1] = err[0];
		fcntl(f->chan, F_SETFL, O_NONBLOCK);
		fcntl(f->pipe[0], F_SETFL, O_NONBLOCK);
		fcntl(f->pipe[1], F_SETFL, O_NONBLOCK);
		char *argv[] = { c->cfg.python, "-c", (char *)boot, (char *)kernel__fallback_py, NULL };
		struct kernel_spawn s = {
			.path = c->cfg.python, .argv = argv, .envp = c->cfg.envp,
			.cwd = c->cfg.cwd, .fd = { -1, out[1], err[1], sv[1] },
			.nice = c->cfg.nice,
			.idle = c->cfg.idle,
		};
		r = kernel_proc_spawn(&s, &c->proc);
	} else {
		for (int i = 0; i < 2; i++) {
			if (sv[i] >= 0)
				close(sv[i]);
			if (out[i] >= 0)
				close(out[i]);
			if (err[i] >= 0)
				close(err[i]);
		}
		sv[1] = out[1] = err[1] = -1;
	}
	if (sv[1] >= 0)
		close(sv[1]);
	if (out[1] >= 0)
		close(out[1]);
	if (err[1] >= 0)
		close(err[1]);
	if (r < 0) {
		fb_free(f);
		return r;
	}
	c->bs = f;
	return 0;
}

static void fb_stop(struct kernel_ctx *c)
{
	fb_free(c->bs);
	c->bs = NULL;
}

static int fb_fill_poll(struct kernel_ctx *c, zmq_pollitem_t *it, int max)
{
	struct fb *f = c->bs;
	if (max < 3)
		return 0;
	short ev = (short)(f->chan >= 0 ? ZMQ_POLLIN | (f->woff < f->wq.len ? ZMQ_POLLOUT : 0) : 0);
	it[0] = (zmq_pollitem_t){ .fd = f->chan, .events = ev };
	it[1] = (zmq_pollitem_t){ .fd = f->pipe[0], .events = f->pipe[0] >= 0 ? ZMQ_POLLIN : 0 };
	it[2] = (zmq_pollitem_t){ .fd = f->pipe[1], .events = f->pipe[1] >= 0 ? ZMQ_POLLIN : 0 };
	return 3;
}

static void keep_tail(struct fb *f, const char *s, size_t n)
{
	if (n > TAIL_MAX) {
		s += n - TAIL_MAX;
		n = TAIL_MAX;
	}
	if (f->tail_len + n > TAIL_MAX) {
		size_t drop = f->tail_len + n - TAIL_MAX;
		memmove(f->tail, f->tail + drop, f->tail_len - drop);
		f->tail_len -= drop;
	}
	memcpy(f->tail + f->tail_len, s, n);
	f->tail_len += n;
}

static void read_pipe(struct kernel_ctx *c, struct fb *f, int which)
{
	char buf[READ_CHUNK + 4];
	for (int k = 0; k < READS_PER_WAKE && c->bs == f && f->pipe[which] >= 0; k++) {
		size_t have = f->carry_len[which];
		memcpy(buf, f->carry[which], have);
		ssize_t n = read(f->pipe[which], buf + have, READ_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0 || errno != EAGAIN) {
				close(f->pipe[which]);
				f->pipe[which] = -1;
				if (have)
					kernel__on_output(c, which, buf, have);
				f->carry_len[which] = 0;
			}
			return;
		}
		size_t total = have + (size_t)n;
		if (which == 1)
			keep_tail(f, buf + have, (size_t)n);
		size_t carry = utf8_incomplete_tail(buf, total);
		memcpy(f->carry[which], buf + total - carry, carry);
		f->carry_len[which] = carry;
		kernel__on_output(c, which, buf, total - carry);
	}
}

static void on_line(struct kernel_ctx *c, const char *s, size_t n)
{
	json_t *v = jupyter_json_load(s, n);
	struct jupyter_msg m;
	if (!json_is_object(v) || jupyter_msg_from_json(v, &m) < 0) {
		json_decref(v);
		log_kv(LOG_DEBUG, "kernel.bad_line", "bytes=%zu", n);
		return;
	}
	json_decref(v);
	if (strcmp(m.msg_type, "kernel_info_reply") == 0)
		kernel__on_ready(c, m.content);
	else
		kernel__on_message(c, &m);
	jupyter_msg_clear(&m);
}

static void read_chan(struct kernel_ctx *c, struct fb *f, int64_t now)
{
	for (int k = 0; k < READS_PER_WAKE && c->bs == f && f->chan >= 0; k++) {
		struct dynbuf *l = &f->line;
		if (dynbuf_reserve(l, READ_CHUNK) < 0)
			return; /* out of memory (the cap leaves room for a read) */
		ssize_t n = recv(f->chan, l->p + l->len, READ_CHUNK, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
				close(f->chan);
				f->chan = -1;
				f->eof_deadline = now + EOF_GRACE_MS;
			}
			return;
		}
		size_t start = l->len;
		dynbuf_commit(l, (size_t)n);
		size_t from = 0;
		for (size_t i = start; i < l->len && c->bs == f; i++) {
			if (l->p[i] != '\n')
				continue;
			if (!f->discarding)
				on_line(c, l->p + from, i - from);
			f->discarding = 0;
			from = i + 1;
		}
		if (c->bs != f)
			return;
		dynbuf_consume(l, from);
		if (l->len > LINE_MAX_BYTES) {
			log_kv(LOG_WARN, "kernel.line_dropped", "bytes=%zu", l->len);
			f->discarding = 1;
			dynbuf_reset(l);
		}
		if (l->len == 0 && l->alloc > 4 * READ_CHUNK)
			dynbuf_free(l); /* a long line passed: give its memory back */
	}
}

static void write_chan(struct fb *f)
{
	while (f->chan >= 0 && f->woff < f->wq.len) {
		ssize_t n = send(f->chan, f->wq.p + f->woff, f->wq.len - f->woff,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				f->woff = f->wq.len; /* gone: the exit is reported by pidfd */
			break;
		}
		f->woff += (size_t)n;
	}
	if (f->woff >= f->wq.len) {
		dynbuf_free(&f->wq);
		f->woff = 0;
	}
}

static void fb_on_poll(struct kernel_ctx *c, zmq_pollitem_t *it, int n, int64_t now)
{
	struct fb *f = c->bs;
	if (n < 3)
		return;
	/* Pipes first: bytes written before idle are read before it. */
	if (it[1].revents & (ZMQ_POLLIN | ZMQ_POLLERR))
		read_pipe(c, f, 0);
	if (c->bs == f && (it[2].revents & (ZMQ_POLLIN | ZMQ_POLLERR)))
		read_pipe(c, f, 1);
	if (c->bs == f && (it[0].revents & ZMQ_POLLOUT))
		write_chan(f);
	if (c->bs == f && (it[0].revents & (ZMQ_POLLIN | ZMQ_POLLERR)))
		read_chan(c, f, now);
}

/* Internal jobs are silent: they leave the execution count alone. */
static int fb_execute(struct kernel_ctx *c, const char *code, int silent,
		      char msg_id[JUPYTER_ID_SIZE])
{
	struct fb *f = c->bs;
	size_t len = c->cur ? c->cur->code_len : strlen(code);
	int r = jupyter_new_id(msg_id);
	if (r < 0)
		return r;
	if (f->chan < 0)
		return -EPIPE;
	json_t *req = json_pack("{s:s, s:s, s:{s:s%, s:b}}", "msg_type", "execute_request",
				"msg_id", msg_id, "content", "code", code, len, "silent", silent);
	char *text = req ? json_dumps(req, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
	json_decref(req);
	if (!text)
		return -ENOMEM;
	/* room first, so a request is queued whole or not at all */
	size_t tl = strlen(text);
	r = dynbuf_reserve(&f->wq, tl + 1);
	if (r == 0) {
		dynbuf_add(&f->wq, text, tl);
		dynbuf_add(&f->wq, "\n", 1);
	}
	free(text);
	if (r < 0)
		return r == -EFBIG ? -ENOBUFS : r;
	write_chan(f);
	return 0;
}

static int64_t fb_next_due(struct kernel_ctx *c)
{
	struct fb *f = c->bs;
	return f->eof_deadline ? f->eof_deadline : INT64_MAX;
}

static void fb_on_time(struct kernel_ctx *c, int64_t now)
{
	struct fb *f = c->bs;
	if (f->eof_deadline && now >= f->eof_deadline) {
		f->eof_deadline = 0;
		kernel__on_lost(c, "the kernel closed its channel to the agent");
	}
}

static void fb_shutdown(struct kernel_ctx *c)
{
	struct fb *f = c->bs;
	if (f->chan >= 0)
		shutdown(f->chan, SHUT_WR); /* the kernel exits at end of input */
}

static void fb_log_tail(struct kernel_ctx *c, char *out, size_t n)
{
	struct fb *f = c->bs;
	if (n == 0)
		return;
	out[0] = '\0';
	if (!f)
		return;
	if (f->pipe[1] >= 0)
		read_pipe(c, f, 1);
	size_t len = f->tail_len < n - 1 ? f->tail_len : n - 1;
	memcpy(out, f->tail + f->tail_len - len, len);
	out[len] = '\0';
}

const struct kernel_backend kernel_fallback_backend = {
	.name = "fallback",
	.start = fb_start,
	.stop = fb_stop,
	.fill_poll = fb_fill_poll,
	.on_poll = fb_on_poll,
	.execute = fb_execute,
	.next_due = fb_next_due,
	.on_time = fb_on_time,
	.shutdown = fb_shutdown,
	.log_tail = fb_log_tail,
};
