/*
 * base64.c - strict base64 on libcrypto (see base64.h).
 */
#include "common/base64.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include <openssl/evp.h>

static int b64_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '+' || c == '/';
}

int base64_valid(const char *s, size_t len)
{
	if (len % 4)
		return 0;
	size_t pad = 0;
	while (pad < 2 && pad < len && s[len - 1 - pad] == '=')
		pad++;
	for (size_t i = 0; i < len - pad; i++)
		if (!b64_char((unsigned char)s[i]))
			return 0;
	return 1;
}

size_t base64_decoded_len(const char *s, size_t len)
{
	size_t pad = 0;
	while (pad < 2 && pad < len && s[len - 1 - pad] == '=')
		pad++;
	return len / 4 * 3 - pad;
}

int base64_encode(const void *data, size_t len, char **out, size_t *outlen)
{
	if (len > (size_t)INT_MAX / 4 * 3)
		return -EFBIG;
	size_t n = (len + 2) / 3 * 4;
	char *s = malloc(n + 1);
	if (!s)
		return -ENOMEM;
	int w = EVP_EncodeBlock((unsigned char *)s, data, (int)len);
	s[w < 0 ? 0 : w] = '\0';
	*out = s;
	*outlen = w < 0 ? 0 : (size_t)w;
	return 0;
}

int base64_decode(const char *s, size_t len, char **out, size_t *outlen)
{
	if (!base64_valid(s, len))
		return -EINVAL;
	if (len > (size_t)INT_MAX)
		return -EFBIG;
	char *p = malloc(len / 4 * 3 + 1);
	if (!p)
		return -ENOMEM;
	int n = len ? EVP_DecodeBlock((unsigned char *)p, (const unsigned char *)s, (int)len) : 0;
	if (n < 0) {
		free(p);
		return -EINVAL;
	}
	/* EVP_DecodeBlock counts the padding's zero bytes */
	size_t real = base64_decoded_len(s, len);
	p[real] = '\0';
	*out = p;
	*outlen = real;
	return 0;
}
