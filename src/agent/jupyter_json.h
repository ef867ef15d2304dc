/*
 * jupyter_json.h - tolerant JSON loading for what kernels send.
 *
 * ipykernel serialises with ensure_ascii=False and encodes with
 * errors="surrogateescape", so a frame may hold invalid UTF-8; other kernels
 * send lone UTF-16 surrogates as \uXXXX escapes.  jansson rejects both.  The
 * functions here repair instead of rejecting (jupyter-protocol notes, 1.2):
 * every ill-formed UTF-8 sequence (maximal subpart, Unicode 15 ch. 3.9)
 * becomes U+FFFD, every unpaired surrogate escape becomes \ufffd, raw control
 * bytes inside strings become \u00XX escapes, and \u0000 is kept (strings may
 * then hold NULs: use json_string_length).  Valid JSON passes unchanged.
 *
 * Pure functions: no I/O, no global state.  Threads: any.
 */
#ifndef PANDASTACK_AGENT_JUPYTER_JSON_H
#define PANDASTACK_AGENT_JUPYTER_JSON_H

#include <stddef.h>

#include <jansson.h>

/* Largest document jupyter_json_load accepts, bytes (before repair). */
#define JUPYTER_JSON_MAX (64u * 1024u * 1024u)

/*
 * jupyter_json_repair - copy len bytes of buf into a new buffer with the
 * repairs above; *out (caller frees, NUL-terminated) and *outlen (without
 * the NUL).  The output is at most 6 * len + 1 bytes (a raw control byte
 * becomes six).
 * Returns 0, -EFBIG if len > JUPYTER_JSON_MAX, -ENOMEM.
 */
int jupyter_json_repair(const void *buf, size_t len, char **out, size_t *outlen);

/*
 * jupyter_utf8_repair - copy len bytes of buf into a new NUL-terminated
 * buffer (*out, caller frees; *outlen without the NUL) with every ill-formed
 * UTF-8 sequence replaced by U+FFFD; nothing else changes (NULs stay).
 * Returns 0, -EFBIG if len > JUPYTER_JSON_MAX, -ENOMEM.
 */
int jupyter_utf8_repair(const void *buf, size_t len, char **out, size_t *outlen);

/*
 * jupyter_json_load - repair, then parse one JSON value of any type from
 * len bytes.  Returns a new reference, or NULL if the bytes are not JSON
 * even after repair, too large, or memory ran out.
 */
json_t *jupyter_json_load(const void *buf, size_t len);

/*
 * jupyter_utf8_cut - the largest n <= max (and <= len) such that cutting the
 * valid UTF-8 text s[0..len) after n bytes splits no character.  Used to cut
 * or split text.  Returns n (0 when max is 0).
 */
size_t jupyter_utf8_cut(const char *s, size_t len, size_t max);

#endif
