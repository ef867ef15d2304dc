/*
 * api_keys.c - POST /v1/keys, GET /v1/keys, DELETE /v1/keys/{id}.
 *
 * A key sees and deletes its own team's keys; an admin key sees and deletes
 * every key and may create keys for any team.  The secret is in the create
 * answer only.  Admin keys cannot be deleted through the API (the operator
 * would lock themselves out).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/utf8.h"
#include "common/util.h"
#include "daemon/api/api.h"
#include "daemon/cluster/cluster.h"
#include "daemon/daemon.h"
#include "daemon/http/auth.h"
#include "daemon/http/http_reply.h"

static json_t *key_json(const struct key_row *k)
{
	char created[32], used[32];
	util_iso_time(k->created_at_ms, created);
	util_iso_time(k->last_used_at_ms, used);
	return json_pack("{s:s, s:o, s:s, s:b, s:s, s:o}", "id", k->id, "name",
			 utf8_json_lossy(k->name, strlen(k->name)), "team", k->team, "admin",
			 k->admin, "created_at", created, "last_used_at",
			 k->last_used_at_ms ? json_string(used) : json_null());
}

void api_keys_create(struct http_req *r)
{
	struct key_body b;
	struct body_error be;
	if (body_parse_key(r->body, r->body_len, &b, &be) < 0) {
		api_reply_body_error(r, &be);
		return;
	}
	if (b.team && strcmp(b.team, r->who.team) != 0 && !r->who.admin) {
		http_reply_error(r, API_ERR_FORBIDDEN,
				 "only an admin key may create keys for another team");
		key_body_clear(&b);
		return;
	}
	struct key_row k = {0};
	char secret[AUTH_KEY_LEN + 1], hash[AUTH_HASH_HEX_LEN + 1];
	int e = auth_make_key(secret, hash, k.id);
	snprintf(k.name, sizeof(k.name), "%s", b.name);
	snprintf(k.team, sizeof(k.team), "%s", b.team ? b.team : r->who.team);
	k.created_at_ms = (int64_t)(util_wall_ns() / 1000000u);
	key_body_clear(&b);
	if (!e) /* cluster: into etcd first */
		e = r->d->cluster ? cluster_key_insert(r->d->cluster, &k, hash)
				  : store_key_insert(r->d->store, &k, hash);
	if (e) {
		http_reply_error(r, e == -ENOTCONN ? API_ERR_CLUSTER_UNAVAILABLE : API_ERR_INTERNAL,
				 "could not create the key");
		return;
	}
	log_kv(LOG_INFO, "key.create", "id=%s team=%s by=%s", k.id, k.team, r->who.key_id);
	json_t *o = key_json(&k);
	if (o)
		json_object_set_new(o, "key", json_string(secret));
	http_reply_json(r, 201, o);
}

void api_keys_list(struct http_req *r)
{
	struct key_row *rows;
	size_t n;
	if (store_key_list(r->d->store, r->who.admin ? NULL : r->who.team, &rows, &n) < 0) {
		http_reply_error(r, API_ERR_INTERNAL, "could not list keys");
		return;
	}
	json_t *arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		json_array_append_new(arr, key_json(&rows[i]));
	free(rows);
	http_reply_json(r, 200, arr ? json_pack("{s:o}", "keys", arr) : NULL);
}

void api_keys_delete(struct http_req *r)
{
	struct key_row k;
	int e = store_key_get(r->d->store, r->params[0], &k);
	if (e == -ENOENT || (e == 0 && !r->who.admin && strcmp(k.team, r->who.team) != 0)) {
		http_reply_error(r, API_ERR_KEY_NOT_FOUND, "no key '%.64s'", r->params[0]);
		return;
	}
	if (e < 0) {
		http_reply_error(r, API_ERR_INTERNAL, "could not read the key");
		return;
	}
	if (k.admin) {
		http_reply_error(r, API_ERR_ADMIN_KEY,
				 "admin keys cannot be deleted through the API");
		return;
	}
	/* cluster: from etcd first */
	e = r->d->cluster ? cluster_key_delete(r->d->cluster, k.id) : store_key_delete(r->d->store, k.id);
	if (e < 0 && e != -ENOENT) {
		http_reply_error(r, e == -ENOTCONN ? API_ERR_CLUSTER_UNAVAILABLE : API_ERR_INTERNAL,
				 "could not delete the key");
		return;
	}
	log_kv(LOG_INFO, "key.delete", "id=%s team=%s by=%s", k.id, k.team, r->who.key_id);
	http_reply_empty(r, 204);
}
