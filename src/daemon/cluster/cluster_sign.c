/*
 * cluster_sign.c - what the cluster secret signs (see cluster_int.h): the
 * records nodes write to etcd, and the requests nodes send each other.
 * Every MAC is HMAC-SHA256 with the cluster secret (common/sha256.h) over a
 * message that starts with a label of its kind, so that no signature of
 * one kind passes for another.
 *
 * Records.  A record is JSON text T ending in '}'; etcd holds
 *     T without its '}' + ,"sig":"<hex MAC>"}
 * where the MAC is over "pandastack-record-1\n" + the record's etcd key +
 * "\n" + T without its '}'.  The value stays one JSON object (decoders
 * ignore "sig"); the MAC covers its exact bytes, so nothing is
 * re-serialised to check it, and the key, so a record cannot be moved to
 * another key (an admin key's record under the hash of another secret, a
 * node's record under another name).
 *
 * Requests.  CLUSTER_NODE_HEADER is
 *     <from> <to> <unix ms> <nonce> <key id> <hex MAC>
 * over "pandastack-forward-2\n" and those fields with the method and the
 * request target (path and query, as sent) between them.  The receiver
 * checks that it is <to>, that the time is within CLUSTER_SIGN_SKEW_MS of
 * its own, that the key the request authenticated with is <key id> ("-":
 * none), the MAC, and that it has not seen the nonce (128 random bits):
 * a captured request replayed, to this node or with another query, key or
 * body, is refused.  The body is not in the MAC (it streams, gigabytes,
 * after the headers are checked): a replay is refused by its nonce, and
 * what crosses the network is guarded by TLS between the nodes.
 *
 * The replay cache: nonces seen, in two tables of REPLAY_SLOTS slots (open
 * addressing; the nonces are random and only ever inserted after their MAC
 * checked, so no one can aim at a slot).  New nonces go into the current
 * table; every 2 * CLUSTER_SIGN_SKEW_MS, or when it is half full, it
 * becomes the previous one and the previous one is dropped.  A nonce is so
 * remembered at least 2 * CLUSTER_SIGN_SKEW_MS after it came, longer than
 * its signature lasts, unless a table filled early (more than
 * REPLAY_SLOTS / 2 signed requests in that time); then the newest time of
 * any dropped signature becomes a floor below which no signature is
 * taken: a replay of a forgotten nonce stays refused, at the price of
 * refusing requests signed before the floor while the load lasts.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"
#include "daemon/cluster/cluster_int.h"
#include "daemon/daemon.h"
#include "daemon/http/http_req.h"

#define RECORD_LABEL "pandastack-record-1\n"
#define FORWARD_LABEL "pandastack-forward-2\n"
/* ,"sig":"<64 hex>"} */
#define SEAL_HEAD ",\"sig\":\""
#define SEAL_LEN (sizeof(SEAL_HEAD) - 1 + 64 + 2)

#define REPLAY_SLOTS 65536u /* a power of two */
#define NONCE_BYTES 16

/* ---- records ------------------------------------------------------------------ */

/* The MAC of a record's body (len bytes at body) under key, as hex. */
static int record_mac(const unsigned char *secret, size_t secret_len, const char *key,
		      const char *body, size_t len, char out[SHA256_HEX_LEN])
{
	size_t kl = strlen(key);
	size_t ll = sizeof(RECORD_LABEL) - 1;
	char *msg = malloc(ll + kl + 1 + len);
	if (!msg)
		return -ENOMEM;
	memcpy(msg, RECORD_LABEL, ll);
	memcpy(msg + ll, key, kl);
	msg[ll + kl] = '\n';
	memcpy(msg + ll + kl + 1, body, len);
	int e = sha256_hmac_hex(secret, secret_len, msg, ll + kl + 1 + len, out);
	free(msg);
	return e;
}

char *cluster_seal(const unsigned char *secret, size_t secret_len, const char *key,
		   const char *text)
{
	size_t n = text ? strlen(text) : 0;
	/* a record is an object with at least one member: "{...}" */
	if (n < 3 || text[0] != '{' || text[n - 1] != '}')
		return NULL;
	char mac[SHA256_HEX_LEN];
	if (record_mac(secret, secret_len, key, text, n - 1, mac) < 0)
		return NULL;
	char *out = malloc(n - 1 + SEAL_LEN + 1);
	if (!out)
		return NULL;
	memcpy(out, text, n - 1);
	snprintf(out + n - 1, SEAL_LEN + 1, "%s%s\"}", SEAL_HEAD, mac);
	return out;
}

int cluster_unseal(const unsigned char *secret, size_t secret_len, const char *key,
		   const char *value, size_t len)
{
	if (!value || len < 3 + SEAL_LEN || value[0] != '{')
		return -EBADMSG;
	const char *seal = value + len - SEAL_LEN;
	const char *hex = seal + sizeof(SEAL_HEAD) - 1;
	if (memcmp(seal, SEAL_HEAD, sizeof(SEAL_HEAD) - 1) != 0 || hex[64] != '"' ||
	    hex[65] != '}')
		return -EBADMSG;
	for (int i = 0; i < 64; i++)
		if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f')))
			return -EBADMSG;
	char want[SHA256_HEX_LEN];
	int e = record_mac(secret, secret_len, key, value, len - SEAL_LEN, want);
	if (e)
		return e;
	return sha256_hex_equal(want, hex) ? 0 : -EBADMSG;
}

char *cluster__seal(const struct cluster *c, const char *key, const char *text)
{
	return cluster_seal(c->secret, c->secret_len, key, text);
}

/* FNV-1a of s, for the log's memory of records it named. */
static uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

int cluster__unseal(struct cluster *c, const struct etcd_kv *kv)
{
	int e = cluster_unseal(c->secret, c->secret_len, kv->key, kv->value, kv->value_len);
	if (e != -EBADMSG)
		return e;
	/* Name each rejected record once per version, not at every read. */
	uint64_t h = fnv(kv->key) ^ (uint64_t)kv->mod_revision * 0x9e3779b97f4a7c15ull;
	int seen = 0;
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < CLUSTER_REJECTED_LOGGED; i++)
		seen |= c->rejected[i] == h;
	if (!seen)
		c->rejected[c->nrejected++ % CLUSTER_REJECTED_LOGGED] = h;
	pthread_mutex_unlock(&c->lock);
	if (!seen) {
		char q[ETCD_KEY_MAX + 8];
		log_kv(LOG_WARN, "cluster.record_rejected",
		       "key=%s mod_revision=%lld why=\"not signed with the cluster secret: not "
		       "written by a node\"",
		       log_quote(kv->key, q, sizeof(q)), (long long)kv->mod_revision);
	}
	return e;
}

/* ---- the replay cache ------------------------------------------------------------ */

struct replay_tab {
	unsigned char (*slot)[NONCE_BYTES]; /* all zero: free */
	size_t n;
	int64_t max_ms;     /* the newest signature time in it */
	int64_t since_ms;   /* when it became the current table */
};

struct cluster_replay {
	pthread_mutex_t lock;
	struct replay_tab t[2];
	int cur;
	int64_t floor_ms;   /* signatures at or before this are refused */
};

struct cluster_replay *cluster__replay_new(void)
{
	struct cluster_replay *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	for (int i = 0; i < 2; i++)
		r->t[i].slot = calloc(REPLAY_SLOTS, NONCE_BYTES);
	if (!r->t[0].slot || !r->t[1].slot) {
		cluster__replay_free(r);
		return NULL;
	}
	r->t[0].since_ms = r->t[1].since_ms = (int64_t)(util_wall_ns() / 1000000u);
	r->floor_ms = INT64_MIN;
	pthread_mutex_init(&r->lock, NULL);
	return r;
}

void cluster__replay_free(struct cluster_replay *r)
{
	if (!r)
		return;
	free(r->t[0].slot);
	free(r->t[1].slot);
	if (r->t[0].slot && r->t[1].slot)
		pthread_mutex_destroy(&r->lock);
	free(r);
}

/* The slot of nonce in t: where it is, or the free slot where it goes. */
static unsigned char *replay_slot(struct replay_tab *t, const unsigned char *nonce)
{
	uint64_t h;
	memcpy(&h, nonce, sizeof(h));
	static const unsigned char zero[NONCE_BYTES];
	for (size_t i = 0; i < REPLAY_SLOTS; i++) {
		unsigned char *s = t->slot[(h + i) & (REPLAY_SLOTS - 1)];
		if (!memcmp(s, nonce, NONCE_BYTES) || !memcmp(s, zero, NONCE_BYTES))
			return s;
	}
	return NULL; /* not reached: a table is at most half full */
}

/* The previous table is dropped; the current one takes its place. */
static void replay_rotate(struct cluster_replay *r, int64_t now_ms)
{
	struct replay_tab *old = &r->t[!r->cur];
	if (old->n && old->max_ms > r->floor_ms)
		r->floor_ms = old->max_ms;
	memset(old->slot, 0, (size_t)REPLAY_SLOTS * NONCE_BYTES);
	old->n = 0;
	old->max_ms = INT64_MIN;
	old->since_ms = now_ms;
	r->cur = !r->cur;
}

/* 0 and the nonce remembered, -EALREADY when it was seen, -ETIME when ms
 * is at or below the floor. */
static int replay_check(struct cluster_replay *r, const unsigned char *nonce, int64_t ms,
			int64_t now_ms)
{
	pthread_mutex_lock(&r->lock);
	struct replay_tab *cur = &r->t[r->cur];
	if (now_ms - cur->since_ms >= 2 * (int64_t)CLUSTER_SIGN_SKEW_MS ||
	    cur->n >= REPLAY_SLOTS / 2) {
		if (cur->n >= REPLAY_SLOTS / 2)
			log_kv(LOG_WARN, "cluster.replay_cache_full", "slots=%u", REPLAY_SLOTS);
		replay_rotate(r, now_ms);
		cur = &r->t[r->cur];
	}
	int e = 0;
	unsigned char *s = replay_slot(cur, nonce);
	unsigned char *p = replay_slot(&r->t[!r->cur], nonce);
	if ((s && !memcmp(s, nonce, NONCE_BYTES)) || (p && !memcmp(p, nonce, NONCE_BYTES)))
		e = -EALREADY;
	else if (ms <= r->floor_ms)
		e = -ETIME;
	else if (s) {
		memcpy(s, nonce, NONCE_BYTES);
		cur->n++;
		if (ms > cur->max_ms || cur->n == 1)
			cur->max_ms = ms;
	}
	pthread_mutex_unlock(&r->lock);
	return e;
}

/* ---- requests ---------------------------------------------------------------------- */

static int forward_mac(const struct cluster *c, const char *from, const char *to, long long ms,
		       const char *nonce, const char *method, const char *target,
		       const char *key_id, char out[SHA256_HEX_LEN])
{
	char *msg = NULL;
	int n = asprintf(&msg, FORWARD_LABEL "%s\n%s\n%lld\n%s\n%s\n%s\n%s", from, to, ms, nonce,
			 method, target, key_id);
	if (n < 0)
		return -ENOMEM;
	int e = sha256_hmac_hex(c->secret, c->secret_len, msg, (size_t)n, out);
	free(msg);
	return e;
}

/* A key id as it goes into the header: "-" for none. */
static const char *key_field(const char *key_id)
{
	return key_id && key_id[0] ? key_id : "-";
}

int cluster__sign(const struct cluster *c, const char *to, const char *method,
		  const char *target, const char *key_id, int64_t now_ms, char *out,
		  size_t outlen)
{
	unsigned char raw[NONCE_BYTES];
	char nonce[2 * NONCE_BYTES + 1], mac[SHA256_HEX_LEN];
	const char *k = key_field(key_id);
	if (strlen(k) >= STORE_ID_MAX || strchr(k, ' '))
		return -EINVAL;
	int e = util_random(raw, sizeof(raw));
	if (e)
		return e;
	util_hex(raw, sizeof(raw), nonce);
	e = forward_mac(c, c->node, to, (long long)now_ms, nonce, method, target, k, mac);
	if (e)
		return e;
	int n = snprintf(out, outlen, "%s %s %lld %s %s %s", c->node, to, (long long)now_ms, nonce,
			 k, mac);
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

int cluster__verify(struct cluster *c, const char *value, const char *method,
		    const char *target, const char *key_id, int64_t now_ms, char *from)
{
	char node[CLUSTER_NAME_MAX], to[CLUSTER_NAME_MAX], nonce[2 * NONCE_BYTES + 1];
	char key[STORE_ID_MAX], mac[SHA256_HEX_LEN], want[SHA256_HEX_LEN];
	long long ms;
	int used = 0;
	from[0] = '\0';
	if (!value || !target || strlen(value) > 400 ||
	    sscanf(value, "%64[a-z0-9._-] %64[a-z0-9._-] %lld %32[0-9a-f] %63[a-z0-9_-] "
			  "%64[0-9a-f]%n",
		   node, to, &ms, nonce, key, mac, &used) != 6 ||
	    value[used] != '\0' || strlen(mac) != 64 || strlen(nonce) != 2 * NONCE_BYTES ||
	    !cluster_name_valid(node) || !cluster_name_valid(to))
		return -EBADMSG;
	if (strcmp(to, c->node) != 0)
		return -EXDEV;
	if (ms < now_ms - CLUSTER_SIGN_SKEW_MS || ms > now_ms + CLUSTER_SIGN_SKEW_MS)
		return -ETIME;
	if (strcmp(key, key_field(key_id)) != 0)
		return -EPERM;
	int e = forward_mac(c, node, to, ms, nonce, method, target, key, want);
	if (e)
		return e;
	if (!sha256_hex_equal(want, mac))
		return -EBADMSG;
	unsigned char raw[NONCE_BYTES];
	if (util_unhex(nonce, raw, sizeof(raw)) < 0)
		return -EBADMSG;
	static const unsigned char zero[NONCE_BYTES];
	if (!memcmp(raw, zero, sizeof(raw)))
		return -EBADMSG; /* a free slot's mark, never a nonce */
	if (c->replay && (e = replay_check(c->replay, raw, ms, now_ms)) < 0)
		return e;
	snprintf(from, CLUSTER_NAME_MAX, "%s", node);
	return 0;
}

const char *cluster__verify_why(int e)
{
	switch (e) {
	case -EXDEV: return "signed for another node";
	case -ETIME: return "outside its time window";
	case -EPERM: return "signed for another key";
	case -EALREADY: return "replayed (its nonce was seen)";
	case -EBADMSG: return "malformed or not signed with the cluster secret";
	default: return "could not be checked";
	}
}

int cluster__request_forwarded(struct cluster *c, struct http_req *r)
{
	const char *v = http_header(r, CLUSTER_NODE_HEADER);
	if (!v)
		return 0;
	char from[CLUSTER_NAME_MAX];
	int e = cluster__verify(c, v, r->method, r->raw_target, r->who.key_id,
				(int64_t)(util_wall_ns() / 1000000u), from);
	if (!e)
		return 1;
	char claimed[CLUSTER_NAME_MAX], q[CLUSTER_NAME_MAX + 8];
	snprintf(claimed, sizeof(claimed), "%.*s", (int)strcspn(v, " "), v);
	log_kv(LOG_WARN, "cluster.bad_signature", "route=%s why=\"%s\" claimed=%s",
	       r->route->pattern, cluster__verify_why(e), log_quote(claimed, q, sizeof(q)));
	return -1;
}
