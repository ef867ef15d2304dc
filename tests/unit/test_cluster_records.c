/*
 * test_cluster_records.c - the cluster's pure parts: etcd's JSON gateway
 * answers (etcd_decode.c, on answers captured from etcd 3.4), the records
 * kept in etcd (cluster_record.c), their seals and the node signatures
 * with their replay cache (cluster_sign.c) and
 * the prefix range end (etcd_client.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/util.h"
#include "daemon/cluster/cluster_int.h"
#include "daemon/cluster/etcd_client.h"
#include "daemon/cluster/etcd_decode.h"

#define S(lit) (lit), (sizeof(lit) - 1)

static void range_answers(void **state)
{
	(void)state;
	struct etcd_kvs kvs;
	/* key "/p/a" = "hello", as etcd 3.4 answers it */
	assert_int_equal(etcd_decode_range(S("{\"header\":{\"cluster_id\":\"1\",\"revision\":\"7\"},"
					     "\"kvs\":[{\"key\":\"L3AvYQ==\",\"create_revision\":\"2\","
					     "\"mod_revision\":\"5\",\"version\":\"1\",\"value\":"
					     "\"aGVsbG8=\",\"lease\":\"42\"}],\"count\":\"1\"}"),
					   &kvs),
			 0);
	assert_int_equal(kvs.revision, 7);
	assert_int_equal(kvs.n, 1);
	assert_string_equal(kvs.v[0].key, "/p/a");
	assert_int_equal(kvs.v[0].value_len, 5);
	assert_string_equal(kvs.v[0].value, "hello");
	assert_int_equal(kvs.v[0].create_revision, 2);
	assert_int_equal(kvs.v[0].mod_revision, 5);
	assert_int_equal(kvs.v[0].lease, 42);
	etcd_kvs_clear(&kvs);
	/* nothing matched: etcd leaves kvs and count out */
	assert_int_equal(etcd_decode_range(S("{\"header\":{\"revision\":\"3\"}}"), &kvs), 0);
	assert_int_equal(kvs.n, 0);
	assert_int_equal(kvs.revision, 3);
	etcd_kvs_clear(&kvs);
	/* an empty value is left out too */
	assert_int_equal(etcd_decode_range(S("{\"kvs\":[{\"key\":\"YQ==\"}]}"), &kvs), 0);
	assert_string_equal(kvs.v[0].value, "");
	etcd_kvs_clear(&kvs);
	/* bad answers */
	static const char *const bad[] = {
		"", "[]", "{\"kvs\":{}}", "{\"kvs\":[{\"key\":\"%%%\"}]}",
		"{\"kvs\":[{\"value\":\"YQ==\"}]}",             /* no key */
		"{\"kvs\":[{\"key\":\"YQ==\",\"mod_revision\":\"-1\"}]}",
		"{\"kvs\":[{\"key\":\"YQ==\",\"mod_revision\":\"12x\"}]}",
		"{\"kvs\":[{\"key\":\"YQ==\",\"mod_revision\":true}]}",
		"{\"header\":{\"revision\":\"99999999999999999999999\"}}",
		"{\"header\":[]}", "{\"kvs\":[1]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(etcd_decode_range(bad[i], strlen(bad[i]), &kvs), -EPROTO);
}

static void txn_lease_watch(void **state)
{
	(void)state;
	int ok = -1;
	int64_t rev = 0, id = 0, ttl = -1;
	struct etcd_kvs kvs;
	assert_int_equal(etcd_decode_txn(S("{\"header\":{\"revision\":\"4\"},\"succeeded\":true,"
					   "\"responses\":[{\"response_put\":{\"header\":"
					   "{\"revision\":\"4\"}}}]}"),
					 &ok, &rev, NULL),
			 0);
	assert_int_equal(ok, 1);
	assert_int_equal(rev, 4);
	/* a failed compare: "succeeded" left out, the failure's range given */
	assert_int_equal(etcd_decode_txn(S("{\"header\":{\"revision\":\"2\"},\"responses\":[{"
					   "\"response_range\":{\"kvs\":[{\"key\":\"YQ==\","
					   "\"value\":\"Yg==\"}]}}]}"),
					 &ok, &rev, &kvs),
			 0);
	assert_int_equal(ok, 0);
	assert_int_equal(kvs.n, 1);
	assert_string_equal(kvs.v[0].value, "b");
	etcd_kvs_clear(&kvs);
	assert_int_equal(etcd_decode_txn(S("{\"succeeded\":\"yes\"}"), &ok, &rev, NULL), -EPROTO);

	assert_int_equal(etcd_decode_lease(S("{\"header\":{},\"ID\":\"2324035746253449735\","
					     "\"TTL\":\"5\"}"),
					   &id, &ttl),
			 0);
	assert_int_equal(id, 2324035746253449735LL);
	assert_int_equal(ttl, 5);
	/* a keepalive comes wrapped; an expired lease has no TTL */
	assert_int_equal(etcd_decode_lease(S("{\"result\":{\"header\":{},\"ID\":\"12345\"}}"), &id,
					   &ttl),
			 0);
	assert_int_equal(id, 12345);
	assert_int_equal(ttl, 0);
	assert_int_equal(etcd_decode_lease(S("{\"TTL\":\"5\"}"), &id, &ttl), -EPROTO); /* no ID */

	struct etcd_watch_msg m;
	assert_int_equal(etcd_decode_watch(S("{\"result\":{\"header\":{\"revision\":\"2\"},"
					     "\"created\":true}}"),
					   &m),
			 0);
	assert_true(m.created);
	assert_int_equal(m.events.n, 0);
	etcd_kvs_clear(&m.events);
	assert_int_equal(etcd_decode_watch(S("{\"result\":{\"header\":{\"revision\":\"3\"},"
					     "\"events\":[{\"kv\":{\"key\":\"L3AvYQ==\",\"value\":"
					     "\"aGVsbG8=\"}},{\"type\":\"DELETE\",\"kv\":{\"key\":"
					     "\"L3AvYQ==\",\"mod_revision\":\"3\"}}]}}"),
					   &m),
			 0);
	assert_int_equal(m.events.n, 2);
	assert_false(m.events.v[0].deleted);
	assert_string_equal(m.events.v[0].value, "hello");
	assert_true(m.events.v[1].deleted);
	etcd_kvs_clear(&m.events);
	assert_int_equal(etcd_decode_watch(S("{\"result\":{\"canceled\":true,"
					     "\"compact_revision\":\"9\"}}"),
					   &m),
			 0);
	assert_true(m.canceled);
	assert_int_equal(m.compact_revision, 9);
	etcd_kvs_clear(&m.events);
	assert_int_equal(etcd_decode_watch(S("{\"error\":{\"message\":\"x\"}}"), &m), -ECONNABORTED);
	assert_int_equal(etcd_decode_watch(S("{\"result\":{\"events\":[{\"type\":\"NOPE\","
					     "\"kv\":{\"key\":\"YQ==\"}}]}}"),
					   &m),
			 -EPROTO);

	char msg[64];
	etcd_decode_error(S("{\"error\":\"etcdserver: no leader\",\"code\":14,"
			    "\"message\":\"etcdserver: no leader\\u0007\"}"),
			  msg, sizeof(msg));
	assert_string_equal(msg, "etcdserver: no leader");
	etcd_decode_error(S("not json"), msg, sizeof(msg));
	assert_string_equal(msg, "");
}

static void prefix_end(void **state)
{
	(void)state;
	char out[16];
	assert_int_equal(etcd_prefix_end("/p/", out, sizeof(out)), 3);
	assert_string_equal(out, "/p0");
	assert_int_equal(etcd_prefix_end("a\xff", out, sizeof(out)), 1);
	assert_string_equal(out, "b");
	assert_int_equal(etcd_prefix_end("\xff\xff", out, sizeof(out)), 1);
	assert_string_equal(out, "");
	assert_int_equal(etcd_prefix_end("0123456789abcdef", out, sizeof(out)), -ENAMETOOLONG);
}

static void node_records(void **state)
{
	(void)state;
	struct cluster_node n = {0}, back;
	snprintf(n.name, sizeof(n.name), "node-a");
	snprintf(n.url, sizeof(n.url), "http://198.18.0.1:8080");
	n.updated_at_ms = 1764469132123;
	n.memory_available_bytes = 8ull << 30;
	n.memory_reserve_bytes = 512ull << 20;
	n.sandboxes_running = 3;
	n.vm_memory_overhead_mib = 384;
	n.ntpls = 1;
	snprintf(n.tpls[0].name, sizeof(n.tpls[0].name), "base");
	memset(n.tpls[0].hash, 'a', 64);
	n.tpls[0].memory_mib = 512;
	json_t *o = cluster_node_encode(&n);
	char *text = json_dumps(o, JSON_COMPACT);
	assert_int_equal(cluster_node_decode(text, strlen(text), &back), 0);
	assert_string_equal(back.name, "node-a");
	assert_string_equal(back.url, n.url);
	assert_int_equal(back.memory_available_bytes, n.memory_available_bytes);
	assert_int_equal(back.sandboxes_running, 3);
	assert_int_equal(back.ntpls, 1);
	assert_string_equal(back.tpls[0].hash, n.tpls[0].hash);
	assert_int_equal(back.tpls[0].memory_mib, 512);
	free(text);
	json_decref(o);
	static const char *const bad[] = {
		"{\"name\":\"A\",\"url\":\"http://x:1\"}",              /* upper case */
		"{\"name\":\"a\",\"url\":\"ftp://x:1\"}",
		"{\"name\":\"a\",\"url\":\"http://x y:1\"}",
		"{\"name\":\"a\",\"url\":\"http://x:1\",\"capacity\":{\"sandboxes_running\":-1}}",
		"{\"name\":\"a\",\"url\":\"http://x:1\",\"templates\":[{\"name\":\"b\",\"hash\":\"zz\"}]}",
		"{\"name\":\"a\",\"url\":\"http://x:1\",\"templates\":{}}",
		"{\"url\":\"http://x:1\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(cluster_node_decode(bad[i], strlen(bad[i]), &back), -EPROTO);
	/* a newer node's extra fields are fine */
	assert_int_equal(cluster_node_decode(S("{\"name\":\"b\",\"url\":\"https://b:8443\","
					       "\"zone\":\"x\"}"),
					     &back),
			 0);
}

static void sandbox_and_key_records(void **state)
{
	(void)state;
	struct sandbox_row row = {0};
	snprintf(row.id, sizeof(row.id), "sbx_0123456789abcdef0123");
	snprintf(row.team, sizeof(row.team), "team-1");
	snprintf(row.template_name, sizeof(row.template_name), "base");
	snprintf(row.status, sizeof(row.status), "running");
	row.created_at_ms = 1000;
	row.expires_at_ms = 2000;
	row.vcpus = 1;
	row.memory_mib = 512;
	row.metadata_json = strdup("{\"user\":\"alice\"}");
	row.env_json = strdup("{\"SECRET\":\"x\"}");
	char *text = cluster_sandbox_encode("node-b", &row);
	assert_non_null(text);
	assert_null(strstr(text, "SECRET")); /* the env never leaves its node */
	struct cluster_sandbox s;
	assert_int_equal(cluster_sandbox_decode(text, strlen(text), &s), 0);
	assert_string_equal(s.node, "node-b");
	assert_string_equal(s.row.id, row.id);
	assert_string_equal(s.row.team, "team-1");
	assert_string_equal(s.row.metadata_json, "{\"user\":\"alice\"}");
	assert_string_equal(s.row.env_json, "{}");
	assert_int_equal(s.row.expires_at_ms, 2000);
	sandbox_row_clear(&s.row);
	free(text);
	sandbox_row_clear(&row);
	static const char *const bad[] = {
		"{\"id\":\"sbx_x\",\"team\":\"t\",\"node\":\"n\",\"template\":\"b\",\"status\":\"running\"}",
		"{\"id\":\"sbx_0123456789abcdef0123\",\"team\":\"t\",\"node\":\"n\",\"template\":\"b\","
		"\"status\":\"lost\"}",
		"{\"id\":\"sbx_0123456789abcdef0123\",\"team\":\"T\",\"node\":\"n\",\"template\":\"b\","
		"\"status\":\"running\"}",
		"{\"id\":\"sbx_0123456789abcdef0123\",\"team\":\"t\",\"node\":\"n\",\"template\":\"b\","
		"\"status\":\"running\",\"metadata\":{\"k\":1}}",
		"{\"id\":\"sbx_0123456789abcdef0123\",\"team\":\"t\",\"node\":\"n\",\"template\":\"b\","
		"\"status\":\"running\",\"reason\":\"a\\nb\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(cluster_sandbox_decode(bad[i], strlen(bad[i]), &s), -EPROTO);

	struct key_row k = {0}, kb;
	snprintf(k.id, sizeof(k.id), "key_0123456789abcdef");
	snprintf(k.name, sizeof(k.name), "ci key");
	snprintf(k.team, sizeof(k.team), "admin");
	k.admin = 1;
	k.created_at_ms = 5;
	text = cluster_key_encode(&k);
	assert_int_equal(cluster_key_decode(text, strlen(text), &kb), 0);
	assert_string_equal(kb.id, k.id);
	assert_string_equal(kb.name, "ci key");
	assert_true(kb.admin);
	free(text);
	assert_int_equal(cluster_key_decode(S("{\"id\":\"nope\",\"name\":\"n\",\"team\":\"t\"}"), &kb),
			 -EPROTO);
	assert_int_equal(cluster_key_decode(S("{\"id\":\"key_1\",\"name\":\"n\",\"team\":\"t\","
					      "\"admin\":1}"),
					    &kb),
			 -EPROTO);
}

/* A cluster of one node "name" with a 20-byte secret (and a replay cache
 * when replay is set). */
static struct cluster test_cluster(const char *name, char first, int replay)
{
	struct cluster c;
	memset(&c, 0, sizeof(c));
	snprintf(c.node, sizeof(c.node), "%s", name);
	memcpy(c.secret, "0123456789abcdef0123", 20);
	c.secret[0] = (unsigned char)first;
	c.secret_len = 20;
	pthread_mutex_init(&c.lock, NULL);
	c.replay = replay ? cluster__replay_new() : NULL;
	if (replay)
		assert_non_null(c.replay);
	return c;
}

static void drop_cluster(struct cluster *c)
{
	cluster__replay_free(c->replay);
	pthread_mutex_destroy(&c->lock);
}

static void signatures(void **state)
{
	(void)state;
	/* a signs for b; b checks (no replay cache: each case afresh) */
	struct cluster a = test_cluster("node-a", '0', 0), b = test_cluster("node-b", '0', 0);
	struct cluster other = test_cluster("node-b", 'X', 0), c3 = test_cluster("node-c", '0', 0);
	char sig[600], from[CLUSTER_NAME_MAX];
	const char *target = "/v1/sandboxes/sbx_0123456789abcdef0123/fs?path=%2Ftmp%2Fx";
	const char *key = "key_0123456789abcdef";
	int64_t now = 1764469132123;
	assert_int_equal(cluster__sign(&a, "node-b", "PUT", target, key, now, sig, sizeof(sig)), 0);
	/* positive control: the same request verifies */
	assert_int_equal(cluster__verify(&b, sig, "PUT", target, key, now + 1000, from), 0);
	assert_string_equal(from, "node-a");
	/* and each change is refused */
	assert_int_equal(cluster__verify(&b, sig, "GET", target, key, now, from), -EBADMSG);
	assert_int_equal(cluster__verify(&b, sig, "PUT",
					 "/v1/sandboxes/sbx_0123456789abcdef0123/fs?path=%2Fetc%2Fx",
					 key, now, from),
			 -EBADMSG); /* another query */
	assert_int_equal(cluster__verify(&b, sig, "PUT", "/v1/sandboxes/sbx_0123456789abcdef0123/fs",
					 key, now, from),
			 -EBADMSG); /* no query */
	assert_int_equal(cluster__verify(&b, sig, "PUT", target, "key_0123456789abcdee", now, from),
			 -EPERM); /* another caller's key */
	assert_int_equal(cluster__verify(&b, sig, "PUT", target, NULL, now, from), -EPERM);
	assert_int_equal(cluster__verify(&c3, sig, "PUT", target, key, now, from), -EXDEV);
	assert_int_equal(cluster__verify(&other, sig, "PUT", target, key, now, from), -EBADMSG);
	assert_int_equal(cluster__verify(&b, sig, "PUT", target, key,
					 now + CLUSTER_SIGN_SKEW_MS + 1, from),
			 -ETIME); /* after its window */
	assert_int_equal(cluster__verify(&b, sig, "PUT", target, key,
					 now - CLUSTER_SIGN_SKEW_MS - 1, from),
			 -ETIME);
	assert_int_equal(cluster__verify(&b, NULL, "PUT", target, key, now, from), -EBADMSG);
	assert_int_equal(cluster__verify(&b, sig, "PUT", NULL, key, now, from), -EBADMSG);
	char forged[700];
	snprintf(forged, sizeof(forged), "node-c%s", sig + strlen("node-a"));
	assert_int_equal(cluster__verify(&b, forged, "PUT", target, key, now, from), -EBADMSG);
	snprintf(forged, sizeof(forged), "%s ", sig);
	assert_int_equal(cluster__verify(&b, forged, "PUT", target, key, now, from), -EBADMSG);
	/* no key: "-" on both sides */
	assert_int_equal(cluster__sign(&a, "node-b", "GET", "/cluster/v1/templates/base", NULL, now,
				       sig, sizeof(sig)),
			 0);
	assert_int_equal(cluster__verify(&b, sig, "GET", "/cluster/v1/templates/base", "", now, from),
			 0);
	assert_int_equal(cluster__verify(&b, sig, "GET", "/cluster/v1/templates/base", key, now, from),
			 -EPERM);
	/* two signatures of one request differ (their nonces) */
	char sig2[600];
	assert_int_equal(cluster__sign(&a, "node-b", "GET", "/x", NULL, now, sig, sizeof(sig)), 0);
	assert_int_equal(cluster__sign(&a, "node-b", "GET", "/x", NULL, now, sig2, sizeof(sig2)), 0);
	assert_string_not_equal(sig, sig2);
	drop_cluster(&a), drop_cluster(&b), drop_cluster(&other), drop_cluster(&c3);
}

static void replays(void **state)
{
	(void)state;
	struct cluster a = test_cluster("node-a", '0', 0), b = test_cluster("node-b", '0', 1);
	char sig[600], from[CLUSTER_NAME_MAX];
	int64_t now = (int64_t)(util_wall_ns() / 1000000u);
	assert_int_equal(cluster__sign(&a, "node-b", "POST", "/v1/x", "key_1", now, sig, sizeof(sig)),
			 0);
	/* positive control: the first time it is taken */
	assert_int_equal(cluster__verify(&b, sig, "POST", "/v1/x", "key_1", now, from), 0);
	/* the same bytes again, at once or later within the window */
	assert_int_equal(cluster__verify(&b, sig, "POST", "/v1/x", "key_1", now, from), -EALREADY);
	assert_int_equal(cluster__verify(&b, sig, "POST", "/v1/x", "key_1",
					 now + CLUSTER_SIGN_SKEW_MS - 1, from),
			 -EALREADY);
	/* another signature goes through */
	assert_int_equal(cluster__sign(&a, "node-b", "POST", "/v1/x", "key_1", now, sig, sizeof(sig)),
			 0);
	assert_int_equal(cluster__verify(&b, sig, "POST", "/v1/x", "key_1", now + 5, from), 0);
	/* a signature that fails its MAC leaves no nonce behind: the real one
	 * with the same nonce still goes through */
	assert_int_equal(cluster__sign(&a, "node-b", "POST", "/v1/y", "key_1", now, sig, sizeof(sig)),
			 0);
	assert_int_equal(cluster__verify(&b, sig, "POST", "/v1/z", "key_1", now, from), -EBADMSG);
	assert_int_equal(cluster__verify(&b, sig, "POST", "/v1/y", "key_1", now, from), 0);
	/* nonces are remembered past the tables' turn (2 skews after the cache
	 * began, a moment before `now`): one taken a second before the turn is
	 * still known a second after it, within its window */
	int64_t later = now + 2 * CLUSTER_SIGN_SKEW_MS - 1000;
	assert_int_equal(cluster__sign(&a, "node-b", "GET", "/v1/t", NULL, later, sig, sizeof(sig)),
			 0);
	assert_int_equal(cluster__verify(&b, sig, "GET", "/v1/t", NULL, later, from), 0);
	assert_int_equal(cluster__verify(&b, sig, "GET", "/v1/t", NULL, later + 2000, from),
			 -EALREADY); /* checked after the turn */
	/* and a fresh one after the turn goes through */
	assert_int_equal(cluster__sign(&a, "node-b", "GET", "/v1/t", NULL, later + 2000, sig,
				       sizeof(sig)),
			 0);
	assert_int_equal(cluster__verify(&b, sig, "GET", "/v1/t", NULL, later + 2000, from), 0);
	drop_cluster(&a), drop_cluster(&b);
}

/* When more signed requests come within two skews than a table holds, the
 * oldest nonces are dropped early, and a floor keeps their replays out. */
static void replay_cache_full(void **state)
{
	(void)state;
	struct cluster a = test_cluster("node-a", '0', 0), b = test_cluster("node-b", '0', 1);
	char sig[600], first[600], from[CLUSTER_NAME_MAX];
	int64_t now = (int64_t)(util_wall_ns() / 1000000u);
	/* two tables' worth but one, all at now (the first table turned early
	 * when it was full: the second holds the rest) */
	for (unsigned i = 0; i < 65535; i++) {
		assert_int_equal(cluster__sign(&a, "node-b", "GET", "/v1/f", NULL, now, sig,
					       sizeof(sig)),
				 0);
		if (i == 0)
			memcpy(first, sig, sizeof(first));
		assert_int_equal(cluster__verify(&b, sig, "GET", "/v1/f", NULL, now, from), 0);
	}
	/* positive control: the first nonce is still known */
	assert_int_equal(cluster__verify(&b, first, "GET", "/v1/f", NULL, now, from), -EALREADY);
	/* the second table full too */
	assert_int_equal(cluster__sign(&a, "node-b", "GET", "/v1/f", NULL, now, sig, sizeof(sig)), 0);
	assert_int_equal(cluster__verify(&b, sig, "GET", "/v1/f", NULL, now, from), 0);
	/* the next one turns the tables early, dropping the first table: a
	 * signature of that time is refused from now on (the floor) ... */
	assert_int_equal(cluster__sign(&a, "node-b", "GET", "/v1/f", NULL, now, sig, sizeof(sig)), 0);
	assert_int_equal(cluster__verify(&b, sig, "GET", "/v1/f", NULL, now, from), -ETIME);
	/* ... the first nonce's replay included, though it is forgotten */
	assert_int_equal(cluster__verify(&b, first, "GET", "/v1/f", NULL, now, from), -ETIME);
	assert_int_equal(cluster__sign(&a, "node-b", "GET", "/v1/f", NULL, now + 1, sig, sizeof(sig)),
			 0);
	assert_int_equal(cluster__verify(&b, sig, "GET", "/v1/f", NULL, now + 1, from), 0);
	drop_cluster(&a), drop_cluster(&b);
}

static void sealed_records(void **state)
{
	(void)state;
	const unsigned char *k1 = (const unsigned char *)"0123456789abcdef0123";
	const unsigned char *k2 = (const unsigned char *)"X123456789abcdef0123";
	const char *key = "/pandastack/keys/00aa";
	struct key_row kr = {.admin = 1, .created_at_ms = 5};
	snprintf(kr.id, sizeof(kr.id), "key_0123456789abcdef");
	snprintf(kr.name, sizeof(kr.name), "ops");
	snprintf(kr.team, sizeof(kr.team), "t");
	char *text = cluster_key_encode(&kr);
	assert_non_null(text);
	char *v = cluster_seal(k1, 20, key, text);
	assert_non_null(v);
	/* it is still one JSON object, the record's fields and "sig" */
	assert_true(strncmp(v, text, strlen(text) - 1) == 0);
	assert_int_equal(strlen(v), strlen(text) + strlen(",\"sig\":\"\"") + 64);
	json_t *o = etcd_json_object(v, strlen(v), 4096);
	assert_non_null(o);
	assert_int_equal(json_string_length(json_object_get(o, "sig")), 64);
	json_decref(o);
	/* positive control: it opens with the same secret and key */
	assert_int_equal(cluster_unseal(k1, 20, key, v, strlen(v)), 0);
	/* not with another secret, another key, or any byte changed */
	assert_int_equal(cluster_unseal(k2, 20, key, v, strlen(v)), -EBADMSG);
	assert_int_equal(cluster_unseal(k1, 20, "/pandastack/keys/00ab", v, strlen(v)), -EBADMSG);
	for (size_t i = 0; i < strlen(v); i++) {
		char *w = strdup(v);
		w[i] ^= 0x01;
		assert_int_equal(cluster_unseal(k1, 20, key, w, strlen(w)), -EBADMSG);
		free(w);
	}
	/* a record as an older version (or anyone) wrote it: no seal */
	assert_int_equal(cluster_unseal(k1, 20, key, text, strlen(text)), -EBADMSG);
	/* cut short, or grown */
	assert_int_equal(cluster_unseal(k1, 20, key, v, strlen(v) - 1), -EBADMSG);
	assert_int_equal(cluster_unseal(k1, 20, key, "", 0), -EBADMSG);
	assert_int_equal(cluster_unseal(k1, 20, key, NULL, 0), -EBADMSG);
	/* an "admin" added in front of the seal breaks it */
	char *grown = NULL;
	assert_true(asprintf(&grown, "{\"admin\":true,%s", v + 1) > 0);
	assert_int_equal(cluster_unseal(k1, 20, key, grown, strlen(grown)), -EBADMSG);
	free(grown);
	/* the decoders read a sealed record as the record */
	struct key_row back;
	assert_int_equal(cluster_key_decode(v, strlen(v), &back), 0);
	assert_string_equal(back.id, kr.id);
	assert_true(back.admin);
	free(v);
	free(text);
	/* only objects are sealed */
	assert_null(cluster_seal(k1, 20, key, "[]"));
	assert_null(cluster_seal(k1, 20, key, "{}"));
	assert_null(cluster_seal(k1, 20, key, NULL));
}

/* A node entry as set_nodes keeps it: its record and this daemon's notes. */
static struct cluster_node entry(int64_t updated, unsigned running, unsigned placed,
				 unsigned base, int64_t last)
{
	struct cluster_node n;
	memset(&n, 0, sizeof(n));
	n.updated_at_ms = updated;
	n.sandboxes_running = running;
	n.placed_recently = placed;
	n.placed_base = base;
	n.placed_last_ms = last;
	return n;
}

/* The entry a new record (updated, running) makes of old at now. */
static struct cluster_node carried(const struct cluster_node *old, int64_t updated,
				   unsigned running, int64_t now)
{
	struct cluster_node rec = entry(updated, running, 0, 0, 0);
	cluster_placed_carry(&rec, old, now);
	return rec;
}

static void placed_creates_carry(void **state)
{
	(void)state;
	const int64_t t = 1000000;
	/* two creates placed on a node whose record said 3 */
	struct cluster_node old = entry(10, 3, 2, 3, t);
	/* the same record again: nothing changes */
	struct cluster_node rec = carried(&old, 10, 3, t + 1);
	assert_int_equal(rec.placed_recently, 2);
	assert_int_equal(rec.placed_base, 3);
	/* a newer record still without them (computed before they started):
	 * they still count; resetting here is the bug this guards */
	rec = carried(&old, 11, 3, t + 1);
	assert_int_equal(rec.placed_recently, 2);
	assert_int_equal(rec.placed_base, 3);
	/* a record that shows one of them */
	rec = carried(&rec, 12, 4, t + 2);
	assert_int_equal(rec.placed_recently, 1);
	assert_int_equal(rec.placed_base, 4);
	/* an older record read whole after it: the base does not fall */
	rec = carried(&rec, 9, 2, t + 3);
	assert_int_equal(rec.placed_recently, 1);
	assert_int_equal(rec.placed_base, 4);
	/* both shown, and more (creates sent by other nodes): none left */
	rec = carried(&rec, 13, 7, t + 4);
	assert_int_equal(rec.placed_recently, 0);
	/* one hidden by a delete: an overcount until the hold ends */
	old = entry(20, 5, 1, 5, t);
	rec = carried(&old, 21, 5, t + CLUSTER_PLACED_HOLD_MS);
	assert_int_equal(rec.placed_recently, 1);
	rec = carried(&old, 22, 5, t + CLUSTER_PLACED_HOLD_MS + 1);
	assert_int_equal(rec.placed_recently, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(range_answers),  cmocka_unit_test(txn_lease_watch),
		cmocka_unit_test(prefix_end),     cmocka_unit_test(node_records),
		cmocka_unit_test(sandbox_and_key_records), cmocka_unit_test(signatures),
		cmocka_unit_test(replays),        cmocka_unit_test(replay_cache_full),
		cmocka_unit_test(sealed_records),
		cmocka_unit_test(placed_creates_carry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
