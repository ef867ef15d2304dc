/*
 * body_caps.c - the rule of names and the form of a sandbox id (see
 * body_caps.h).
 */
#include "common/body_caps.h"

#include <errno.h>
#include <string.h>

int body_check_name(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > BODY_NAME_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
			return -EINVAL;
	}
	return 0;
}


int sandbox_id_valid(const char *s)
{
	if (!s || strncmp(s, "sbx_", 4) != 0 || strlen(s) != 4 + SBX_ID_HEX)
		return 0;
	for (const char *p = s + 4; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return 0;
	return 1;
}
