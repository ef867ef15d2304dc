/*
 * api_templates.c - GET /v1/templates and POST /v1/templates/{name}/build.
 */
#include <errno.h>
#include <string.h>

#include "daemon/api/api.h"
#include "daemon/daemon.h"
#include "daemon/http/http_reply.h"
#include "daemon/sandbox/templates.h"

void api_templates_list(struct http_req *r)
{
	json_t *arr = templates_list_json(r->d->templates);
	http_reply_json(r, 200, arr ? json_pack("{s:o}", "templates", arr) : NULL);
}

void api_templates_build(struct http_req *r)
{
	struct build_body b;
	struct body_error be;
	if (body_parse_build(r->body, r->body_len, &b, &be) < 0) {
		api_reply_body_error(r, &be);
		return;
	}
	const char *name = r->params[0];
	if (body_check_name(name) < 0) {
		http_reply_error(r, API_ERR_TEMPLATE_NOT_FOUND, "no template recipe '%.64s'", name);
		return;
	}
	int e = templates_build_start(r->d->templates, name, b.force);
	if (e == -ENOENT) {
		http_reply_error(r, API_ERR_TEMPLATE_NOT_FOUND,
				 "no image recipe for '%s' (run `make images` first)", name);
		return;
	}
	if (e == -EBUSY) {
		http_reply_error(r, API_ERR_BUILD_IN_PROGRESS, "a build of '%s' is running", name);
		return;
	}
	if (e < 0) {
		http_reply_error(r, API_ERR_INTERNAL, "could not start the build: %s",
				 strerror(-e));
		return;
	}
	json_t *o = templates_status_json(r->d->templates, name);
	http_reply_json(r, 202, o);
}
