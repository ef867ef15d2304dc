/*
 * engine_exec.c - collect one exec's output and result (see engine_exec.h).
 */
#include "engine/engine_exec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define DEFAULT_CAP (1024u * 1024u)

static int append(char **buf, size_t *len, size_t cap, const uint8_t *data, size_t n)
{
	if (!*buf) {
		*buf = malloc(cap + 1);
		if (!*buf)
			return -ENOMEM;
		(*buf)[0] = '\0';
	}
	size_t take = *len + n <= cap ? n : cap - *len;
	if (take == 0)
		return 0;
	memcpy(*buf + *len, data, take);
	*len += take;
	(*buf)[*len] = '\0';
	return 0;
}

int engine_exec(struct guest_conn *c, const char *cmd, const struct engine_exec_opts *o,
		struct engine_exec_result *r)
{
	struct engine_exec_opts none = {0};
	if (!o)
		o = &none;
	memset(r, 0, sizeof(*r));
	r->exit_code = -1;
	size_t cap = o->capture_cap ? o->capture_cap : DEFAULT_CAP;
	json_t *req = json_pack("{s:s, s:s, s:I, s:b}", "op", "exec", "cmd", cmd, "timeout_ms",
				(json_int_t)o->timeout_ms, "stdin", o->stdin_data != NULL);
	if (!req)
		return -ENOMEM;
	if (o->env)
		json_object_set(req, "env", o->env);
	if (o->cwd)
		json_object_set_new(req, "cwd", json_string(o->cwd));
	struct guest_stream *s = NULL;
	int rc = guest_stream_open(c, req, &s);
	json_decref(req);
	if (rc < 0)
		return rc;
	int wait_ms = o->timeout_ms > 0 ? o->timeout_ms + 30000 : -1;
	if (o->stdin_data) {
		if ((rc = guest_stream_write(s, o->stdin_data, o->stdin_len, wait_ms)) < 0 ||
		    (rc = guest_stream_write_eof(s)) < 0) {
			guest_stream_close(s);
			return rc;
		}
	}
	if (append(&r->out, &r->out_len, cap, NULL, 0) < 0 ||
	    append(&r->err, &r->err_len, cap, NULL, 0) < 0) {
		guest_stream_close(s);
		return -ENOMEM;
	}
	for (;;) {
		struct guest_msg m = {0};
		rc = guest_stream_read(s, &m, wait_ms);
		if (rc <= 0)
			break;
		if (m.kind == GUEST_MSG_DATA && m.channel == 1) {
			r->out_total += m.len;
			append(&r->out, &r->out_len, cap, m.data, m.len);
		} else if (m.kind == GUEST_MSG_DATA && m.channel == 2) {
			r->err_total += m.len;
			append(&r->err, &r->err_len, cap, m.data, m.len);
		} else if (m.kind == GUEST_MSG_END || m.kind == GUEST_MSG_ERROR) {
			json_decref(r->end);
			r->end = json_incref(m.json);
			if (m.kind == GUEST_MSG_ERROR)
				rc = -EPROTO;
		}
		guest_msg_clear(&m);
		if (rc == -EPROTO)
			break;
	}
	guest_stream_close(s);
	if (rc < 0)
		return rc;
	if (!r->end || json_object_get(r->end, "error"))
		return -EPROTO;
	json_t *v = json_object_get(r->end, "exit_code");
	r->exit_code = json_is_integer(v) ? (int)json_integer_value(v) : -1;
	v = json_object_get(r->end, "signal");
	r->signal = json_is_integer(v) ? (int)json_integer_value(v) : 0;
	r->timed_out = json_is_true(json_object_get(r->end, "timed_out"));
	return 0;
}

void engine_exec_result_free(struct engine_exec_result *r)
{
	free(r->out);
	free(r->err);
	json_decref(r->end);
	memset(r, 0, sizeof(*r));
}
