/*
 * fuzz_api_http_head.c - libFuzzer target for the daemon's own check of a
 * request head (src/daemon/http/http_head.c), the first parser every plain-HTTP
 * client's bytes meet.
 *
 * Checks beyond "no crash, no leak, no UB": a head taken ends inside the
 * input with an empty line; the answer for a prefix is never "taken" when
 * the whole input was refused before that point's head could end; a refusal
 * always names one of the documented errors and says why.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/http_head.h"

static void check(int ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	size_t hl = 0;
	enum api_err err = API_ERR_COUNT;
	char msg[200];
	enum http_head_result r = http_head_check(s, size, &hl, &err, msg, sizeof(msg));
	if (r == HTTP_HEAD_OK) {
		check(hl >= 2 && hl <= size && hl <= HTTP_HEAD_MAX && s[hl - 1] == '\n');
		check(s[hl - 2] == '\n' || (hl >= 3 && s[hl - 2] == '\r' && s[hl - 3] == '\n'));
		check(memchr(s, '\0', hl) == NULL);
		/* the same head alone is taken the same way */
		size_t hl2 = 0;
		check(http_head_check(s, hl, &hl2, &err, msg, sizeof(msg)) == HTTP_HEAD_OK &&
		      hl2 == hl);
	} else if (r == HTTP_HEAD_BAD) {
		check(err == API_ERR_INVALID_REQUEST || err == API_ERR_INVALID_HEADER ||
		      err == API_ERR_BODY_TOO_LARGE || err == API_ERR_HEADERS_TOO_LARGE);
		check(msg[0] != '\0' && strlen(msg) < sizeof(msg));
	} else {
		check(r == HTTP_HEAD_MORE && size < HTTP_HEAD_MAX);
	}
	/* a prefix never gets a different verdict than "more" or the same one */
	if (size > 1) {
		size_t hl3 = 0;
		enum api_err e3;
		enum http_head_result r3 = http_head_check(s, size / 2, &hl3, &e3, msg, sizeof(msg));
		check(r3 == HTTP_HEAD_MORE || r3 == r);
	}
	return 0;
}
