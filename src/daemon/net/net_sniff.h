/*
 * net_sniff.h - the name a client's first bytes ask for: the server_name of
 * a TLS ClientHello (RFC 8446 4.1.2, RFC 6066 3) or the host of an HTTP/1
 * request (RFC 9112 3.2: the Host header, or the authority of an
 * absolute-form target).  The proxy (net_proxy.c) uses it for domain rules.
 *
 * The bytes are the guest's: hostile.  Parsing reads at most len bytes,
 * allocates nothing and never fails on any input; tests/fuzz/fuzz_net_wire.c
 * feeds it.  Pure; any thread.
 */
#ifndef PANDASTACK_DAEMON_NET_SNIFF_H
#define PANDASTACK_DAEMON_NET_SNIFF_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/net/net_policy.h"

/* Bytes a caller should be ready to hold before giving up on a name: a
 * ClientHello in one full TLS record, or an HTTP request head. */
#define NET_SNIFF_MAX (16384 + 5)

enum net_sniff {
	NET_SNIFF_MORE = 0, /* a TLS or HTTP start, not complete: read more */
	NET_SNIFF_NAME,     /* name found, lowercase, without a trailing dot */
	NET_SNIFF_NONE,     /* no name: another protocol, no SNI/Host, an IP
			     * literal, a malformed or invalid name */
	NET_SNIFF_CONFLICT, /* the request names two different hosts (two
			     * Host headers, or a target and a Host that
			     * differ): refuse it */
};

/*
 * net_sniff - look at the first len bytes of a connection.  On
 * NET_SNIFF_NAME, name (NET_NAME_MAX + 1 bytes) holds it.  A caller that
 * gets NET_SNIFF_MORE with NET_SNIFF_MAX bytes or more, or at end of
 * stream, refuses the connection (its name may be in bytes not yet read: a
 * 16 KiB header block before Host); at its deadline it may decide without
 * a name and check the bytes that come later.
 */
enum net_sniff net_sniff(const uint8_t *buf, size_t len, char name[NET_NAME_MAX + 1]);

#endif
