/*
 * api_run_code.c - POST /v1/sandboxes/{id}/run_code {code, language,
 * timeout_seconds?}: the documents' one-shot sandbox.run_code, a snippet
 * run once in a fresh process (nothing persists; code contexts do that).
 *
 *   language "python" (default): `python3 -` with the code as its stdin
 *     (so code of any size up to BODY_CODE_MAX, and input() sees EOF at
 *     once instead of waiting);
 *   language "shell": `/bin/sh -c CODE`.
 *
 * Both run through the agent's exec with the sandbox's environment and
 * default working directory, and answer as POST .../exec does
 * ({stdout, stderr, exit_code, duration_ms, ...}; docs/api.md).
 */
#include <string.h>

#include "daemon/api/api.h"
#include "daemon/daemon.h"
#include "daemon/http/http_reply.h"

void api_run_code(struct http_req *r)
{
	struct code_body cb;
	struct body_error be;
	if (body_parse_code(r->body, r->body_len, &r->d->limits, 1, &cb, &be) < 0) {
		api_reply_body_error(r, &be);
		return;
	}
	struct sbx *sb = api_acquire(r);
	if (!sb) {
		code_body_clear(&cb);
		return;
	}
	struct exec_body b = {.env = json_object()};
	if (cb.shell) {
		b.cmd = cb.code;
	} else {
		b.cmd = "exec python3 -";
		b.stdin_data = cb.code;
		b.stdin_len = cb.code_len;
	}
	int64_t timeout_ms =
		cb.has_timeout ? cb.timeout_ms : r->d->cfg.exec_default_timeout_s * 1000;
	if (b.env)
		api_exec_run(r, sb, &b, timeout_ms);
	else
		http_reply_error(r, API_ERR_INTERNAL, "out of memory");
	json_decref(b.env);
	code_body_clear(&cb);
	sbx_release(sb);
}
