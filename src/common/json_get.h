/*
 * json_get.h - reading typed fields out of untrusted JSON objects (jansson):
 * the records the engine and the cluster read back from files and peers.
 * Pure functions on caller buffers; any thread.
 */
#ifndef PANDASTACK_COMMON_JSON_GET_H
#define PANDASTACK_COMMON_JSON_GET_H

#include <stddef.h>

#include <jansson.h>

/*
 * json_get_str - copy the string field key of o, NUL included, into out
 * (cap bytes).  0; -EINVAL when o has no such field, it is not a string,
 * it holds a NUL byte or it does not fit in cap bytes (out is then
 * untouched).
 */
int json_get_str(json_t *o, const char *key, char *out, size_t cap);

#endif
