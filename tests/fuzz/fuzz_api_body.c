/*
 * fuzz_api_body.c - libFuzzer target for the REST API's request validation
 * (src/daemon/http/request_body.c) and the UTF-8 sanitiser it relies on.
 *
 * The first byte picks the route body parser, the rest is the body.  Checks
 * beyond "no crash, no leak, no UB": a successful parse hands out fields
 * that satisfy the documented rules, and sanitised output is valid UTF-8.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "daemon/api_errors.h"
#include "daemon/http/request_body.h"
#include "daemon/net/net_policy.h"

static const struct body_limits lim = {.max_ttl_seconds = 86400,
				       .max_exec_timeout_seconds = 86400};

static void check(int ok)
{
	if (!ok)
		abort();
}

/* A failed parse names a 400 row of the error table. */
static int is_400(enum api_err e)
{
	return (unsigned)e < API_ERR_COUNT && api_errors_status(e) == 400;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *body = (const char *)data + 1;
	size_t len = size - 1;
	struct body_error err = {.code = API_ERR_COUNT}; /* no row: a parse must set it */
	switch (data[0] % 11) {
	case 0: {
		struct create_sandbox_body b;
		if (body_parse_create_sandbox(body, len, &lim, &b, &err) == 0) {
			check(b.template_name || b.snapshot);
			check(!b.template_name || body_check_name(b.template_name) == 0);
			check(!b.snapshot || (strlen(b.snapshot) == 25 && !strncmp(b.snapshot, "snap_", 5)));
			check(!b.on_timeout || !strcmp(b.on_timeout, "stop") ||
			      !strcmp(b.on_timeout, "pause"));
			check(b.ttl_seconds >= 0 && b.ttl_seconds <= lim.max_ttl_seconds);
			check(json_is_object(b.env) && json_is_object(b.metadata));
			check(b.network != NULL);
			create_sandbox_body_clear(&b);
		} else {
			check(is_400(err.code) && utf8_valid(err.message, strlen(err.message)));
		}
		break;
	}
	case 1: {
		struct exec_body b;
		if (body_parse_exec(body, len, &lim, &b, &err) == 0) {
			check(b.cmd && b.cmd[0] && strlen(b.cmd) <= BODY_CMD_MAX);
			check(b.timeout_ms >= 0 && b.timeout_ms <= lim.max_exec_timeout_seconds * 1000);
			check(!b.cwd || b.cwd[0] == '/');
			check(b.stdin_len <= BODY_STDIN_MAX);
			exec_body_clear(&b);
		} else {
			check(is_400(err.code));
		}
		break;
	}
	case 2: {
		struct ttl_body b;
		if (body_parse_ttl(body, len, &lim, &b, &err) == 0)
			check(b.ttl_seconds >= 1 && b.ttl_seconds <= lim.max_ttl_seconds);
		break;
	}
	case 3: {
		struct key_body b;
		if (body_parse_key(body, len, &b, &err) == 0) {
			check(b.name && b.name[0]);
			check(!b.team || body_check_name(b.team) == 0);
			key_body_clear(&b);
		}
		break;
	}
	case 4: {
		struct mkdir_body b;
		if (body_parse_mkdir(body, len, &b, &err) == 0) {
			check(b.path[0] == '/');
			mkdir_body_clear(&b);
		}
		break;
	}
	case 5: {
		struct build_body b;
		(void)body_parse_build(body, len, &b, &err);
		/* interrupt / restart: only nothing, or {}, passes */
		if (body_parse_empty(body, len, &err) == 0)
			check(len == 0 || memchr(body, '{', len) != NULL);
		else
			check(is_400(err.code) && utf8_valid(err.message, strlen(err.message)));
		/* the path and query checks take C strings */
		char *s = malloc(len + 1);
		if (!s)
			return 0;
		memcpy(s, body, len);
		s[len] = '\0';
		if (body_check_path(s, &err) == 0)
			check(s[0] == '/' && utf8_valid(s, strlen(s)));
		int v;
		(void)body_parse_bool_query("q", s, 0, &v, &err);
		free(s);
		break;
	}
	case 7: {
		struct context_body b;
		if (body_parse_context(body, len, &b, &err) == 0) {
			check(!b.cwd || b.cwd[0] == '/');
			check(json_is_object(b.env));
			context_body_clear(&b);
		} else {
			check(is_400(err.code) && utf8_valid(err.message, strlen(err.message)));
		}
		break;
	}
	case 8: {
		struct code_body b;
		int one_shot = len > 0 && (body[0] & 1);
		if (body_parse_code(body, len, &lim, one_shot, &b, &err) == 0) {
			check(b.code != NULL);
			check(b.code_len <= (b.shell ? BODY_CMD_MAX : BODY_CODE_MAX));
			check(!b.shell || (one_shot && b.code_len > 0));
			check(b.timeout_ms >= 0 && b.timeout_ms <= lim.max_exec_timeout_seconds * 1000);
			code_body_clear(&b);
		} else {
			check(is_400(err.code) && utf8_valid(err.message, strlen(err.message)));
		}
		break;
	}
	case 9: {
		struct snapshot_body b;
		if (body_parse_snapshot(body, len, &b, &err) == 0) {
			check(!b.name || (b.name[0] && strlen(b.name) <= BODY_SNAPSHOT_NAME_MAX));
			snapshot_body_clear(&b);
		} else {
			check(is_400(err.code) && utf8_valid(err.message, strlen(err.message)));
		}
		break;
	}
	case 10: {
		struct fork_body b;
		if (body_parse_fork(body, len, &lim, &b, &err) == 0)
			check(b.count >= 1 && b.count <= BODY_FORK_MAX && b.ttl_seconds >= 0 &&
			      b.ttl_seconds <= lim.max_ttl_seconds);
		else
			check(is_400(err.code));
		struct resume_body rb;
		if (body_parse_resume(body, len, &lim, &rb, &err) == 0)
			check(rb.ttl_seconds >= 0 && rb.ttl_seconds <= lim.max_ttl_seconds);
		else
			check(is_400(err.code));
		break;
	}
	case 6: {
		char *out;
		size_t n;
		if (utf8_sanitize(body, len, &out, &n) == 0) {
			check(utf8_valid(out, n));
			if (utf8_valid(body, len))
				check(n == len && memcmp(out, body, len) == 0);
			free(out);
		}
		size_t tail = utf8_incomplete_tail(body, len);
		check(tail <= 3 && tail <= len);
		break;
	}
	}
	return 0;
}
