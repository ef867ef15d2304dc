/*
 * fuzz_cluster_decode.c - libFuzzer target for what the cluster reads from
 * etcd: the JSON gateway's answers (etcd_decode.h, the authenticate answer
 * included), the node, sandbox and key records (cluster_record.c) and the
 * seals on them (cluster_sign.c).  Any bytes give 0 or a negative
 * errno, never a crash or a leak; what decodes keeps its caps.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cluster/cluster_int.h"
#include "daemon/cluster/etcd_client.h"
#include "daemon/cluster/etcd_decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_kvs(const struct etcd_kvs *kvs)
{
	if (kvs->n > ETCD_KVS_MAX)
		abort();
	for (size_t i = 0; i < kvs->n; i++)
		if (kvs->v[i].key_len > ETCD_KEY_MAX || kvs->v[i].value_len > ETCD_VALUE_MAX ||
		    kvs->v[i].key[kvs->v[i].key_len] != '\0')
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct etcd_kvs kvs;
	if (etcd_decode_range(buf, size, &kvs) == 0)
		check_kvs(&kvs);
	etcd_kvs_clear(&kvs);
	int ok;
	int64_t rev, del, id, ttl;
	if (etcd_decode_txn(buf, size, &ok, &rev, &kvs) == 0)
		check_kvs(&kvs);
	etcd_kvs_clear(&kvs);
	etcd_decode_write(buf, size, &rev, &del);
	if (etcd_decode_lease(buf, size, &id, &ttl) == 0 && ttl < 0)
		abort();
	struct etcd_watch_msg m;
	if (etcd_decode_watch(buf, size, &m) == 0)
		check_kvs(&m.events);
	etcd_kvs_clear(&m.events);
	char msg[64];
	etcd_decode_error(buf, size, msg, sizeof(msg));
	if (strlen(msg) >= sizeof(msg))
		abort();

	struct cluster_node n;
	if (cluster_node_decode(buf, size, &n) == 0 &&
	    (n.ntpls > CLUSTER_TEMPLATES_MAX || !cluster_name_valid(n.name)))
		abort();
	struct cluster_sandbox s;
	if (cluster_sandbox_decode(buf, size, &s) == 0) {
		if (!s.row.metadata_json || !s.row.env_json)
			abort();
		sandbox_row_clear(&s.row);
	}
	struct key_row k;
	cluster_key_decode(buf, size, &k);

	/* a seal read from etcd (against a fixed secret and key), and the
	 * token an authenticate answer carries */
	static const unsigned char secret[] = "0123456789abcdef";
	int e = cluster_unseal(secret, 16, "/pandastack/keys/x", buf, size);
	if (e != 0 && e != -EBADMSG && e != -ENOMEM)
		abort();
	char token[ETCD_TOKEN_MAX];
	if (etcd_decode_auth(buf, size, token, sizeof(token)) == 0 &&
	    (token[0] == '\0' || strlen(token) >= sizeof(token) || strchr(token, ' ')))
		abort();
	return 0;
}
