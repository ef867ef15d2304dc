/*
 * mcp_backend_rest.c - the MCP backend's operations as REST API calls (see
 * mcp_backend_rest.h).
 */
#include "mcp/mcp_backend_rest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "client/client_transfer.h"
#include "client/urlpath.h"
#include "common/util.h"

static int fail(struct mcp_fail *f, int e, const struct client_error *err)
{
	f->status = err->status;
	snprintf(f->code, sizeof(f->code), "%s", err->code);
	snprintf(f->message, sizeof(f->message), "%s", err->message);
	return e;
}

static int local_fail(struct mcp_fail *f, int e, const char *code, const char *msg)
{
	f->status = 0;
	snprintf(f->code, sizeof(f->code), "%s", code);
	snprintf(f->message, sizeof(f->message), "%s", msg);
	return e;
}

/* /v1/sandboxes/{id}[suffix][/{ctx}[suffix2]] */
static int sandbox_path(struct urlpath *u, const char *id, const char *suffix, const char *ctx,
			const char *suffix2, struct mcp_fail *f)
{
	urlpath_init(u);
	urlpath_lit(u, "/v1/sandboxes");
	urlpath_seg(u, id);
	if (suffix)
		urlpath_lit(u, suffix);
	if (ctx)
		urlpath_seg(u, ctx);
	if (suffix2)
		urlpath_lit(u, suffix2);
	int e = urlpath_status(u);
	return e ? local_fail(f, e, "invalid_argument", "the id cannot be put in a URL") : 0;
}

/* One JSON call; on success *out (may be NULL) takes the answer. */
static int rest_call(struct client *c, const char *method, const char *path, const json_t *body,
		json_t **out, struct mcp_fail *f)
{
	struct client_response resp = {0};
	struct client_error err = {0};
	int e = client_call(c, method, path, body, &resp, &err);
	if (e < 0)
		return fail(f, e, &err);
	if (out) {
		*out = resp.json;
		resp.json = NULL;
		if (!*out) {
			client_response_clear(&resp);
			return local_fail(f, -EBADMSG, "bad_answer", "the API answered no JSON");
		}
	}
	client_response_clear(&resp);
	return 0;
}

static int op_create_sandbox(void *arg, const char *template_name, int64_t ttl_seconds,
			     json_t **sandbox, struct mcp_fail *f)
{
	json_t *body = json_pack("{s:s}", "template", template_name);
	if (body && ttl_seconds > 0 &&
	    json_object_set_new(body, "ttl_seconds", json_integer(ttl_seconds))) {
		json_decref(body);
		body = NULL;
	}
	if (!body)
		return local_fail(f, -ENOMEM, "internal", "out of memory");
	int e = rest_call(arg, "POST", "/v1/sandboxes", body, sandbox, f);
	json_decref(body);
	return e;
}

static int op_list_sandboxes(void *arg, json_t **list, struct mcp_fail *f)
{
	return rest_call(arg, "GET", "/v1/sandboxes", NULL, list, f);
}

static int op_kill_sandbox(void *arg, const char *sandbox_id, struct mcp_fail *f)
{
	struct urlpath u;
	int e = sandbox_path(&u, sandbox_id, NULL, NULL, NULL, f);
	return e ? e : rest_call(arg, "DELETE", u.s, NULL, NULL, f);
}

static int op_create_context(void *arg, const char *sandbox_id, char *ctx_id, size_t ctx_len,
			     struct mcp_fail *f)
{
	struct urlpath u;
	int e = sandbox_path(&u, sandbox_id, "/contexts", NULL, NULL, f);
	json_t *body = json_object(), *ctx = NULL;
	if (!e)
		e = body ? rest_call(arg, "POST", u.s, body, &ctx, f)
			 : local_fail(f, -ENOMEM, "internal", "out of memory");
	json_decref(body);
	if (e)
		return e;
	const json_t *id = json_object_get(ctx, "id");
	if (!json_is_string(id) || json_string_length(id) == 0 || json_string_length(id) >= ctx_len)
		e = local_fail(f, -EBADMSG, "bad_answer", "the API's context has no usable id");
	else
		snprintf(ctx_id, ctx_len, "%s", json_string_value(id));
	json_decref(ctx);
	return e;
}

static int op_run_code(void *arg, const char *sandbox_id, const char *ctx_id, const char *code,
		       double timeout_seconds, json_t **execution, struct mcp_fail *f)
{
	struct urlpath u;
	int e = sandbox_path(&u, sandbox_id, "/contexts", ctx_id, "/run_code", f);
	if (e)
		return e;
	json_t *body = json_pack("{s:s}", "code", code);
	if (body && timeout_seconds >= 0 &&
	    json_object_set_new(body, "timeout_seconds", json_real(timeout_seconds))) {
		json_decref(body);
		body = NULL;
	}
	if (!body)
		return local_fail(f, -ENOMEM, "internal", "out of memory");
	e = rest_call(arg, "POST", u.s, body, execution, f);
	json_decref(body);
	return e;
}

static int op_exec(void *arg, const char *sandbox_id, const json_t *body, json_t **result,
		   struct mcp_fail *f)
{
	struct urlpath u;
	int e = sandbox_path(&u, sandbox_id, "/exec", NULL, NULL, f);
	return e ? e : rest_call(arg, "POST", u.s, body, result, f);
}

static int fs_path(struct urlpath *u, const char *sandbox_id, const char *path,
		   struct mcp_fail *f)
{
	urlpath_init(u);
	urlpath_lit(u, "/v1/sandboxes");
	urlpath_seg(u, sandbox_id);
	urlpath_lit(u, "/fs");
	urlpath_query(u, "path", path);
	int e = urlpath_status(u);
	return e ? local_fail(f, e, "invalid_argument", "the id or path cannot be put in a URL")
		 : 0;
}

struct cap {
	int64_t max;
	int over;
};

/* Stop a download that passes its cap (told by Content-Length or by the
 * bytes so far). */
static int on_progress(void *arg, int64_t done, int64_t total)
{
	struct cap *c = arg;
	if (done > c->max || total > c->max)
		c->over = 1;
	return c->over;
}

static int op_read_file(void *arg, const char *sandbox_id, const char *path, size_t max,
			char **data, size_t *len, struct mcp_fail *f)
{
	struct urlpath u;
	int e = fs_path(&u, sandbox_id, path, f);
	if (e)
		return e;
	int fd = memfd_create("pandastack-mcp-read", MFD_CLOEXEC);
	if (fd < 0)
		return local_fail(f, -errno, "local_io_failed", "memfd_create failed");
	struct cap cap = {.max = (int64_t)max};
	struct client_error err = {0};
	int64_t written = 0;
	e = client_download(arg, u.s, fd, on_progress, &cap, &written, &err);
	if (cap.over) {
		close(fd);
		char msg[96];
		snprintf(msg, sizeof(msg), "the file is larger than %zu bytes", max);
		return local_fail(f, -EFBIG, "file_too_large", msg);
	}
	if (e < 0) {
		close(fd);
		return fail(f, e, &err);
	}
	char *buf = malloc((size_t)written + 1);
	ssize_t n = buf ? pread(fd, buf, (size_t)written, 0) : -1;
	close(fd);
	if (!buf || n != (ssize_t)written) {
		free(buf);
		return local_fail(f, buf ? -EIO : -ENOMEM, "local_io_failed",
				  "reading the downloaded file back failed");
	}
	buf[written] = '\0';
	*data = buf;
	*len = (size_t)written;
	return 0;
}

static int op_write_file(void *arg, const char *sandbox_id, const char *path, const void *data,
			 size_t len, json_t **result, struct mcp_fail *f)
{
	struct urlpath u;
	int e = fs_path(&u, sandbox_id, path, f);
	if (e)
		return e;
	int fd = memfd_create("pandastack-mcp-write", MFD_CLOEXEC);
	if (fd < 0)
		return local_fail(f, -errno, "local_io_failed", "memfd_create failed");
	if ((e = util_write_all(fd, data, len)) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
		close(fd);
		return local_fail(f, e < 0 ? e : -EIO, "local_io_failed",
				  "staging the file in memory failed");
	}
	struct client_response resp = {0};
	struct client_error err = {0};
	e = client_upload(arg, u.s, fd, (int64_t)len, NULL, NULL, &resp, &err);
	close(fd);
	if (e < 0)
		return fail(f, e, &err);
	*result = resp.json;
	resp.json = NULL;
	client_response_clear(&resp);
	return 0;
}

void mcp_backend_rest(struct mcp_backend *b, struct client *c)
{
	*b = (struct mcp_backend){
		.arg = c,
		.create_sandbox = op_create_sandbox,
		.list_sandboxes = op_list_sandboxes,
		.kill_sandbox = op_kill_sandbox,
		.create_context = op_create_context,
		.run_code = op_run_code,
		.exec = op_exec,
		.read_file = op_read_file,
		.write_file = op_write_file,
	};
}
