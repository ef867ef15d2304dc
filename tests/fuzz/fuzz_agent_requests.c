/*
 * fuzz_agent_requests.c - libFuzzer target for the agent's OPEN request
 * validation (src/agent/request.c, agent_req_parse), the JSON a hostile host
 * sends for every op.
 *
 * Each input is parsed as it is; if it is a JSON object it is also parsed
 * once with "op" replaced by each op name, so the fuzzed fields reach every
 * op's validator.  Any crash, leak or sanitizer report is a bug, and so is
 * an accepted request that breaks the documented limits (checked below).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "agent/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_accepted(const struct agent_req *r)
{
	if (r->path && (r->path[0] != '/' || strlen(r->path) > AGENT_REQ_PATH_MAX))
		__builtin_trap();
	if (r->cwd && (r->cwd[0] != '/' || strlen(r->cwd) > AGENT_REQ_PATH_MAX))
		__builtin_trap();
	if ((r->op == AGENT_OP_EXEC || r->op == AGENT_OP_COMMAND_START) &&
	    (!r->cmd || strlen(r->cmd) > AGENT_REQ_CMD_MAX))
		__builtin_trap();
	if (r->nenv > AGENT_REQ_ENV_MAX_VARS || (r->nenv && r->env[r->nenv] != NULL))
		__builtin_trap();
	for (size_t i = 0; i < r->nenv; i++)
		if (!strchr(r->env[i], '=') || r->env[i][0] == '=')
			__builtin_trap();
	if (r->mode > 07777 || r->timeout_ms > AGENT_REQ_TIMEOUT_MAX_MS ||
	    r->output_cap > AGENT_REQ_OUTPUT_CAP_MAX)
		__builtin_trap();
	int file_op = r->op >= AGENT_OP_FILE_WRITE && r->op <= AGENT_OP_MKDIR;
	if (file_op && !r->path)
		__builtin_trap();
	int ctx_op = r->op >= AGENT_OP_CONTEXT_CREATE && r->op <= AGENT_OP_LAST;
	int needs_id = ctx_op && r->op != AGENT_OP_CONTEXT_LIST && r->op != AGENT_OP_CONTEXT_POOL &&
		       r->op != AGENT_OP_COMMAND_LIST;
	if (needs_id && (!r->ctx_id || !r->ctx_id[0] || strlen(r->ctx_id) > AGENT_REQ_CTX_ID_MAX ||
			 strspn(r->ctx_id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					   "0123456789_-") != strlen(r->ctx_id)))
		__builtin_trap();
	if (r->op == AGENT_OP_CONTEXT_RUN &&
	    (!r->code || r->code_len > AGENT_REQ_CODE_MAX || strlen(r->code) != r->code_len))
		__builtin_trap();
	if (r->code && r->op == AGENT_OP_CONTEXT_POOL && r->code_len > AGENT_REQ_WARM_CODE_MAX)
		__builtin_trap();
	if (r->idle_timeout_ms > AGENT_REQ_IDLE_MAX_MS || r->wait_ms > AGENT_REQ_WAIT_MAX_MS)
		__builtin_trap();
	if (r->op == AGENT_OP_COMMAND_KILL && r->signal <= 0)
		__builtin_trap();
	if (r->sandbox_id &&
	    (r->op != AGENT_OP_RESTORE || !r->sandbox_id[0] ||
	     strlen(r->sandbox_id) > AGENT_REQ_CTX_ID_MAX ||
	     strspn(r->sandbox_id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				   "0123456789_-") != strlen(r->sandbox_id)))
		__builtin_trap();
}

static void parse_one(const void *p, size_t n)
{
	struct agent_req r;
	char err[256];
	int rc = agent_req_parse(p, n, &r, err, sizeof(err));
	if (rc == 0) {
		check_accepted(&r);
		agent_req_free(&r);
	} else if (rc != -EBADMSG && rc != -EINVAL && rc != -E2BIG && rc != -ENOMEM) {
		__builtin_trap();
	} else if (!err[0]) {
		__builtin_trap(); /* every refusal says why */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	parse_one(data, size);
	json_t *root = json_loadb((const char *)data, size, 0, NULL);
	if (!json_is_object(root)) {
		json_decref(root);
		return 0;
	}
	for (int op = AGENT_OP_RESTORE; op <= AGENT_OP_LAST; op++) {
		json_object_set_new(root, "op", json_string(agent_op_name((enum agent_op)op)));
		char *txt = json_dumps(root, JSON_COMPACT);
		if (txt) {
			parse_one(txt, strlen(txt));
			free(txt);
		}
	}
	json_decref(root);
	return 0;
}
