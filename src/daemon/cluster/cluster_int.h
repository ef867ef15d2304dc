/*
 * cluster_int.h - the cluster's state, shared by its files (private: the
 * rest of the daemon uses cluster.h):
 *
 *   cluster.c          start, stop, the HTTP server's hooks, /healthz, keys
 *   cluster_core.c     what they all share: etcd key names, the threads'
 *                      wait, the node table's lookups, the key mirror
 *                      (it calls none of the others but cluster_sign.c,
 *                      which calls only cluster_record.c's pure checks)
 *   cluster_node.c     the node thread: lease, node record, this node's
 *                      sandbox records published from its SQLite rows
 *   cluster_view.c     the view thread: other nodes and keys from etcd
 *                      (a range, then a watch from its revision)
 *   cluster_record.c   the JSON of node and sandbox records (outside input)
 *   cluster_route.c    which node serves a call; placement of creates
 *   cluster_forward.c  the streaming HTTP proxy to another node
 *   cluster_sign.c     what the cluster secret signs: records in etcd,
 *                      requests between nodes (and their replay cache)
 *   cluster_template.c templates by content hash: hashing, serving, fetching
 *
 * What is stored in etcd, under --cluster-prefix (default /pandastack/):
 *   nodes/<name>             a node record, on the node's lease
 *   sandboxes/<team>/<id>    a sandbox record: its node and its row
 *   keys/<sha256 of secret>  an API key (id, name, team, admin, created_at)
 *   deleted/<id>             a sandbox deleted while its node was gone:
 *                            that node stops it when it comes back
 * Every record is sealed with the cluster secret over its etcd key
 * (cluster_sign.c); one that is not is ignored and logged, whoever wrote
 * it: etcd is shared storage, not a source of trust.
 *
 * Locking: c->lock guards the node table, the lease state and the list of
 * forwards in flight; nothing blocks while holding it.
 */
#ifndef PANDASTACK_DAEMON_CLUSTER_INT_H
#define PANDASTACK_DAEMON_CLUSTER_INT_H

#include <pthread.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon/cluster/cluster.h"
#include "daemon/cluster/etcd_client.h"
#include "daemon/http/http_req.h"
#include "daemon/store/store.h"

#define CLUSTER_NAME_MAX 65        /* node names: 1-64 of [a-z0-9._-] + NUL */
#define CLUSTER_URL_MAX 256
#define CLUSTER_PREFIX_MAX 128
#define CLUSTER_NODES_MAX 256
#define CLUSTER_TEMPLATES_MAX 64   /* templates one node record may list */
#define CLUSTER_SECRET_MAX 256
#define CLUSTER_HASH_HEX 65        /* SHA-256 hex + NUL */
/* A node that did not answer a forward is avoided by placement this long. */
#define CLUSTER_SUSPECT_MS 10000
/* How long a starting node waits for etcd to answer at all, ms. */
#define CLUSTER_JOIN_WAIT_MS 20000
/* How long creates placed on a node count against it when its records
 * do not show them, ms (cluster_view.c). */
#define CLUSTER_PLACED_HOLD_MS 10000
/* Rejected records whose log line is remembered (not written again). */
#define CLUSTER_REJECTED_LOGGED 64

/* One template a node has. */
struct cluster_tpl {
	char name[CLUSTER_NAME_MAX];
	char hash[CLUSTER_HASH_HEX];     /* content hash, "" while unknown */
	unsigned memory_mib;
};

/* A node as its record says (decoded by cluster_node_decode). */
struct cluster_node {
	char name[CLUSTER_NAME_MAX];
	char url[CLUSTER_URL_MAX];
	int64_t updated_at_ms;
	uint64_t memory_available_bytes;
	uint64_t memory_reserve_bytes;
	uint64_t disk_free_bytes;
	uint64_t disk_reserve_bytes;
	unsigned sandboxes_running;
	unsigned vm_memory_overhead_mib;
	struct cluster_tpl tpls[CLUSTER_TEMPLATES_MAX];
	size_t ntpls;
	/* this daemon's own bookkeeping, not in the record: */
	int64_t suspect_until_ms;        /* a forward failed: placement avoids it */
	unsigned placed_recently;        /* creates sent to it its records do not show yet */
	unsigned placed_base;            /* the highest sandboxes_running seen since
					  * they were counted (>= the record's) */
	int64_t placed_last_ms;          /* when the last of them was sent */
};

/* A sandbox record (cluster_sandbox_decode); row's strings owned. */
struct cluster_sandbox {
	char node[CLUSTER_NAME_MAX];
	struct sandbox_row row;          /* env_json is never in a record: "{}" */
};

struct cluster_fwd;
struct tpl_manifest;
struct cluster_replay;
struct auth_miss;

struct cluster {
	struct daemon *d;
	struct etcd *etcd;
	char prefix[CLUSTER_PREFIX_MAX];  /* ends with '/' */
	char node[CLUSTER_NAME_MAX];
	char url[CLUSTER_URL_MAX];        /* --advertise */
	unsigned char secret[CLUSTER_SECRET_MAX];
	size_t secret_len;
	int64_t ttl_s;

	pthread_mutex_t lock;
	pthread_cond_t cond;              /* stop, wake */
	int stop;                         /* lock */
	int wake;                         /* lock: the node thread should publish now */
	int64_t lease;                    /* lock: 0 while none */
	int etcd_ok;                      /* lock: the last etcd call answered */
	int view_ready;                   /* lock: the node table was read once */
	struct cluster_node *nodes;       /* lock: the live nodes, this one included */
	size_t nnodes;
	struct cluster_fwd *fwds;         /* lock: forwards in flight */
	json_t *records;                  /* lock: sandbox records read lately (cluster_route.c) */
	struct cluster_tpl tpls[CLUSTER_TEMPLATES_MAX]; /* lock: this node's templates */
	size_t ntpls;
	int tpls_ready;                   /* lock: hashed once */
	pthread_mutex_t tpl_lock;         /* guards tpl_local */
	struct tpl_manifest *tpl_local;   /* tpl_lock: manifests of this node's templates */
	size_t tpl_nlocal;

	pthread_t node_thread, view_thread, tpl_thread;
	int threads;                      /* how many of them run (bits 1, 2, 4) */
	volatile int stop_flag;           /* read by the watch without the lock */

	struct cluster_replay *replay;    /* nonces of signed requests seen (cluster_sign.c) */
	struct auth_miss *miss;           /* unknown keys: cache and budget (auth_miss.h) */
	uint64_t rejected[CLUSTER_REJECTED_LOGGED]; /* lock: rejected records logged */
	size_t nrejected;                 /* lock */

	struct http_gate gate;            /* cluster_gate */
	json_t *published;                /* node thread only: id -> record text */
	int republish;                    /* node thread only: registered anew */
};

/* ---- the HTTP server's hooks (cluster_gate) ------------------------------ */

/*
 * cluster_internal - the gate's internal hook (cluster_template.c):
 * node-to-node calls under /cluster/ (template files, docs/cluster.md).
 * Returns 1 when url is one (the request was answered, or will be), else 0.
 */
int cluster_internal(struct cluster *c, struct http_req *r, const char *url);

/*
 * cluster_route - the gate's route hook (cluster_route.c): a call on
 * /v1/sandboxes/{id}... whose sandbox lives on another node is forwarded
 * there (r->route is replaced by a forwarding route that streams the body
 * and the answer), or answered at once when that node is gone (503
 * sandbox_lost; GET gives the object with status "lost") or etcd is
 * unreachable for a sandbox not on this node (503 cluster_unavailable).
 * Returns 1 when the request is no longer this node's to serve, else 0.
 */
int cluster_route(struct cluster *c, struct http_req *r);

/*
 * cluster_auth_check - the gate's auth hook (cluster.c), when auth_check
 * did not know a key: a key made on another node a moment ago may not be
 * in this node's mirror yet, so its hash is looked up in etcd, added to the
 * mirror, and the header checked again.  Unknown keys cost no lookup when
 * they were looked up lately (a negative cache) or when the client address
 * (client, NULL: none known) has spent its budget of lookups (auth_miss.h).
 * Returns as auth_check (-EACCES: still unknown, or etcd cannot be
 * reached).
 */
struct auth_ident;
int cluster_auth_check(struct cluster *c, const char *authorization, const char *client,
		       struct auth_ident *who);

/* ---- cluster_core.c ---------------------------------------------------------- */

/* cluster__key - c->prefix + the parts joined into out (ETCD_KEY_MAX + 1
 * bytes); -ENAMETOOLONG. */
int cluster__key(const struct cluster *c, char *out, const char *a, const char *b,
		 const char *d);

/* cluster__sandbox_key - sandboxes/<team>/<id> into key (ETCD_KEY_MAX + 1
 * bytes); -ENAMETOOLONG. */
int cluster__sandbox_key(const struct cluster *c, const char *team, const char *id, char *key);

/* cluster__range_under - every pair under c->prefix + a + b + d (b, d may
 * be NULL) into *out (etcd_kvs_clear), etcd's state noted for /healthz.
 * 0, -ENAMETOOLONG, or as etcd_range. */
int cluster__range_under(struct cluster *c, const char *a, const char *b, const char *d,
			 struct etcd_kvs *out);

/* cluster__wait - sleep up to ms, or until cluster_stop (returns 1) or,
 * when wake is not NULL, until *wake is set (it is cleared; c->lock guards
 * it).  Returns 0 otherwise. */
int cluster__wait(struct cluster *c, int64_t ms, int *wake);

/* cluster__etcd_result - note whether an etcd call reached etcd (r is its
 * result) for /healthz; returns r. */
int cluster__etcd_result(struct cluster *c, int r);

/* cluster__node_find - a copy of the live node name into *out: 0, or
 * -ENOENT when it is not (any more) in the cluster. */
int cluster__node_find(struct cluster *c, const char *name, struct cluster_node *out);

/* cluster__node_suspect - a forward to name failed to connect. */
void cluster__node_suspect(struct cluster *c, const char *name);

/* cluster__node_wake - have the node thread publish records now. */
void cluster__node_wake(struct cluster *c);

/* cluster__key_mirror - add the key record of etcd key k (an etcd pair
 * under keys/, sealed by a node) to the local store; 0, -EBADMSG (not
 * sealed: logged by cluster__unseal), or -errno. */
int cluster__key_mirror(struct cluster *c, const struct etcd_kv *k);

/* ---- cluster_node.c ----------------------------------------------------- */

/* cluster__node_start - register under a new lease and start the node
 * thread; 0 or -errno. */
int cluster__node_start(struct cluster *c);

/* ---- cluster_view.c ----------------------------------------------------- */

/* cluster__view_start - read nodes and keys once, then start the watch
 * thread; 0 or -errno. */
int cluster__view_start(struct cluster *c);

/* cluster__keys_push - put this node's admin keys into etcd if they are
 * not there (each node's admin key works on every node), and seal the
 * records of an older version (unsealed) of keys this node holds with its
 * own copy.  0 or as etcd's calls. */
int cluster__keys_push(struct cluster *c);

/* ---- cluster_record.c (pure; any thread) --------------------------------- */

/* cluster_name_valid - 1 for a node name: 1-64 of [a-z0-9._-], starting
 * with a letter or digit. */
int cluster_name_valid(const char *s);

/* cluster_node_encode - the record of this node (new reference, NULL on
 * ENOMEM). */
json_t *cluster_node_encode(const struct cluster_node *n);

/*
 * cluster_node_decode - a node record (len bytes of JSON from etcd) into
 * *out.  Every field is checked; unknown fields are ignored (a newer
 * node may add some).  0 or -EPROTO.
 */
int cluster_node_decode(const char *buf, size_t len, struct cluster_node *out);

/*
 * cluster_placed_carry - carry the creates this daemon placed on a node
 * that its records do not show yet from its old entry (old) to its new
 * record (rec), at now (ms, util_now_ms).  A new record is not proof that
 * it counts them: one computed before a create and written after it, or an
 * older one read whole after a newer came by watch, shows the old count.
 * So only the rise of sandboxes_running above the count they were placed
 * on (placed_base) is taken off them; what a delete hides meanwhile is an
 * overcount, dropped once the last placement is CLUSTER_PLACED_HOLD_MS old.
 * Undercounting would stack creates on one node.  Touches only *rec.
 */
void cluster_placed_carry(struct cluster_node *rec, const struct cluster_node *old, int64_t now);

/* cluster_sandbox_encode - the record text of row on node (a heap string
 * the caller frees, NULL on ENOMEM).  The env is left out. */
char *cluster_sandbox_encode(const char *node, const struct sandbox_row *row);

/* cluster_sandbox_decode - a sandbox record into *out (clear with
 * sandbox_row_clear(&out->row)).  0 or -EPROTO, -ENOMEM. */
int cluster_sandbox_decode(const char *buf, size_t len, struct cluster_sandbox *out);

/* cluster_key_encode / cluster_key_decode - a key record (the hash is the
 * etcd key, not in the record). */
char *cluster_key_encode(const struct key_row *k);
int cluster_key_decode(const char *buf, size_t len, struct key_row *out);

/* ---- cluster_forward.c --------------------------------------------------- */

/*
 * cluster__forward_target - the request target r is forwarded with: its
 * path, each parameter escaped, and its query, each name and value escaped
 * (what a node's URL is followed by, and what the signature covers).  A
 * new string, or NULL (ENOMEM, or over PORT_TARGET_MAX: the receiver would
 * not see it whole).
 */
char *cluster__forward_target(struct http_req *r);

/* ---- cluster_sign.c ------------------------------------------------------- */

/* The header that carries a node's signature on a request to another node. */
#define CLUSTER_NODE_HEADER "X-Pandastack-Node"
/* How far a signature's time may be from ours, ms. */
#define CLUSTER_SIGN_SKEW_MS 60000

/*
 * cluster_seal - the value etcd keeps for the record text (a JSON object,
 * "{...}") at etcd key key: text with a "sig" member holding its MAC with
 * the secret (secret_len bytes) over key and text.  A new string, or NULL
 * (ENOMEM, or text not an object).  Pure; any thread.
 */
char *cluster_seal(const unsigned char *secret, size_t secret_len, const char *key,
		   const char *text);

/*
 * cluster_unseal - 0 when value (len bytes, read from etcd at key) is a
 * record sealed by cluster_seal with the same secret and key; -EBADMSG
 * otherwise; -ENOMEM.  value is outside input.  Pure; any thread.
 */
int cluster_unseal(const unsigned char *secret, size_t secret_len, const char *key,
		   const char *value, size_t len);

/* cluster__seal - cluster_seal with c's secret. */
char *cluster__seal(const struct cluster *c, const char *key, const char *text);

/*
 * cluster__unseal - cluster_unseal of the pair kv with c's secret; a pair
 * that fails is logged (cluster.record_rejected, naming its key, once per
 * version of it).  0, -EBADMSG, -ENOMEM.
 */
int cluster__unseal(struct cluster *c, const struct etcd_kv *kv);

/* cluster__replay_new / _free - the replay cache (about 2 MiB), or NULL. */
struct cluster_replay *cluster__replay_new(void);
void cluster__replay_free(struct cluster_replay *r);

/*
 * cluster__sign - the value of CLUSTER_NODE_HEADER for a request from this
 * node to node to (method, target: path and query as sent, key_id: the
 * caller's key, NULL or "" for none) at now_ms (unix ms): into out (outlen
 * bytes), with a new random nonce.  0 or -errno.
 */
int cluster__sign(const struct cluster *c, const char *to, const char *method,
		  const char *target, const char *key_id, int64_t now_ms, char *out,
		  size_t outlen);

/*
 * cluster__verify - 0 when value is a signature by a holder of the cluster
 * secret of a request to this node of method on target (NULL: never)
 * authenticated with key_id (NULL or "": none), made within
 * CLUSTER_SIGN_SKEW_MS of now_ms, whose nonce this node has not seen (it
 * is remembered; c->replay NULL: not checked): the signer's name into from
 * (CLUSTER_NAME_MAX bytes).  Otherwise -EBADMSG (malformed, or the MAC),
 * -EXDEV (for another node), -ETIME (out of its window), -EPERM (another
 * key), -EALREADY (replayed), -ENOMEM.
 */
int cluster__verify(struct cluster *c, const char *value, const char *method,
		    const char *target, const char *key_id, int64_t now_ms, char *from);

/* cluster__verify_why - words for a cluster__verify error, for a log line. */
const char *cluster__verify_why(int e);

/*
 * cluster__request_forwarded - whether r was signed by a node: 1 when its
 * CLUSTER_NODE_HEADER verifies (against r's method, raw target and key),
 * 0 when it has none, -1 when it has one that does not (logged:
 * cluster.bad_signature; the caller answers 401).  Request thread, after
 * authentication.
 */
int cluster__request_forwarded(struct cluster *c, struct http_req *r);

/*
 * cluster__forward - serve r by relaying it to node (a copy from the node
 * table) from now on: r->route is replaced by a forwarding route.  Returns
 * 0, or -ENOMEM (nothing changed).
 */
int cluster__forward(struct cluster *c, struct http_req *r, const struct cluster_node *node);

/*
 * cluster__forward_now - relay r, whose body is already buffered, to node
 * and answer with node's answer (a create placed there).  Returns 0 when r
 * was answered, -ECONNREFUSED when node could not be reached and nothing
 * was sent (the caller may choose another node), -errno otherwise (r not
 * answered).
 */
int cluster__forward_now(struct cluster *c, struct http_req *r, const struct cluster_node *node);

/* cluster__forwards_abort - end every forward in flight to node (it left
 * the cluster): their clients get 503 sandbox_lost or an error event. */
void cluster__forwards_abort(struct cluster *c, const char *node);

/* ---- cluster_template.c -------------------------------------------------- */

/* cluster__templates_start - list this node's templates (for its first
 * record), then hash them and fetch those it lacks from other nodes in a
 * thread; 0 or -errno. */
int cluster__templates_start(struct cluster *c);

/* cluster__template_serve - GET /cluster/v1/templates/{name}/{file}: 1 if
 * url is one (answered), else 0. */
int cluster__template_serve(struct cluster *c, struct http_req *r, const char *url);

#endif
