/*
 * notebook.c - a code context's notebook file (see notebook.h).
 */
#include "agent/notebook.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

/* The agent's result fields and the MIME types they carry
 * (jupyter_map.c gives them in that form). */
static const struct {
	const char *field, *mime;
} mimes[] = {
	{"text", "text/plain"},       {"html", "text/html"},
	{"markdown", "text/markdown"}, {"svg", "image/svg+xml"},
	{"png", "image/png"},         {"jpeg", "image/jpeg"},
	{"latex", "text/latex"},      {"json", "application/json"},
	{"javascript", "application/javascript"},
};

void notebook_init(struct notebook *nb, const char *path)
{
	memset(nb, 0, sizeof(*nb));
	if (path)
		snprintf(nb->path, sizeof(nb->path), "%s", path);
}

static json_t *new_doc(void)
{
	return json_pack("{s:[], s:{s:{s:s, s:s, s:s}, s:{s:s}}, s:i, s:i}", "cells", "metadata",
			 "kernelspec", "name", "python3", "display_name", "Python 3", "language",
			 "python", "language_info", "name", "python", "nbformat", 4,
			 "nbformat_minor", 5);
}

int notebook_run(struct notebook *nb, uint64_t exec_id, const char *code, size_t len)
{
	if (!nb->path[0])
		return 0;
	if (!nb->pending && !(nb->pending = json_array()))
		return -ENOMEM;
	if (json_array_size(nb->pending) >= NOTEBOOK_PENDING_MAX)
		json_array_remove(nb->pending, 0);
	char id[32];
	snprintf(id, sizeof(id), "cell-%llu", (unsigned long long)++nb->cells);
	json_t *cell = json_pack("{s:s, s:s, s:n, s:{}, s:[], s:s%}", "cell_type", "code", "id", id,
				 "execution_count", "metadata", "outputs", "source", code, len);
	json_t *entry = cell ? json_pack("[I, o]", (json_int_t)exec_id, cell) : NULL;
	if (!entry || json_array_append_new(nb->pending, entry) < 0)
		return -ENOMEM;
	return 0;
}

/* The pending cell of exec_id and its index, or NULL. */
static json_t *find(struct notebook *nb, uint64_t exec_id, size_t *at)
{
	size_t i;
	json_t *e;
	json_array_foreach(nb->pending, i, e) {
		if ((uint64_t)json_integer_value(json_array_get(e, 0)) == exec_id) {
			*at = i;
			return json_array_get(e, 1);
		}
	}
	return NULL;
}

/*
 * Text printed on stream name: added to the last output when it is the
 * same stream, else a new stream output.  While the cell runs a stream
 * output's "text" is the array of its pieces (nbformat's multiline
 * string), so a cell printing a line at a time costs one append per line,
 * not a copy of everything printed so far; join_texts makes each one
 * string when the cell ends.
 */
static void add_text(json_t *outputs, const char *name, json_t *text)
{
	json_t *last = json_array_get(outputs, json_array_size(outputs) - 1);
	const char *lname = json_string_value(json_object_get(last, "name"));
	json_t *pieces = json_object_get(last, "text");
	if (lname && !strcmp(lname, name) && json_is_array(pieces)) {
		json_array_append(pieces, text);
		return;
	}
	json_array_append_new(outputs, json_pack("{s:s, s:s, s:[O]}", "output_type", "stream",
						 "name", name, "text", text));
}

/* Each stream output's pieces as one string (an output that cannot be
 * joined for want of memory is dropped). */
static void join_texts(json_t *outputs)
{
	for (size_t i = 0; i < json_array_size(outputs);) {
		json_t *o = json_array_get(outputs, i);
		json_t *pieces = json_object_get(o, "text");
		if (!json_is_array(pieces)) {
			i++;
			continue;
		}
		size_t n = 0, k;
		json_t *t;
		json_array_foreach(pieces, k, t)
			n += json_string_length(t);
		char *s = malloc(n + 1);
		json_t *joined = NULL;
		if (s) {
			size_t at = 0;
			json_array_foreach(pieces, k, t) {
				memcpy(s + at, json_string_value(t), json_string_length(t));
				at += json_string_length(t);
			}
			joined = json_stringn(s, n);
			free(s);
		}
		if (joined && json_object_set_new(o, "text", joined) == 0)
			i++;
		else
			json_array_remove(outputs, i);
	}
}

/* A result event as a display_data or execute_result output. */
static void add_result(json_t *outputs, json_t *ev)
{
	json_t *data = json_object();
	if (!data)
		return;
	for (size_t k = 0; k < sizeof(mimes) / sizeof(mimes[0]); k++) {
		json_t *v = json_object_get(ev, mimes[k].field);
		if (v)
			json_object_set(data, mimes[k].mime, v);
	}
	json_t *extra = json_object_get(ev, "extra");
	if (json_is_object(extra))
		json_object_update_missing(data, extra);
	int main_result = json_is_true(json_object_get(ev, "is_main_result"));
	json_t *o = json_pack("{s:s, s:o, s:{}}", "output_type",
			      main_result ? "execute_result" : "display_data", "data", data,
			      "metadata");
	if (o && main_result)
		json_object_set_new(o, "execution_count", json_null());
	json_array_append_new(outputs, o);
}

/* The cell's end: its execution count (on the cell and its
 * execute_result) and its error. */
static void end_cell(json_t *cell, json_t *ev)
{
	json_t *count = json_object_get(ev, "execution_count");
	json_t *n = json_is_integer(count) && json_integer_value(count) >= 0 ? count : json_null();
	json_object_set(cell, "execution_count", n);
	json_t *outputs = json_object_get(cell, "outputs");
	join_texts(outputs);
	size_t i;
	json_t *o;
	json_array_foreach(outputs, i, o)
		if (json_object_get(o, "execution_count"))
			json_object_set(o, "execution_count", n);
	json_t *err = json_object_get(ev, "error");
	if (!json_is_object(err))
		return;
	json_t *name = json_object_get(err, "name"), *value = json_object_get(err, "value");
	const char *tb = json_string_value(json_object_get(err, "traceback"));
	json_t *lines = json_array();
	for (const char *p = tb; p && *p && lines;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		json_array_append_new(lines, json_stringn(p, len));
		p = nl ? nl + 1 : p + len;
	}
	json_array_append_new(outputs,
			      json_pack("{s:s, s:s, s:s, s:o*}", "output_type", "error", "ename",
					json_is_string(name) ? json_string_value(name) : "Error",
					"evalue", json_is_string(value) ? json_string_value(value) : "",
					"traceback", lines));
}

/* Write doc to path through a temporary file in the same folder. */
static int write_doc(struct notebook *nb, const char *text, size_t len)
{
	char tmp[AGENT_REQ_PATH_MAX + 32];
	snprintf(tmp, sizeof(tmp), "%s.tmp-%d", nb->path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? -errno : -EIO;
			close(fd);
			unlink(tmp);
			return e;
		}
		off += (size_t)w;
	}
	if (close(fd) < 0 || rename(tmp, nb->path) < 0) {
		int e = -errno;
		unlink(tmp);
		return e;
	}
	return 0;
}

/* Add cell to the document (within NOTEBOOK_MAX) and write the file. */
static void commit(struct notebook *nb, json_t *cell)
{
	if (!nb->doc && !(nb->doc = new_doc()))
		return;
	json_t *cells = json_object_get(nb->doc, "cells");
	size_t cell_size = json_dumpb(cell, NULL, 0, JSON_COMPACT);
	if (nb->size + cell_size > NOTEBOOK_MAX) {
		json_t *marker = json_pack("[{s:s, s:s, s:s}]", "output_type", "stream", "name",
					   "stderr", "text",
					   "[pandastack: this cell's outputs are left out: the "
					   "notebook would pass its size limit]\n");
		json_object_set_new(cell, "outputs", marker ? marker : json_array());
		cell_size = json_dumpb(cell, NULL, 0, JSON_COMPACT);
		if (nb->size + cell_size > NOTEBOOK_MAX)
			return; /* full */
	}
	if (json_array_append(cells, cell) < 0)
		return;
	char *text = json_dumps(nb->doc, JSON_INDENT(1) | JSON_ENSURE_ASCII);
	if (!text)
		return;
	size_t len = strlen(text);
	nb->size = json_dumpb(nb->doc, NULL, 0, JSON_COMPACT);
	int r = write_doc(nb, text, len);
	free(text);
	if (r < 0 && !nb->failed) {
		nb->failed = 1;
		char q[300];
		log_kv(LOG_WARN, "notebook.write_failed", "path=%s errno=%d",
		       log_quote(nb->path, q, sizeof(q)), -r);
	} else if (r == 0) {
		nb->failed = 0;
	}
}

void notebook_event(struct notebook *nb, uint64_t exec_id, json_t *ev)
{
	size_t at = 0;
	json_t *cell = nb->path[0] ? find(nb, exec_id, &at) : NULL;
	const char *type = json_string_value(json_object_get(ev, "type"));
	if (!cell || !type)
		return;
	json_t *outputs = json_object_get(cell, "outputs");
	json_t *text = json_object_get(ev, "text");
	if ((!strcmp(type, "stdout") || !strcmp(type, "stderr")) && json_is_string(text)) {
		add_text(outputs, type, text);
	} else if (!strcmp(type, "result")) {
		add_result(outputs, ev);
	} else if (!strcmp(type, "done")) {
		json_incref(cell);
		json_array_remove(nb->pending, at);
		end_cell(cell, ev);
		commit(nb, cell);
		json_decref(cell);
	}
}

void notebook_free(struct notebook *nb)
{
	json_decref(nb->doc);
	json_decref(nb->pending);
	nb->doc = nb->pending = NULL;
}
