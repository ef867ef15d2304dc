/*
 * kernel_late.c - output printed between a context's runs (see
 * kernel_late.h).
 */
#include "agent/kernel/kernel_late.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

int kernel_late_add(struct kernel_late *l, int is_stderr, const char *s, size_t n)
{
	if (n == 0)
		return 0;
	size_t room = KERNEL_LATE_MAX > l->bytes ? KERNEL_LATE_MAX - l->bytes : 0;
	size_t take = n <= room ? n : utf8_cut(s, n, room);
	l->dropped += n - take;
	if (take == 0)
		return 0;
	char *t;
	size_t tl;
	int r = utf8_sanitize(s, take, &t, &tl);
	if (r < 0) {
		l->dropped += take;
		return r;
	}
	if (!l->chunks)
		l->chunks = json_array();
	json_t *chunk = json_pack("[b, s%]", is_stderr, t, tl);
	free(t);
	if (!l->chunks || !chunk || json_array_append_new(l->chunks, chunk) < 0) {
		l->dropped += take;
		return -ENOMEM;
	}
	l->bytes += take;
	return 0;
}

int kernel_late_flush(struct kernel_late *l, struct jupyter_exec *x)
{
	int r = 0;
	size_t i;
	json_t *chunk;
	json_array_foreach(l->chunks, i, chunk) {
		json_t *text = json_array_get(chunk, 1);
		if (r == 0)
			r = jupyter_exec_stream(x, json_is_true(json_array_get(chunk, 0)),
						json_string_value(text), json_string_length(text));
	}
	if (r == 0 && l->dropped) {
		char m[128];
		int k = snprintf(m, sizeof(m),
				 "\n[pandastack: %llu bytes printed between runs were dropped]\n",
				 (unsigned long long)l->dropped);
		r = jupyter_exec_stream(x, 1, m, (size_t)k);
	}
	kernel_late_clear(l);
	return r;
}

int kernel_late_route(struct kernel_late *l, const struct jupyter_msg *m, const char *cur_msg_id,
		      const char *cut_msg_id, struct jupyter_exec *user_x)
{
	if (!m->msg_type || strcmp(m->msg_type, "stream") != 0)
		return 0;
	if (cur_msg_id && cur_msg_id[0] && m->parent_id && !strcmp(m->parent_id, cur_msg_id))
		return 0;
	if (cut_msg_id && cut_msg_id[0] && m->parent_id && !strcmp(m->parent_id, cut_msg_id))
		return 1;
	const char *name = json_string_value(json_object_get(m->content, "name"));
	json_t *text = json_object_get(m->content, "text");
	if (!name || !json_is_string(text))
		return 1;
	int err = strcmp(name, "stderr") == 0;
	if (user_x)
		return jupyter_exec_stream(user_x, err, json_string_value(text),
					   json_string_length(text)) == 0 ? 2 : 1;
	kernel_late_add(l, err, json_string_value(text), json_string_length(text));
	return 1;
}

void kernel_late_clear(struct kernel_late *l)
{
	json_decref(l->chunks);
	l->chunks = NULL;
	l->bytes = 0;
	l->dropped = 0;
}
