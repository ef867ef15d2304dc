/*
 * fuzz_utf8.c - libFuzzer target for the UTF-8 module: sanitizing any bytes
 * gives valid UTF-8, leaves valid input unchanged, and gives the same result
 * when the input arrives in two pieces with the incomplete tail carried
 * (split point from the input); utf8_cut never splits a character of valid
 * text.  Any crash, leak or sanitizer report is a bug.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t split = data[0] % size;
	const uint8_t *in = data + 1;
	size_t len = size - 1;
	if (split > len)
		split = len;

	char *whole;
	size_t nwhole;
	if (utf8_sanitize(in, len, &whole, &nwhole) < 0)
		return 0;
	check(utf8_valid(whole, nwhole));
	check(whole[nwhole] == '\0');
	if (utf8_valid(in, len))
		check(nwhole == len && memcmp(whole, in, len) == 0);

	/* the first piece minus its incomplete tail, then the tail + the rest */
	size_t keep = utf8_incomplete_tail(in, split);
	check(keep <= 3 && keep <= split);
	char *a, *b;
	size_t na, nb;
	if (utf8_sanitize(in, split - keep, &a, &na) == 0) {
		if (utf8_sanitize(in + split - keep, len - split + keep, &b, &nb) == 0) {
			check(na + nb == nwhole);
			check(memcmp(a, whole, na) == 0 && memcmp(b, whole + na, nb) == 0);
			free(b);
		}
		free(a);
	}

	size_t max = split;
	size_t n = utf8_cut(whole, nwhole, max);
	check(n <= max || (max >= nwhole && n == nwhole));
	check(utf8_valid(whole, n));

	json_t *j = utf8_json_lossy(in, len);
	if (j) {
		check(json_string_length(j) == nwhole);
		json_decref(j);
	}
	free(whole);
	return 0;
}
