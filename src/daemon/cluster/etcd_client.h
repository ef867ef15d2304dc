/*
 * etcd_client.h - a small client of etcd's v3 API through its JSON gateway
 * (HTTP POST of JSON to /v3/kv/..., /v3/lease/..., /v3/watch on each
 * member's client URL), on libcurl and jansson.  Spec: etcd's
 * api-guide ("gRPC gateway") and rpc.proto; answers are decoded by
 * etcd_decode.h, which treats them as outside input.
 *
 * Endpoints are a comma-separated list: "etcd://HOST:PORT,HOST:PORT" (plain
 * HTTP), or http:// / https:// URLs.  A call tries the endpoint that last
 * answered, then the others in turn: a member that is down, cut off or
 * without quorum (it times out or answers 5xx) costs at most one timeout
 * before the next is tried.  Each attempt is bounded (ETCD_CONNECT_MS to
 * connect, ETCD_ATTEMPT_MS in all), and the rounds over the members go on,
 * ETCD_ROUND_PAUSE_MS apart, for ETCD_CALL_MS: long enough for the
 * survivors to elect a new leader when the old one left.
 *
 * Authentication and TLS (etcd's "authentication" guide; etcd_opts):
 *   - a user and password: the first call asks /v3/auth/authenticate for a
 *     token and every call sends it (Authorization); when etcd refuses it
 *     (expired, lost with a member's restart, older than a change of roles)
 *     the client authenticates again once and repeats the call;
 *   - a client certificate and key (libcurl's CURLOPT_SSLCERT/SSLKEY) for
 *     members run with --client-cert-auth.  etcd's gateway refuses a client
 *     certificate that carries a Common Name (its CN-based login does not
 *     apply to the gateway), so the certificate names no CN and the user
 *     comes from the password.
 * The password and the token never reach a log line.
 *
 * Errors (every call returns 0 or one of these):
 *   -ENOTCONN  no endpoint answered (etcd unreachable or without quorum)
 *   -EACCES    etcd refused this client: a wrong user or password, none
 *              while etcd's authentication is on, a role without the
 *              permission (403), or every member refused its TLS (no client
 *              certificate, or one they do not trust)
 *   -EIO       etcd refused the request (another 4xx answer; logged)
 *   -EPROTO    an answer that does not decode
 *   -EEXIST    etcd_put_new: the key exists
 *   -ESTALE    etcd_put_at / etcd_delete_at: the key's revision moved on
 *   -ENOMEM
 * Threads: any number of threads may share one struct etcd.
 */
#ifndef PANDASTACK_DAEMON_ETCD_CLIENT_H
#define PANDASTACK_DAEMON_ETCD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/cluster/etcd_decode.h"

#define ETCD_ENDPOINTS_MAX 16
#define ETCD_CONNECT_MS 1000
#define ETCD_ATTEMPT_MS 1500
#define ETCD_ROUND_PAUSE_MS 200
#define ETCD_CALL_MS 4000
#define ETCD_USER_MAX 128       /* bytes of a user name, with its NUL */
#define ETCD_TOKEN_MAX 2048     /* bytes of an auth token (simple or JWT), with its NUL */
#define ETCD_ERROR_MAX 640      /* bytes of etcd_last_error's text */

struct etcd;

/* How to reach the members; every field may be NULL (not used).  Borrowed
 * by etcd_open, which copies what it keeps. */
struct etcd_opts {
	const char *ca_file;   /* PEM CA bundle for https:// members */
	const char *cert_file; /* PEM client certificate (with key_file) */
	const char *key_file;  /* PEM private key of cert_file */
	const char *user;      /* etcd user (with password) */
	const char *password;
};

/*
 * etcd_open - a client of the members in endpoints (see above) with the
 * options o (may be NULL: none).  Nothing is contacted yet.  Returns 0 with
 * *out (etcd_close), -EINVAL (a bad list, a certificate without its key or
 * the reverse, a user without a password, a field too long), -ENOMEM.
 * Call after curl_global_init.
 */
int etcd_open(const char *endpoints, const struct etcd_opts *o, struct etcd **out);

/*
 * etcd_last_error - why the last call that failed did: "<member URL>:
 * <curl's or etcd's message>" into out (cap bytes), for an operator's
 * error message.  Never holds a secret.
 */
void etcd_last_error(struct etcd *e, char *out, size_t cap);

/* etcd_close - free the client (no call may be running).  NULL is a no-op. */
void etcd_close(struct etcd *e);

/* etcd_endpoint_count - how many members the list names. */
size_t etcd_endpoint_count(const struct etcd *e);

/*
 * etcd_range - the pair at key, or with prefix set every pair whose key
 * starts with key (at most ETCD_KVS_MAX), into *out (etcd_kvs_clear).
 * A linearizable read.
 */
int etcd_range(struct etcd *e, const char *key, int prefix, struct etcd_kvs *out);

/* etcd_put - set key to len bytes of val, attached to lease (0: none);
 * *revision (may be NULL) gets the store's revision after it. */
int etcd_put(struct etcd *e, const char *key, const void *val, size_t len, int64_t lease,
	     int64_t *revision);

/* etcd_put_new - the same only if key does not exist (one transaction);
 * -EEXIST otherwise.  A key that holds exactly val on lease already counts
 * as written: a write retried after its answer was lost finds itself. */
int etcd_put_new(struct etcd *e, const char *key, const void *val, size_t len, int64_t lease,
		 int64_t *revision);

/* etcd_put_at - the same only if key's mod_revision is still mod_rev (one
 * transaction); -ESTALE otherwise (also when it was deleted), unless key
 * holds exactly val on lease already (as etcd_put_new). */
int etcd_put_at(struct etcd *e, const char *key, const void *val, size_t len, int64_t lease,
		int64_t mod_rev, int64_t *revision);

/* etcd_delete - remove key (prefix set: every key under it); *deleted (may
 * be NULL) gets how many went. */
int etcd_delete(struct etcd *e, const char *key, int prefix, int64_t *deleted);

/* etcd_delete_at - remove key only if its mod_revision is still mod_rev;
 * -ESTALE otherwise. */
int etcd_delete_at(struct etcd *e, const char *key, int64_t mod_rev);

/* etcd_lease_grant - a new lease of ttl_s seconds: *id. */
int etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *id);

/* etcd_lease_keepalive - renew lease id once: *ttl_s is what it has left
 * now, 0 when it had already expired (or never existed). */
int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl_s);

/* etcd_lease_revoke - end lease id now (its keys are deleted). */
int etcd_lease_revoke(struct etcd *e, int64_t id);

/*
 * etcd_watch - watch every key under prefix from start_rev on, for at most
 * max_ms: fn is called on this thread with each message of the stream (the
 * message is the caller's to clear only through fn's return: this function
 * clears it after fn).  The watch ends when fn returns non-zero (that value
 * is returned), *stop becomes non-zero (0), max_ms passes (0), etcd cancels
 * it (-ECANCELED, e.g. a compacted start_rev), or the stream fails
 * (-ENOTCONN, -EPROTO).  One line of the stream may hold ETCD_ANSWER_MAX bytes.
 */
struct etcd_watch_msg;
typedef int (*etcd_watch_fn)(void *arg, struct etcd_watch_msg *msg);
int etcd_watch(struct etcd *e, const char *prefix, int64_t start_rev, int max_ms,
	       etcd_watch_fn fn, void *arg, const volatile int *stop);

/*
 * etcd_prefix_end - the range_end etcd uses for "every key starting with
 * prefix" (prefix with its last byte below 0xff incremented, trailing 0xff
 * bytes dropped; "\0" when there is none) into out (outlen bytes).
 * Returns its length, or -ENAMETOOLONG.  Pure.
 */
int etcd_prefix_end(const char *prefix, char *out, size_t outlen);

#endif
