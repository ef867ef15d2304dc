/*
 * sandbox_json.c - a sandbox's JSON shapes, as the API answers them (see
 * sandbox_json.h).
 */
#include "daemon/sandbox/sandbox_json.h"

#include <string.h>

#include "common/utf8.h"
#include "common/util.h"
#include "daemon/net/net_policy.h"

json_t *sandbox_network_json(const struct sandbox_row *row)
{
	json_t *n = json_loads(row->network_json ? row->network_json : "{}", 0, NULL);
	if (!json_is_object(n) || json_object_size(n) == 0) {
		json_decref(n);
		n = json_pack("{s:s, s:[], s:[]}", "egress", "allow", "allow_out", "deny_out");
	}
	if (n && (json_object_set_new(n, "public_ports", json_boolean(row->public_ports)) < 0 ||
		  net_policy_add_notes(n) < 0)) {
		json_decref(n);
		n = NULL;
	}
	return n;
}

json_t *sandbox_json(const struct sandbox_row *row)
{
	char created[32], expires[32], ended[32];
	util_iso_time(row->created_at_ms, created);
	util_iso_time(row->expires_at_ms, expires);
	util_iso_time(row->ended_at_ms, ended);
	json_t *meta = json_loads(row->metadata_json ? row->metadata_json : "{}", 0, NULL);
	if (!json_is_object(meta)) {
		json_decref(meta);
		meta = json_object();
	}
	int running = !strcmp(row->status, "running") || !strcmp(row->status, "paused") ||
		      !strcmp(row->status, "lost");
	json_t *net = sandbox_network_json(row);
	json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "id",
			 row->id, "template", row->template_name, "status", row->status, "reason",
			 row->reason[0] ? utf8_json_lossy(row->reason, strlen(row->reason))
					: json_null(),
			 "created_at", created, "expires_at", expires, "ended_at",
			 running ? json_null() : json_string(ended), "vcpus",
			 row->vcpus ? json_integer(row->vcpus) : json_null(), "memory_mib",
			 row->memory_mib ? json_integer(row->memory_mib) : json_null(),
			 "metadata", meta ? meta : json_object(), "network", net ? net : json_object());
	if (o)
		json_object_set_new(o, "on_timeout",
				    json_string(strcmp(row->on_timeout, "pause") ? "stop" : "pause"));
	return o;
}
