/*
 * proto.c - agent protocol frames: header encoding, the incremental decoder
 * with magic resynchronisation, and the per-stream credit table.
 *
 * Every byte given to the decoder is untrusted: lengths are checked against
 * caps before any allocation, and a bad header costs the frame, never the
 * process.  Pure computation; any thread, one thread per object.
 */
#include "proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


void proto_put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

uint32_t proto_get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

void proto_put_u64(uint8_t *p, uint64_t v)
{
	proto_put_u32(p, (uint32_t)v);
	proto_put_u32(p + 4, (uint32_t)(v >> 32));
}

uint64_t proto_get_u64(const uint8_t *p)
{
	return (uint64_t)proto_get_u32(p) | (uint64_t)proto_get_u32(p + 4) << 32;
}

const char *proto_type_name(uint8_t type)
{
	static const char *const names[] = {
		[PROTO_HELLO] = "HELLO",   [PROTO_HELLO_ACK] = "HELLO_ACK",
		[PROTO_OPEN] = "OPEN",     [PROTO_DATA] = "DATA",
		[PROTO_EOF] = "EOF",       [PROTO_WINDOW] = "WINDOW",
		[PROTO_EVENT] = "EVENT",   [PROTO_END] = "END",
		[PROTO_CANCEL] = "CANCEL", [PROTO_ERROR] = "ERROR",
		[PROTO_PING] = "PING",     [PROTO_PONG] = "PONG",
	};
	if (type >= sizeof(names) / sizeof(names[0]) || !names[type])
		return "?";
	return names[type];
}

static int type_known(uint8_t type)
{
	return type >= PROTO_HELLO && type <= PROTO_PONG;
}

static uint32_t type_cap(uint8_t type)
{
	switch (type) {
	case PROTO_DATA:
		return PROTO_MAX_DATA;
	case PROTO_EOF:
	case PROTO_CANCEL:
		return 0;
	case PROTO_WINDOW:
		return 4;
	case PROTO_PING:
	case PROTO_PONG:
		return 8;
	default:
		return PROTO_MAX_PAYLOAD;
	}
}

int proto_encode_hdr(uint8_t out[PROTO_HDR_SIZE], uint8_t type, uint8_t flags,
		     uint32_t stream, uint32_t len)
{
	if (!type_known(type))
		return -EINVAL;
	if (len > type_cap(type))
		return -EMSGSIZE;
	proto_put_u32(out, PROTO_MAGIC);
	out[4] = type;
	out[5] = flags;
	out[6] = 0;
	out[7] = 0;
	proto_put_u32(out + 8, stream);
	proto_put_u32(out + 12, len);
	return 0;
}

void proto_hello_encode(uint8_t out[PROTO_HELLO_SIZE], const struct proto_hello *h)
{
	proto_put_u32(out, h->version);
	proto_put_u64(out + 4, h->nonce);
}

int proto_hello_decode(const uint8_t *p, size_t len, struct proto_hello *h)
{
	if (len < PROTO_HELLO_SIZE)
		return -EBADMSG;
	h->version = proto_get_u32(p);
	h->nonce = proto_get_u64(p + 4);
	return 0;
}

int proto_window_decode(const uint8_t *p, size_t len, uint32_t *inc)
{
	if (len != 4)
		return -EBADMSG;
	*inc = proto_get_u32(p);
	return *inc ? 0 : -EBADMSG;
}

/* --- decoder --- */

int proto_decoder_init(struct proto_decoder *d)
{
	memset(d, 0, sizeof(*d));
	d->syncing = 1;
	return 0;
}

void proto_decoder_free(struct proto_decoder *d)
{
	free(d->buf);
	memset(d, 0, sizeof(*d));
}

/* Move unconsumed bytes to the front of the buffer. */
static void compact(struct proto_decoder *d)
{
	if (d->off == 0)
		return;
	memmove(d->buf, d->buf + d->off, d->len - d->off);
	d->len -= d->off;
	d->off = 0;
}

static void drop_pending(struct proto_decoder *d)
{
	d->off += d->skip;
	d->skip = 0;
	if (d->off == d->len)
		d->off = d->len = 0;
}

size_t proto_decoder_room(const struct proto_decoder *d)
{
	return PROTO_DECODER_CAP - (d->len - d->off - d->skip);
}

int proto_decoder_feed(struct proto_decoder *d, const void *data, size_t n)
{
	drop_pending(d);
	if (n == 0)
		return 0;
	if (n > PROTO_DECODER_CAP || d->len - d->off > PROTO_DECODER_CAP - n)
		return -ENOBUFS;
	if (d->len + n > d->cap)
		compact(d);
	if (d->len + n > d->cap) {
		size_t want = d->cap ? d->cap : 4096;
		while (want < d->len + n)
			want *= 2;
		if (want > PROTO_DECODER_CAP)
			want = PROTO_DECODER_CAP;
		uint8_t *nb = realloc(d->buf, want);
		if (!nb)
			return -ENOMEM;
		d->buf = nb;
		d->cap = want;
	}
	memcpy(d->buf + d->len, data, n);
	d->len += n;
	return 0;
}

void proto_decoder_resync(struct proto_decoder *d)
{
	d->skip = 0;
	d->dropped += d->len - d->off;
	d->off = d->len = 0;
	d->syncing = 1;
}

/* In sync mode, discard bytes up to the next possible magic. */
static void scan_magic(struct proto_decoder *d)
{
	static const uint8_t m[4] = {'P', 'S', 'F', '1'};
	while (d->len - d->off >= 1) {
		const uint8_t *p = d->buf + d->off;
		size_t avail = d->len - d->off;
		size_t k = avail < 4 ? avail : 4;
		if (memcmp(p, m, k) == 0) {
			if (k == 4)
				d->syncing = 0;
			return; /* a (possibly partial) magic at the front */
		}
		d->off++;
		d->dropped++;
	}
}

int proto_decoder_next(struct proto_decoder *d, struct proto_frame *f)
{
	drop_pending(d);
	if (d->syncing) {
		scan_magic(d);
		if (d->syncing)
			return 0;
	}
	size_t avail = d->len - d->off;
	if (avail < PROTO_HDR_SIZE)
		return 0;
	const uint8_t *h = d->buf + d->off;
	if (proto_get_u32(h) != PROTO_MAGIC) {
		/* skip one byte so the scan restarts after this false start */
		d->off++;
		d->dropped++;
		d->syncing = 1;
		return -EBADMSG;
	}
	memset(f, 0, sizeof(*f));
	f->type = h[4];
	f->flags = h[5];
	f->stream = proto_get_u32(h + 8);
	f->len = proto_get_u32(h + 12);
	if (!type_known(f->type) || f->len > type_cap(f->type)) {
		int err = type_known(f->type) ? -EMSGSIZE : -EPROTO;
		d->off += 4; /* drop the magic; resync past this header */
		d->dropped += 4;
		d->syncing = 1;
		f->payload = NULL;
		return err;
	}
	if (avail < PROTO_HDR_SIZE + (size_t)f->len)
		return 0;
	f->payload = h + PROTO_HDR_SIZE;
	d->skip = PROTO_HDR_SIZE + f->len;
	return 1;
}

/* --- stream table --- */

void proto_mux_init(struct proto_mux *m, enum proto_role role)
{
	memset(m, 0, sizeof(*m));
	m->role = role;
}

struct proto_stream_state *proto_mux_find(struct proto_mux *m, uint32_t id)
{
	if (id == 0)
		return NULL;
	for (uint32_t i = 0; i < PROTO_MAX_STREAMS; i++)
		if (m->s[i].id == id)
			return &m->s[i];
	return NULL;
}

int proto_mux_open(struct proto_mux *m, uint32_t id)
{
	if (id == 0)
		return -EINVAL;
	if (proto_mux_find(m, id))
		return -EEXIST;
	for (uint32_t i = 0; i < PROTO_MAX_STREAMS; i++) {
		struct proto_stream_state *s = &m->s[i];
		if (s->id)
			continue;
		memset(s, 0, sizeof(*s));
		s->id = id;
		s->send_credit = PROTO_INITIAL_WINDOW;
		s->recv_credit = PROTO_INITIAL_WINDOW;
		m->nopen++;
		return 0;
	}
	return -EMFILE;
}

void proto_mux_close(struct proto_mux *m, uint32_t id)
{
	struct proto_stream_state *s = proto_mux_find(m, id);
	if (!s)
		return;
	memset(s, 0, sizeof(*s));
	m->nopen--;
}

/* Which frame types the peer may send, given our role. */
static int peer_may_send(enum proto_role role, uint8_t type)
{
	switch (type) {
	case PROTO_DATA:
	case PROTO_EOF:
	case PROTO_WINDOW:
	case PROTO_ERROR:
	case PROTO_PING:
	case PROTO_PONG:
		return 1;
	case PROTO_HELLO:
	case PROTO_OPEN:
	case PROTO_CANCEL:
		return role == PROTO_ROLE_AGENT; /* host-only types */
	case PROTO_HELLO_ACK:
	case PROTO_EVENT:
	case PROTO_END:
		return role == PROTO_ROLE_HOST; /* agent-only types */
	default:
		return 0;
	}
}

static int on_stream_zero(uint8_t type)
{
	return type == PROTO_HELLO || type == PROTO_HELLO_ACK ||
	       type == PROTO_PING || type == PROTO_PONG;
}

int proto_mux_check(struct proto_mux *m, const struct proto_frame *f)
{
	if (!peer_may_send(m->role, f->type))
		return -EPROTO;
	if (f->stream == 0) {
		/* ERROR on stream 0 is a connection-level complaint */
		if (on_stream_zero(f->type) || f->type == PROTO_ERROR)
			return 0;
		return -EPROTO;
	}
	if (on_stream_zero(f->type))
		return -EPROTO;
	if (f->type == PROTO_OPEN)
		return proto_mux_open(m, f->stream);
	struct proto_stream_state *s = proto_mux_find(m, f->stream);
	if (!s)
		return -ENOENT;
	switch (f->type) {
	case PROTO_DATA:
		if ((int64_t)f->len > s->recv_credit)
			return -EOVERFLOW;
		s->recv_credit -= f->len;
		return 0;
	case PROTO_WINDOW: {
		uint32_t inc;
		if (proto_window_decode(f->payload, f->len, &inc) < 0)
			return -EPROTO;
		if (s->send_credit + (int64_t)inc > (int64_t)PROTO_MAX_WINDOW)
			return -EOVERFLOW;
		s->send_credit += inc;
		return 0;
	}
	case PROTO_EOF:
		s->in_eof = 1;
		return 0;
	default:
		return 0;
	}
}

uint32_t proto_mux_consumed(struct proto_mux *m, uint32_t id, uint32_t n)
{
	struct proto_stream_state *s = proto_mux_find(m, id);
	if (!s)
		return 0;
	s->recv_unacked += n;
	if (s->recv_unacked < PROTO_INITIAL_WINDOW / 2)
		return 0;
	uint32_t grant = s->recv_unacked;
	s->recv_unacked = 0;
	s->recv_credit += grant;
	return grant;
}

uint32_t proto_mux_take_credit(struct proto_mux *m, uint32_t id, uint32_t want)
{
	struct proto_stream_state *s = proto_mux_find(m, id);
	if (!s || s->send_credit <= 0)
		return 0;
	uint32_t got = want;
	if ((int64_t)got > s->send_credit)
		got = (uint32_t)s->send_credit;
	s->send_credit -= got;
	return got;
}
