/*
 * net_dnsmsg.c - DNS query parsing and answer writing (see net_dnsmsg.h).
 */
#include "daemon/net/net_dnsmsg.h"

#include <errno.h>
#include <string.h>

#define HDR 12
#define FLAG_QR 0x8000u
#define FLAG_RD 0x0100u
#define FLAG_RA 0x0080u
#define OPCODE(f) (((f) >> 11) & 15u)

static unsigned be16(const uint8_t *p)
{
	return ((unsigned)p[0] << 8) | p[1];
}

static void put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

/* The text form of the question's name (labels at msg[at..]) into q->name
 * when every label is letters, digits and hyphens and the whole is a host
 * name; *end gets the offset past the name.  -EBADMSG if malformed. */
static int read_name(const uint8_t *msg, size_t len, size_t at, struct net_dns_query *q,
		     size_t *end)
{
	char text[256];
	size_t tl = 0, wire = 0;
	int ldh = 1;
	for (;;) {
		if (at >= len)
			return -EBADMSG;
		unsigned l = msg[at++];
		wire += 1 + l;
		if (l == 0)
			break;
		if (l > 63 || wire > 255 || len - at < l)
			return -EBADMSG; /* a pointer, an extended label type, or too long */
		if (tl)
			text[tl++] = '.';
		for (unsigned i = 0; i < l; i++) {
			uint8_t c = msg[at + i];
			int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
				 (c >= '0' && c <= '9') || c == '-';
			ldh &= ok;
			text[tl++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
		}
		at += l;
	}
	if (wire > 255)
		return -EBADMSG;
	*end = at;
	q->name[0] = '\0';
	if (ldh && tl > 0 && net_policy_check_name(text, tl) == tl) {
		memcpy(q->name, text, tl);
		q->name[tl] = '\0';
	}
	return 0;
}

int net_dnsmsg_parse(const uint8_t *msg, size_t len, struct net_dns_query *q)
{
	memset(q, 0, sizeof(*q));
	if (len < HDR)
		return -EINVAL;
	q->id = (uint16_t)be16(msg);
	q->flags = (uint16_t)be16(msg + 2);
	if (q->flags & FLAG_QR)
		return -EINVAL;
	if (OPCODE(q->flags) != 0)
		return -ENOTSUP;
	if (be16(msg + 4) != 1 || be16(msg + 6) != 0 || be16(msg + 8) != 0)
		return -EBADMSG; /* one question, no answers, no authority */
	size_t end;
	if (read_name(msg, len, HDR, q, &end) < 0 || len - end < 4) {
		q->name[0] = '\0';
		return -EBADMSG;
	}
	q->qtype = (uint16_t)be16(msg + end);
	q->qclass = (uint16_t)be16(msg + end + 2);
	q->qlen = end + 4 - HDR;
	memcpy(q->question, msg + HDR, q->qlen);
	return 0;
}

size_t net_dnsmsg_answer(const struct net_dns_query *q, unsigned rcode, const uint32_t *addrs,
			 size_t n, uint32_t ttl, uint8_t *out, size_t cap)
{
	if (cap < NET_DNS_MSG_MAX || q->qlen > NET_DNS_QUESTION_MAX)
		return 0;
	if (rcode != NET_DNS_NOERROR || q->qlen == 0)
		n = 0;
	size_t fit = (NET_DNS_MSG_MAX - HDR - q->qlen) / 16;
	if (n > fit)
		n = fit;
	if (ttl > NET_DNS_TTL_MAX)
		ttl = NET_DNS_TTL_MAX;
	unsigned flags = FLAG_QR | (q->flags & (FLAG_RD | (15u << 11))) | FLAG_RA | (rcode & 15u);
	put16(out, q->id);
	put16(out + 2, flags);
	put16(out + 4, q->qlen ? 1 : 0);
	put16(out + 6, (unsigned)n);
	put16(out + 8, 0);
	put16(out + 10, 0);
	memcpy(out + HDR, q->question, q->qlen);
	size_t at = HDR + q->qlen;
	for (size_t i = 0; i < n; i++) {
		put16(out + at, 0xc000u | HDR); /* the question's name */
		put16(out + at + 2, NET_DNS_TYPE_A);
		put16(out + at + 4, NET_DNS_CLASS_IN);
		put32(out + at + 6, ttl);
		put16(out + at + 10, 4);
		put32(out + at + 12, addrs[i]);
		at += 16;
	}
	return at;
}
