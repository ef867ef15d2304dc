/*
 * utf8.h - turning untrusted bytes (guest output, guest file names, query
 * strings) into valid UTF-8 for JSON.  Invalid sequences (bad lead bytes,
 * overlong forms, surrogates, code points above U+10FFFF, cut sequences)
 * become U+FFFD, one per maximal invalid subpart (Unicode 15, 3.9 "U+FFFD
 * substitution of maximal subparts").
 *
 * Pure functions on caller buffers; any thread.
 */
#ifndef PANDASTACK_DAEMON_UTF8_H
#define PANDASTACK_DAEMON_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* utf8_valid - 1 if the len bytes at s are entirely valid UTF-8, else 0. */
int utf8_valid(const void *s, size_t len);

/*
 * utf8_incomplete_tail - how many bytes (0..3) at the end of buf start a
 * sequence that is valid so far but cut short: a streaming caller keeps them
 * and prepends them to the next chunk so a character split across chunks is
 * not replaced.  Returns 0 when the tail is complete or already invalid.
 */
size_t utf8_incomplete_tail(const void *buf, size_t len);

/*
 * utf8_sanitize - copy len bytes of in into a new NUL-terminated buffer
 * (*out, owned by the caller, free()) with invalid sequences replaced by
 * U+FFFD (EF BF BD).  *outlen gets its length without the NUL.  The output
 * is at most 3 * len + 1 bytes.  Returns 0 or -ENOMEM (-EOVERFLOW if len is
 * too large to triple).
 */
int utf8_sanitize(const void *in, size_t len, char **out, size_t *outlen);

/*
 * json_string_lossy - a new JSON string (new reference) holding len bytes of
 * buf sanitized as above.  Returns NULL only when out of memory.
 */
json_t *json_string_lossy(const void *buf, size_t len);

#endif
