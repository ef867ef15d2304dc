/*
 * net_names.h - what a sandbox's resolver told it lately: address -> name,
 * so that a connection that carries no name (no TLS SNI, no HTTP Host) to
 * an address the resolver gave for an allowed name can still match a
 * domain rule (docs/network.md, "Connections without a name").
 *
 * Each answer's addresses are remembered for NET_NAMES_KEEP_S seconds from
 * the last answer that gave them; at most NET_NAMES_MAX entries per
 * sandbox, replaced in turn when full.  An address given for several names
 * maps to the latest.
 *
 * Threads: the network loop's.  Pure data; no allocation.
 */
#ifndef PANDASTACK_DAEMON_NET_NAMES_H
#define PANDASTACK_DAEMON_NET_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/net/net_policy.h"

#define NET_NAMES_MAX 128
#define NET_NAMES_KEEP_S 300

struct net_names {
	struct {
		uint32_t ip;
		int64_t until_ms;   /* 0: empty */
		char name[NET_NAME_MAX + 1];
	} e[NET_NAMES_MAX];
	size_t next;                /* the slot to replace when none is free */
};

/* net_names_put - remember ip -> name (a host name) from now_ms on. */
void net_names_put(struct net_names *m, uint32_t ip, const char *name, int64_t now_ms);

/* net_names_get - the name last given for ip and still kept, or NULL. */
const char *net_names_get(const struct net_names *m, uint32_t ip, int64_t now_ms);

#endif
