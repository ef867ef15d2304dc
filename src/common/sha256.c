/*
 * sha256.c - SHA-256 as hex on libcrypto's EVP interface (see sha256.h).
 */
#include "sha256.h"

#include "util.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

int sha256_init(struct sha256 *s)
{
	s->failed = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (ctx && !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(ctx);
		ctx = NULL;
	}
	s->ctx = ctx;
	return ctx ? 0 : -ENOMEM;
}

void sha256_update(struct sha256 *s, const void *p, size_t n)
{
	if (!s->failed && n > 0 && !EVP_DigestUpdate(s->ctx, p, n))
		s->failed = 1;
}

int sha256_final_hex(struct sha256 *s, char out[SHA256_HEX_LEN])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	int ok = !s->failed && EVP_DigestFinal_ex(s->ctx, md, &mdlen) && mdlen == 32;
	sha256_drop(s);
	if (!ok)
		return -EIO;
	util_hex(md, 32, out);
	return 0;
}

void sha256_drop(struct sha256 *s)
{
	EVP_MD_CTX_free(s->ctx);
	s->ctx = NULL;
}

int sha256_hex(const void *p, size_t n, char out[SHA256_HEX_LEN])
{
	struct sha256 s;
	int r = sha256_init(&s);
	if (r < 0)
		return r;
	sha256_update(&s, p, n);
	return sha256_final_hex(&s, out);
}

int sha256_hmac_hex(const void *key, size_t keylen, const void *p, size_t n,
		    char out[SHA256_HEX_LEN])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	if (keylen > 0x7fffffff ||
	    !HMAC(EVP_sha256(), key, (int)keylen, p, n, md, &mdlen) || mdlen != 32)
		return -EIO;
	util_hex(md, 32, out);
	return 0;
}

int sha256_hex_equal(const char *a, const char *b)
{
	return CRYPTO_memcmp(a, b, 64) == 0;
}
