/*
 * auth.h - API keys: making them, hashing them, checking a request's
 * "Authorization: Bearer <key>" header, and the admin key of a new data dir.
 *
 * A key is "pds_" followed by 48 lowercase hex digits (24 random bytes from
 * getrandom).  Only SHA-256(key) (libcrypto) is stored; the secret is shown
 * once, when it is made.  Key ids are "key_" + 16 hex digits and are not
 * secret.  Every key belongs to a team; admin keys may name other teams and
 * build templates.
 *
 * Threads: any (the store serialises its own access).
 */
#ifndef PANDASTACK_DAEMON_AUTH_H
#define PANDASTACK_DAEMON_AUTH_H

#include <stddef.h>

#include "daemon/store/store.h"

#define AUTH_KEY_PREFIX "pds_"
#define AUTH_KEY_LEN (4 + 48)     /* bytes, without the NUL */
#define AUTH_HASH_HEX_LEN 64      /* SHA-256 in hex, without the NUL */
#define AUTH_ADMIN_TEAM "admin"   /* team of the first admin key */
/* A key's last_used_at is written at most once per this many ms, so that a
 * busy key does not turn every request into a database write. */
#define AUTH_TOUCH_MS 60000

/* A sandbox's access token (its exposed ports, docs/network.md): "pdt_"
 * and 48 lowercase hex digits (24 random bytes).  Kept in the sandbox's
 * row, shown to its team. */
#define AUTH_TOKEN_PREFIX "pdt_"
#define AUTH_TOKEN_LEN (4 + 48)   /* bytes, without the NUL */

/* Who a request is: filled by auth_check. */
struct auth_ident {
	char key_id[STORE_ID_MAX];
	char team[STORE_NAME_MAX];
	int admin;
};

/*
 * auth_hash - SHA-256 of the NUL-terminated secret as 64 hex digits + NUL in
 * out.  Returns 0 or -EIO (libcrypto failed).
 */
int auth_hash(const char *secret, char out[AUTH_HASH_HEX_LEN + 1]);

/*
 * auth_make_key - a new key: secret (AUTH_KEY_LEN + 1 bytes) and its hash,
 * and a new id in id (STORE_ID_MAX bytes).  Returns 0 or -errno.
 */
int auth_make_key(char secret[AUTH_KEY_LEN + 1], char hash[AUTH_HASH_HEX_LEN + 1],
		  char id[STORE_ID_MAX]);

/*
 * auth_check - check an Authorization header value (may be NULL): it must
 * be "Bearer " + a well-formed key whose hash is stored.  Returns 0 with
 * *who filled, -EACCES (missing, malformed or unknown key: 401), or -EIO
 * (the store failed: 500).  A key accepted more than AUTH_TOUCH_MS after
 * its recorded last use gets last_used_at set to now (a failure to record
 * it is logged, not returned).
 */
int auth_check(struct store *s, const char *authorization, struct auth_ident *who);

/* auth_make_token - a new access token into out.  Returns 0 or -errno
 * (no randomness). */
int auth_make_token(char out[AUTH_TOKEN_LEN + 1]);

/*
 * auth_token_equal - 1 if given (may be NULL) is the token stored (may be
 * NULL or "": no token, nothing matches), compared in time that does not
 * depend on where they differ; else 0.
 */
int auth_token_equal(const char *stored, const char *given);

/*
 * auth_bootstrap_admin - on a data dir without an admin key, make one,
 * store it, write the secret to <data_dir>/admin.key (mode 0600) and print
 * it once to stdout.  Does nothing when an admin key exists.
 * Returns 0 (*created 1 if made) or -errno.
 */
int auth_bootstrap_admin(struct store *s, const char *data_dir, int *created);

#endif
