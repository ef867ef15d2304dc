/*
 * sha256.h - SHA-256 (FIPS 180-4) on libcrypto's EVP digests, as lowercase
 * hex: the one place that hashes templates, their files, manifests and API
 * keys, and that computes HMAC-SHA256 (RFC 2104) for the cluster's
 * signatures.  A struct sha256 belongs to one thread at a time; the functions
 * hold no other state, so any thread may call them.
 */
#ifndef PANDASTACK_COMMON_SHA256_H
#define PANDASTACK_COMMON_SHA256_H

#include <stddef.h>

/* The hex form: 64 digits and a NUL. */
#define SHA256_HEX_LEN 65

/* A digest in progress.  failed records an update libcrypto refused, so a
 * caller may feed several parts and check once, at sha256_final_hex. */
struct sha256 {
	void *ctx; /* EVP_MD_CTX *, owned */
	int failed;
};

/* sha256_init - start a digest.  0 or -ENOMEM (then s holds nothing). */
int sha256_init(struct sha256 *s);

/* sha256_update - feed n bytes at p (n may be 0).  A failure is recorded
 * in s and returned by sha256_final_hex. */
void sha256_update(struct sha256 *s, const void *p, size_t n);

/* sha256_final_hex - end the digest into out (SHA256_HEX_LEN bytes) and
 * release s (also on failure).  0, or -EIO when an update or the end
 * failed (out is then untouched). */
int sha256_final_hex(struct sha256 *s, char out[SHA256_HEX_LEN]);

/* sha256_drop - release a digest that will not be ended.  s may be
 * released already. */
void sha256_drop(struct sha256 *s);

/* sha256_hex - the digest of the n bytes at p into out.  0, -ENOMEM, -EIO. */
int sha256_hex(const void *p, size_t n, char out[SHA256_HEX_LEN]);

/*
 * sha256_hmac_hex - HMAC-SHA256 with keylen bytes of key over the n bytes
 * at p, as hex into out (SHA256_HEX_LEN bytes).  0 or -EIO (libcrypto
 * failed; out untouched).
 */
int sha256_hmac_hex(const void *key, size_t keylen, const void *p, size_t n,
		    char out[SHA256_HEX_LEN]);

/*
 * sha256_hex_equal - 1 when a and b (each 64 hex digits, NUL-terminated or
 * not) are the same digest, compared in time that does not depend on where
 * they differ (CRYPTO_memcmp); else 0.
 */
int sha256_hex_equal(const char *a, const char *b);

#endif
