/*
 * log.h - one key=value line per event on stderr:
 *   ts=2026-11-30T02:18:52.123Z level=info event=sandbox.create id=sbx_1 ms=12
 * The caller's fmt supplies the key=value pairs after the event name; quote
 * values that may hold spaces with log_quote.  Never log guest data at info.
 * Threads: any; each line is written with one write(2) so lines never mix.
 */
#ifndef PANDASTACK_LOG_H
#define PANDASTACK_LOG_H

#include <stddef.h>

enum log_level { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3 };

/* log_set_level - drop lines below lvl (default LOG_INFO; PANDASTACK_LOG=debug
 * in the environment lowers it at the first call). */
void log_set_level(enum log_level lvl);

/* log_kv - write one line: ts, level, event, then fmt's key=value pairs.
 * Lines are capped at 4 KiB. */
void log_kv(enum log_level lvl, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* log_quote - s as a double-quoted value: " and \ escaped with \; each
 * control character, and each byte sequence that is not well-formed UTF-8,
 * written as a question mark, so that a log line is always UTF-8 text and
 * a value never starts a new line of its own; cut to fit out (outlen bytes, >= 3)
 * without splitting a character.  Returns out. */
const char *log_quote(const char *s, char *out, size_t outlen);

#endif
