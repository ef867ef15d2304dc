/*
 * pip_index.h - the package index a daemon gives every sandbox's pip
 * (`pandastackd --pip-index-url`), checked the same way on both sides: by
 * the daemon when it reads its settings, and by the guest agent before it
 * writes the URL into the guest's pip configuration (an INI file, where a
 * line break would add settings of the sender's choosing).
 *
 * Accepted: "http://" or "https://" (lower case), then an authority with a
 * non-empty host (a name of [A-Za-z0-9.-], or an IPv6 literal in brackets)
 * and an optional :port (1..65535), optionally user info before an '@';
 * then anything.  The whole URL is 1 to PIP_INDEX_URL_MAX bytes of
 * printable ASCII without spaces (0x21..0x7e): no control characters, no
 * line breaks, no NUL; other characters must be percent-encoded, as in any
 * URL (RFC 3986).
 *
 * Pure functions; any thread.
 */
#ifndef PANDASTACK_PIP_INDEX_H
#define PANDASTACK_PIP_INDEX_H

#include <stddef.h>

/* Longest index URL, bytes without the NUL. */
#define PIP_INDEX_URL_MAX 2048u

/*
 * pip_index_check - check the NUL-terminated url as above.  When host is
 * not NULL (hostlen bytes, at least PIP_INDEX_URL_MAX + 1 always suffice)
 * it receives the URL's host[:port] without user info: what pip's
 * `trusted-host` names.  *is_http (if not NULL) is 1 for http://, 0 for
 * https://.  Returns 0, -E2BIG (longer than PIP_INDEX_URL_MAX), -EINVAL
 * (anything else wrong; *why, if not NULL, points to a static one-line
 * reason), -ENOSPC (host too small for the host[:port]).
 */
int pip_index_check(const char *url, char *host, size_t hostlen, int *is_http,
		    const char **why);

#endif
