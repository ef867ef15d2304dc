/*
 * auth_miss.h - API keys this node does not know, and what looking them up
 * elsewhere may cost.  In a cluster a key made on another node a moment ago
 * is looked up in etcd the first time it is seen (cluster.c); without a
 * bound, every request with a random well-formed key would be an etcd
 * read, and clients without any valid key could load etcd.  Before any
 * lookup:
 *   - a negative cache: the hashes of keys lately looked up and not found
 *     (AUTH_MISS_CACHE slots, direct-mapped: a new entry takes its slot's
 *     place) are refused for AUTH_MISS_TTL_MS without a lookup.  A key is
 *     in etcd before it is shown to anyone (cluster_key_insert), so a key
 *     found missing stays missing: caching the miss loses nothing;
 *   - a budget per client address: a token bucket of AUTH_MISS_BURST
 *     lookups refilled at AUTH_MISS_PER_S per second (IPv6 addresses count
 *     by their /64), for at most AUTH_MISS_CLIENTS addresses at once (the
 *     one idle longest gives its entry up);
 *   - a budget for all addresses together (AUTH_MISS_ALL_BURST,
 *     AUTH_MISS_ALL_PER_S), so that many addresses cannot add up.
 * So N requests with unknown keys from one address over T seconds cost at
 * most AUTH_MISS_BURST + AUTH_MISS_PER_S * T lookups, whatever N is.
 * A request refused here is answered 401, as an unknown key is.
 *
 * Clients behind one proxy share its address and its budget; a legitimate
 * client needs a lookup only in the moment between a key's creation on
 * another node and that node's watch bringing it here.
 *
 * Threads: any; one lock inside.  Times are util_now_ms (monotonic ms),
 * passed in so that tests can move them.
 */
#ifndef PANDASTACK_DAEMON_AUTH_MISS_H
#define PANDASTACK_DAEMON_AUTH_MISS_H

#include <stdint.h>

#define AUTH_MISS_CACHE 4096
#define AUTH_MISS_TTL_MS 60000
#define AUTH_MISS_CLIENTS 1024
#define AUTH_MISS_BURST 10
#define AUTH_MISS_PER_S 2
#define AUTH_MISS_ALL_BURST 50
#define AUTH_MISS_ALL_PER_S 20

struct auth_miss;

/* auth_miss_new - an empty cache with full budgets (about 400 KiB), or NULL
 * (ENOMEM).  Free with auth_miss_free (NULL is a no-op). */
struct auth_miss *auth_miss_new(void);
void auth_miss_free(struct auth_miss *m);

/*
 * auth_miss_may_look_up - whether the key whose SHA-256 is hash_hex (64
 * hex digits) may be looked up now for client (its numeric address; NULL
 * or unparsable: one shared "unknown" client): 1, and a lookup is charged
 * to the client's and the overall budget; 0 when the hash is cached as
 * unknown or a budget is spent (nothing charged).
 */
int auth_miss_may_look_up(struct auth_miss *m, const char *hash_hex, const char *client,
			  int64_t now_ms);

/* auth_miss_note_unknown - a lookup of hash_hex found no key: cache it. */
void auth_miss_note_unknown(struct auth_miss *m, const char *hash_hex, int64_t now_ms);

/* auth_miss_forget - hash_hex names a key now (it was mirrored): drop it
 * from the cache. */
void auth_miss_forget(struct auth_miss *m, const char *hash_hex);

#endif
