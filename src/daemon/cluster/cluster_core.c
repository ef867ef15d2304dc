/*
 * cluster_core.c - what every file of the cluster shares (see
 * cluster_int.h): etcd key names, the wait of its threads, the etcd state
 * for /healthz, the node table's lookups, and the local mirror of keys.
 * It calls into no other file of the cluster but cluster_sign.c (which
 * calls only cluster_record.c's pure checks), so they all may call it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "daemon/cluster/cluster_int.h"
#include "daemon/daemon.h"
#include "daemon/http/auth.h"
#include "daemon/http/auth_miss.h"

int cluster__key(const struct cluster *c, char *out, const char *a, const char *b,
		 const char *d)
{
	int n = snprintf(out, ETCD_KEY_MAX + 1, "%s%s%s%s", c->prefix, a ? a : "", b ? b : "",
			 d ? d : "");
	return n < 0 || n > ETCD_KEY_MAX ? -ENAMETOOLONG : 0;
}

int cluster__sandbox_key(const struct cluster *c, const char *team, const char *id, char *key)
{
	if (cluster__key(c, key, "sandboxes/", team, "/") < 0 ||
	    strlen(key) + strlen(id) > ETCD_KEY_MAX)
		return -ENAMETOOLONG;
	strcat(key, id);
	return 0;
}

int cluster__range_under(struct cluster *c, const char *a, const char *b, const char *d,
			 struct etcd_kvs *out)
{
	char prefix[ETCD_KEY_MAX + 1];
	memset(out, 0, sizeof(*out));
	int r = cluster__key(c, prefix, a, b, d);
	return r ? r : cluster__etcd_result(c, etcd_range(c->etcd, prefix, 1, out));
}

int cluster__wait(struct cluster *c, int64_t ms, int *wake)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t ns = ts.tv_nsec + (ms % 1000) * 1000000;
	ts.tv_sec += (time_t)(ms / 1000 + ns / 1000000000);
	ts.tv_nsec = (long)(ns % 1000000000);
	pthread_mutex_lock(&c->lock);
	while (!c->stop && !(wake && *wake))
		if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) == ETIMEDOUT)
			break;
	int stop = c->stop;
	if (wake)
		*wake = 0;
	pthread_mutex_unlock(&c->lock);
	return stop;
}

int cluster__etcd_result(struct cluster *c, int r)
{
	pthread_mutex_lock(&c->lock);
	c->etcd_ok = r != -ENOTCONN;
	pthread_mutex_unlock(&c->lock);
	return r;
}

int cluster__node_find(struct cluster *c, const char *name, struct cluster_node *out)
{
	int r = -ENOENT;
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->nnodes; i++)
		if (!strcmp(c->nodes[i].name, name)) {
			*out = c->nodes[i];
			r = 0;
			break;
		}
	pthread_mutex_unlock(&c->lock);
	return r;
}

void cluster__node_suspect(struct cluster *c, const char *name)
{
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->nnodes; i++)
		if (!strcmp(c->nodes[i].name, name))
			c->nodes[i].suspect_until_ms = util_now_ms() + CLUSTER_SUSPECT_MS;
	pthread_mutex_unlock(&c->lock);
	log_kv(LOG_WARN, "cluster.node_suspect", "node=%s", name);
}

int cluster__key_mirror(struct cluster *c, const struct etcd_kv *kv)
{
	const char *hash = strrchr(kv->key, '/');
	struct key_row k, have;
	if (!hash || strlen(hash + 1) != AUTH_HASH_HEX_LEN)
		return -EPROTO;
	int r = cluster__unseal(c, kv); /* only a node's record grants anything */
	if (r)
		return r;
	if (cluster_key_decode(kv->value, kv->value_len, &k) < 0)
		return -EPROTO;
	auth_miss_forget(c->miss, hash + 1);
	if (store_key_by_hash(c->d->store, hash + 1, &have) == 0)
		return 0; /* mirrored already */
	r = store_key_insert(c->d->store, &k, hash + 1);
	return r == -EEXIST ? 0 : r;
}

void cluster__node_wake(struct cluster *c)
{
	pthread_mutex_lock(&c->lock);
	c->wake = 1;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}
