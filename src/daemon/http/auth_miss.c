/*
 * auth_miss.c - a negative cache of unknown keys and lookup budgets per
 * client address (see auth_miss.h).
 */
#include "daemon/http/auth_miss.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

struct miss {
	unsigned char hash[16]; /* the first half of the key's SHA-256 */
	int64_t until_ms;       /* 0: free */
};

struct bucket {
	double tokens;
	int64_t last_ms;        /* when tokens was last brought up to date */
};

struct client {
	unsigned char addr[16]; /* IPv6, or IPv4 mapped; an IPv6 one cut to its /64 */
	int used;
	struct bucket b;
};

struct auth_miss {
	pthread_mutex_t lock;
	struct miss cache[AUTH_MISS_CACHE];
	struct client clients[AUTH_MISS_CLIENTS];
	struct bucket all;
};

struct auth_miss *auth_miss_new(void)
{
	struct auth_miss *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	pthread_mutex_init(&m->lock, NULL);
	m->all.tokens = AUTH_MISS_ALL_BURST;
	m->all.last_ms = INT64_MIN;
	return m;
}

void auth_miss_free(struct auth_miss *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* The cache's form of hash_hex: 0, or -1 when it is not hex. */
static int short_hash(const char *hash_hex, unsigned char out[16])
{
	char half[33];
	if (!hash_hex || strlen(hash_hex) != 64)
		return -1;
	memcpy(half, hash_hex, 32);
	half[32] = '\0';
	return util_unhex(half, out, 16) == 0 ? 0 : -1;
}

static struct miss *slot_of(struct auth_miss *m, const unsigned char h[16])
{
	uint32_t i;
	memcpy(&i, h, sizeof(i));
	return &m->cache[i % AUTH_MISS_CACHE];
}

/* Bring b up to now; take one token if there is one (1), else 0. */
static int take(struct bucket *b, double burst, double per_s, int64_t now_ms)
{
	if (b->last_ms == INT64_MIN || now_ms < b->last_ms) {
		b->tokens = burst;
	} else {
		b->tokens += (double)(now_ms - b->last_ms) * per_s / 1000.0;
		if (b->tokens > burst)
			b->tokens = burst;
	}
	b->last_ms = now_ms;
	if (b->tokens < 1.0)
		return 0;
	b->tokens -= 1.0;
	return 1;
}

/* client's entry: found, or a new one in place of the one idle longest. */
static struct client *client_of(struct auth_miss *m, const char *client)
{
	unsigned char a[16] = {0};
	struct in_addr v4;
	if (client && strchr(client, ':') && inet_pton(AF_INET6, client, a) == 1) {
		memset(a + 8, 0, 8); /* one /64 is one client */
	} else if (client && inet_pton(AF_INET, client, &v4) == 1) {
		a[10] = a[11] = 0xff;
		memcpy(a + 12, &v4, 4);
	}
	struct client *oldest = &m->clients[0];
	for (size_t i = 0; i < AUTH_MISS_CLIENTS; i++) {
		struct client *c = &m->clients[i];
		if (c->used && !memcmp(c->addr, a, sizeof(a)))
			return c;
		if (!c->used || (oldest->used && c->b.last_ms < oldest->b.last_ms))
			oldest = c;
	}
	memcpy(oldest->addr, a, sizeof(a));
	oldest->used = 1;
	oldest->b.last_ms = INT64_MIN; /* a full bucket */
	return oldest;
}

int auth_miss_may_look_up(struct auth_miss *m, const char *hash_hex, const char *client,
			  int64_t now_ms)
{
	unsigned char h[16];
	if (short_hash(hash_hex, h) < 0)
		return 0;
	pthread_mutex_lock(&m->lock);
	struct miss *s = slot_of(m, h);
	int ok = !(s->until_ms > now_ms && !memcmp(s->hash, h, sizeof(h)));
	if (ok) {
		struct client *c = client_of(m, client);
		/* check both before charging either */
		struct bucket cb = c->b, ab = m->all;
		ok = take(&cb, AUTH_MISS_BURST, AUTH_MISS_PER_S, now_ms) &&
		     take(&ab, AUTH_MISS_ALL_BURST, AUTH_MISS_ALL_PER_S, now_ms);
		if (ok) { /* a refusal charges nothing: the buckets stay as they were */
			c->b = cb;
			m->all = ab;
		}
	}
	pthread_mutex_unlock(&m->lock);
	return ok;
}

void auth_miss_note_unknown(struct auth_miss *m, const char *hash_hex, int64_t now_ms)
{
	unsigned char h[16];
	if (short_hash(hash_hex, h) < 0)
		return;
	pthread_mutex_lock(&m->lock);
	struct miss *s = slot_of(m, h);
	memcpy(s->hash, h, sizeof(h));
	s->until_ms = now_ms + AUTH_MISS_TTL_MS;
	pthread_mutex_unlock(&m->lock);
}

void auth_miss_forget(struct auth_miss *m, const char *hash_hex)
{
	unsigned char h[16];
	if (short_hash(hash_hex, h) < 0)
		return;
	pthread_mutex_lock(&m->lock);
	struct miss *s = slot_of(m, h);
	if (!memcmp(s->hash, h, sizeof(h)))
		s->until_ms = 0;
	pthread_mutex_unlock(&m->lock);
}
