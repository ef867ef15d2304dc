/*
 * utf8.h - the one UTF-8 decoder: validating untrusted bytes (guest output,
 * guest file names, query strings, kernel messages), finding where a stream
 * may be cut, and turning them into valid UTF-8 for JSON.  Well-formed means
 * Unicode 15, 3.9, table 3-7: no bad lead bytes, overlong forms, surrogates
 * (U+D800..U+DFFF), code points above U+10FFFF or cut sequences.  Invalid
 * input becomes U+FFFD, one per maximal invalid subpart (Unicode 15, 3.9
 * "U+FFFD substitution of maximal subparts").  NUL bytes are valid UTF-8 and
 * are kept.
 *
 * Pure functions on caller buffers; any thread.
 */
#ifndef PANDASTACK_UTF8_H
#define PANDASTACK_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/*
 * utf8_seq_len - classify the sequence starting at s[0] (n >= 1 bytes
 * available): its length 1..4 if it is well-formed; the negated length
 * (-1..-3) of the maximal invalid subpart to replace if it is not; 0 if the
 * n bytes end while the sequence is still well-formed so far (a cut: more
 * input may complete it).
 */
int utf8_seq_len(const void *s, size_t n);

/*
 * utf8_is_control - 1 if the well-formed sequence of l bytes at s (l from
 * utf8_seq_len) is a character that changes how text around it is shown
 * rather than one to show: a C0 control, DEL, a C1 control (U+0080-U+009F),
 * the line and paragraph separators (U+2028, U+2029: a line break to many
 * readers of JSON and text), or a bidirectional formatting character
 * (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069: "Trojan Source",
 * CVE-2021-42574).  Names
 * and values that people read are refused or escaped when they hold one.
 * Returns 0 otherwise.
 */
int utf8_is_control(const void *s, size_t l);

/*
 * utf8_printable - 1 if the len bytes at s are valid UTF-8 holding no
 * character utf8_is_control names, else 0.
 */
int utf8_printable(const void *s, size_t len);

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
 * utf8_cut - the largest n <= max (and <= len) such that cutting the valid
 * UTF-8 text s[0..len) after n bytes splits no character: where a text may be
 * cut or split to fit max bytes.  Returns n (0 when max is 0).  On invalid
 * input it only steps back over continuation bytes (10xxxxxx).
 */
size_t utf8_cut(const void *s, size_t len, size_t max);

/*
 * utf8_json_lossy - a new JSON string (new reference, jansson) holding len
 * bytes of buf sanitized as above.  Returns NULL only when out of memory.
 */
json_t *utf8_json_lossy(const void *buf, size_t len);

#endif
