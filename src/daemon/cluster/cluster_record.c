/*
 * cluster_record.c - the JSON of the records the cluster keeps in etcd
 * (see cluster_int.h).  A record read from etcd is outside input: it may
 * come from another version of the daemon or from anyone who can write to
 * etcd, so every field is type-checked and capped before it is used.
 * tests/fuzz/fuzz_cluster_record.c feeds the decoders.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cluster/cluster_int.h"
#include "daemon/http/request_body.h"
#include "daemon/sandbox/sandbox.h"

#define RECORD_MAX (256u * 1024u)
#define META_MAX (64u * 1024u)

int cluster_name_valid(const char *s)
{
	return body_check_name(s) == 0 && strlen(s) < CLUSTER_NAME_MAX;
}

/* A string field of at most cap - 1 bytes without NUL or control bytes. */
static int get_str(json_t *o, const char *k, char *out, size_t cap, int required)
{
	json_t *v = json_object_get(o, k);
	out[0] = '\0';
	if (!v)
		return required ? -EPROTO : 0;
	if (!json_is_string(v) || json_string_length(v) >= cap)
		return -EPROTO;
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return -EPROTO;
	memcpy(out, s, n + 1);
	return 0;
}

/* A non-negative integer field at most max; absent is 0. */
static int get_u64(json_t *o, const char *k, uint64_t max, uint64_t *out)
{
	json_t *v = json_object_get(o, k);
	*out = 0;
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > max)
		return -EPROTO;
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int get_i64(json_t *o, const char *k, int64_t *out)
{
	uint64_t u;
	int e = get_u64(o, k, (uint64_t)INT64_MAX / 4, &u);
	*out = (int64_t)u;
	return e;
}

static int get_uint(json_t *o, const char *k, unsigned max, unsigned *out)
{
	uint64_t u;
	int e = get_u64(o, k, max, &u);
	*out = (unsigned)u;
	return e;
}

static int hex64(const char *s)
{
	if (strlen(s) != 64)
		return 0;
	for (const char *p = s; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return 0;
	return 1;
}

/* An http:// or https:// URL of printable ASCII without spaces. */
static int url_ok(const char *u)
{
	if (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0)
		return 0;
	for (const char *p = u; *p; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
			return 0;
	return strlen(u) > 8;
}

json_t *cluster_node_encode(const struct cluster_node *n)
{
	json_t *tpls = json_array();
	for (size_t i = 0; tpls && i < n->ntpls; i++)
		json_array_append_new(tpls, json_pack("{s:s, s:s, s:i}", "name", n->tpls[i].name,
						      "hash", n->tpls[i].hash, "memory_mib",
						      (int)n->tpls[i].memory_mib));
	if (!tpls)
		return NULL;
	return json_pack("{s:s, s:s, s:I, s:{s:I, s:I, s:I, s:I, s:i, s:i}, s:o}", "name", n->name,
			 "url", n->url, "updated_at_ms", (json_int_t)n->updated_at_ms, "capacity",
			 "memory_available_bytes", (json_int_t)n->memory_available_bytes,
			 "memory_reserve_bytes", (json_int_t)n->memory_reserve_bytes,
			 "disk_free_bytes", (json_int_t)n->disk_free_bytes, "disk_reserve_bytes",
			 (json_int_t)n->disk_reserve_bytes, "sandboxes_running",
			 (int)n->sandboxes_running, "vm_memory_overhead_mib",
			 (int)n->vm_memory_overhead_mib, "templates", tpls);
}

static int decode_tpl(json_t *o, struct cluster_tpl *t)
{
	if (!json_is_object(o))
		return -EPROTO;
	int e = get_str(o, "name", t->name, sizeof(t->name), 1);
	if (!e && !cluster_name_valid(t->name))
		e = -EPROTO;
	if (!e)
		e = get_str(o, "hash", t->hash, sizeof(t->hash), 0);
	if (!e && t->hash[0] && !hex64(t->hash))
		e = -EPROTO;
	if (!e)
		e = get_uint(o, "memory_mib", 1u << 24, &t->memory_mib);
	return e;
}

int cluster_node_decode(const char *buf, size_t len, struct cluster_node *out)
{
	memset(out, 0, sizeof(*out));
	json_t *o = etcd_json_object(buf, len, RECORD_MAX);
	if (!o)
		return -EPROTO;
	json_t *cap = json_object_get(o, "capacity");
	json_t *tpls = json_object_get(o, "templates");
	int e = get_str(o, "name", out->name, sizeof(out->name), 1);
	if (!e && !cluster_name_valid(out->name))
		e = -EPROTO;
	if (!e)
		e = get_str(o, "url", out->url, sizeof(out->url), 1);
	if (!e && !url_ok(out->url))
		e = -EPROTO;
	if (!e)
		e = get_i64(o, "updated_at_ms", &out->updated_at_ms);
	if (!e && cap && !json_is_object(cap))
		e = -EPROTO;
	const uint64_t big = (uint64_t)1 << 60;
	if (!e && cap)
		e = get_u64(cap, "memory_available_bytes", big, &out->memory_available_bytes);
	if (!e && cap)
		e = get_u64(cap, "memory_reserve_bytes", big, &out->memory_reserve_bytes);
	if (!e && cap)
		e = get_u64(cap, "disk_free_bytes", big, &out->disk_free_bytes);
	if (!e && cap)
		e = get_u64(cap, "disk_reserve_bytes", big, &out->disk_reserve_bytes);
	if (!e && cap)
		e = get_uint(cap, "sandboxes_running", 1u << 24, &out->sandboxes_running);
	if (!e && cap)
		e = get_uint(cap, "vm_memory_overhead_mib", 1u << 20, &out->vm_memory_overhead_mib);
	if (!e && tpls && (!json_is_array(tpls) || json_array_size(tpls) > CLUSTER_TEMPLATES_MAX))
		e = -EPROTO;
	for (size_t i = 0; !e && tpls && i < json_array_size(tpls); i++) {
		e = decode_tpl(json_array_get(tpls, i), &out->tpls[i]);
		if (!e)
			out->ntpls++;
	}
	json_decref(o);
	if (e)
		memset(out, 0, sizeof(*out));
	return e;
}

char *cluster_sandbox_encode(const char *node, const struct sandbox_row *row)
{
	json_t *meta = json_loads(row->metadata_json ? row->metadata_json : "{}", 0, NULL);
	if (!json_is_object(meta)) {
		json_decref(meta);
		meta = json_object();
	}
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:i, s:i, s:o}", "id",
			      row->id, "team", row->team, "node", node, "template",
			      row->template_name, "status", row->status, "reason", row->reason,
			      "created_at_ms", (json_int_t)row->created_at_ms, "expires_at_ms",
			      (json_int_t)row->expires_at_ms, "ended_at_ms",
			      (json_int_t)row->ended_at_ms, "vcpus", (int)row->vcpus, "memory_mib",
			      (int)row->memory_mib, "metadata", meta ? meta : json_object());
	char *s = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(o);
	return s;
}

/* metadata: an object of at most 32 printable strings with checked keys,
 * as the create body allows; re-serialised. */
static int decode_meta(json_t *m, char **out)
{
	*out = NULL;
	if (!m) {
		*out = strdup("{}");
		return *out ? 0 : -ENOMEM;
	}
	if (!json_is_object(m) || json_object_size(m) > BODY_META_MAX_KEYS)
		return -EPROTO;
	const char *k;
	json_t *v;
	json_object_foreach(m, k, v) {
		size_t kl = strlen(k);
		if (kl == 0 || kl > BODY_META_KEY_MAX || !json_is_string(v) ||
		    json_string_length(v) > BODY_META_VALUE_MAX)
			return -EPROTO;
	}
	*out = json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS);
	return *out && strlen(*out) < META_MAX ? 0 : -EPROTO;
}

int cluster_sandbox_decode(const char *buf, size_t len, struct cluster_sandbox *out)
{
	memset(out, 0, sizeof(*out));
	json_t *o = etcd_json_object(buf, len, RECORD_MAX);
	if (!o)
		return -EPROTO;
	struct sandbox_row *r = &out->row;
	int e = get_str(o, "id", r->id, sizeof(r->id), 1);
	if (!e && !sandbox_id_valid(r->id))
		e = -EPROTO;
	if (!e)
		e = get_str(o, "team", r->team, sizeof(r->team), 1);
	if (!e && body_check_name(r->team) < 0)
		e = -EPROTO;
	if (!e)
		e = get_str(o, "node", out->node, sizeof(out->node), 1);
	if (!e && !cluster_name_valid(out->node))
		e = -EPROTO;
	if (!e)
		e = get_str(o, "template", r->template_name, sizeof(r->template_name), 1);
	if (!e)
		e = get_str(o, "status", r->status, sizeof(r->status), 1);
	static const char *const states[] = {"running", "paused", "stopped", "error"};
	int known = 0;
	for (size_t i = 0; !e && i < 4; i++)
		known |= !strcmp(r->status, states[i]);
	if (!e && !known)
		e = -EPROTO;
	if (!e)
		e = get_str(o, "reason", r->reason, sizeof(r->reason), 0);
	if (!e)
		e = get_i64(o, "created_at_ms", &r->created_at_ms);
	if (!e)
		e = get_i64(o, "expires_at_ms", &r->expires_at_ms);
	if (!e)
		e = get_i64(o, "ended_at_ms", &r->ended_at_ms);
	if (!e)
		e = get_uint(o, "vcpus", 4095, &r->vcpus);
	if (!e)
		e = get_uint(o, "memory_mib", (1u << 24) - 1, &r->memory_mib);
	if (!e)
		e = decode_meta(json_object_get(o, "metadata"), &r->metadata_json);
	if (!e && !(r->env_json = strdup("{}")))
		e = -ENOMEM;
	json_decref(o);
	if (e)
		sandbox_row_clear(r);
	return e;
}

char *cluster_key_encode(const struct key_row *k)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:b, s:I}", "id", k->id, "name", k->name, "team",
			      k->team, "admin", k->admin, "created_at_ms",
			      (json_int_t)k->created_at_ms);
	char *s = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(o);
	return s;
}

int cluster_key_decode(const char *buf, size_t len, struct key_row *out)
{
	memset(out, 0, sizeof(*out));
	json_t *o = etcd_json_object(buf, len, RECORD_MAX);
	if (!o)
		return -EPROTO;
	int e = get_str(o, "id", out->id, sizeof(out->id), 1);
	if (!e && (strncmp(out->id, "key_", 4) != 0 || strlen(out->id) < 5))
		e = -EPROTO;
	if (!e)
		e = get_str(o, "name", out->name, sizeof(out->name), 1);
	if (!e)
		e = get_str(o, "team", out->team, sizeof(out->team), 1);
	if (!e && body_check_name(out->team) < 0)
		e = -EPROTO;
	json_t *adm = json_object_get(o, "admin");
	if (!e && adm && !json_is_boolean(adm))
		e = -EPROTO;
	out->admin = json_is_true(adm);
	if (!e)
		e = get_i64(o, "created_at_ms", &out->created_at_ms);
	json_decref(o);
	if (e)
		memset(out, 0, sizeof(*out));
	return e;
}
