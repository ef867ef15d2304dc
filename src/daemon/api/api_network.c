/*
 * api_network.c - GET and PUT /v1/sandboxes/{id}/network: a sandbox's
 * network settings, its egress policy and whether its exposed ports are
 * public (docs/network.md).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/api.h"
#include "daemon/daemon.h"
#include "daemon/http/http_reply.h"
#include "daemon/net/net.h"
#include "daemon/sandbox/sandbox.h"
#include "daemon/sandbox/sandbox_json.h"
#include "daemon/store/store.h"

/* PUTs one at a time: the stored and the enforced policy are the same one. */
static pthread_mutex_t put_lock = PTHREAD_MUTEX_INITIALIZER;

void api_network_get(struct http_req *r)
{
	struct sandbox_row row;
	if (api_sandbox_row(r, &row) < 0)
		return;
	json_t *o = sandbox_network_json(&row);
	sandbox_row_clear(&row);
	http_reply_json(r, 200, o);
}

/* The PUT's work, one at a time (put_lock), so that the stored policy is
 * the one in force: the body's keys over the stored policy. */
static void put_locked(struct http_req *r, struct sbx *sb)
{
	struct sandbox_row row;
	if (store_sandbox_get(r->d->store, sbx_id(sb), &row) < 0) {
		http_reply_error(r, API_ERR_INTERNAL, "could not read the sandbox");
		return;
	}
	json_t *current = json_loads(row.network_json ? row.network_json : "{}", 0, NULL);
	sandbox_row_clear(&row);
	struct net_policy *p;
	struct body_error be;
	int public_ports;
	int e = body_parse_network(r->body, r->body_len, current, &p, &public_ports, &be);
	json_decref(current);
	if (e < 0) {
		api_reply_body_error(r, &be);
		return;
	}
	json_t *o = net_policy_json(p);
	char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	e = text ? store_sandbox_set_network(r->d->store, sbx_id(sb), text) : -ENOMEM;
	free(text);
	if (e == 0)
		e = net_set_policy(r->d->net, sbx_id(sb), p);
	else
		net_policy_free(p);
	if (e == 0 && public_ports >= 0)
		e = sbx_set_public_ports(sb, public_ports);
	if (e == 0 && (json_object_set_new(o, "public_ports", json_boolean(sbx_public_ports(sb))) < 0 ||
		       net_policy_add_notes(o) < 0))
		e = -ENOMEM;
	if (e == 0) {
		http_reply_json(r, 200, o);
		return;
	}
	json_decref(o);
	if (e == -ENOENT || e == -ESRCH || sbx_ending(sb))
		http_reply_error(r, API_ERR_SANDBOX_NOT_RUNNING, "sandbox %s stopped", sbx_id(sb));
	else
		http_reply_error(r, API_ERR_INTERNAL, "could not update the sandbox");
}

void api_network_put(struct http_req *r)
{
	struct sbx *sb = api_acquire(r);
	if (!sb)
		return;
	pthread_mutex_lock(&put_lock);
	put_locked(r, sb);
	pthread_mutex_unlock(&put_lock);
	sbx_release(sb);
}
