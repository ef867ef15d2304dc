/*
 * etcd_decode.c - etcd v3 JSON gateway answers into C structs (see
 * etcd_decode.h).
 */
#include "daemon/cluster/etcd_decode.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/base64.h"

void etcd_kvs_clear(struct etcd_kvs *kvs)
{
	for (size_t i = 0; kvs->v && i < kvs->n; i++) {
		free(kvs->v[i].key);
		free(kvs->v[i].value);
	}
	free(kvs->v);
	memset(kvs, 0, sizeof(*kvs));
}

json_t *etcd_json_object(const char *buf, size_t len, size_t max)
{
	if (!buf || len == 0 || len > max)
		return NULL;
	json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(o)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* An int64 field: absent is 0; a decimal string or an integer in
 * [lo, INT64_MAX].  0 or -EPROTO. */
static int get_i64(json_t *o, const char *k, int64_t lo, int64_t *out)
{
	json_t *v = json_object_get(o, k);
	*out = 0;
	if (!v)
		return 0;
	if (json_is_integer(v)) {
		json_int_t x = json_integer_value(v);
		if (x < lo)
			return -EPROTO;
		*out = x;
		return 0;
	}
	if (!json_is_string(v))
		return -EPROTO;
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (n == 0 || n > 20 || strlen(s) != n)
		return -EPROTO;
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (errno || *end || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) || x < lo)
		return -EPROTO;
	*out = x;
	return 0;
}

/* A boolean field: absent is false. */
static int get_bool(json_t *o, const char *k, int *out)
{
	json_t *v = json_object_get(o, k);
	*out = 0;
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return -EPROTO;
	*out = json_is_true(v);
	return 0;
}

/* A base64 bytes field into a heap copy of at most cap bytes; absent is "". */
static int get_bytes(json_t *o, const char *k, size_t cap, char **out, size_t *outlen)
{
	json_t *v = json_object_get(o, k);
	*out = NULL;
	*outlen = 0;
	if (!v) {
		*out = strdup("");
		return *out ? 0 : -ENOMEM;
	}
	if (!json_is_string(v))
		return -EPROTO;
	size_t n = json_string_length(v);
	if (n / 4 * 3 > cap + 3)
		return -EPROTO;
	int e = base64_decode(json_string_value(v), n, out, outlen);
	if (e == -ENOMEM)
		return e;
	if (e < 0 || *outlen > cap) {
		free(*out);
		*out = NULL;
		return -EPROTO;
	}
	return 0;
}

/* The header's revision (absent header: 0). */
static int header_revision(json_t *o, int64_t *rev)
{
	json_t *h = json_object_get(o, "header");
	*rev = 0;
	if (!h)
		return 0;
	if (!json_is_object(h))
		return -EPROTO;
	return get_i64(h, "revision", 0, rev);
}

/* One mvccpb.KeyValue into kv. */
static int decode_kv(json_t *o, struct etcd_kv *kv)
{
	memset(kv, 0, sizeof(*kv));
	if (!json_is_object(o))
		return -EPROTO;
	int e = get_bytes(o, "key", ETCD_KEY_MAX, &kv->key, &kv->key_len);
	if (!e && kv->key_len == 0)
		e = -EPROTO;
	if (!e)
		e = get_bytes(o, "value", ETCD_VALUE_MAX, &kv->value, &kv->value_len);
	if (!e)
		e = get_i64(o, "create_revision", 0, &kv->create_revision);
	if (!e)
		e = get_i64(o, "mod_revision", 0, &kv->mod_revision);
	if (!e)
		e = get_i64(o, "lease", 0, &kv->lease);
	if (e) {
		free(kv->key);
		free(kv->value);
		memset(kv, 0, sizeof(*kv));
	}
	return e;
}

/* The "kvs" array of a range response (absent: none) into out->v. */
static int decode_kvs(json_t *arr, struct etcd_kvs *out)
{
	if (!arr)
		return 0;
	if (!json_is_array(arr) || json_array_size(arr) > ETCD_KVS_MAX)
		return -EPROTO;
	size_t n = json_array_size(arr);
	if (n == 0)
		return 0;
	out->v = calloc(n, sizeof(*out->v));
	if (!out->v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int e = decode_kv(json_array_get(arr, i), &out->v[i]);
		if (e)
			return e;
		out->n++;
	}
	return 0;
}

static int decode_range_obj(json_t *o, struct etcd_kvs *out)
{
	int e = header_revision(o, &out->revision);
	if (!e)
		e = decode_kvs(json_object_get(o, "kvs"), out);
	return e;
}

int etcd_decode_range(const char *buf, size_t len, struct etcd_kvs *out)
{
	memset(out, 0, sizeof(*out));
	json_t *o = etcd_json_object(buf, len, ETCD_ANSWER_MAX);
	if (!o)
		return -EPROTO;
	int e = decode_range_obj(o, out);
	json_decref(o);
	if (e)
		etcd_kvs_clear(out);
	return e;
}

int etcd_decode_write(const char *buf, size_t len, int64_t *revision, int64_t *deleted)
{
	json_t *o = etcd_json_object(buf, len, ETCD_ANSWER_MAX);
	if (!o)
		return -EPROTO;
	int64_t d = 0;
	int e = header_revision(o, revision);
	if (!e)
		e = get_i64(o, "deleted", 0, &d);
	if (deleted)
		*deleted = d;
	json_decref(o);
	return e;
}

int etcd_decode_txn(const char *buf, size_t len, int *succeeded, int64_t *revision,
		    struct etcd_kvs *range)
{
	if (range)
		memset(range, 0, sizeof(*range));
	*succeeded = 0;
	*revision = 0;
	json_t *o = etcd_json_object(buf, len, ETCD_ANSWER_MAX);
	if (!o)
		return -EPROTO;
	int e = get_bool(o, "succeeded", succeeded);
	if (!e)
		e = header_revision(o, revision);
	json_t *resps = json_object_get(o, "responses");
	if (!e && resps && (!json_is_array(resps) || json_array_size(resps) > 64))
		e = -EPROTO;
	size_t i;
	json_t *r;
	int found = 0;
	json_array_foreach(resps, i, r) {
		if (e || found || !range)
			break;
		if (!json_is_object(r)) {
			e = -EPROTO;
			break;
		}
		json_t *rr = json_object_get(r, "response_range");
		if (!rr)
			continue;
		if (!json_is_object(rr)) {
			e = -EPROTO;
			break;
		}
		found = 1;
		e = decode_kvs(json_object_get(rr, "kvs"), range);
		range->revision = *revision;
	}
	json_decref(o);
	if (e && range)
		etcd_kvs_clear(range);
	return e;
}

int etcd_decode_lease(const char *buf, size_t len, int64_t *id, int64_t *ttl_s)
{
	*id = *ttl_s = 0;
	json_t *o = etcd_json_object(buf, len, ETCD_ANSWER_MAX);
	if (!o)
		return -EPROTO;
	json_t *body = o;
	json_t *res = json_object_get(o, "result");
	if (res)
		body = res;
	int e = json_is_object(body) ? 0 : -EPROTO;
	if (!e)
		e = get_i64(body, "ID", 0, id);
	if (!e)
		e = get_i64(body, "TTL", -1, ttl_s);
	if (!e && *ttl_s < 0)
		*ttl_s = 0;
	if (!e && !res && *id == 0)
		e = -EPROTO; /* a grant always names its lease */
	json_t *err = json_object_get(body, "error");
	if (!e && err && json_is_string(err) && json_string_length(err) > 0)
		e = -EPROTO;
	json_decref(o);
	return e;
}

static int decode_event(json_t *ev, struct etcd_kv *kv)
{
	if (!json_is_object(ev))
		return -EPROTO;
	json_t *t = json_object_get(ev, "type");
	int del = 0;
	if (t) {
		const char *s = json_string_value(t);
		if (!s)
			return -EPROTO;
		if (!strcmp(s, "DELETE"))
			del = 1;
		else if (strcmp(s, "PUT") != 0)
			return -EPROTO;
	}
	int e = decode_kv(json_object_get(ev, "kv"), kv);
	if (!e)
		kv->deleted = del;
	return e;
}

/* The printable ASCII of s (may be NULL: "") into out (cap bytes). */
static void printable(const char *s, char *out, size_t cap)
{
	size_t j = 0;
	for (; s && *s && j + 1 < cap; s++)
		if ((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f)
			out[j++] = *s;
	out[j] = '\0';
}

int etcd_decode_watch(const char *buf, size_t len, struct etcd_watch_msg *out)
{
	memset(out, 0, sizeof(*out));
	json_t *o = etcd_json_object(buf, len, ETCD_ANSWER_MAX);
	if (!o)
		return -EPROTO;
	int e = 0;
	json_t *res = json_object_get(o, "result");
	if (!res) {
		e = json_object_get(o, "error") ? -ECONNABORTED : -EPROTO;
		json_decref(o);
		return e;
	}
	if (!json_is_object(res)) {
		json_decref(o);
		return -EPROTO;
	}
	e = header_revision(res, &out->events.revision);
	if (!e)
		e = get_bool(res, "created", &out->created);
	if (!e)
		e = get_bool(res, "canceled", &out->canceled);
	if (!e)
		e = get_i64(res, "compact_revision", 0, &out->compact_revision);
	if (!e)
		printable(json_string_value(json_object_get(res, "cancel_reason")),
			  out->cancel_reason, sizeof(out->cancel_reason));
	json_t *evs = json_object_get(res, "events");
	if (!e && evs && (!json_is_array(evs) || json_array_size(evs) > ETCD_KVS_MAX))
		e = -EPROTO;
	size_t n = e || !evs ? 0 : json_array_size(evs);
	if (n) {
		out->events.v = calloc(n, sizeof(*out->events.v));
		if (!out->events.v)
			e = -ENOMEM;
	}
	for (size_t i = 0; !e && i < n; i++) {
		e = decode_event(json_array_get(evs, i), &out->events.v[i]);
		if (!e)
			out->events.n++;
	}
	json_decref(o);
	if (e)
		etcd_kvs_clear(&out->events);
	return e;
}

void etcd_decode_error(const char *buf, size_t len, char *msg, size_t msglen)
{
	if (msglen == 0)
		return;
	msg[0] = '\0';
	json_t *o = etcd_json_object(buf, len, ETCD_ANSWER_MAX);
	if (!o)
		return;
	json_t *body = json_object_get(o, "error");
	const char *s = json_string_value(json_object_get(o, "message"));
	if (!s)
		s = json_string_value(body);
	if (!s && json_is_object(body))
		s = json_string_value(json_object_get(body, "message"));
	printable(s, msg, msglen);
	json_decref(o);
}

int etcd_decode_auth(const char *buf, size_t len, char *token, size_t cap)
{
	if (cap)
		token[0] = '\0';
	json_t *o = etcd_json_object(buf, len, ETCD_ANSWER_MAX);
	json_t *t = o ? json_object_get(o, "token") : NULL;
	const char *s = json_string_value(t);
	size_t n = s ? json_string_length(t) : 0;
	int e = n > 0 && n < cap ? 0 : -EPROTO;
	for (size_t i = 0; !e && i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			e = -EPROTO; /* it goes into a header line as it is */
	if (!e)
		memcpy(token, s, n + 1);
	json_decref(o);
	return e;
}
