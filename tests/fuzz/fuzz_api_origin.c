/*
 * fuzz_api_origin.c - libFuzzer target for the Origin header's parser
 * (src/daemon/http/origin.c), which POST /mcp runs on every browser's request,
 * and for lists of allowed origins.  Beyond "no crash, no leak, no UB": a
 * normal form is short, printable, starts with its scheme, normalises to
 * itself, and is found in a list made of itself.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/origin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char in[2 * ORIGIN_MAX], norm[ORIGIN_MAX], again[ORIGIN_MAX], why[160];
	size_t n = size < sizeof(in) - 1 ? size : sizeof(in) - 1;
	memcpy(in, data, n);
	in[n] = '\0';
	if (origin_normalize(in, norm) == 0) {
		size_t l = strlen(norm);
		if (l == 0 || l >= ORIGIN_MAX ||
		    (strncmp(norm, "http://", 7) != 0 && strncmp(norm, "https://", 8) != 0))
			abort();
		for (size_t i = 0; i < l; i++)
			if ((unsigned char)norm[i] <= 0x20 || (unsigned char)norm[i] >= 0x7f)
				abort();
		if (origin_normalize(norm, again) != 0 || strcmp(norm, again) != 0 ||
		    !origin_in_list(norm, norm))
			abort();
	} else if (norm[0] != '\0') {
		abort();
	}
	if (origin_list_check(in, why, sizeof(why)) < 0 && why[0] == '\0')
		abort();
	origin_in_list("http://example.com", in);
	return 0;
}
