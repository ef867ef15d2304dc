/*
 * sandbox_json.h - a sandbox's JSON shapes, as the API answers them
 * (docs/api.md, "The sandbox object"), from its stored row: the list, the
 * create and get routes, and the cluster's answers for another node's
 * sandbox all use these.  Pure; any thread.
 */
#ifndef PANDASTACK_DAEMON_SANDBOX_JSON_H
#define PANDASTACK_DAEMON_SANDBOX_JSON_H

#include <jansson.h>

#include "daemon/store/store.h"

/* sandbox_json - the API's sandbox object for row (new reference, NULL
 * when out of memory).  Env values are never shown. */
json_t *sandbox_json(const struct sandbox_row *row);

/* sandbox_network_json - the row's network settings: its policy object (the
 * default policy's for a row without one), public_ports and notes
 * (net_policy_add_notes) (new reference; NULL when out of memory). */
json_t *sandbox_network_json(const struct sandbox_row *row);

#endif
