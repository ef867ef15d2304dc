/*
 * jupyter_map.h - kernel output (Jupyter MIME bundles: mime type -> value,
 * application/json an object, image/png and image/jpeg base64 without a
 * data: prefix) -> the product's result shapes (docs: the code-context
 * events), field for field the way E2B's Result maps them.
 *
 *   {"type": "result", "is_main_result": bool, "text", "html", "markdown",
 *    "svg", "png", "jpeg", "json", "latex", "javascript",
 *    "extra": {other mime: value}}       only the fields present
 *   error: {"name", "value", "traceback"}   traceback one string, no ANSI
 *
 * text is text/plain with one pair of surrounding single quotes removed, as
 * E2B's Result does (so a str 'abc' reads abc; 42 stays 42).  png and jpeg
 * are the base64 as sent with whitespace removed.  json is the
 * application/json value as sent (an object per spec 5.0).  Mimes not named
 * above, and named ones whose value has the wrong type, go to extra.
 *
 * Pure functions on jansson values; results are new references that share
 * nothing with the input.  Threads: any.
 */
#ifndef PANDASTACK_AGENT_JUPYTER_MAP_H
#define PANDASTACK_AGENT_JUPYTER_MAP_H

#include <stddef.h>

#include <jansson.h>

/*
 * jupyter_map_result - the result event for a MIME bundle (the "data" of
 * execute_result or display_data).  Returns a new reference, or NULL if
 * data is not an object or memory ran out.
 */
json_t *jupyter_map_result(const json_t *data, int is_main_result);

/*
 * jupyter_map_error - {"name", "value", "traceback"} from the content of an
 * error message or an execute_reply with status "error" (ename, evalue,
 * traceback list joined with "\n"), ANSI escapes removed.  Missing fields
 * become "".  Returns a new reference, or NULL when memory ran out.
 */
json_t *jupyter_map_error(const json_t *content);

/*
 * jupyter_make_error - {"name", "value", "traceback"} from C strings (NULL
 * is "").  Returns a new reference or NULL (memory).
 */
json_t *jupyter_make_error(const char *name, const char *value, const char *traceback);

/*
 * jupyter_strip_ansi - copy s (len bytes) without ANSI escape sequences
 * (CSI, OSC, two-byte ESC sequences) into a new NUL-terminated buffer
 * (caller frees); *outlen without the NUL.  NULL when memory ran out.
 */
char *jupyter_strip_ansi(const char *s, size_t len, size_t *outlen);

/*
 * jupyter_text_unquote - E2B's rule for text/plain: if s (len bytes) is at
 * least two bytes, starts and ends with a single quote, the text is what is
 * between them.  Sets *off and returns the new length.
 */
size_t jupyter_text_unquote(const char *s, size_t len, size_t *off);

#endif
