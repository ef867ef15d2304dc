/*
 * etcd_decode.h - the answers of etcd's v3 JSON gateway (grpc-gateway over
 * the gRPC API of etcd 3.4+: POST /v3/kv/range, /v3/kv/put, /v3/kv/txn,
 * /v3/kv/deleterange, /v3/lease/grant, /v3/lease/keepalive, /v3/watch,
 * /v3/auth/authenticate),
 * decoded into C structs.  Spec: etcd's api.proto and rpc.proto, as the
 * gateway renders them in JSON: 64-bit integers as decimal strings (plain
 * numbers are accepted too), bytes as standard padded base64, fields with
 * their default value (0, false, empty) left out.
 *
 * Everything etcd answers is outside input: every field's type is checked,
 * integers must fit their range, keys and values are capped
 * (ETCD_KEY_MAX, ETCD_VALUE_MAX) and a range holds at most ETCD_KVS_MAX
 * pairs.  A bad answer is -EPROTO, never a crash.  tests/fuzz/fuzz_cluster_decode.c
 * feeds these functions.
 *
 * Memory: decoded keys and values are heap copies, NUL-terminated (the NUL
 * is not counted), owned by the struct until etcd_kvs_clear.
 * Threads: pure functions; any thread.
 */
#ifndef PANDASTACK_DAEMON_ETCD_DECODE_H
#define PANDASTACK_DAEMON_ETCD_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define ETCD_KEY_MAX 1024                /* bytes of one key */
#define ETCD_VALUE_MAX (1024u * 1024u)   /* bytes of one value */
#define ETCD_KVS_MAX 20000               /* pairs in one answer or watch message */
#define ETCD_ANSWER_MAX (64u * 1024u * 1024u) /* bytes of one answer */

struct etcd_kv {
	char *key;              /* owned, NUL-terminated */
	size_t key_len;
	char *value;            /* owned, NUL-terminated ("" for a delete event) */
	size_t value_len;
	int64_t create_revision;
	int64_t mod_revision;
	int64_t lease;          /* 0: none */
	int deleted;            /* watch events only: a DELETE */
};

struct etcd_kvs {
	struct etcd_kv *v;      /* owned array */
	size_t n;
	int64_t revision;       /* the store's revision when etcd answered */
};

/*
 * etcd_json_object - the JSON object in len bytes of buf (at most max;
 * duplicate keys refused), a new reference, or NULL for anything else.
 * Also for the records the cluster keeps in etcd's values.
 */
json_t *etcd_json_object(const char *buf, size_t len, size_t max);

/* etcd_kvs_clear - free what kvs owns and zero it.  NULL-safe fields. */
void etcd_kvs_clear(struct etcd_kvs *kvs);

/*
 * etcd_decode_range - a RangeResponse: {"header": {"revision"}, "kvs": [...]}.
 * Returns 0 with *out filled (empty when no key matched), -EPROTO, -ENOMEM.
 */
int etcd_decode_range(const char *buf, size_t len, struct etcd_kvs *out);

/*
 * etcd_decode_write - a PutResponse or DeleteRangeResponse: the header's
 * revision into *revision and, for a delete, the "deleted" count into
 * *deleted (may be NULL).  Returns 0 or -EPROTO.
 */
int etcd_decode_write(const char *buf, size_t len, int64_t *revision, int64_t *deleted);

/*
 * etcd_decode_txn - a TxnResponse: *succeeded (the compare held), the
 * header's revision, and the kvs of the first response_range among its
 * responses into *range (may be NULL; empty when there is none).
 * Returns 0, -EPROTO, -ENOMEM.
 */
int etcd_decode_txn(const char *buf, size_t len, int *succeeded, int64_t *revision,
		    struct etcd_kvs *range);

/*
 * etcd_decode_lease - a LeaseGrantResponse, or one LeaseKeepAliveResponse
 * (wrapped in {"result": ...} as the gateway streams it): the lease id and
 * its TTL in seconds.  A keepalive of an unknown or expired lease has TTL 0.
 * Returns 0 or -EPROTO (also for an id of 0 in a grant).
 */
int etcd_decode_lease(const char *buf, size_t len, int64_t *id, int64_t *ttl_s);

/* One message of a watch stream. */
struct etcd_watch_msg {
	int created;            /* the watch was set up */
	int canceled;           /* etcd ended the watch */
	int64_t compact_revision; /* canceled: the revision asked for was compacted */
	char cancel_reason[160]; /* canceled: etcd's reason, printable ASCII ("" if none) */
	struct etcd_kvs events; /* kvs with deleted set for DELETE events */
};

/*
 * etcd_decode_watch - one line of the gateway's /v3/watch stream:
 * {"result": {"header", "created", "canceled", "compact_revision",
 * "cancel_reason", "events": [{"type": "PUT"|"DELETE", "kv": {...}}]}} or {"error": ...}
 * (-ECONNABORTED).  Returns 0 with *out (clear out->events), -EPROTO,
 * -ECONNABORTED, -ENOMEM.
 */
int etcd_decode_watch(const char *buf, size_t len, struct etcd_watch_msg *out);

/*
 * etcd_decode_error - the message of a gateway error answer
 * ({"error": "...", "code": N, "message": "..."}) into msg (msglen bytes,
 * printable ASCII only), or "" when buf is not one.  Pure.
 */
void etcd_decode_error(const char *buf, size_t len, char *msg, size_t msglen);

/*
 * etcd_decode_auth - an AuthenticateResponse ({"header", "token": "..."}):
 * the token into token (cap bytes), which must be 1 to cap - 1 printable
 * ASCII characters without spaces (it is sent back as a header).  0 or
 * -EPROTO (token "").  Pure.
 */
int etcd_decode_auth(const char *buf, size_t len, char *token, size_t cap);

#endif
