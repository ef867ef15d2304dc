/*
 * api_exec.c - POST /v1/sandboxes/{id}/exec: run a command, collect its
 * output, answer {stdout, stderr, exit_code, duration_ms, ...}.
 *
 * Output is kept up to the daemon's exec output cap per stream (the agent
 * cuts there and appends its truncation marker); bytes that are not UTF-8
 * become U+FFFD.  While waiting the handler checks every POLL_MS whether
 * the client is still there: if it left, the stream is cancelled and the
 * agent kills the command.  Stdin is written by a helper thread while this
 * one reads the output, so a command that echoes more than the protocol's
 * window of its input cannot stall both sides.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "daemon/api.h"
#include "daemon/daemon.h"
#include "daemon/http_reply.h"
#include "daemon/metrics.h"
#include "common/utf8.h"

/* Interval between checks of the client while the command runs, ms. */
#define POLL_MS 250
/* Bound on each wait for the guest to take stdin bytes, ms. */
#define STDIN_WAIT_MS 30000
/* Extra time after the command's own timeout for the agent to answer, ms. */
#define END_GRACE_MS 30000
/* Bytes kept beyond the cap for the agent's truncation marker. */
#define MARKER_ROOM 256

/* A byte buffer that stops growing at limit (further bytes are dropped). */
struct capbuf {
	char *p;
	size_t len, alloc, limit;
	int dropped;
};

static void capbuf_add(struct capbuf *b, const uint8_t *d, size_t n)
{
	if (b->len + n > b->limit) {
		b->dropped = 1;
		n = b->limit - b->len;
	}
	if (n == 0)
		return;
	if (b->len + n > b->alloc) {
		size_t na = b->alloc ? b->alloc : 4096;
		while (na < b->len + n)
			na *= 2;
		if (na > b->limit)
			na = b->limit;
		char *np = realloc(b->p, na);
		if (!np) {
			b->dropped = 1;
			return;
		}
		b->p = np;
		b->alloc = na;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

static json_t *result_json(json_t *end, struct capbuf *out, struct capbuf *err, int64_t ms)
{
	json_t *o = api_exit_json(end, ms);
	if (!o)
		return NULL;
	json_object_set_new(o, "stdout", utf8_json_lossy(out->p ? out->p : "", out->len));
	json_object_set_new(o, "stderr", utf8_json_lossy(err->p ? err->p : "", err->len));
	if (out->dropped)
		json_object_set_new(o, "stdout_truncated", json_true());
	if (err->dropped)
		json_object_set_new(o, "stderr_truncated", json_true());
	return o;
}

struct exec_stdin {
	pthread_t thread;
	struct guest_stream *st;
	char *data;  /* owned copy */
	size_t len;
	int err;
};

static void *stdin_main(void *arg)
{
	struct exec_stdin *f = arg;
	int e = f->len ? guest_stream_write(f->st, f->data, f->len, STDIN_WAIT_MS) : 0;
	if (!e)
		e = guest_stream_write_eof(f->st);
	/* -EPIPE: the command ended without reading it all; its END says how. */
	f->err = e == -EPIPE ? 0 : e;
	return NULL;
}

int api_exec_stdin_start(struct guest_stream *st, const char *data, size_t len,
			 struct exec_stdin **out)
{
	*out = NULL;
	if (!data)
		return 0;
	struct exec_stdin *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->st = st;
	f->len = len;
	f->data = malloc(len ? len : 1);
	if (!f->data) {
		free(f);
		return -ENOMEM;
	}
	memcpy(f->data, data, len);
	int e = pthread_create(&f->thread, NULL, stdin_main, f);
	if (e) {
		free(f->data);
		free(f);
		return -e;
	}
	*out = f;
	return 0;
}

int api_exec_stdin_finish(struct exec_stdin *f)
{
	if (!f)
		return 0;
	pthread_join(f->thread, NULL);
	int e = f->err;
	free(f->data);
	free(f);
	return e;
}

void api_exec(struct http_req *r)
{
	struct exec_body b;
	struct body_error be;
	if (body_parse_exec(r->body, r->body_len, &r->d->limits, &b, &be) < 0) {
		api_reply_body_error(r, &be);
		return;
	}
	struct sbx *sb = api_acquire(r);
	if (!sb) {
		exec_body_clear(&b);
		return;
	}
	api_exec_run(r, sb, &b, api_exec_timeout_ms(r, &b));
	exec_body_clear(&b);
	sbx_release(sb);
}

void api_exec_run(struct http_req *r, struct sbx *sb, const struct exec_body *b,
		  int64_t timeout_ms)
{
	int64_t t0 = util_now_ms();
	uint64_t cap = r->d->cfg.exec_output_cap;
	struct capbuf out = {.limit = cap + MARKER_ROOM}, err = {.limit = cap + MARKER_ROOM};
	json_t *end = NULL;
	struct guest_stream *st = NULL;
	json_t *req = api_exec_request(sb, b, timeout_ms, cap);
	struct exec_stdin *feed = NULL;
	int e = req ? sbx_stream_open(sb, req, &st) : -ENOMEM;
	json_decref(req);
	if (!e)
		e = api_exec_stdin_start(st, b->stdin_data, b->stdin_len, &feed);
	while (!e && !end) {
		struct guest_msg m = {0};
		int rr = guest_stream_read(st, &m, POLL_MS);
		if (rr == -ETIMEDOUT) {
			if (http_conn_gone(r->conn)) {
				metrics_event(METRICS_EXEC_CLIENT_GONE);
				log_kv(LOG_INFO, "exec.client_gone", "id=%s", sbx_id(sb));
				r->abort = 1;
				break;
			}
			if (timeout_ms && util_now_ms() - t0 > timeout_ms + END_GRACE_MS)
				e = -ETIMEDOUT;
			continue;
		}
		if (rr <= 0) {
			e = rr < 0 ? rr : -ECONNRESET;
			break;
		}
		if (m.kind == GUEST_MSG_DATA && m.channel == 1)
			capbuf_add(&out, m.data, m.len);
		else if (m.kind == GUEST_MSG_DATA && m.channel == 2)
			capbuf_add(&err, m.data, m.len);
		else if (m.kind == GUEST_MSG_END || m.kind == GUEST_MSG_ERROR)
			end = json_incref(m.json ? m.json : json_object());
		guest_msg_clear(&m);
	}
	if (feed) {
		if (!end)
			guest_stream_cancel(st); /* wakes the feeder */
		int fe = api_exec_stdin_finish(feed);
		if (!e && !end)
			e = fe;
	}
	guest_stream_close(st); /* cancels a command still running */
	int64_t ms = util_now_ms() - t0;
	if (r->abort) {
		/* the client left: nobody to answer */
	} else if (e) {
		api_reply_agent_failure(r, sb, e, "exec");
	} else if (!api_agent_error(r, end)) {
		metrics_exec(ms);
		http_reply_json(r, 200, result_json(end, &out, &err, ms));
	}
	json_decref(end);
	free(out.p);
	free(err.p);
}
