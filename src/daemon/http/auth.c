/*
 * auth.c - API keys (see auth.h).
 */
#include "daemon/http/auth.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"

int auth_hash(const char *secret, char out[AUTH_HASH_HEX_LEN + 1])
{
	return sha256_hex(secret, strlen(secret), out);
}

int auth_make_key(char secret[AUTH_KEY_LEN + 1], char hash[AUTH_HASH_HEX_LEN + 1],
		  char id[STORE_ID_MAX])
{
	unsigned char raw[24], rid[8];
	int r = util_random(raw, sizeof(raw));
	if (!r)
		r = util_random(rid, sizeof(rid));
	if (r)
		return r;
	memcpy(secret, AUTH_KEY_PREFIX, 4);
	util_hex(raw, sizeof(raw), secret + 4);
	memcpy(id, "key_", 4);
	util_hex(rid, sizeof(rid), id + 4);
	return auth_hash(secret, hash);
}

int auth_make_token(char out[AUTH_TOKEN_LEN + 1])
{
	unsigned char raw[24];
	int r = util_random(raw, sizeof(raw));
	if (r)
		return r;
	memcpy(out, AUTH_TOKEN_PREFIX, 4);
	util_hex(raw, sizeof(raw), out + 4);
	return 0;
}

int auth_token_equal(const char *stored, const char *given)
{
	if (!stored || !given || strlen(stored) != AUTH_TOKEN_LEN ||
	    strlen(given) != AUTH_TOKEN_LEN)
		return 0;
	return CRYPTO_memcmp(stored, given, AUTH_TOKEN_LEN) == 0;
}

/* A key is the prefix and exactly 48 lowercase hex digits. */
static int well_formed(const char *k, size_t n)
{
	if (n != AUTH_KEY_LEN || memcmp(k, AUTH_KEY_PREFIX, 4) != 0)
		return 0;
	for (size_t i = 4; i < n; i++)
		if (!((k[i] >= '0' && k[i] <= '9') || (k[i] >= 'a' && k[i] <= 'f')))
			return 0;
	return 1;
}

int auth_check(struct store *s, const char *authorization, struct auth_ident *who)
{
	memset(who, 0, sizeof(*who));
	if (!authorization)
		return -EACCES;
	const char *p = authorization;
	if (strncasecmp(p, "Bearer", 6) != 0)
		return -EACCES;
	p += 6;
	if (*p != ' ' && *p != '\t')
		return -EACCES;
	while (*p == ' ' || *p == '\t')
		p++;
	size_t n = strcspn(p, " \t");
	if (p[n] != '\0' && p[n + strspn(p + n, " \t")] != '\0')
		return -EACCES; /* something after the key */
	if (!well_formed(p, n))
		return -EACCES;
	char key[AUTH_KEY_LEN + 1], hash[AUTH_HASH_HEX_LEN + 1];
	memcpy(key, p, n);
	key[n] = '\0';
	if (auth_hash(key, hash) < 0)
		return -EIO;
	struct key_row row;
	int r = store_key_by_hash(s, hash, &row);
	if (r == -ENOENT)
		return -EACCES;
	if (r < 0)
		return r;
	int64_t now = (int64_t)(util_wall_ns() / 1000000u);
	if (now - row.last_used_at_ms >= AUTH_TOUCH_MS && store_key_touch(s, row.id, now) < 0)
		log_kv(LOG_WARN, "auth.touch_failed", "id=%s", row.id);
	snprintf(who->key_id, sizeof(who->key_id), "%s", row.id);
	snprintf(who->team, sizeof(who->team), "%s", row.team);
	who->admin = row.admin;
	return 0;
}

int auth_bootstrap_admin(struct store *s, const char *data_dir, int *created)
{
	*created = 0;
	int n = 0;
	int r = store_key_count_admin(s, &n);
	if (r < 0)
		return r;
	if (n > 0)
		return 0;
	char secret[AUTH_KEY_LEN + 1], hash[AUTH_HASH_HEX_LEN + 1];
	struct key_row k = {0};
	r = auth_make_key(secret, hash, k.id);
	if (r < 0)
		return r;
	snprintf(k.name, sizeof(k.name), "admin");
	snprintf(k.team, sizeof(k.team), AUTH_ADMIN_TEAM);
	k.admin = 1;
	k.created_at_ms = (int64_t)(util_wall_ns() / 1000000u);
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/admin.key", data_dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	char line[AUTH_KEY_LEN + 2];
	snprintf(line, sizeof(line), "%s\n", secret);
	/* The file first: a key that was stored but never written anywhere
	 * would lock the operator out. */
	r = util_write_file(path, line, strlen(line), 0600);
	if (r < 0)
		return r;
	r = store_key_insert(s, &k, hash);
	if (r < 0)
		return r;
	/* Never on stdout or in the log: a service manager keeps those. */
	printf("pandastackd: admin API key written to %s (mode 0600)\n", path);
	fflush(stdout);
	log_kv(LOG_INFO, "auth.admin_key_created", "id=%s file=%s", k.id, path);
	*created = 1;
	return 0;
}
