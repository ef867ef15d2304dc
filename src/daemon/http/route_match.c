/*
 * route_match.c - path pattern matching (see route.h).
 */
#include "daemon/http/route.h"

#include <string.h>

int route_match_pattern(const char *pattern, const char *path,
			char params[][ROUTE_PARAM_MAX], int maxparams)
{
	const char *p = pattern, *s = path;
	int np = 0;
	while (*p && *s) {
		if (*p != '/' || *s != '/')
			return 0;
		p++;
		s++;
		size_t plen = strcspn(p, "/"), slen = strcspn(s, "/");
		if (plen >= 2 && p[0] == '{' && p[plen - 1] == '}') {
			if (slen == 0 || slen >= ROUTE_PARAM_MAX || np >= maxparams)
				return 0;
			memcpy(params[np], s, slen);
			params[np][slen] = '\0';
			np++;
		} else if (plen != slen || memcmp(p, s, plen) != 0) {
			return 0;
		}
		p += plen;
		s += slen;
	}
	return *p == '\0' && *s == '\0';
}

const struct route *route_find(const struct route *table, size_t n, const char *method,
			       const char *path, char params[][ROUTE_PARAM_MAX],
			       int *path_known)
{
	char scratch[ROUTE_MAX_PARAMS][ROUTE_PARAM_MAX];
	*path_known = 0;
	for (size_t i = 0; i < n; i++) {
		if (!route_match_pattern(table[i].pattern, path, scratch, ROUTE_MAX_PARAMS))
			continue;
		if (strcmp(table[i].method, method) != 0) {
			*path_known = 1;
			continue;
		}
		memcpy(params, scratch, sizeof(scratch));
		return &table[i];
	}
	return NULL;
}
