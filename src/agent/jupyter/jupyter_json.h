/*
 * jupyter_json.h - tolerant JSON loading for what kernels send.
 *
 * ipykernel serialises with ensure_ascii=False and encodes with
 * errors="surrogateescape", so a frame may hold invalid UTF-8; other kernels
 * send lone UTF-16 surrogates as \uXXXX escapes.  jansson rejects both.  The
 * functions here repair instead of rejecting, so one odd byte in a kernel's
 * output never loses the whole message: every ill-formed UTF-8 sequence
 * (maximal subpart, Unicode 15 ch. 3.9, decoded by common/utf8.h) becomes
 * U+FFFD, every unpaired surrogate escape becomes \ufffd, raw control
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
 * jupyter_json_load - repair, then parse one JSON value of any type from
 * len bytes.  Returns a new reference, or NULL if the bytes are not JSON
 * even after repair, too large, or memory ran out.
 */
json_t *jupyter_json_load(const void *buf, size_t len);

#endif
