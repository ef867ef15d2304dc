/*
 * cluster.h - many pandastackd hosts behind one API, on etcd (docs/cluster.md).
 *
 * With `--cluster etcd://HOST:PORT[,...] --node-name N --advertise URL`
 * the daemon registers its node in etcd under a lease (its capacity and
 * templates with their content hashes), keeps it alive, and watches the
 * other nodes and the API keys.  Any node then serves the whole API:
 *   - a create is placed on a node by free capacity and template presence;
 *     an etcd transaction records sandbox -> node;
 *   - a call on a sandbox that lives on another node is forwarded there,
 *     streamed both ways (SSE and file transfers included), with the
 *     caller's key and a node signature (HMAC-SHA256 with the cluster
 *     secret) that tells the receiver not to forward it again;
 *   - a listing shows the team's sandboxes on every node;
 *   - keys are kept in etcd (hashed) and mirrored into each node's SQLite,
 *     which answers when etcd cannot;
 *   - a node whose lease has expired is gone: its sandboxes read as `lost`
 *     and calls on them answer 503 sandbox_lost; when it comes back it
 *     adopts what is still alive and publishes it again.
 * Without --cluster none of this runs (d->cluster is NULL) and nothing
 * changes.
 *
 * Each function below is one hook into the rest of the daemon; the hook's
 * caller names it.  Threads: every function may be called from any thread
 * once cluster_start returned.  Errors are -errno: -ENOTCONN when etcd
 * cannot be reached (the API's 503 cluster_unavailable).
 */
#ifndef PANDASTACK_DAEMON_CLUSTER_H
#define PANDASTACK_DAEMON_CLUSTER_H

#include <stddef.h>

#include <jansson.h>

#include "daemon/store/store.h"

struct cluster;
struct daemon;
struct http_req;
struct create_sandbox_body;
struct http_gate;

/*
 * cluster_start - join the cluster d->cfg names: connect to etcd (it must
 * answer: a node does not start alone), publish this node's admin keys,
 * mirror the keys, register the node under a lease of --cluster-ttl
 * seconds, publish its sandboxes, and start the threads that keep it
 * alive and watch the others.  Call after sandboxes_adopt, before the HTTP
 * server.  Returns 0 with *out (cluster_stop), or -errno with err
 * (errlen bytes) saying why.
 */
int cluster_start(struct daemon *d, struct cluster **out, char *err, size_t errlen);

/* cluster_stop - stop the threads, revoke the lease (the node leaves at
 * once; its sandboxes keep running and are published again at the next
 * start).  NULL is a no-op. */
void cluster_stop(struct cluster *c);

/*
 * cluster_create_place - api_sandboxes.c, before a create: choose the node
 * (capacity, template).  Returns 0 to create here, or 1 when the request
 * was answered: forwarded to the chosen node (its answer relayed), or
 * refused (503 cluster_unavailable, 404 template_not_found when no node
 * has the template, 503 host_full when none has room).
 */
int cluster_create_place(struct cluster *c, struct http_req *r,
			 const struct create_sandbox_body *b);

/*
 * cluster_create_record - api_sandboxes.c, after a local create: record
 * sandbox -> this node in etcd (a transaction that fails if the id exists).
 * Returns 0, or -errno (the caller deletes the sandbox and answers 503).
 */
int cluster_create_record(struct cluster *c, const struct sandbox_row *row);

/*
 * cluster_sandbox_list - api_sandboxes.c: the team's sandboxes on every
 * node (status NULL: any; "lost" is the status of a sandbox whose node is
 * gone), oldest first, at most STORE_LIST_MAX: *rows as from
 * store_sandbox_list (sandbox_rows_free).  When etcd cannot be reached,
 * this node's own rows.
 */
int cluster_sandbox_list(struct cluster *c, const char *team, const char *status,
			 struct sandbox_row **rows, size_t *n);

/*
 * cluster_key_insert / cluster_key_delete - api_keys.c: a key made or
 * deleted in etcd first, then in the local mirror.  -ENOTCONN when etcd
 * cannot be reached (nothing changed), as store.h otherwise.
 */
int cluster_key_insert(struct cluster *c, const struct key_row *k, const char *hash_hex);
int cluster_key_delete(struct cluster *c, const char *id);

/*
 * cluster_gate - the hooks through which the HTTP server hands requests to
 * the cluster (http_server.h: d->gate): node-to-node routes under
 * /cluster/, keys made on another node a moment ago, and calls on a
 * sandbox of another node (forwarded there, or answered 503 sandbox_lost
 * when its node is gone).  Borrowed; valid until cluster_stop.
 */
const struct http_gate *cluster_gate(struct cluster *c);

/* cluster_json - /healthz's "cluster" object: {"node", "lease_ok",
 * "etcd": "ok"|"unreachable", "nodes": [{"name", "url", "sandboxes_running",
 * "templates": [names]}]}.  New reference, NULL on ENOMEM. */
json_t *cluster_json(struct cluster *c);

#endif
