/*
 * agent_conn.c - the host side of the agent protocol (see agent_conn.h and
 * docs/agent-protocol.md): the connection, its handshake, writes, and the
 * reader thread.  The stream API is agent_stream.c; both share
 * agent_conn_int.h.
 *
 * Structure: one connected, nonblocking Unix socket; one reader thread that
 * decodes frames and files them into per-stream message queues; callers'
 * threads write frames under wlock, one frame at a time, so streams
 * interleave.  c->lock guards all shared state (mux table, streams, queues);
 * lock order: c->lock is never held while taking wlock.
 *
 * Trust: the agent is hostile.  Frames pass the decoder's caps and
 * proto_mux_check (roles, credit) first.  A stream's DATA queue is bounded by
 * the credit we granted (we grant only what the owner has taken); EVENT and
 * other JSON messages are capped per stream and per connection.  A violation
 * on a stream fails that stream (-EPROTO to its reader, CANCEL to the
 * agent); garbage on stream 0 kills the connection (the owner reconnects).
 *
 * Stream memory: a stream is owned by its opener until agent_stream_close,
 * and known to the connection (slot[], parallel to mux.s[]) while it is open
 * on the wire.  It is freed when both are over.  The connection itself is
 * freed when its handle and every stream are gone.
 */
#include "engine/agent_conn_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

#define HELLO_RESEND_MS 50
#define READ_CHUNK (64u * 1024u)
#define DECODER_CAP ((size_t)PROTO_HDR_SIZE + PROTO_MAX_PAYLOAD)

/* --- small helpers ----------------------------------------------------------- */

void aconn_abs_deadline(struct timespec *ts, int timeout_ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += timeout_ms / 1000;
	ts->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

void aconn_cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &a);
	pthread_condattr_destroy(&a);
}

/* Wait on cv until woken or the deadline (NULL: no deadline).
 * Returns 0 or ETIMEDOUT. */
int aconn_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *m, const struct timespec *dl)
{
	if (!dl)
		return pthread_cond_wait(cv, m);
	return pthread_cond_timedwait(cv, m, dl);
}

void aconn_free(struct agent_conn *c)
{
	proto_decoder_free(&c->dec);
	json_decref(c->info);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->wlock);
	free(c);
}

/* Drop one reference (c->lock held); returns 1 if c must be freed now. */
int aconn_unref_locked(struct agent_conn *c)
{
	return --c->refs == 0;
}

/* --- writing -------------------------------------------------------------------- */

/* Mark the connection dead and wake everything (c->lock held). */
void aconn_kill_locked(struct agent_conn *c)
{
	if (!c->alive)
		return;
	c->alive = 0;
	shutdown(c->fd, SHUT_RDWR);
}

/*
 * Write one frame, waiting up to timeout_ms (-1: no bound) for the socket.
 * A frame cut in the middle leaves the byte stream unusable: the connection
 * is killed.  Returns 0, -ETIMEDOUT (nothing written), -ECONNRESET.
 */
int aconn_send(struct agent_conn *c, uint8_t type, uint8_t flags, uint32_t id,
		     const void *payload, uint32_t len, int timeout_ms)
{
	uint8_t hdr[PROTO_HDR_SIZE];
	int r = proto_encode_hdr(hdr, type, flags, id, len);
	if (r < 0)
		return r;
	int64_t deadline = timeout_ms < 0 ? -1 : util_now_ms() + timeout_ms;
	pthread_mutex_lock(&c->wlock);
	pthread_mutex_lock(&c->lock);
	int alive = c->alive;
	pthread_mutex_unlock(&c->lock);
	if (!alive) {
		pthread_mutex_unlock(&c->wlock);
		return -ECONNRESET;
	}
	size_t total = PROTO_HDR_SIZE + len, done = 0;
	r = 0;
	while (done < total) {
		struct iovec iov[2];
		int n = 0;
		if (done < PROTO_HDR_SIZE) {
			iov[n].iov_base = hdr + done;
			iov[n++].iov_len = PROTO_HDR_SIZE - done;
			if (len) {
				iov[n].iov_base = (void *)payload;
				iov[n++].iov_len = len;
			}
		} else {
			iov[n].iov_base = (uint8_t *)payload + (done - PROTO_HDR_SIZE);
			iov[n++].iov_len = total - done;
		}
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
		ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
		if (w > 0) {
			done += (size_t)w;
			/* a frame under way is finished, not cut (that would break
			 * the byte stream), unless the agent stops reading for the
			 * longer of timeout_ms and CONTROL_SEND_TIMEOUT_MS */
			if (deadline >= 0)
				deadline = util_now_ms() + (timeout_ms > CONTROL_SEND_TIMEOUT_MS
								    ? timeout_ms
								    : CONTROL_SEND_TIMEOUT_MS);
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			r = -ECONNRESET;
			break;
		}
		int wait = -1;
		if (deadline >= 0) {
			int64_t left = deadline - util_now_ms();
			if (left <= 0) {
				r = -ETIMEDOUT;
				break;
			}
			wait = (int)left;
		}
		struct pollfd p = {.fd = c->fd, .events = POLLOUT};
		if (poll(&p, 1, wait) < 0 && errno != EINTR) {
			r = -ECONNRESET;
			break;
		}
		if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) {
			r = -ECONNRESET;
			break;
		}
	}
	if (r < 0 && (done > 0 || r == -ECONNRESET)) {
		pthread_mutex_lock(&c->lock);
		aconn_kill_locked(c);
		pthread_mutex_unlock(&c->lock);
		if (r == -ETIMEDOUT && done > 0)
			log_kv(LOG_WARN, "agent_conn.write_stalled", "stream=%u", id);
	}
	pthread_mutex_unlock(&c->wlock);
	return r;
}

/* --- reading: frame handling (reader thread) --------------------------------------- */

/* Frames the reader must send once it has dropped c->lock. */
struct reader_out {
	uint32_t cancel[64];
	int ncancel;
	uint8_t pong[8];
	int pong_due;
};

/* Queue m on s and wake its owner (c->lock held). */
static int stream_push(struct agent_stream *s, struct agent_msg *m, size_t cost)
{
	struct msg_node *n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->m = *m;
	n->cost = cost;
	if (s->tail)
		s->tail->next = n;
	else
		s->head = n;
	s->tail = n;
	if (m->kind != AGENT_MSG_DATA) {
		s->nmsgs++;
		s->json_bytes += cost;
		s->c->json_bytes += cost;
	}
	pthread_cond_broadcast(&s->cond);
	return 0;
}

/* Fail s: its reader gets err after the queued messages; the agent gets
 * CANCEL (c->lock held). */
static void stream_fail(struct agent_stream *s, int err, struct reader_out *out)
{
	if (!s->failed)
		s->failed = err;
	if (!s->ended && !s->cancel_sent && out->ncancel < (int)(sizeof(out->cancel) / 4)) {
		out->cancel[out->ncancel++] = s->id;
		s->cancel_sent = 1;
	}
	s->ended = 1;
	aconn_stream_off_wire(s);
	pthread_cond_broadcast(&s->cond);
	/* the connection cannot reach zero references here: its handle holds
	 * one until after the reader is joined and fail_all_locked has run */
	if (s->owner_closed)
		(void)aconn_stream_free_locked(s);
}

/* Parse a JSON object payload; NULL if it is not one.  Strings may hold
 * U+0000 (a kernel's output can): readers take their lengths, and a C
 * string read of one (json_string_value) just ends early. */
static json_t *parse_object(const struct proto_frame *f)
{
	json_t *j = json_loadb((const char *)f->payload, f->len, JSON_ALLOW_NUL, NULL);
	if (j && !json_is_object(j)) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

static void handle_stream_frame(struct agent_conn *c, struct agent_stream *s,
				const struct proto_frame *f, struct reader_out *out)
{
	struct agent_msg m = {.channel = f->flags};
	size_t cost = 0;
	switch (f->type) {
	case PROTO_DATA:
	case PROTO_EOF:
		if (f->flags != PROTO_CH_STDOUT && f->flags != PROTO_CH_STDERR) {
			stream_fail(s, -EPROTO, out);
			return;
		}
		if (s->owner_closed) /* nobody will read it */
			return;
		m.kind = f->type == PROTO_DATA ? AGENT_MSG_DATA : AGENT_MSG_EOF;
		if (f->type == PROTO_DATA) {
			m.data = malloc(f->len ? f->len : 1);
			if (!m.data) {
				stream_fail(s, -ENOMEM, out);
				return;
			}
			memcpy(m.data, f->payload, f->len);
			m.len = f->len;
		} else {
			cost = 64;
		}
		break;
	case PROTO_EVENT:
	case PROTO_END:
	case PROTO_ERROR:
		m.kind = f->type == PROTO_EVENT ? AGENT_MSG_EVENT
			 : f->type == PROTO_END ? AGENT_MSG_END
						 : AGENT_MSG_ERROR;
		m.channel = 0;
		cost = f->len + 64;
		if (f->type != PROTO_EVENT) {
			s->ended = 1;
			aconn_stream_off_wire(s);
		}
		if (s->owner_closed) {
			if (s->ended)
				(void)aconn_stream_free_locked(s); /* the handle keeps c alive */
			return;
		}
		m.json = parse_object(f);
		if (!m.json) {
			stream_fail(s, -EPROTO, out);
			return;
		}
		break;
	case PROTO_WINDOW:
		pthread_cond_broadcast(&s->cond); /* credit was added by mux_check */
		return;
	default:
		stream_fail(s, -EPROTO, out);
		return;
	}
	if (m.kind != AGENT_MSG_DATA &&
	    (s->nmsgs >= STREAM_MSG_CAP || s->json_bytes + cost > STREAM_JSON_CAP ||
	     c->json_bytes + cost > CONN_JSON_CAP)) {
		agent_msg_clear(&m);
		stream_fail(s, -EPROTO, out); /* the agent floods us */
		return;
	}
	if (stream_push(s, &m, cost) < 0) {
		agent_msg_clear(&m);
		stream_fail(s, -ENOMEM, out);
	}
}

static void handle_frame(struct agent_conn *c, const struct proto_frame *f,
			 struct reader_out *out)
{
	int r = proto_mux_check(&c->mux, f);
	if (r == -ENOENT)
		return; /* for a stream we already closed */
	if (r < 0) {
		struct agent_stream *s = f->stream ? aconn_stream_of(c, f->stream) : NULL;
		if (s)
			stream_fail(s, -EPROTO, out);
		else if (f->stream == 0)
			aconn_kill_locked(c);
		return;
	}
	if (f->stream == 0) {
		switch (f->type) {
		case PROTO_PING:
			memcpy(out->pong, f->payload, 8);
			out->pong_due = 1;
			break;
		case PROTO_ERROR: {
			char txt[200], q[240];
			size_t n = f->len < sizeof(txt) - 1 ? f->len : sizeof(txt) - 1;
			memcpy(txt, f->payload, n);
			txt[n] = '\0';
			log_kv(LOG_WARN, "agent_conn.agent_error", "msg=%s",
			       log_quote(txt, q, sizeof(q)));
			break;
		}
		default: /* HELLO_ACK repeats (we resent HELLO), PONG */
			break;
		}
		return;
	}
	struct agent_stream *s = aconn_stream_of(c, f->stream);
	if (s)
		handle_stream_frame(c, s, f, out);
}

/* Fail every stream still on the wire (c->lock held). */
static void fail_all_locked(struct agent_conn *c)
{
	struct reader_out dummy = {.ncancel = (int)(sizeof(dummy.cancel) / 4)};
	for (unsigned i = 0; i < PROTO_MAX_STREAMS; i++) {
		struct agent_stream *s = c->slot[i];
		if (!s)
			continue;
		s->cancel_sent = 1; /* nobody to tell */
		stream_fail(s, -ECONNRESET, &dummy);
	}
}

static void *reader_main(void *arg)
{
	struct agent_conn *c = arg;
	uint8_t *buf = malloc(READ_CHUNK);
	while (buf) {
		ssize_t n = read(c->fd, buf, READ_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd p = {.fd = c->fd, .events = POLLIN};
			poll(&p, 1, -1);
			continue;
		}
		if (n <= 0)
			break;
		struct reader_out out = {0};
		pthread_mutex_lock(&c->lock);
		const uint8_t *p = buf;
		size_t left = (size_t)n;
		int dead = 0;
		while (left > 0 && !dead) {
			size_t held = c->dec.len - c->dec.off - c->dec.skip;
			size_t chunk = DECODER_CAP - held < left ? DECODER_CAP - held : left;
			if (proto_decoder_feed(&c->dec, p, chunk) < 0) {
				aconn_kill_locked(c);
				break;
			}
			p += chunk;
			left -= chunk;
			struct proto_frame f;
			int r;
			while ((r = proto_decoder_next(&c->dec, &f)) != 0) {
				if (r == 1) {
					handle_frame(c, &f, &out);
				} else {
					struct agent_stream *s =
						r != -EBADMSG && f.stream ? aconn_stream_of(c, f.stream) : NULL;
					if (s)
						stream_fail(s, -EPROTO, &out);
					else
						aconn_kill_locked(c); /* garbage on the connection */
				}
				if (!c->alive) {
					dead = 1;
					break;
				}
			}
		}
		pthread_mutex_unlock(&c->lock);
		for (int i = 0; i < out.ncancel; i++)
			aconn_send(c, PROTO_CANCEL, 0, out.cancel[i], NULL, 0, CONTROL_SEND_TIMEOUT_MS);
		if (out.pong_due)
			aconn_send(c, PROTO_PONG, 0, 0, out.pong, 8, CONTROL_SEND_TIMEOUT_MS);
		if (dead)
			break;
	}
	free(buf);
	pthread_mutex_lock(&c->lock);
	aconn_kill_locked(c);
	fail_all_locked(c);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* --- connection --------------------------------------------------------------------- */

static int send_hello(struct agent_conn *c)
{
	uint8_t p[PROTO_HELLO_SIZE];
	struct proto_hello h = {.version = PROTO_VERSION, .nonce = c->nonce};
	proto_hello_encode(p, &h);
	return aconn_send(c, PROTO_HELLO, 0, 0, p, sizeof(p), HELLO_RESEND_MS);
}

/* Look at one frame during the handshake.  Returns 1 when done, 0 to go
 * on, or -errno. */
static int handshake_frame(struct agent_conn *c, const struct proto_frame *f)
{
	if (f->stream != 0)
		return 0;
	if (f->type == PROTO_ERROR) {
		json_t *j = parse_object(f);
		const char *code = json_string_value(json_object_get(j, "code"));
		int unsupported = code && strcmp(code, "EPROTONOSUPPORT") == 0;
		json_decref(j);
		return unsupported ? -EPROTONOSUPPORT : 0;
	}
	if (f->type != PROTO_HELLO_ACK)
		return 0;
	struct proto_hello h;
	if (proto_hello_decode(f->payload, f->len, &h) < 0 || h.nonce != c->nonce)
		return 0; /* an answer to an older HELLO, or noise */
	if (h.version != PROTO_VERSION)
		return -EPROTONOSUPPORT;
	json_t *info = json_loadb((const char *)f->payload + PROTO_HELLO_SIZE,
				  f->len - PROTO_HELLO_SIZE, 0, NULL);
	if (!json_is_object(info)) {
		json_decref(info);
		info = json_object();
	}
	c->info = info;
	return c->info ? 1 : -ENOMEM;
}

static int handshake(struct agent_conn *c, int timeout_ms)
{
	int64_t deadline = util_now_ms() + timeout_ms, next_hello = 0;
	uint8_t *buf = malloc(READ_CHUNK);
	if (!buf)
		return -ENOMEM;
	int rc = -ETIMEDOUT;
	for (;;) {
		int64_t now = util_now_ms();
		if (now >= deadline)
			break;
		if (now >= next_hello) {
			int r = send_hello(c);
			if (r == -ECONNRESET) {
				rc = r;
				break;
			}
			c->stats.hellos++;
			next_hello = now + HELLO_RESEND_MS;
		}
		int64_t until = next_hello < deadline ? next_hello : deadline;
		struct pollfd p = {.fd = c->fd, .events = POLLIN};
		int pr = poll(&p, 1, (int)(until - now > 0 ? until - now : 0));
		if (pr <= 0)
			continue;
		ssize_t n = read(c->fd, buf, READ_CHUNK);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0) {
			rc = -ECONNRESET;
			break;
		}
		const uint8_t *q = buf;
		size_t left = (size_t)n;
		int r = 0;
		while (left > 0 && r == 0) {
			size_t held = c->dec.len - c->dec.off - c->dec.skip;
			size_t chunk = DECODER_CAP - held < left ? DECODER_CAP - held : left;
			if (proto_decoder_feed(&c->dec, q, chunk) < 0) {
				r = -ENOMEM;
				break;
			}
			q += chunk;
			left -= chunk;
			struct proto_frame f;
			int k;
			while (r == 0 && (k = proto_decoder_next(&c->dec, &f)) != 0)
				if (k == 1)
					r = handshake_frame(c, &f);
		}
		if (r != 0) {
			rc = r > 0 ? 0 : r;
			break;
		}
	}
	free(buf);
	return rc;
}

int agent_conn_open(const char *sock_path, int timeout_ms, struct agent_conn **out)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(sock_path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, sock_path);
	int64_t t0 = util_now_us();
	struct agent_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		int e = -errno;
		free(c);
		return e;
	}
	if (connect(c->fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int e = -errno;
		close(c->fd);
		free(c);
		return e;
	}
	fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->wlock, NULL);
	proto_decoder_init(&c->dec);
	proto_mux_init(&c->mux, PROTO_ROLE_HOST);
	c->alive = 1;
	c->refs = 1;
	c->next_id = 1;
	int64_t t1 = util_now_us();
	c->stats.connect_us = t1 - t0;
	int r = util_random(&c->nonce, sizeof(c->nonce));
	if (!r)
		r = handshake(c, timeout_ms);
	c->stats.handshake_us = util_now_us() - t1;
	log_kv(LOG_DEBUG, "agent_conn.handshake", "rc=%d connect_us=%lld handshake_us=%lld hellos=%u",
	       r, (long long)c->stats.connect_us, (long long)c->stats.handshake_us,
	       c->stats.hellos);
	if (!r) {
		int e = pthread_create(&c->reader, NULL, reader_main, c);
		r = e ? -e : 0;
		c->reader_started = !e;
	}
	if (r < 0) {
		close(c->fd);
		aconn_free(c);
		return r;
	}
	*out = c;
	return 0;
}

void agent_conn_close(struct agent_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	aconn_kill_locked(c);
	pthread_mutex_unlock(&c->lock);
	if (c->reader_started)
		pthread_join(c->reader, NULL);
	/* a writer between its liveness check and its write holds wlock: wait
	 * for it, so the fd number is never closed (and reused) under it */
	pthread_mutex_lock(&c->wlock);
	pthread_mutex_lock(&c->lock);
	fail_all_locked(c);
	close(c->fd);
	c->fd = -1;
	int last = aconn_unref_locked(c);
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&c->wlock);
	if (last)
		aconn_free(c);
}

int agent_conn_alive(struct agent_conn *c)
{
	pthread_mutex_lock(&c->lock);
	int a = c->alive;
	pthread_mutex_unlock(&c->lock);
	return a;
}

json_t *agent_conn_info(struct agent_conn *c)
{
	return c->info;
}

void agent_conn_stats(const struct agent_conn *c, struct agent_conn_stats *out)
{
	*out = c->stats; /* written before the reader thread started, never after */
}

int agent_conn_restore(struct agent_conn *c, int timeout_ms)
{
	uint8_t ent[64];
	char hex[2 * sizeof(ent) + 1], clock[24];
	int r = util_random(ent, sizeof(ent));
	if (r < 0)
		return r;
	util_hex(ent, sizeof(ent), hex);
	explicit_bzero(ent, sizeof(ent));
	snprintf(clock, sizeof(clock), "%llu", (unsigned long long)util_wall_ns());
	json_t *req = json_pack("{s:s, s:s, s:s}", "op", "restore", "wall_clock_ns", clock,
				"entropy", hex);
	explicit_bzero(hex, sizeof(hex));
	if (!req)
		return -ENOMEM;
	json_t *res = NULL;
	r = agent_call(c, req, timeout_ms, &res);
	json_decref(req);
	if (r == 0 && json_object_get(res, "error"))
		r = -EIO;
	if (r == -EPROTO)
		r = -EIO;
	if (r == -EIO) {
		char *txt = json_dumps(res, JSON_COMPACT);
		char q[300];
		log_kv(LOG_WARN, "agent_conn.restore_failed", "reply=%s",
		       log_quote(txt ? txt : "?", q, sizeof(q)));
		free(txt);
	}
	json_decref(res);
	return r;
}

