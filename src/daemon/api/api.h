/*
 * api.h - the REST API's route handlers, one api_<resource>.c file per
 * resource (each group of declarations below names the file that defines
 * it), and the helpers they share (api_common.c).  docs/api.md describes
 * every route, field and error.
 *
 * Handlers run on their request's connection thread, may block, and answer
 * exactly once with http_reply_* (see route.h for when each is called).
 */
#ifndef PANDASTACK_DAEMON_API_H
#define PANDASTACK_DAEMON_API_H

#include <stdint.h>

#include <jansson.h>

#include "daemon/http/http_req.h"
#include "daemon/http/request_body.h"
#include "daemon/sandbox/sandbox.h"
#include "daemon/store/store.h"
#include "mcp/mcp_rpc.h"

/* JSON body caps per route, bytes. */
#define API_BODY_SMALL (64u * 1024)
#define API_BODY_EXEC (2u * 1024 * 1024)
#define API_BODY_CODE (8u * 1024 * 1024) /* 1 MiB of code, JSON-escaped */
#define API_BODY_MCP MCP_RPC_MESSAGE_MAX /* one JSON-RPC message (16 MiB) */

/* Bound on one file/metadata agent operation (stat, list, ...), ms. */
#define API_AGENT_CALL_MS 30000

/* ---- handlers: each answers one route of routes.c (docs/api.md) ---------- */

/* GET /healthz: status, version, accelerator (api_system.c). */
void api_healthz(struct http_req *r);
/* GET /metrics (admin): Prometheus text (api_system.c). */
void api_metrics(struct http_req *r);

/* POST /mcp: one MCP message over Streamable HTTP; DELETE /mcp: end an MCP
 * session (api_mcp.c, docs/mcp.md). */
void api_mcp_post(struct http_req *r);
void api_mcp_delete(struct http_req *r);

/* POST /v1/keys: a new key, its secret shown once (api_keys.c). */
void api_keys_create(struct http_req *r);
/* GET /v1/keys: the team's keys (all for an admin), no secrets. */
void api_keys_list(struct http_req *r);
/* DELETE /v1/keys/{id}: a team key (any non-admin key for an admin). */
void api_keys_delete(struct http_req *r);

/* GET /v1/templates: the cache's templates and API builds (api_templates.c). */
void api_templates_list(struct http_req *r);
/* POST /v1/templates/{name}/build (admin): start a bake, 202. */
void api_templates_build(struct http_req *r);

/* POST /v1/sandboxes: create (sbx_create), 201 (api_sandboxes.c). */
void api_sandboxes_create(struct http_req *r);
/* GET /v1/sandboxes: the team's rows, ?status= and ?metadata.K=V filters. */
void api_sandboxes_list(struct http_req *r);
/* GET /v1/sandboxes/{id}: one row of the team. */
void api_sandboxes_get(struct http_req *r);
/* DELETE /v1/sandboxes/{id}: stop it and remove the row, 204. */
void api_sandboxes_delete(struct http_req *r);
/* POST /v1/sandboxes/{id}/ttl: move the expiry. */
void api_sandboxes_ttl(struct http_req *r);

/* GET /v1/sandboxes/{id}/network: the sandbox's egress policy
 * (api_network.c). */
void api_network_get(struct http_req *r);
/* PUT /v1/sandboxes/{id}/network: the keys of the body replace those of
 * the policy, the others keep theirs; it applies at once, open connections
 * it refuses are closed; answers the new policy. */
void api_network_put(struct http_req *r);
/* POST /v1/sandboxes/{id}/snapshots: capture, 201 (api_snapshots.c). */
void api_snapshots_create(struct http_req *r);
/* GET /v1/snapshots: the team's snapshots (api_snapshots.c). */
void api_snapshots_list(struct http_req *r);
/* GET /v1/snapshots/{id} (api_snapshots.c). */
void api_snapshots_get(struct http_req *r);
/* DELETE /v1/snapshots/{id}: 204, 409 while a paused sandbox needs it. */
void api_snapshots_delete(struct http_req *r);
/* POST /v1/sandboxes/{id}/fork: one capture, count creates (api_snapshots.c). */
void api_sandboxes_fork(struct http_req *r);
/* POST /v1/sandboxes/{id}/pause and .../resume (api_snapshots.c). */
void api_sandboxes_pause(struct http_req *r);
void api_sandboxes_resume(struct http_req *r);

/* POST /v1/sandboxes/{id}/exec: run, collect, answer the result (api_exec.c). */
void api_exec(struct http_req *r);
/* POST /v1/sandboxes/{id}/exec_stream: run, relay output as SSE
 * (api_exec_stream.c). */
void api_exec_stream(struct http_req *r);

/* Background commands (api_commands.c, api_command_output.c):
 * GET .../commands, POST .../commands/{cid}/kill, GET .../output,
 * POST .../stdin.  The start is POST .../exec with "background": true. */
void api_commands_list(struct http_req *r);
void api_commands_kill(struct http_req *r);
void api_commands_output(struct http_req *r);
void api_commands_stdin(struct http_req *r);

/* POST /v1/sandboxes/{id}/run_code: a one-shot python or shell snippet in
 * a fresh process (api_run_code.c). */
void api_run_code(struct http_req *r);

/* POST /v1/sandboxes/{id}/contexts: start a code context, 201
 * (api_contexts.c). */
void api_contexts_create(struct http_req *r);
/* GET /v1/sandboxes/{id}/contexts: the sandbox's contexts. */
void api_contexts_list(struct http_req *r);
/* DELETE /v1/sandboxes/{id}/contexts/{ctx}: shut the kernel down, 204. */
void api_contexts_delete(struct http_req *r);
/* POST .../contexts/{ctx}/interrupt: interrupt the running cell (SIGINT to
 * the kernel's process group; the context keeps its state), 204. */
void api_contexts_interrupt(struct http_req *r);
/* POST .../contexts/{ctx}/restart: replace the kernel (state lost; the
 * running cell ends with an error, waiting ones run on the new kernel),
 * 204. */
void api_contexts_restart(struct http_req *r);
/* POST .../contexts/{ctx}/run_code: run a cell, answer its Execution
 * (api_context_run.c). */
void api_context_run(struct http_req *r);
/* POST .../contexts/{ctx}/run_code_stream: the same cell, its events as
 * SSE (api_context_run.c). */
void api_context_run_stream(struct http_req *r);

/* GET /v1/sandboxes/{id}/fs: stream a file out (api_fs_transfer.c). */
void api_fs_download(struct http_req *r);
/* PUT /v1/sandboxes/{id}/fs: begin (checks, opens the agent stream), each
 * chunk of the body, end (EOF, the agent's answer) (api_fs_transfer.c). */
void api_fs_upload_begin(struct http_req *r);
void api_fs_upload_chunk(struct http_req *r, const char *data, size_t len);
void api_fs_upload_end(struct http_req *r);
/* DELETE .../fs, GET .../fs/stat, GET .../fs/list, POST .../fs/mkdir
 * (api_fs.c). */
void api_fs_remove(struct http_req *r);
void api_fs_stat(struct http_req *r);
void api_fs_list(struct http_req *r);
void api_fs_mkdir(struct http_req *r);

/* Any method on a sandbox's exposed port (route.h ROUTE_AUTH_PORT): begin
 * (access, connect, the request head), each chunk of the body, end (the
 * guest's answer, streamed, or a 101 and a splice) (api_ports.c). */
void api_ports_begin(struct http_req *r);
void api_ports_chunk(struct http_req *r, const char *data, size_t len);
void api_ports_end(struct http_req *r);

/* ---- the route table (routes.c) -------------------------------------------- */

/* routes_table - the daemon's table (static) and its length in *n: what
 * main.c hands the HTTP server (http_server_start). */
const struct route *routes_table(size_t *n);

/* routes_print - one "METHOD PATTERN" line per route to f. */
void routes_print(FILE *f);

/* ---- shared helpers (api_common.c) --------------------------------------- */

/* api_sandbox_json_full - sandbox_json (sandbox_json.h) with what only the
 * answers about one sandbox show its team (create, GET /v1/sandboxes/{id}):
 * its ports' access_token and the daemon's proxy_domain (docs/network.md). */
json_t *api_sandbox_json_full(struct http_req *r, const struct sandbox_row *row);

/*
 * api_sandbox_row - the stored row of the request's {id} (any status) for
 * its team: 0 with *row (sandbox_row_clear), or -errno with the answer
 * already sent (404 sandbox_not_found, 500).
 */
int api_sandbox_row(struct http_req *r, struct sandbox_row *row);

/* api_reply_body_error - 400 with a validation error. */
void api_reply_body_error(struct http_req *r, const struct body_error *e);

/*
 * api_acquire - the sandbox of the request's {id} for its team, or an
 * answer already sent (404 sandbox_not_found, 409 sandbox_not_running,
 * 500) and NULL.
 */
struct sbx *api_acquire(struct http_req *r);

/*
 * api_reply_agent_failure - answer for an agent operation that failed with
 * err (-ESRCH, -ECONNRESET, -ETIMEDOUT, -EPROTO, ...) on sb: 409 if the
 * sandbox ended meanwhile, else 502 agent_unavailable / 504 agent_timeout /
 * 500.  what names the operation for the message.
 */
void api_reply_agent_failure(struct http_req *r, struct sbx *sb, int err, const char *what);

/*
 * api_agent_error - if result (an agent END or ERROR object, may be NULL)
 * carries {"error": {"code", "message"}} (or is one), map the guest's errno
 * name to an HTTP status and API code (ENOENT 404 file_not_found, EISDIR
 * 409 is_a_directory, ENOTDIR 409 not_a_directory, EACCES/EPERM 403
 * permission_denied, EEXIST 409 already_exists, ENOTEMPTY 409
 * directory_not_empty, EINVAL/ENAMETOOLONG 400 invalid_path, ENOSPC 507
 * no_space, E2BIG/EFBIG 413 body_too_large, others 500 agent_error) and
 * answer with it.  Returns 1 if it answered, 0 if result is no error.
 */
int api_agent_error(struct http_req *r, json_t *result);

/* api_agent_file_error - api_agent_error for the file routes: a guest errno
 * that says the file cannot be read or written as asked (EIO, ETXTBSY,
 * EBUSY, ENXIO, ENODEV, EOPNOTSUPP, ESPIPE, EOVERFLOW, EAGAIN) is 422
 * file_io_error instead of 500 agent_error.  Returns as api_agent_error. */
int api_agent_file_error(struct http_req *r, json_t *result);

/* api_agent_error_map - the mapping of api_agent_error without answering:
 * returns 1 with *err (a row of the error table) and msg filled, or 0. */
int api_agent_error_map(json_t *result, enum api_err *err, char *msg, size_t msglen);

/*
 * api_exit_json - the exit object of an exec from the agent's END object
 * (guest data, checked): {"exit_code", "duration_ms", "timed_out", "signal",
 * "stdout_truncated", "stderr_truncated"}; duration_ms falls back to
 * measured_ms.  New reference or NULL (ENOMEM).
 */
json_t *api_exit_json(json_t *end, int64_t measured_ms);

/*
 * api_fs_entry_json - a guest stat object re-built from its known fields
 * only (name, path, type, size, mode, mtime_ms), with checked types; guest
 * strings made valid UTF-8.  New reference or NULL when entry is not an
 * object.
 */
json_t *api_fs_entry_json(json_t *entry);

/*
 * api_fs_query_path - the checked ?path= of a file route (the query's names
 * were checked with the route): the path (borrowed from r), or NULL with a
 * 400 invalid_path sent.  Request thread.
 */
const char *api_fs_query_path(struct http_req *r);

/* api_exec_request - the agent "exec" request for body b on sb with the
 * given timeout (ms, 0 none) and per-channel output cap (bytes): the
 * sandbox env overlaid with b's.  New reference or NULL (ENOMEM). */
json_t *api_exec_request(struct sbx *sb, const struct exec_body *b, int64_t timeout_ms,
			 uint64_t output_cap);

/*
 * api_exec_begin - parse the exec body of r into *b and take its sandbox:
 * the sandbox (a reference; the caller releases it and clears b), or NULL
 * with the answer sent (400, 404, 409) and b cleared.
 */
struct sbx *api_exec_begin(struct http_req *r, struct exec_body *b);

/*
 * api_exec_open - start the exec b (borrowed; its stdin is copied) on sb
 * with timeout_ms (0: none) as a guest run (guest_run.h) that delivers at
 * most hold_cap bytes per channel (0: no cap) and ends by itself with
 * -ETIMEDOUT GUEST_RUN_END_GRACE_MS after the command's timeout.  Returns 0
 * with *out owned by the caller (guest_run_close), or -errno for
 * api_reply_agent_failure.
 */
struct guest_run;
int api_exec_open(struct http_req *r, struct sbx *sb, const struct exec_body *b,
		  int64_t timeout_ms, size_t hold_cap, struct guest_run **out);

/*
 * api_collect - collect the guest run x into *res (guest_run_collect) for
 * request r, checking every API_POLL_MS whether r's client is still there:
 * once it has gone, returns -ECANCELED and the caller's guest_run_close
 * cancels the run.  Returns as guest_run_collect.  r's handler thread.
 */
#define API_POLL_MS 250
struct guest_run_result;
int api_collect(struct http_req *r, struct guest_run *x, struct guest_run_result *res);

/*
 * api_exec_run - run the exec b (borrowed) on sb with timeout_ms (0: none)
 * and answer the request with its result {stdout, stderr, exit_code,
 * duration_ms, ...} or an error; the client leaving cancels it.  Used by
 * POST .../exec and the one-shot POST .../run_code.  The caller keeps its
 * reference on sb.
 */
void api_exec_run(struct http_req *r, struct sbx *sb, const struct exec_body *b,
		  int64_t timeout_ms);

/* Code context ids: "ctx_" + API_CTX_ID_HEX lowercase hex digits. */
#define API_CTX_ID_HEX 20

/* api_context_id_valid - 1 if s has the form of a context id.  Pure. */
int api_context_id_valid(const char *s);

/*
 * api_context_missing - 1 if the agent's END or ERROR object says the
 * context is not there (ENOENT) or went away during the call (deleted:
 * ECANCELED, reaped: ETIMEDOUT, agent stopping: ESHUTDOWN), else 0.  Pure.
 * api_context_reply_missing - the same check; when it holds, answer 404
 * context_not_found (naming r->params[1]) and return 1.
 */
int api_context_missing(json_t *end);
int api_context_reply_missing(struct http_req *r, json_t *end);

/* api_exec_timeout_ms - the timeout an exec body asks for, or the daemon's
 * default (0: none). */
int64_t api_exec_timeout_ms(struct http_req *r, const struct exec_body *b);

/* Background command ids: "cmd_" + API_CMD_ID_HEX lowercase hex digits. */
#define API_CMD_ID_HEX 20
/* Bytes of a command line an API command object shows (the agent's cap). */
#define API_COMMAND_CMD_SHOWN 4096
/* Bounds on what a guest's command object may say: wall-clock ms (year
 * 9999), byte counts (2^53, exact in every JSON reader). */
#define API_COMMAND_MS_MAX 253402300799999LL
#define API_COMMAND_BYTES_MAX (1LL << 53)
/* Most commands a listing shows (the agent keeps 32). */
#define API_COMMANDS_LISTED 64

/* api_command_id_valid - 1 if s has the form of a command id.  Pure. */
int api_command_id_valid(const char *s);

/*
 * api_command_json - the API's command object from the agent's (g, guest
 * data, may be anything): {"id", "pid", "cmd", "cwd", "started_at",
 * "running", "ended_at", "exit_code", "signal", "timed_out",
 * "stdout_bytes", "stderr_bytes", "stdin_open"}, only fields of the right
 * type and range (else null), strings valid UTF-8 within their caps.  New
 * reference, or NULL when g has no valid command id (or ENOMEM).  Pure.
 */
json_t *api_command_json(json_t *g);

/*
 * api_command_start - POST .../exec with "background": true: start b
 * (borrowed) on sb as a background command, with a timeout only when b
 * asked for one; answer 201 with its command object.
 */
void api_command_start(struct http_req *r, struct sbx *sb, const struct exec_body *b);

/* api_command_check_cid - 1 if r->params[1] is a command id, else answers
 * 404 command_not_found and returns 0. */
int api_command_check_cid(struct http_req *r);

/*
 * api_command_reply_error - if res (an agent END or ERROR object, may be
 * NULL) reports a failure, answer it with the command routes' codes
 * (ENOENT: command_not_found naming r->params[1]; EMFILE:
 * too_many_commands; EBUSY: command_busy; others as api_agent_error) and
 * return 1; else 0.
 */
int api_command_reply_error(struct http_req *r, json_t *res);

/*
 * api_command_call - one question to the agent's command table for r: open
 * a stream on sb with the request req (borrowed), run it with o, collect
 * the answer into *res (api_collect) and close the stream.  0, or -errno
 * of the open, the start or the collection (-ECANCELED: the client left).
 * *res is the caller's to free (guest_run_result_free) either way.
 */
struct guest_run_opts;
int api_command_call(struct http_req *r, struct sbx *sb, json_t *req,
		     const struct guest_run_opts *o, struct guest_run_result *res);

/* api_command_reply - the answer to a call (e, res) whose END is a command
 * object: status with api_command_json, or the failure (what names the
 * call in messages). */
void api_command_reply(struct http_req *r, struct sbx *sb, int e, json_t *res,
		       unsigned status, const char *what);

#endif
