/*
 * fuzz_jupyter_msg.c - libFuzzer target for everything the agent does
 * with bytes a kernel sends: multipart frames -> jupyter_msg_is_output(_of) and
 * jupyter_msg_parse
 * (unsigned, and signed with a valid HMAC so the verified path parses
 * too) -> the execution state machine and result mapping -> the done
 * event; the fallback kernel's JSON line -> jupyter_msg_from_json -> the
 * same; raw fd bytes -> jupyter_exec_stream.  All pure functions.
 *
 * Input: byte 0 picks the output cap; then frames as [u16 little-endian
 * length][bytes], at most 16.  Any crash, leak or sanitizer report is a
 * bug.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "agent/jupyter/jupyter_exec.h"
#include "agent/jupyter/jupyter_json.h"
#include "agent/jupyter/jupyter_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FRAMES 16

/* Feed m to a fresh execution whose id is m's parent, then finish it. */
static void exercise(const struct jupyter_msg *m, size_t cap)
{
	struct jupyter_exec x;
	if (jupyter_exec_init(&x, m->parent_id, cap) < 0)
		return;
	jupyter_exec_feed(&x, m);
	jupyter_exec_feed(&x, m); /* twice: first-error-only, caps */
	json_t *evs = jupyter_exec_take_events(&x);
	char *s = evs ? json_dumps(evs, JSON_COMPACT) : NULL;
	free(s);
	json_decref(evs);
	json_t *done = jupyter_exec_done(&x, 1, m->nbuffers & 1, NULL);
	s = done ? json_dumps(done, JSON_COMPACT) : NULL;
	free(s);
	json_decref(done);
	jupyter_exec_clear(&x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t cap = (size_t)data[0] * 64;
	struct jupyter_frame f[MAX_FRAMES];
	size_t n = 0, off = 1;
	while (n < MAX_FRAMES && off + 2 <= size) {
		size_t len = (size_t)data[off] | (size_t)data[off + 1] << 8;
		off += 2;
		if (len > size - off)
			len = size - off;
		f[n].data = data + off;
		f[n].len = len;
		n++;
		off += len;
	}

	(void)jupyter_msg_is_output(f, n);
	(void)jupyter_msg_is_output_of(f, n, "p1");
	struct jupyter_msg m;
	if (jupyter_msg_parse(f, n, NULL, 0, &m) == 0) {
		exercise(&m, cap);
		jupyter_msg_clear(&m);
	}

	/* Sign the parts after the delimiter, so verification succeeds. */
	size_t d = 0;
	while (d < n && !(f[d].len == 9 && memcmp(f[d].data, JUPYTER_DELIM, 9) == 0))
		d++;
	if (d + 6 <= n) {
		static const char key[] = "fuzz-key";
		char sig[JUPYTER_SIG_SIZE];
		if (jupyter_sign(key, sizeof(key) - 1, &f[d + 2], sig) == 0) {
			struct jupyter_frame g[MAX_FRAMES];
			memcpy(g, f, n * sizeof(f[0]));
			g[d + 1].data = sig;
			g[d + 1].len = strlen(sig);
			if (jupyter_msg_parse(g, n, key, sizeof(key) - 1, &m) == 0) {
				exercise(&m, cap);
				jupyter_msg_clear(&m);
			}
		}
	}

	/* The fallback kernel's line format, and raw fd output. */
	json_t *line = jupyter_json_load(data + 1, size - 1);
	if (json_is_object(line) && jupyter_msg_from_json(line, &m) == 0) {
		exercise(&m, cap);
		jupyter_msg_clear(&m);
	}
	json_decref(line);
	struct jupyter_exec x;
	if (jupyter_exec_init(&x, "r", cap) == 0) {
		jupyter_exec_stream(&x, data[0] & 1, (const char *)data + 1, size - 1);
		jupyter_exec_clear(&x);
	}
	return 0;
}
