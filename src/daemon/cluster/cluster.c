/*
 * cluster.c - joining and leaving the cluster, the HTTP server's hooks,
 * keys in etcd (and then the local mirror), /healthz's cluster object (see
 * cluster.h and cluster_int.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <microhttpd.h>

#include "common/log.h"
#include "common/util.h"
#include "daemon/cluster/cluster_int.h"
#include "daemon/daemon.h"
#include "daemon/http/auth.h"
#include "daemon/http/auth_miss.h"

/* The cluster secret: the first line of the file, 16 bytes at least. */
static int read_secret(struct cluster *c, const char *path, char *err, size_t errlen)
{
	char s[CLUSTER_SECRET_MAX + 2];
	size_t n = 0;
	int r = util_read_secret_line(path, s, sizeof(s), &n);
	if (r == -EPERM)
		snprintf(err, errlen,
			 "--cluster-secret-file %.200s is open to its group or others: chmod 600 it",
			 path);
	else if (r == -EINVAL || (!r && (n < 16 || n > CLUSTER_SECRET_MAX)))
		snprintf(err, errlen, "the cluster secret must be 16 to %d bytes on its first line",
			 CLUSTER_SECRET_MAX);
	else if (r)
		snprintf(err, errlen, "cannot read --cluster-secret-file: %s", strerror(-r));
	if (!r && (n < 16 || n > CLUSTER_SECRET_MAX))
		r = -EINVAL;
	if (!r) {
		memcpy(c->secret, s, n);
		c->secret_len = n;
	}
	explicit_bzero(s, sizeof(s));
	return r;
}

/*
 * Connect the etcd client the way the configuration says: TLS (a CA, a
 * client certificate), a user whose password is the first line of its
 * file.  Secret files must be the owner's alone.
 */
static int open_etcd(struct cluster *c, const struct daemon_cfg *cfg, char *err, size_t errlen)
{
	char pw[1024];
	size_t n = 0;
	int r = 0;
	if (cfg->cluster_etcd_user[0]) {
		r = util_read_secret_line(cfg->cluster_etcd_password_file, pw, sizeof(pw), &n);
		if (r == -EPERM)
			snprintf(err, errlen,
				 "--cluster-etcd-password-file %.200s is open to its group or others: "
				 "chmod 600 it", cfg->cluster_etcd_password_file);
		else if (r)
			snprintf(err, errlen, "cannot read --cluster-etcd-password-file: %s",
				 r == -EINVAL ? "its first line is empty or over 1023 bytes"
					      : strerror(-r));
	}
	if (!r && cfg->cluster_etcd_key[0] && (r = util_file_private(cfg->cluster_etcd_key)) < 0)
		snprintf(err, errlen, r == -EPERM
			 ? "--cluster-etcd-key %.200s is open to its group or others: chmod 600 it"
			 : "cannot read --cluster-etcd-key %.200s", cfg->cluster_etcd_key);
	struct etcd_opts o = {
		.ca_file = cfg->cluster_ca_file[0] ? cfg->cluster_ca_file : NULL,
		.cert_file = cfg->cluster_etcd_cert[0] ? cfg->cluster_etcd_cert : NULL,
		.key_file = cfg->cluster_etcd_key[0] ? cfg->cluster_etcd_key : NULL,
		.user = cfg->cluster_etcd_user[0] ? cfg->cluster_etcd_user : NULL,
		.password = cfg->cluster_etcd_user[0] ? pw : NULL,
	};
	if (!r && (r = etcd_open(cfg->cluster, &o, &c->etcd)) < 0)
		snprintf(err, errlen, r == -ENOMEM ? "out of memory"
			 : "--cluster must be etcd://HOST:PORT[,HOST:PORT...]");
	explicit_bzero(pw, sizeof(pw));
	return r;
}

static int check_config(struct cluster *c, const struct daemon_cfg *cfg, char *err,
			size_t errlen)
{
	if (!cluster_name_valid(cfg->node_name)) {
		snprintf(err, errlen, "--node-name must be 1-64 characters of [a-z0-9._-]");
		return -EINVAL;
	}
	if ((strncmp(cfg->advertise, "http://", 7) && strncmp(cfg->advertise, "https://", 8)) ||
	    strlen(cfg->advertise) >= sizeof(c->url) || strpbrk(cfg->advertise, " \t\r\n")) {
		snprintf(err, errlen, "--advertise must be this node's API URL, http(s)://HOST:PORT");
		return -EINVAL;
	}
	size_t pl = strlen(cfg->cluster_prefix);
	if (pl == 0 || cfg->cluster_prefix[0] != '/' || pl + 2 > sizeof(c->prefix)) {
		snprintf(err, errlen, "--cluster-prefix must start with / (at most %zu bytes)",
			 sizeof(c->prefix) - 2);
		return -EINVAL;
	}
	memcpy(c->node, cfg->node_name, strlen(cfg->node_name) + 1); /* checked: it fits */
	memcpy(c->url, cfg->advertise, strlen(cfg->advertise) + 1);
	size_t ul = strlen(c->url);
	while (ul > 8 && c->url[ul - 1] == '/')
		c->url[--ul] = '\0';
	memcpy(c->prefix, cfg->cluster_prefix, pl); /* checked: pl + 2 fits */
	if (cfg->cluster_prefix[pl - 1] != '/')
		c->prefix[pl++] = '/';
	c->prefix[pl] = '\0';
	c->ttl_s = cfg->cluster_ttl_s;
	if (!cfg->cluster_secret_file[0]) {
		snprintf(err, errlen, "--cluster needs --cluster-secret-file (docs/cluster.md)");
		return -EINVAL;
	}
	return read_secret(c, cfg->cluster_secret_file, err, errlen);
}

static void free_cluster(struct cluster *c)
{
	etcd_close(c->etcd);
	cluster__replay_free(c->replay);
	auth_miss_free(c->miss);
	free(c->nodes);
	json_decref(c->published);
	json_decref(c->records);
	explicit_bzero(c->secret, sizeof(c->secret));
	free(c->tpl_local);
	pthread_mutex_destroy(&c->tpl_lock);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	free(c);
}

/*
 * The first call to etcd: push this node's keys (cluster__keys_push),
 * trying again for CLUSTER_JOIN_WAIT_MS while no member answers.  A node that starts while
 * the members elect a leader (a member that comes back after a cut can
 * force an election) or come up themselves waits instead of failing.
 */
static int join_wait(struct cluster *c)
{
	int64_t until = util_now_ms() + CLUSTER_JOIN_WAIT_MS;
	int r;
	while ((r = cluster__keys_push(c)) == -ENOTCONN && util_now_ms() < until) {
		log_kv(LOG_WARN, "cluster.waiting_for_etcd", "etcd=%s", c->d->cfg.cluster);
		cluster__wait(c, 1000, NULL);
	}
	return r;
}

int cluster_start(struct daemon *d, struct cluster **out, char *err, size_t errlen)
{
	*out = NULL;
	struct cluster *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->d = d;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	pthread_mutex_init(&c->tpl_lock, NULL);
	c->published = json_object();
	c->records = json_object();
	c->replay = cluster__replay_new();
	c->miss = auth_miss_new();
	int r = c->published && c->records && c->replay && c->miss
			? check_config(c, &d->cfg, err, errlen)
			: -ENOMEM;
	if (!r)
		r = open_etcd(c, &d->cfg, err, errlen);
	if (!r && (r = join_wait(c)) < 0) {
		char last[ETCD_ERROR_MAX];
		etcd_last_error(c->etcd, last, sizeof(last));
		if (r == -EACCES)
			snprintf(err, errlen,
				 "etcd at %s refused this node (check --cluster-etcd-user, "
				 "--cluster-etcd-password-file, --cluster-etcd-cert/-key, "
				 "--cluster-ca-file and the user's role): %s",
				 d->cfg.cluster, last);
		else if (r == -ENOTCONN)
			snprintf(err, errlen, "etcd did not answer at %s for %d s: no member "
				 "reachable (%s)", d->cfg.cluster, CLUSTER_JOIN_WAIT_MS / 1000, last);
		else
			snprintf(err, errlen, "etcd at %s failed this node's first call: %s (%s)",
				 d->cfg.cluster, strerror(-r), last);
	}
	if (!r && (r = cluster__view_start(c)) < 0)
		snprintf(err, errlen, "cannot read the cluster from etcd: %s", strerror(-r));
	if (!r && (r = cluster__templates_start(c)) < 0)
		snprintf(err, errlen, "cannot start the template thread: %s", strerror(-r));
	if (!r && (r = cluster__node_start(c)) < 0)
		snprintf(err, errlen, "cannot register this node in etcd: %s", strerror(-r));
	if (r < 0) {
		cluster_stop(c);
		return r;
	}
	log_kv(LOG_INFO, "cluster.joined", "node=%s url=%s etcd=%s ttl_s=%lld", c->node, c->url,
	       d->cfg.cluster, (long long)c->ttl_s);
	*out = c;
	return 0;
}

void cluster_stop(struct cluster *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = 1;
	c->stop_flag = 1;
	pthread_cond_broadcast(&c->cond);
	int64_t lease = c->lease;
	pthread_mutex_unlock(&c->lock);
	if (c->threads & 1)
		pthread_join(c->node_thread, NULL);
	if (c->threads & 2)
		pthread_join(c->view_thread, NULL);
	if (c->threads & 4)
		pthread_join(c->tpl_thread, NULL);
	/* forwards end with their connections (the HTTP server is stopped) */
	pthread_mutex_lock(&c->lock);
	while (c->fwds)
		pthread_cond_wait(&c->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);
	if (lease && c->etcd)
		etcd_lease_revoke(c->etcd, lease);
	log_kv(LOG_INFO, "cluster.left", "node=%s", c->node);
	free_cluster(c);
}

/* ---- keys ------------------------------------------------------------------ */

int cluster_key_insert(struct cluster *c, const struct key_row *k, const char *hash_hex)
{
	char key[ETCD_KEY_MAX + 1];
	char *text = cluster_key_encode(k);
	int r = text ? cluster__key(c, key, "keys/", hash_hex, NULL) : -ENOMEM;
	char *rec = r ? NULL : cluster__seal(c, key, text);
	if (!r && !rec)
		r = -ENOMEM;
	if (!r)
		r = cluster__etcd_result(c, etcd_put_new(c->etcd, key, rec, strlen(rec), 0, NULL));
	free(text);
	free(rec);
	if (!r) {
		r = store_key_insert(c->d->store, k, hash_hex);
		if (r == -EEXIST)
			r = 0; /* the watch mirrored it first */
	}
	return r;
}

int cluster_key_delete(struct cluster *c, const char *id)
{
	struct etcd_kvs kvs;
	int r = cluster__range_under(c, "keys/", NULL, NULL, &kvs);
	if (r)
		return r;
	int found = 0;
	for (size_t i = 0; !r && i < kvs.n; i++) {
		struct key_row k;
		if (cluster_key_decode(kvs.v[i].value, kvs.v[i].value_len, &k) < 0 ||
		    strcmp(k.id, id) != 0)
			continue;
		found = 1;
		r = cluster__etcd_result(c, etcd_delete(c->etcd, kvs.v[i].key, 0, NULL));
	}
	etcd_kvs_clear(&kvs);
	if (r)
		return r;
	r = store_key_delete(c->d->store, id);
	return r == -ENOENT && found ? 0 : r;
}

int cluster_auth_check(struct cluster *c, const char *authorization, const char *client,
		       struct auth_ident *who)
{
	/* auth_check already found the header well formed but unknown, or bad;
	 * only a well-formed one is worth a look in etcd. */
	const char *p = authorization ? strstr(authorization, AUTH_KEY_PREFIX) : NULL;
	if (!p || strlen(p) < AUTH_KEY_LEN)
		return -EACCES;
	char secret[AUTH_KEY_LEN + 1], hash[AUTH_HASH_HEX_LEN + 1], key[ETCD_KEY_MAX + 1];
	memcpy(secret, p, AUTH_KEY_LEN);
	secret[AUTH_KEY_LEN] = '\0';
	struct etcd_kvs kvs = {0};
	int r = auth_hash(secret, hash);
	explicit_bzero(secret, sizeof(secret));
	if (!r && !auth_miss_may_look_up(c->miss, hash, client, util_now_ms()))
		return -EACCES; /* looked up lately, or this client's lookups are spent */
	if (!r)
		r = cluster__key(c, key, "keys/", hash, NULL);
	if (!r)
		r = cluster__etcd_result(c, etcd_range(c->etcd, key, 0, &kvs));
	if (!r && kvs.n == 1)
		r = cluster__key_mirror(c, &kvs.v[0]);
	else if (!r)
		r = -EACCES;
	etcd_kvs_clear(&kvs);
	if (r == -EACCES || r == -EBADMSG)
		auth_miss_note_unknown(c->miss, hash, util_now_ms());
	if (r)
		return -EACCES;
	return auth_check(c->d->store, authorization, who);
}

/* ---- the HTTP server's hooks ------------------------------------------------ */

static int gate_internal(void *arg, struct http_req *r, const char *url)
{
	return cluster_internal(arg, r, url);
}

static int gate_auth(void *arg, struct http_req *r, struct auth_ident *who)
{
	char client[64];
	http_client_addr(r->conn, client, sizeof(client));
	return cluster_auth_check(arg, http_header(r, MHD_HTTP_HEADER_AUTHORIZATION), client, who);
}

static int gate_route(void *arg, struct http_req *r)
{
	return cluster_route(arg, r);
}

const struct http_gate *cluster_gate(struct cluster *c)
{
	c->gate = (struct http_gate){
		.arg = c, .internal = gate_internal, .auth = gate_auth, .route = gate_route};
	return &c->gate;
}

/* ---- /healthz ---------------------------------------------------------------- */

json_t *cluster_json(struct cluster *c)
{
	json_t *nodes = json_array();
	if (!nodes)
		return NULL;
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->nnodes; i++) {
		const struct cluster_node *n = &c->nodes[i];
		json_t *t = json_array();
		for (size_t j = 0; t && j < n->ntpls; j++)
			json_array_append_new(t, json_string(n->tpls[j].name));
		json_array_append_new(nodes, json_pack("{s:s, s:s, s:i, s:o}", "name", n->name, "url",
						       n->url, "sandboxes_running",
						       (int)n->sandboxes_running, "templates",
						       t ? t : json_array()));
	}
	json_t *o = json_pack("{s:s, s:b, s:s, s:o}", "node", c->node, "lease_ok", c->lease != 0,
			      "etcd", c->etcd_ok ? "ok" : "unreachable", "nodes", nodes);
	pthread_mutex_unlock(&c->lock);
	return o;
}
