/*
 * log.c - key=value event lines on stderr (see log.h).
 */
#include "log.h"
#include "utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static int min_level = -1;

void log_set_level(enum log_level lvl)
{
	min_level = (int)lvl;
}

static int level_now(void)
{
	if (min_level < 0) {
		const char *e = getenv("PANDASTACK_LOG");
		min_level = (e && strcasecmp(e, "debug") == 0) ? LOG_DEBUG : LOG_INFO;
	}
	return min_level;
}

void log_kv(enum log_level lvl, const char *event, const char *fmt, ...)
{
	static const char *const names[] = {"debug", "info", "warn", "error"};
	if ((int)lvl < level_now())
		return;
	char line[4096];
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	int n = snprintf(line, sizeof(line),
			 "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s event=%s",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
			 tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
			 names[lvl <= LOG_ERROR ? lvl : LOG_ERROR], event);
	if (n < 0)
		return;
	if (fmt && *fmt && (size_t)n < sizeof(line) - 2) {
		line[n++] = ' ';
		va_list ap;
		va_start(ap, fmt);
		int m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
		va_end(ap);
		if (m > 0)
			n += m;
	}
	if ((size_t)n >= sizeof(line) - 1)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	ssize_t w = write(STDERR_FILENO, line, (size_t)n);
	(void)w;
}

const char *log_quote(const char *s, char *out, size_t outlen)
{
	size_t o = 0;
	out[o++] = '"';
	size_t left = s ? strlen(s) : 0;
	while (left && o + 4 < outlen) {
		unsigned char c = (unsigned char)*s;
		if (c >= 0x80) {
			/* a well-formed sequence is copied whole (if it fits), and
			 * anything else is one '?', so a log line is always UTF-8 */
			int l = utf8_seq_len(s, left);
			if (l > 0 && o + (size_t)l + 2 < outlen) {
				memcpy(out + o, s, (size_t)l);
				o += (size_t)l;
				s += l;
				left -= (size_t)l;
				continue;
			}
			if (l > 0)
				break; /* no room for it */
			size_t bad = l < 0 ? (size_t)-l : left; /* 0: cut at the end */
			out[o++] = '?';
			s += bad;
			left -= bad;
			continue;
		}
		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			out[o++] = '?';
		} else {
			out[o++] = (char)c;
		}
		s++;
		left--;
	}
	out[o++] = '"';
	out[o] = '\0';
	return out;
}
