/*
 * fuzz_cli.c - libFuzzer target for what the CLI reads from outside: its
 * command line (src/cli/args.c against the real exec and upload specs), the
 * server's error answers (client__http_error), server text shown on a
 * terminal (out_sanitize, out_value) and ids put in URLs (urlpath.c).
 *
 * The input is split at NUL bytes into argv words; the whole input is also
 * used as an error body and as text.  Checks beyond "no crash, no leak, no
 * UB": sanitised text holds no control character, an encoded segment holds
 * only unreserved characters and %XX, and a successful parse gives back
 * exactly the promised pieces.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/args.h"
#include "cli/cmd_fs_transfer.h"
#include "cli/cmd_sandbox_run.h"
#include "cli/output.h"
#include "client/client_int.h"
#include "client/urlpath.h"

#define MAX_WORDS 64

static void check(int ok)
{
	if (!ok)
		abort();
}

/* No C0, DEL or UTF-8 C1 control in s. */
static void check_clean(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; u[i]; i++) {
		check(u[i] >= 0x20 && u[i] != 0x7f);
		if (u[i] == 0xc2)
			check(u[i + 1] >= 0xa0);
	}
}

static void fuzz_args(const struct args_spec *spec, int argc, char **argv)
{
	struct args_result r;
	char err[128];
	int rc = args_parse(spec, argc, argv, &r, err, sizeof(err));
	if (rc == 0) {
		if (!r.help) {
			size_t want = 0;
			while (spec->positionals && spec->positionals[want])
				want++;
			check(r.npos == want);
			check(!spec->rest_required || (r.rest && r.rest[0]));
			check(!r.rest || strlen(r.rest) <= ARGS_REST_MAX);
			for (int f = 0; spec->flags && spec->flags[f].name; f++) {
				if (spec->flags[f].required)
					check(args_value(&r, spec->flags[f].name) != NULL);
			}
		}
		args_result_free(&r);
	} else {
		check(err[0] != '\0' && strlen(err) < sizeof(err));
		check(r.rest == NULL);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';

	/* argv words at NUL bytes. */
	char *argv[MAX_WORDS];
	int argc = 0;
	for (size_t i = 0; i <= size && argc < MAX_WORDS;) {
		argv[argc++] = buf + i;
		i += strlen(buf + i) + 1;
	}
	fuzz_args(&cmd_exec_spec, argc, argv);
	fuzz_args(&cmd_upload_spec, argc, argv);

	/* The first word as an id in a URL path. */
	struct urlpath u;
	urlpath_init(&u);
	urlpath_lit(&u, "/v1/sandboxes");
	urlpath_seg(&u, argv[0]);
	if (urlpath_status(&u) == 0) {
		for (const char *p = u.s + strlen("/v1/sandboxes/"); *p; p++)
			check(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				     "0123456789-._~%", *p) != NULL);
	}

	/* The whole input as a server's error answer and as server text. */
	struct client_error e;
	check(client__http_error(400, (const char *)data, size, &e) == -EREMOTEIO);
	check(e.code[0] != '\0' && e.status == 400);
	char clean[256];
	out_sanitize(e.message, strnlen(e.message, sizeof(e.message)), clean, sizeof(clean));
	check_clean(clean);
	out_sanitize((const char *)data, size, clean, sizeof(clean));
	check_clean(clean);

	json_error_t jerr;
	json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (j) {
		char v[OUT_CELL_MAX];
		out_value("created_at", j, v, sizeof(v));
		check_clean(v);
		out_value("x", json_object_get(j, "exit_code"), v, sizeof(v));
		int code = cmd_exit_status(json_object_get(j, "exit_code"));
		check(code >= 0 && code <= 255);
		json_decref(j);
	}
	free(buf);
	return 0;
}
