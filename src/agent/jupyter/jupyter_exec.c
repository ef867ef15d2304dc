/*
 * jupyter_exec.c - per-execution state machine (see jupyter_exec.h).
 */
#include "agent/jupyter/jupyter_exec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/jupyter/jupyter_map.h"
#include "common/utf8.h"

int jupyter_exec_init(struct jupyter_exec *x, const char *msg_id, size_t out_cap)
{
	memset(x, 0, sizeof(*x));
	snprintf(x->msg_id, sizeof(x->msg_id), "%s", msg_id ? msg_id : "");
	x->execution_count = -1;
	x->out_cap = out_cap;
	x->events = json_array();
	return x->events ? 0 : -ENOMEM;
}

void jupyter_exec_clear(struct jupyter_exec *x)
{
	if (!x)
		return;
	json_decref(x->error);
	json_decref(x->reply_error);
	json_decref(x->events);
	memset(x, 0, sizeof(*x));
}

static int push(struct jupyter_exec *x, json_t *ev)
{
	if (!ev)
		return -ENOMEM;
	return json_array_append_new(x->events, ev) == 0 ? 0 : -ENOMEM;
}

/* One stream event with text s[0..len), already valid UTF-8. */
static int push_text(struct jupyter_exec *x, const char *type, const char *s, size_t len)
{
	while (len > 0) {
		size_t n = utf8_cut(s, len, JUPYTER_STREAM_CHUNK);
		if (n == 0)
			n = len < JUPYTER_STREAM_CHUNK ? len : JUPYTER_STREAM_CHUNK;
		int r = push(x, json_pack("{s:s, s:s%}", "type", type, "text", s, n));
		if (r < 0)
			return r;
		s += n;
		len -= n;
	}
	return 0;
}

/* The marker ending a stream cut at the cap. */
static int push_cut_marker(struct jupyter_exec *x, const char *type)
{
	char m[96];
	int k = snprintf(m, sizeof(m), "\n[pandastack: output truncated at %zu bytes]\n", x->out_cap);
	return push_text(x, type, m, (size_t)k);
}

/* The marker on stderr for a result that was dropped. */
static int push_drop_marker(struct jupyter_exec *x, size_t size)
{
	char m[112];
	int k = snprintf(m, sizeof(m),
			 "\n[pandastack: a result of %zu bytes was dropped: output limit]\n", size);
	return push_text(x, "stderr", m, (size_t)k);
}

/* Stream text that is valid UTF-8 (from jansson), within the cap. */
static int stream_valid(struct jupyter_exec *x, const char *type, const char *s, size_t len)
{
	if (x->truncated)
		return 0;
	size_t room = x->out_cap > x->out_bytes ? x->out_cap - x->out_bytes : 0;
	if (len <= room) {
		x->out_bytes += len;
		return push_text(x, type, s, len);
	}
	size_t n = utf8_cut(s, len, room);
	x->out_bytes += n;
	x->truncated = 1;
	int r = push_text(x, type, s, n);
	if (r == 0)
		r = push_cut_marker(x, type);
	return r;
}

int jupyter_exec_stream(struct jupyter_exec *x, int is_stderr, const char *text, size_t len)
{
	if (x->truncated || len == 0)
		return 0;
	size_t room = x->out_cap > x->out_bytes ? x->out_cap - x->out_bytes : 0;
	/* Repair never shortens text (an ill-formed subpart of k <= 3 bytes
	 * becomes 3), so cutting the input just past the room still shows the
	 * overflow to stream_valid. */
	if (len > room + 4)
		len = room + 4;
	char *t;
	size_t tl;
	int r = utf8_sanitize(text, len, &t, &tl);
	if (r < 0)
		return r;
	r = stream_valid(x, is_stderr ? "stderr" : "stdout", t, tl);
	free(t);
	return r;
}

/* A result event within the caps; marker on stderr when dropped. */
static int add_result(struct jupyter_exec *x, const json_t *data, int is_main)
{
	json_t *ev = jupyter_map_result(data, is_main);
	if (!ev)
		return json_is_object(data) ? -ENOMEM : 0;
	if (x->truncated) {
		json_decref(ev);
		return 0;
	}
	size_t size = json_dumpb(ev, NULL, 0, JSON_COMPACT);
	if (size > JUPYTER_RESULT_MAX || x->out_bytes + size > x->out_cap) {
		json_decref(ev);
		if (x->out_bytes + size > x->out_cap)
			x->truncated = 1;
		return push_drop_marker(x, size);
	}
	x->out_bytes += size;
	return push(x, ev);
}

static void set_count(struct jupyter_exec *x, const json_t *content)
{
	json_t *n = json_object_get(content, "execution_count");
	if (json_is_integer(n) && json_integer_value(n) >= 0)
		x->execution_count = json_integer_value(n);
}

static int on_reply(struct jupyter_exec *x, const json_t *c)
{
	const char *status = json_string_value(json_object_get(c, "status"));
	x->got_reply = 1;
	set_count(x, c);
	if (status && strcmp(status, "error") == 0 && !x->reply_error) {
		x->reply_error = jupyter_map_error(c);
		if (!x->reply_error)
			return -ENOMEM;
	} else if (status && strcmp(status, "aborted") == 0 && !x->reply_error) {
		x->reply_error = jupyter_make_error("ExecutionAborted",
			"the kernel aborted this execution after an earlier error", "");
		if (!x->reply_error)
			return -ENOMEM;
	}
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(c, "payload"), i, p) {
		const char *src = json_string_value(json_object_get(p, "source"));
		if (src && strcmp(src, "ask_exit") == 0)
			x->ask_exit = 1;
	}
	return 0;
}

int jupyter_exec_feed(struct jupyter_exec *x, const struct jupyter_msg *m)
{
	if (!x->msg_id[0] || strcmp(m->parent_id, x->msg_id) != 0)
		return 0;
	const char *t = m->msg_type;
	const json_t *c = m->content;
	int r = 0;
	if (strcmp(t, "status") == 0) {
		const char *st = json_string_value(json_object_get(c, "execution_state"));
		if (st && strcmp(st, "idle") == 0)
			x->got_idle = 1;
	} else if (strcmp(t, "execute_input") == 0) {
		set_count(x, c);
	} else if (strcmp(t, "stream") == 0) {
		const char *name = json_string_value(json_object_get(c, "name"));
		json_t *text = json_object_get(c, "text");
		if (name && json_is_string(text) &&
		    (strcmp(name, "stdout") == 0 || strcmp(name, "stderr") == 0))
			r = stream_valid(x, name, json_string_value(text), json_string_length(text));
	} else if (strcmp(t, "display_data") == 0) {
		r = add_result(x, json_object_get(c, "data"), 0);
	} else if (strcmp(t, "execute_result") == 0) {
		set_count(x, c);
		r = add_result(x, json_object_get(c, "data"), 1);
	} else if (strcmp(t, "error") == 0) {
		if (!x->error) {
			x->error = jupyter_map_error(c);
			if (!x->error)
				r = -ENOMEM;
		}
	} else if (strcmp(t, "execute_reply") == 0) {
		r = on_reply(x, c);
	}
	/* update_display_data, clear_output, comm_*, input_request: dropped. */
	return r < 0 ? r : 1;
}

int jupyter_exec_complete(const struct jupyter_exec *x)
{
	return x->got_reply && x->got_idle;
}

json_t *jupyter_exec_take_events(struct jupyter_exec *x)
{
	json_t *fresh = json_array();
	if (!fresh)
		return NULL;
	json_t *out = x->events;
	x->events = fresh;
	return out;
}

json_t *jupyter_exec_done(struct jupyter_exec *x, int64_t duration_ms, int timed_out,
			  json_t *error)
{
	/* Copies, not references: the event goes to another thread, and
	 * jansson's reference counts are not meant to be shared. */
	json_t *err = error;
	if (!err && x->error)
		err = json_deep_copy(x->error);
	if (!err && x->reply_error)
		err = json_deep_copy(x->reply_error);
	json_t *count = x->execution_count >= 0 ? json_integer(x->execution_count) : json_null();
	return json_pack("{s:s, s:o, s:o, s:I, s:b}", "type", "done",
			 "execution_count", count, "error", err ? err : json_null(),
			 "duration_ms", (json_int_t)(duration_ms < 0 ? 0 : duration_ms),
			 "timed_out", timed_out);
}
