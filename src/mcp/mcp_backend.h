/*
 * mcp_backend.h - what the MCP tools need from PandaStack, as a small
 * table of operations: the protocol core (mcp_server.h) and the tool
 * definitions (mcp_tools.h) exist once and call through it, and each front
 * end brings its backend.  Both front ends use the REST backend
 * (mcp_backend_rest.h): `pandastack mcp` with the user's API URL and key,
 * and the daemon's POST /mcp over loopback with the caller's own key.
 *
 * Every operation mirrors one REST route (docs/api.md) and returns 0, or
 * -errno with *f filled: an API error keeps the API's status, code and
 * message (code "context_not_found" is what the core looks for to make a
 * context again), a transport failure has status 0.  JSON values handed
 * in are borrowed; JSON values handed out are new references the caller
 * releases.  Text handed out is the API's, unsanitised.
 *
 * Threads: an operation runs on the caller's thread and may block for as
 * long as the call takes; a backend (its arg) is used by one thread at a
 * time.
 */
#ifndef PANDASTACK_MCP_BACKEND_H
#define PANDASTACK_MCP_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Why an operation failed. */
struct mcp_fail {
	long status;        /* the API's HTTP status; 0 when it was not reached */
	char code[64];      /* "sandbox_not_found", "connect_failed", ... */
	char message[1024]; /* human-readable; may be cut */
};

struct mcp_backend {
	void *arg; /* passed to every operation */

	/* POST /v1/sandboxes {template, ttl_seconds (0: the daemon's default)}
	 * -> *sandbox, the API's sandbox object. */
	int (*create_sandbox)(void *arg, const char *template_name, int64_t ttl_seconds,
			      json_t **sandbox, struct mcp_fail *f);
	/* GET /v1/sandboxes -> *list, the API's {"sandboxes": [...]}. */
	int (*list_sandboxes)(void *arg, json_t **list, struct mcp_fail *f);
	/* DELETE /v1/sandboxes/{id}. */
	int (*kill_sandbox)(void *arg, const char *sandbox_id, struct mcp_fail *f);
	/* POST /v1/sandboxes/{id}/contexts {} -> the new context's id in ctx_id
	 * (ctx_len bytes with the NUL). */
	int (*create_context)(void *arg, const char *sandbox_id, char *ctx_id, size_t ctx_len,
			      struct mcp_fail *f);
	/* POST .../contexts/{ctx}/run_code {code, timeout_seconds when >= 0}
	 * -> *execution, the API's Execution object. */
	int (*run_code)(void *arg, const char *sandbox_id, const char *ctx_id, const char *code,
			double timeout_seconds, json_t **execution, struct mcp_fail *f);
	/* POST /v1/sandboxes/{id}/exec with body (the API's exec body)
	 * -> *result, the API's exec result. */
	int (*exec)(void *arg, const char *sandbox_id, const json_t *body, json_t **result,
		    struct mcp_fail *f);
	/* GET /v1/sandboxes/{id}/fs?path= -> *data (heap, NUL-terminated, the
	 * caller frees) and *len; a file over max bytes fails with -EFBIG
	 * (code "file_too_large"). */
	int (*read_file)(void *arg, const char *sandbox_id, const char *path, size_t max,
			 char **data, size_t *len, struct mcp_fail *f);
	/* PUT /v1/sandboxes/{id}/fs?path= with len bytes of data -> *result,
	 * the API's {"path", "size"}. */
	int (*write_file)(void *arg, const char *sandbox_id, const char *path, const void *data,
			  size_t len, json_t **result, struct mcp_fail *f);
};

#endif
