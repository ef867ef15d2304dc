/*
 * api_common.c - what every sandbox route shares (see api.h): finding the
 * request's sandbox, the answers about it, and the agent's errors as API
 * errors.
 */
#include <errno.h>
#include <string.h>

#include "common/utf8.h"
#include "daemon/api/api.h"
#include "daemon/daemon.h"
#include "daemon/http/http_reply.h"
#include "daemon/sandbox/sandbox_json.h"

json_t *api_sandbox_json_full(struct http_req *r, const struct sandbox_row *row)
{
	json_t *o = sandbox_json(row);
	const char *domain = r->d->cfg.proxy_domain;
	if (o && (json_object_set_new(o, "access_token",
				      row->access_token[0] ? json_string(row->access_token)
							   : json_null()) < 0 ||
		  json_object_set_new(o, "proxy_domain",
				      domain[0] ? json_string(domain) : json_null()) < 0)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int api_sandbox_row(struct http_req *r, struct sandbox_row *row)
{
	int e = sandbox_id_valid(r->params[0]) ? store_sandbox_get(r->d->store, r->params[0], row)
					       : -ENOENT;
	if (e == 0 && strcmp(row->team, r->who.team) != 0) {
		sandbox_row_clear(row);
		e = -ENOENT;
	}
	if (e == -ENOENT)
		http_reply_error(r, API_ERR_SANDBOX_NOT_FOUND, "no sandbox '%.64s'", r->params[0]);
	else if (e < 0)
		http_reply_error(r, API_ERR_INTERNAL, "could not read the sandbox");
	return e < 0 ? e : 0;
}

void api_reply_body_error(struct http_req *r, const struct body_error *e)
{
	http_reply_error(r, e->code, "%s", e->message);
}

struct sbx *api_acquire(struct http_req *r)
{
	struct sbx *sb = NULL;
	char status[STORE_STATUS_MAX];
	int e = sbx_acquire(r->d->sandboxes, r->who.team, r->params[0], &sb, status);
	if (e == 0)
		return sb;
	if (e == -ENOENT)
		http_reply_error(r, API_ERR_SANDBOX_NOT_FOUND, "no sandbox '%.64s'", r->params[0]);
	else if (e == -ESRCH)
		http_reply_error(r, API_ERR_SANDBOX_NOT_RUNNING, "sandbox %.64s is not running (its status: %s)",
				 r->params[0], strcmp(status, "running") ? status : "stopping");
	else
		http_reply_error(r, API_ERR_INTERNAL, "the registry failed");
	return NULL;
}

void api_reply_agent_failure(struct http_req *r, struct sbx *sb, int err, const char *what)
{
	if (err == -ESRCH || (sb && sbx_ending(sb))) {
		http_reply_error(r, API_ERR_SANDBOX_NOT_RUNNING,
				 "sandbox %s stopped or was paused during %s", sb ? sbx_id(sb) : "?", what);
		return;
	}
	switch (err) {
	case -ETIMEDOUT:
		http_reply_error(r, API_ERR_AGENT_TIMEOUT,
				 "the guest agent did not finish %s in time",
				 what);
		return;
	case -ECONNRESET:
	case -EPIPE:
		http_reply_error(r, API_ERR_AGENT_UNAVAILABLE, "lost the guest agent during %s",
				 what);
		return;
	case -EMFILE:
		http_reply_error(r, API_ERR_AGENT_BUSY,
				 "too many operations at once in this sandbox");
		return;
	default:
		http_reply_error(r, API_ERR_AGENT_ERROR, "%s failed: %s", what, strerror(-err));
	}
}

struct errno_map {
	const char *guest;
	enum api_err err;
};

static const struct errno_map errno_map[] = {
	{"ENOENT", API_ERR_FILE_NOT_FOUND},
	{"EISDIR", API_ERR_IS_A_DIRECTORY},
	{"ENOTDIR", API_ERR_NOT_A_DIRECTORY},
	{"EACCES", API_ERR_PERMISSION_DENIED},
	{"EPERM", API_ERR_PERMISSION_DENIED},
	{"EROFS", API_ERR_PERMISSION_DENIED},
	{"EEXIST", API_ERR_ALREADY_EXISTS},
	{"ENOTEMPTY", API_ERR_DIRECTORY_NOT_EMPTY},
	{"EINVAL", API_ERR_INVALID_PATH},
	{"ENAMETOOLONG", API_ERR_INVALID_PATH},
	{"ELOOP", API_ERR_INVALID_PATH},
	{"ENOSPC", API_ERR_NO_SPACE},
	{"EDQUOT", API_ERR_NO_SPACE},
	{"E2BIG", API_ERR_BODY_TOO_LARGE},
	{"EFBIG", API_ERR_BODY_TOO_LARGE},
};

/* On the file routes only: the file exists but its kernel would not read
 * or write it (a device, /proc/self/mem, a running binary), the caller's
 * choice of file, not a failure of the service.  (From an exec, EAGAIN or
 * EIO mean something else.) */
static const char *const file_io_errnos[] = {
	"EIO", "ETXTBSY", "EBUSY", "ENXIO", "ENODEV", "EOPNOTSUPP", "ESPIPE", "EOVERFLOW", "EAGAIN",
};

/* The {"code", "message"} object of an agent END or ERROR, or NULL. */
static json_t *guest_error(json_t *result)
{
	json_t *e = json_object_get(result, "error");
	if (!e && json_is_string(json_object_get(result, "code")))
		e = result; /* an ERROR frame's object is the error itself */
	return json_is_object(e) ? e : NULL;
}

int api_agent_error_map(json_t *result, enum api_err *err, char *msg, size_t msglen)
{
	json_t *e = guest_error(result);
	if (!e)
		return 0;
	const char *gc = json_string_value(json_object_get(e, "code"));
	const char *gm = json_string_value(json_object_get(e, "message"));
	if (!gc)
		gc = "EIO";
	snprintf(msg, msglen, "%.16s: %.300s", gc, gm ? gm : "");
	*err = API_ERR_AGENT_ERROR;
	for (size_t i = 0; i < sizeof(errno_map) / sizeof(errno_map[0]); i++) {
		if (strcmp(gc, errno_map[i].guest) == 0) {
			*err = errno_map[i].err;
			break;
		}
	}
	return 1;
}

int api_agent_error(struct http_req *r, json_t *result)
{
	enum api_err err;
	char msg[400];
	if (!api_agent_error_map(result, &err, msg, sizeof(msg)))
		return 0;
	http_reply_error(r, err, "%s", msg);
	return 1;
}

int api_agent_file_error(struct http_req *r, json_t *result)
{
	enum api_err err;
	char msg[400];
	if (!api_agent_error_map(result, &err, msg, sizeof(msg)))
		return 0;
	const char *gc = json_string_value(json_object_get(guest_error(result), "code"));
	for (size_t i = 0; gc && i < sizeof(file_io_errnos) / sizeof(file_io_errnos[0]); i++)
		if (strcmp(gc, file_io_errnos[i]) == 0)
			err = API_ERR_FILE_IO_ERROR;
	http_reply_error(r, err, "%s", msg);
	return 1;
}

json_t *api_fs_entry_json(json_t *entry)
{
	if (!json_is_object(entry))
		return NULL;
	static const char *const types[] = {"file", "dir", "symlink", "other"};
	json_t *o = json_object();
	if (!o)
		return NULL;
	static const char *const strs[] = {"name", "path"};
	for (size_t i = 0; i < 2; i++) {
		json_t *v = json_object_get(entry, strs[i]);
		const char *s = json_string_value(v);
		json_object_set_new(o, strs[i],
				    s ? utf8_json_lossy(s, json_string_length(v)) : json_null());
	}
	const char *type = json_string_value(json_object_get(entry, "type"));
	const char *t = "other";
	for (size_t i = 0; type && i < 4; i++)
		if (!strcmp(type, types[i]))
			t = types[i];
	json_object_set_new(o, "type", json_string(t));
	static const char *const nums[] = {"size", "mode", "mtime_ms"};
	for (size_t i = 0; i < 3; i++) {
		json_t *v = json_object_get(entry, nums[i]);
		json_object_set_new(o, nums[i],
				    json_is_integer(v) && json_integer_value(v) >= 0
					    ? json_integer(json_integer_value(v))
					    : json_null());
	}
	return o;
}

