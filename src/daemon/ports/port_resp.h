/*
 * port_resp.h - the answer of a server inside a sandbox to one proxied
 * request, as its bytes arrive: the head (status and headers, capped) and
 * the body without its HTTP/1.1 framing (Content-Length, chunked, or up to
 * the end of the connection; RFC 9112 6).
 *
 * The guest is hostile: every byte is outside input.  The grammar is
 * Debian's http-parser (libhttp-parser, strict mode); this file adds the
 * caps (PORT_RESP_HEAD_MAX bytes of head, PORT_RESP_HEADERS_MAX headers,
 * 16 interim answers), checks header names are tokens and values hold no
 * control bytes (RFC 9110 5.1, 5.5), skips interim 1xx answers other than
 * 101, and hands out the body.  Trailer fields of a chunked body are checked
 * the same way and count against the head's cap, but are dropped: the final
 * head's headers never change once head_done.
 * tests/fuzz/fuzz_api_ports.c feeds it.
 *
 * Use: port_resp_init, then port_resp_feed with each piece read from the
 * guest (a zero-length feed is the end of the connection) until head_done;
 * read status and headers; keep feeding for the body until complete.
 *
 * Memory: a struct port_resp is self-contained (no heap); the header names
 * and values live in it.  Threads: one at a time per struct.
 */
#ifndef PANDASTACK_DAEMON_PORT_RESP_H
#define PANDASTACK_DAEMON_PORT_RESP_H

#include <stddef.h>
#include <stdint.h>

#include <http_parser.h>

#define PORT_RESP_HEAD_MAX (16u * 1024)  /* bytes of one head: its status line, header
					 * names and values and their separators */
#define PORT_RESP_HEADERS_MAX 100       /* header lines of one head */

struct port_resp {
	http_parser p;
	int head_request;        /* the request was HEAD: no body follows */
	/* the final head, once head_done */
	unsigned status;         /* 101..599 */
	size_t nheaders;
	struct {
		uint16_t name, value;   /* offsets into store, NUL-terminated */
	} headers[PORT_RESP_HEADERS_MAX];
	char store[PORT_RESP_HEAD_MAX + 2 * PORT_RESP_HEADERS_MAX];
	size_t store_len;
	size_t head_len;         /* bytes of the current head counted so far */
	int64_t content_length;  /* from the head; -1 when the body has no
				  * announced length (chunked, to the end) or
				  * there is no body */
	int head_done;           /* the final head (>= 200, or 101) is complete */
	int upgrade;             /* 101 Switching Protocols: the bytes after the
				  * head belong to the new protocol */
	int complete;            /* the whole answer is in */
	/* internal */
	int in_value;            /* the last header callback was a value */
	unsigned interim;        /* interim answers skipped */
	int failed;              /* a cap was passed */
	char *out;               /* the caller's body buffer for this feed */
	size_t out_len, out_cap;
};

/* port_resp_init - ready r for the answer to a request; head_request 1
 * when that request was HEAD. */
void port_resp_init(struct port_resp *r, int head_request);

/*
 * port_resp_feed - parse len bytes from the guest (len 0: the guest closed
 * its side).  Body bytes are copied to out (outcap bytes; passing outcap >=
 * len always suffices, since framing only removes bytes) and their number
 * stored in *outlen.  Returns the number of input bytes consumed: len,
 * unless the head ended in an upgrade (the rest is the new protocol's) or
 * the answer is complete (the rest is ignored); or -EPROTO (not HTTP/1.x,
 * a bad framing, the connection ended mid-answer), -E2BIG (over a cap),
 * -ENOSPC (outcap too small for this piece).
 */
long port_resp_feed(struct port_resp *r, const char *data, size_t len, char *out,
		    size_t outcap, size_t *outlen);

/* port_resp_header_name / _value - header i (< nheaders) of the final
 * head, NUL-terminated, borrowed from r. */
const char *port_resp_header_name(const struct port_resp *r, size_t i);
const char *port_resp_header_value(const struct port_resp *r, size_t i);

/* port_resp_header - the value of the first header called name
 * (case-insensitive), or NULL. */
const char *port_resp_header(const struct port_resp *r, const char *name);

#endif
