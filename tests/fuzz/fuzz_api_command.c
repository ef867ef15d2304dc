/*
 * fuzz_api_command.c - libFuzzer target for what the background-command
 * routes take from outside: the guest agent's command objects
 * (api_command_json in src/daemon/api/api_commands.c: guest data, hostile) and
 * the routes' own request bodies and queries (src/daemon/http/request_body.c).
 *
 * The first byte picks the parser, the rest is its input.  Checks beyond
 * "no crash, no leak, no UB": a command object that comes out has a valid
 * id, strings of valid UTF-8 within their caps and fields of the documented
 * types only; a parsed body satisfies its rules.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/utf8.h"
#include "daemon/api/api.h"
#include "daemon/api_errors.h"
#include "daemon/http/request_body.h"

static void check(int ok)
{
	if (!ok)
		abort();
}

static void check_str_or_null(json_t *o, const char *k, size_t max)
{
	json_t *v = json_object_get(o, k);
	check(json_is_null(v) || (json_is_string(v) && json_string_length(v) <= max &&
				  utf8_valid(json_string_value(v), json_string_length(v))));
}

static void check_int_or_null(json_t *o, const char *k, json_int_t lo, json_int_t hi)
{
	json_t *v = json_object_get(o, k);
	check(json_is_null(v) ||
	      (json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi));
}

static void command_object(const uint8_t *data, size_t size)
{
	json_t *g = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	json_t *o = api_command_json(g);
	if (o) {
		check(api_command_id_valid(json_string_value(json_object_get(o, "id"))));
		check(json_object_size(o) == 13);
		/* a cut that ends in U+FFFD may add 2 bytes per replaced byte */
		check_str_or_null(o, "cmd", 3 * API_COMMAND_CMD_SHOWN);
		check_str_or_null(o, "cwd", 3 * 4095);
		check_str_or_null(o, "started_at", 31);
		check_str_or_null(o, "ended_at", 31);
		check_int_or_null(o, "pid", 1, 0x7fffffff);
		check_int_or_null(o, "exit_code", 0, 255);
		check_int_or_null(o, "signal", 1, 127);
		check_int_or_null(o, "stdout_bytes", 0, API_COMMAND_BYTES_MAX);
		check_int_or_null(o, "stderr_bytes", 0, API_COMMAND_BYTES_MAX);
		check(json_is_boolean(json_object_get(o, "running")));
		check(json_is_boolean(json_object_get(o, "timed_out")));
		check(json_is_boolean(json_object_get(o, "stdin_open")));
		json_decref(o);
	}
	json_decref(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *body = (const char *)data + 1;
	size_t len = size - 1;
	struct body_error err = {.code = API_ERR_COUNT};
	switch (data[0] % 4) {
	case 0:
		command_object(data + 1, len);
		break;
	case 1: {
		struct command_kill_body b;
		if (body_parse_command_kill(body, len, &b, &err) == 0)
			check(b.signal && strncmp(b.signal, "SIG", 3) == 0);
		else
			check(api_errors_status(err.code) == 400);
		break;
	}
	case 2: {
		struct command_stdin_body b;
		if (body_parse_command_stdin(body, len, &b, &err) == 0) {
			check(b.data || b.eof);
			check(!b.data || b.len <= BODY_STDIN_MAX);
			command_stdin_body_clear(&b);
		} else {
			check(api_errors_status(err.code) == 400);
		}
		break;
	}
	case 3: {
		char *q = strndup(body, len);
		uint64_t v = 0;
		if (q && body_parse_uint_query("q", q, 5, 1000, &v, &err) == 0)
			check(v <= 1000);
		free(q);
		break;
	}
	}
	return 0;
}
