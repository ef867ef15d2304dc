/*
 * client_transfer.c - streamed uploads and downloads over libcurl (see
 * client_transfer.h).
 */
#include "client/client_transfer.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client/client_int.h"
#include "common/util.h"

struct progress_cb {
	client_progress_fn fn;
	void *arg;
	int upload;
	int64_t size; /* upload: declared size or -1 */
	int stopped;  /* fn asked to stop */
};

/* CURLOPT_XFERINFOFUNCTION: forward the side that matters to fn. */
static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct progress_cb *p = ud;
	int stop;
	if (p->upload)
		stop = p->fn(p->arg, (int64_t)ulnow,
			     p->size >= 0 ? p->size : (ultotal > 0 ? (int64_t)ultotal : -1));
	else
		stop = p->fn(p->arg, (int64_t)dlnow, dltotal > 0 ? (int64_t)dltotal : -1);
	if (stop)
		p->stopped = 1;
	return stop ? 1 : 0;
}

static void set_progress(CURL *h, struct progress_cb *p)
{
	if (!p->fn)
		return;
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, p);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
}

static void local_err(struct client_error *err, const char *code, int e, const char *what)
{
	err->status = 0;
	snprintf(err->code, sizeof(err->code), "%s", code);
	snprintf(err->message, sizeof(err->message), "%s: %s", what, strerror(e));
}

/* ---- upload ------------------------------------------------------------------ */

struct up_state {
	int fd;
	int64_t left;  /* bytes still to send, or -1 (until EOF) */
	int rerr;      /* -errno of a failed read */
	int short_file;
};

/* CURLOPT_READFUNCTION: the next piece of the file. */
static size_t up_read(char *buf, size_t size, size_t nitems, void *ud)
{
	struct up_state *s = ud;
	size_t n = size * nitems;
	if (s->left == 0)
		return 0;
	if (s->left > 0 && (int64_t)n > s->left)
		n = (size_t)s->left;
	ssize_t r = util_read_full(s->fd, buf, n);
	if (r < 0) {
		s->rerr = (int)r;
		return CURL_READFUNC_ABORT;
	}
	if (s->left > 0) {
		if (r == 0) {
			s->short_file = 1;
			return CURL_READFUNC_ABORT;
		}
		s->left -= r;
	}
	return (size_t)r;
}

int client_upload(struct client *c, const char *path, int fd, int64_t size, client_progress_fn fn,
		  void *arg, struct client_response *resp, struct client_error *err)
{
	memset(resp, 0, sizeof(*resp));
	memset(err, 0, sizeof(*err));
	int rc = client__prepare(c, "PUT", path, CLIENT_BODY_BYTES);
	if (rc) {
		local_err(err, "bad_request", -rc, "cannot build the request");
		return rc;
	}
	CURL *h = c->curl;
	struct up_state st = {.fd = fd, .left = size};
	struct dynbuf b;
	dynbuf_init(&b, CLIENT_RESPONSE_MAX);
	struct progress_cb pcb = {.fn = fn, .arg = arg, .upload = 1, .size = size};
	curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(h, CURLOPT_READFUNCTION, up_read);
	curl_easy_setopt(h, CURLOPT_READDATA, &st);
	if (size >= 0)
		curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)size);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, dynbuf_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	set_progress(h, &pcb);
	long status;
	CURLcode cc = client__perform(c, "PUT", path, &status);
	if (cc != CURLE_OK && pcb.stopped) {
		local_err(err, "interrupted", EINTR, "the upload was stopped");
		rc = -EINTR;
	} else if (cc != CURLE_OK && st.rerr) {
		local_err(err, "local_read_failed", -st.rerr, "cannot read the local file");
		rc = st.rerr;
	} else if (cc != CURLE_OK && st.short_file) {
		local_err(err, "local_read_failed", EIO, "the local file shrank while it was sent");
		rc = -EIO;
	} else if (cc != CURLE_OK && !b.truncated && status >= 300 && b.len) {
		/* The server refused before taking the whole body. */
		rc = client__http_error(status, b.p, b.len, err);
	} else {
		rc = client__json_answer(c, cc, status, &b, resp, err);
	}
	dynbuf_free(&b);
	return rc;
}

/* ---- download ---------------------------------------------------------------- */

struct down_state {
	CURL *h;
	int fd;
	int decided;        /* the status was looked at */
	int is_error;       /* the answer is an error: keep it in errbody */
	struct dynbuf errbody; /* capped at CLIENT_ERROR_BODY_MAX */
	int errbody_nomem;
	int64_t written;
	int werr;           /* -errno of a failed write */
};

/* CURLOPT_WRITEFUNCTION: body bytes to the file, or an error body to memory. */
static size_t down_write(char *data, size_t size, size_t nmemb, void *ud)
{
	struct down_state *s = ud;
	size_t n = size * nmemb;
	if (!s->decided) {
		long status = 0;
		curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
		s->is_error = status < 200 || status >= 300;
		s->decided = 1;
	}
	if (s->is_error) {
		/* Keep the start of an error answer; drop the rest. */
		if (dynbuf_add(&s->errbody, data, n) == -ENOMEM) {
			s->errbody_nomem = 1;
			return 0;
		}
		return n;
	}
	int r = util_write_all(s->fd, data, n);
	if (r) {
		s->werr = r;
		return 0;
	}
	s->written += (int64_t)n;
	return n;
}

int client_download(struct client *c, const char *path, int fd, client_progress_fn fn, void *arg,
		    int64_t *written, struct client_error *err)
{
	memset(err, 0, sizeof(*err));
	*written = 0;
	int rc = client__prepare(c, "GET", path, CLIENT_BODY_NONE);
	if (rc) {
		local_err(err, "bad_request", -rc, "cannot build the request");
		return rc;
	}
	CURL *h = c->curl;
	struct down_state st = {.h = h, .fd = fd};
	dynbuf_init(&st.errbody, CLIENT_ERROR_BODY_MAX);
	struct progress_cb pcb = {.fn = fn, .arg = arg, .upload = 0, .size = -1};
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, down_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &st);
	set_progress(h, &pcb);
	long status;
	CURLcode cc = client__perform(c, "GET", path, &status);
	if (cc != CURLE_OK) {
		if (pcb.stopped) {
			local_err(err, "interrupted", EINTR, "the download was stopped");
			rc = -EINTR;
		} else if (st.werr) {
			local_err(err, "local_write_failed", -st.werr, "cannot write the local file");
			rc = st.werr;
		} else if (st.errbody_nomem) {
			local_err(err, "out_of_memory", ENOMEM, "reading the error answer");
			rc = -ENOMEM;
		} else {
			rc = client__transport_error(c, cc, err);
		}
	} else if (status < 200 || status >= 300) {
		rc = client__http_error(status, st.errbody.p, st.errbody.len, err);
	}
	*written = st.written;
	dynbuf_free(&st.errbody);
	return rc;
}
