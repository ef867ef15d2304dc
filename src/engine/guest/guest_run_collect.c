/*
 * guest_run_collect.c - a run's events gathered at once (guest_run.h):
 * guest_run_collect for any run, guest_run_exec for the engine's simple
 * "run this command" (bake warm-up, operator tool, tests, benchmarks).
 */
#include "engine/guest/guest_run.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/dynbuf.h"

/* Bytes kept per channel by guest_run_exec unless told. */
#define DEFAULT_CAPTURE_CAP (1024u * 1024u)

/* The exit fields of an END object (guest data: checked). */
static void exit_fields(struct guest_run_result *r)
{
	json_t *v = json_object_get(r->end, "exit_code");
	r->exit_code = json_is_integer(v) ? (int)json_integer_value(v) : -1;
	v = json_object_get(r->end, "signal");
	r->signal = json_is_integer(v) ? (int)json_integer_value(v) : 0;
	r->timed_out = json_is_true(json_object_get(r->end, "timed_out"));
}

int guest_run_collect(struct guest_run *x, struct guest_run_result *r, int poll_ms,
		      int (*stop)(void *arg), void *arg)
{
	memset(r, 0, sizeof(*r));
	r->exit_code = -1;
	/* uncapped here: the run's own output cap bounds what arrives */
	struct dynbuf out, err;
	dynbuf_init(&out, SIZE_MAX);
	dynbuf_init(&err, SIZE_MAX);
	int rc = 0;
	for (;;) {
		struct guest_event ev;
		int k = guest_run_next(x, &ev, poll_ms);
		if (k == -ETIMEDOUT) {
			if (stop && stop(arg)) {
				rc = -ECANCELED;
				break;
			}
			continue;
		}
		if (k <= 0)
			break;
		switch (ev.type) {
		case GUEST_EV_STDOUT:
		case GUEST_EV_STDERR: {
			int o = ev.type == GUEST_EV_STDOUT;
			if (ev.truncated)
				*(o ? &r->out_truncated : &r->err_truncated) = 1;
			if (!rc && ev.len)
				rc = dynbuf_add(o ? &out : &err, ev.data, ev.len);
			break;
		}
		case GUEST_EV_RESULT:
			if (ev.truncated)
				r->results_truncated = 1;
			if (!rc && ev.json && !r->results && !(r->results = json_array()))
				rc = -ENOMEM;
			if (!rc && ev.json && json_array_append(r->results, ev.json) < 0)
				rc = -ENOMEM;
			break;
		case GUEST_EV_EXIT:
		case GUEST_EV_ERROR:
			r->end = json_incref(ev.json);
			if (ev.type == GUEST_EV_ERROR && !rc)
				rc = ev.err;
			break;
		case GUEST_EV_STARTED:
			break;
		}
	}
	r->out = dynbuf_take(&out, &r->out_len);
	r->err = dynbuf_take(&err, &r->err_len);
	if (!r->out || !r->err)
		rc = rc ? rc : -ENOMEM;
	r->out_total = guest_run_received(x, GUEST_EV_STDOUT);
	r->err_total = guest_run_received(x, GUEST_EV_STDERR);
	if (!rc)
		exit_fields(r);
	return rc;
}

void guest_run_result_free(struct guest_run_result *r)
{
	free(r->out);
	free(r->err);
	json_decref(r->results);
	json_decref(r->end);
	memset(r, 0, sizeof(*r));
}

int guest_run_exec(struct guest_conn *c, const char *cmd, const struct guest_run_exec_opts *o,
		   struct guest_run_result *r)
{
	struct guest_run_exec_opts none = {0};
	if (!o)
		o = &none;
	memset(r, 0, sizeof(*r));
	r->exit_code = -1;
	json_t *req = json_pack("{s:s, s:s, s:I, s:b}", "op", "exec", "cmd", cmd, "timeout_ms",
				(json_int_t)o->timeout_ms, "stdin", o->stdin_data != NULL);
	if (!req)
		return -ENOMEM;
	if (o->env)
		json_object_set(req, "env", o->env);
	if (o->cwd)
		json_object_set_new(req, "cwd", json_string(o->cwd));
	struct guest_run_opts ro = {
		.kind = GUEST_RUN_EXEC,
		.stdin_data = o->stdin_data,
		.stdin_len = o->stdin_len,
		.output_cap = o->capture_cap ? o->capture_cap : DEFAULT_CAPTURE_CAP,
		.deadline_ms = o->timeout_ms > 0 ? o->timeout_ms + GUEST_RUN_END_GRACE_MS : 0,
	};
	struct guest_run *x;
	int rc = guest_run_open(c, req, &ro, &x);
	json_decref(req);
	if (rc < 0)
		return rc;
	rc = guest_run_collect(x, r, -1, NULL, NULL);
	guest_run_close(x);
	return rc;
}
