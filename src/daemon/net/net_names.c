/*
 * net_names.c - a sandbox's recent address -> name answers (see
 * net_names.h).
 */
#include "daemon/net/net_names.h"

#include <stdio.h>

void net_names_put(struct net_names *m, uint32_t ip, const char *name, int64_t now_ms)
{
	size_t slot = NET_NAMES_MAX;
	for (size_t i = 0; i < NET_NAMES_MAX; i++) {
		if (m->e[i].until_ms > now_ms && m->e[i].ip == ip) {
			slot = i; /* the same address: the latest name wins */
			break;
		}
		if (slot == NET_NAMES_MAX && m->e[i].until_ms <= now_ms)
			slot = i;
	}
	if (slot == NET_NAMES_MAX) {
		slot = m->next;
		m->next = (m->next + 1) % NET_NAMES_MAX;
	}
	m->e[slot].ip = ip;
	m->e[slot].until_ms = now_ms + NET_NAMES_KEEP_S * 1000;
	snprintf(m->e[slot].name, sizeof(m->e[slot].name), "%s", name);
}

const char *net_names_get(const struct net_names *m, uint32_t ip, int64_t now_ms)
{
	for (size_t i = 0; i < NET_NAMES_MAX; i++)
		if (m->e[i].until_ms > now_ms && m->e[i].ip == ip)
			return m->e[i].name;
	return NULL;
}
