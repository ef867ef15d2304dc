/*
 * api_fs_transfer.c - file bytes in and out, streamed both ways:
 *
 * PUT /v1/sandboxes/{id}/fs?path=P: the body goes to the agent's
 * file_write stream piece by piece as libmicrohttpd reads it; writing
 * blocks while the guest has granted no credit, which stops reading the
 * socket, so the client is slowed to the guest's pace and the daemon holds
 * at most one connection buffer and one window per upload.  Size cap: the
 * daemon's --max-upload (413; announced sizes are refused before any byte
 * is read).  The agent writes a temporary file and renames it at the end,
 * so an interrupted upload never leaves a partial file.
 *
 * GET /v1/sandboxes/{id}/fs?path=P: the agent's file_read stream becomes
 * the response body through an MHD content reader (Content-Length from the
 * agent's stat event); one agent DATA message is held at a time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/proto.h"
#include "common/util.h"
#include "daemon/api/api.h"
#include "daemon/daemon.h"
#include "daemon/http/http_reply.h"

/* Bound on each wait for the guest to grant credit, ms. */
#define WRITE_WAIT_MS 60000
/* Bound on the agent's first answer and on its final END, ms. */
#define ANSWER_MS 60000
#define BLOCK_SIZE (64u * 1024)

/* ---- both ways ------------------------------------------------------- */

/* The request's sandbox for a transfer of its ?path= (its only query
 * parameter; *path borrowed from r), or NULL with an answer sent. */
static struct sbx *transfer_target(struct http_req *r, const char **path)
{
	*path = api_fs_query_path(r);
	return *path ? api_acquire(r) : NULL;
}

/* req (stolen; NULL counts as out of memory) opened as an agent stream on
 * sb, or NULL with the failure answered (what names the transfer) and sb
 * released. */
static struct guest_stream *transfer_open(struct http_req *r, struct sbx *sb, json_t *req,
					  const char *what)
{
	struct guest_stream *st = NULL;
	int e = req ? sbx_stream_open(sb, req, &st) : -ENOMEM;
	json_decref(req);
	if (e) {
		api_reply_agent_failure(r, sb, e, what);
		sbx_release(sb);
		return NULL;
	}
	return st;
}

/* ---- upload ---------------------------------------------------------- */

struct upload {
	struct sbx *sb;
	struct guest_stream *st;
	int failed;        /* first -errno from writing; the END says why */
	int64_t t0;
};

static void upload_free(void *p)
{
	struct upload *u = p;
	if (!u)
		return;
	guest_stream_close(u->st); /* an unfinished upload: the agent drops its temp file */
	sbx_release(u->sb);
	free(u);
}

/* Refuse an upload onto a directory before the client sends its bytes. */
static int target_is_dir(struct sbx *sb, const char *path)
{
	json_t *res = NULL;
	json_t *req = json_pack("{s:s, s:s}", "op", "stat", "path", path);
	int e = req ? sbx_call(sb, req, API_AGENT_CALL_MS, &res) : -ENOMEM;
	json_decref(req);
	const char *type = e == 0 ? json_string_value(json_object_get(res, "type")) : NULL;
	int dir = type && !strcmp(type, "dir");
	json_decref(res);
	return dir;
}

void api_fs_upload_begin(struct http_req *r)
{
	const char *path;
	struct sbx *sb = transfer_target(r, &path);
	if (!sb)
		return;
	if (target_is_dir(sb, path)) {
		http_reply_error(r, API_ERR_IS_A_DIRECTORY, "%.200s is a directory", path);
		sbx_release(sb);
		return;
	}
	struct upload *u = calloc(1, sizeof(*u));
	json_t *req = u ? json_pack("{s:s, s:s, s:i, s:b}", "op", "file_write", "path", path, "mode",
				    0644, "parents", 1)
			: NULL;
	struct guest_stream *st = transfer_open(r, sb, req, "upload");
	if (!st) {
		free(u);
		return;
	}
	u->st = st;
	u->sb = sb;
	u->t0 = util_now_ms();
	r->state = u;
	r->state_free = upload_free;
}

void api_fs_upload_chunk(struct http_req *r, const char *data, size_t len)
{
	struct upload *u = r->state;
	if (!u || u->failed)
		return; /* the rest of the body is read and dropped; the end answers */
	int e = guest_stream_write(u->st, data, len, WRITE_WAIT_MS);
	if (e)
		u->failed = e;
}

void api_fs_upload_end(struct http_req *r)
{
	struct upload *u = r->state;
	if (!u) {
		http_reply_error(r, API_ERR_INTERNAL, "upload state lost");
		return;
	}
	int e = u->failed;
	if (!e)
		e = guest_stream_write_eof(u->st);
	if (e == -EPIPE)
		e = 0; /* the agent ended the stream early: its END has the reason */
	json_t *end = NULL;
	while (!e && !end) {
		struct guest_msg m = {0};
		int rr = guest_stream_read(u->st, &m, ANSWER_MS);
		if (rr <= 0) {
			e = rr < 0 ? rr : -ECONNRESET;
			break;
		}
		if (m.kind == GUEST_MSG_END || m.kind == GUEST_MSG_ERROR)
			end = json_incref(m.json ? m.json : json_object());
		guest_msg_clear(&m);
	}
	if (e) {
		api_reply_agent_failure(r, u->sb, e, "upload");
	} else if (!api_agent_file_error(r, end)) {
		json_t *size = json_object_get(end, "size");
		json_int_t n = json_is_integer(size) ? json_integer_value(size) : -1;
		log_kv(LOG_INFO, "fs.upload", "id=%s bytes=%llu ms=%lld", sbx_id(u->sb),
		       (unsigned long long)r->body_seen, (long long)(util_now_ms() - u->t0));
		http_reply_json(r, 200,
				json_pack("{s:s, s:I}", "path", http_query(r, "path"), "size",
					  n >= 0 ? n : (json_int_t)r->body_seen));
	}
	json_decref(end);
}

/* ---- download -------------------------------------------------------- */

struct download {
	struct sbx *sb;
	struct guest_stream *st;
	struct MHD_Connection *conn;
	struct guest_msg held;    /* a DATA message partly handed out */
	size_t held_off;
	uint64_t sent, size;      /* size: from the stat event, UINT64_MAX unknown */
	int done;
};

static void download_free(void *p)
{
	struct download *dl = p;
	guest_msg_clear(&dl->held);
	guest_stream_close(dl->st);
	sbx_release(dl->sb);
	free(dl);
}

static ssize_t download_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct download *dl = cls;
	(void)pos;
	for (;;) {
		if (dl->held.data && dl->held_off < dl->held.len) {
			size_t n = dl->held.len - dl->held_off;
			if (n > max)
				n = max;
			memcpy(buf, dl->held.data + dl->held_off, n);
			dl->held_off += n;
			dl->sent += n;
			return (ssize_t)n;
		}
		guest_msg_clear(&dl->held);
		dl->held_off = 0;
		if (dl->done)
			return dl->size == UINT64_MAX || dl->sent == dl->size
				       ? MHD_CONTENT_READER_END_OF_STREAM
				       : MHD_CONTENT_READER_END_WITH_ERROR;
		struct guest_msg m = {0};
		int rr = guest_stream_read(dl->st, &m, API_POLL_MS);
		if (rr == -ETIMEDOUT) {
			if (http_conn_gone(dl->conn))
				return MHD_CONTENT_READER_END_WITH_ERROR;
			continue;
		}
		if (rr <= 0)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (m.kind == GUEST_MSG_DATA && m.channel == PROTO_CH_STDOUT) {
			dl->held = m; /* owned now */
			continue;
		}
		if (m.kind == GUEST_MSG_ERROR ||
		    (m.kind == GUEST_MSG_END && json_object_get(m.json, "error"))) {
			guest_msg_clear(&m);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		if (m.kind == GUEST_MSG_END)
			dl->done = 1;
		guest_msg_clear(&m);
	}
}

/*
 * Wait for the agent's first word on a file_read stream: the stat event
 * (size into *size), or an error (answered; returns 1), or the first bytes
 * (kept in dl->held).  Returns 0 to go on, 1 when an answer was sent.
 */
static int first_answer(struct http_req *r, struct download *dl)
{
	for (;;) {
		struct guest_msg m = {0};
		int rr = guest_stream_read(dl->st, &m, ANSWER_MS);
		if (rr <= 0) {
			api_reply_agent_failure(r, dl->sb, rr < 0 ? rr : -ECONNRESET, "download");
			return 1;
		}
		if (m.kind == GUEST_MSG_EVENT) {
			json_t *sz = json_object_get(m.json, "size");
			if (json_is_integer(sz) && json_integer_value(sz) >= 0)
				dl->size = (uint64_t)json_integer_value(sz);
			guest_msg_clear(&m);
			return 0;
		}
		if (m.kind == GUEST_MSG_END || m.kind == GUEST_MSG_ERROR) {
			int answered = api_agent_file_error(r, m.json);
			if (!answered) /* an empty file, no stat event */
				dl->done = 1;
			guest_msg_clear(&m);
			return answered;
		}
		if (m.kind == GUEST_MSG_DATA && m.channel == PROTO_CH_STDOUT) {
			dl->held = m;
			return 0;
		}
		guest_msg_clear(&m);
	}
}

void api_fs_download(struct http_req *r)
{
	const char *path;
	struct sbx *sb = transfer_target(r, &path);
	if (!sb)
		return;
	struct download *dl = calloc(1, sizeof(*dl));
	json_t *req = dl ? json_pack("{s:s, s:s}", "op", "file_read", "path", path) : NULL;
	struct guest_stream *st = transfer_open(r, sb, req, "download");
	if (!st) {
		free(dl);
		return;
	}
	dl->st = st;
	dl->sb = sb;
	dl->conn = r->conn;
	dl->size = UINT64_MAX;
	if (first_answer(r, dl)) {
		download_free(dl);
		return;
	}
	if (dl->done)
		dl->size = 0;
	struct MHD_Response *resp = MHD_create_response_from_callback(
		dl->size == UINT64_MAX ? MHD_SIZE_UNKNOWN : dl->size, BLOCK_SIZE, download_read,
		dl, download_free);
	if (!resp) {
		download_free(dl);
		r->abort = 1;
		return;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
	http_reply_response(r, 200, resp);
}
