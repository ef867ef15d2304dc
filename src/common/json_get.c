/*
 * json_get.c - typed fields of untrusted JSON objects (see json_get.h).
 */
#include "json_get.h"

#include <errno.h>
#include <string.h>

int json_get_str(json_t *o, const char *key, char *out, size_t cap)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_string(v))
		return -EINVAL;
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (n >= cap || strlen(s) != n)
		return -EINVAL;
	memcpy(out, s, n + 1);
	return 0;
}
