/*
 * base64.h - base64 (RFC 4648, section 4: the standard alphabet with
 * "=" padding, no line breaks) for MCP's image and blob content, etcd's
 * JSON gateway and the agent's check of a kernel's images, on
 * libcrypto's EVP_EncodeBlock / EVP_DecodeBlock, with the strict check
 * libcrypto leaves out (it skips whitespace and miscounts padding).
 * Pure functions; any thread.
 */
#ifndef PANDASTACK_COMMON_BASE64_H
#define PANDASTACK_COMMON_BASE64_H

#include <stddef.h>

/* base64_valid - 1 if the len bytes at s are canonical padded base64
 * (a multiple of 4 characters of the alphabet, "=" only at the end); an
 * empty string is valid.  Pure. */
int base64_valid(const char *s, size_t len);

/* base64_decoded_len - the bytes a valid base64 text of len characters
 * ending in pad "=" decodes to.  Pure. */
size_t base64_decoded_len(const char *s, size_t len);

/*
 * base64_encode - len bytes of data as base64: a NUL-terminated heap
 * string the caller frees (*outlen its length).  Returns 0, -EFBIG (over
 * what EVP_EncodeBlock takes, INT_MAX / 4 * 3 bytes), -ENOMEM.
 */
int base64_encode(const void *data, size_t len, char **out, size_t *outlen);

/*
 * base64_decode - the bytes of a valid base64 text s (len characters)
 * into a heap buffer (NUL-terminated for convenience, the caller frees;
 * *outlen the byte count).  Returns 0, -EINVAL (not valid base64), -EFBIG,
 * -ENOMEM.
 */
int base64_decode(const char *s, size_t len, char **out, size_t *outlen);

#endif
