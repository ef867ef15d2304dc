/*
 * request.h - parsing and validating the JSON request of an OPEN frame
 * (docs/agent-protocol.md, "Operations") into a typed struct.
 *
 * agent_req_parse is a pure function: no I/O, no global state, only
 * allocation.  The input is untrusted (a hostile or buggy host): every field
 * is checked for type and range, strings for length, unknown fields and
 * duplicate keys are refused.  The fuzz target tests/fuzz/fuzz_agent_requests.c
 * drives it with arbitrary bytes.
 *
 * Threads: any; one struct agent_req per thread.
 */
#ifndef PANDASTACK_AGENT_REQUEST_H
#define PANDASTACK_AGENT_REQUEST_H

#include <stddef.h>
#include <stdint.h>

enum agent_op {
	AGENT_OP_RESTORE = 1,
	AGENT_OP_EXEC,
	AGENT_OP_FILE_WRITE,
	AGENT_OP_FILE_READ,
	AGENT_OP_STAT,
	AGENT_OP_LIST,
	AGENT_OP_REMOVE,
	AGENT_OP_MKDIR,
	AGENT_OP_CONTEXT_CREATE,
	AGENT_OP_CONTEXT_RUN,
	AGENT_OP_CONTEXT_DELETE,
	AGENT_OP_CONTEXT_INTERRUPT,
	AGENT_OP_CONTEXT_RESTART,
	AGENT_OP_CONTEXT_LIST,
	AGENT_OP_CONTEXT_POOL,
	AGENT_OP_COMMAND_START,
	AGENT_OP_COMMAND_LIST,
	AGENT_OP_COMMAND_KILL,
	AGENT_OP_COMMAND_OUTPUT,
	AGENT_OP_COMMAND_STDIN,
	AGENT_OP_LAST = AGENT_OP_COMMAND_STDIN,
};

/* Longest exec command, bytes without the NUL: one argv string of
 * execve(2) is capped by the kernel at 128 KiB (MAX_ARG_STRLEN). */
#define AGENT_REQ_CMD_MAX (128u * 1024u - 1u)
/* Most variables in an exec env, and their total size ("K=V\0"), bytes. */
#define AGENT_REQ_ENV_MAX_VARS 1024u
#define AGENT_REQ_ENV_MAX_BYTES (1024u * 1024u)
/* Longest path, bytes without the NUL (PATH_MAX - 1). */
#define AGENT_REQ_PATH_MAX 4095u
/* Largest exec timeout, ms (7 days); 0 means none. */
#define AGENT_REQ_TIMEOUT_MAX_MS (7ull * 24 * 3600 * 1000)
/* Default and largest per-channel output cap of exec, bytes. */
#define AGENT_REQ_OUTPUT_CAP_DEFAULT (64ull * 1024 * 1024)
#define AGENT_REQ_OUTPUT_CAP_MAX (1ull << 40)
/* Entropy bytes carried by restore. */
#define AGENT_REQ_ENTROPY_BYTES 64u
/* Code contexts: id length (bytes of [A-Za-z0-9_-]), code of one run,
 * warm-up code of the pool, bytes; largest idle timeout, ms (7 days). */
#define AGENT_REQ_CTX_ID_MAX 64u
#define AGENT_REQ_CODE_MAX (4u * 1024u * 1024u)
#define AGENT_REQ_WARM_CODE_MAX (64u * 1024u)
#define AGENT_REQ_IDLE_MAX_MS AGENT_REQ_TIMEOUT_MAX_MS
/* context_pool: most warm kernels (kernel.h's KERNEL_POOL_MAX). */
#define AGENT_REQ_POOL_KERNELS_MAX 8u
/* command_output: longest wait for new output, ms. */
#define AGENT_REQ_WAIT_MAX_MS (10u * 60u * 1000u)

/* A validated request.  Strings and env are owned (free with
 * agent_req_free); fields not used by the op are zero / NULL. */
struct agent_req {
	enum agent_op op;
	char *path;             /* file ops: absolute, < 4096 bytes */
	/* exec */
	char *cmd;              /* the shell command (sh -c) */
	char **env;             /* nenv "KEY=VALUE" strings, NULL-terminated */
	size_t nenv;
	char *cwd;              /* absolute, or NULL for the default */
	uint64_t timeout_ms;    /* 0: no timeout */
	int want_stdin;         /* 1: input comes as DATA channel 0 */
	uint64_t output_cap;    /* bytes per channel */
	/* file_write, mkdir */
	unsigned mode;          /* permission bits, <= 07777 */
	int parents;            /* create missing parent folders */
	/* remove */
	int recursive;
	/* restore */
	uint64_t wall_clock_ns; /* CLOCK_REALTIME to set, ns since the epoch */
	uint8_t entropy[AGENT_REQ_ENTROPY_BYTES];
	char *pip_index_url;    /* checked (common/pip_index.h), or NULL */
	char *sandbox_id;       /* the sandbox handed out (1..AGENT_REQ_CTX_ID_MAX
	                         * bytes of [A-Za-z0-9_-]): run the after-restore
	                         * hooks for it; NULL: none (a bake, a pool entry) */
	/* context_* (cwd, env, timeout_ms and output_cap above apply too) and
	 * command_* (cmd, env, cwd, timeout_ms above apply too) */
	char *ctx_id;           /* 1..AGENT_REQ_CTX_ID_MAX bytes of [A-Za-z0-9_-]:
	                         * a context's or a command's id */
	char *code;             /* context_run, context_pool (warm-up); NUL-free */
	size_t code_len;        /* bytes of code without the NUL */
	uint64_t idle_timeout_ms; /* context_create: reap after this idle; 0 default */
	uint64_t pool_kernels;  /* context_pool: warm kernels to keep; 0 default (1) */
	char *notebook;         /* context_create: the notebook file (absolute), or NULL */
	int notebook_off;       /* context_create: keep no notebook file */
	/* command_kill */
	int signal;             /* SIGKILL unless named ("SIGTERM", ...) */
	/* command_output */
	uint64_t offset[2];     /* stdout_offset, stderr_offset: bytes already read */
	uint64_t max_bytes;     /* per channel; 0: all that is kept */
	uint64_t wait_ms;       /* wait this long for output or the end; 0: answer now */
	/* command_stdin */
	int eof;                /* close the command's stdin after these bytes */
};

/*
 * agent_req_parse - parse len bytes of JSON (need not be NUL-terminated)
 * into *out (overwritten; free with agent_req_free after success).
 * err (errlen bytes, may be NULL) receives a one-line reason on failure.
 * Returns 0, or:
 *   -EBADMSG  not JSON, or not an object (answer with an ERROR frame)
 *   -EINVAL   missing/unknown op, wrong field type or value, unknown field,
 *             relative path (answer with END {"error": ...})
 *   -E2BIG    a string or the env over its cap
 *   -ENOMEM
 * On failure *out holds nothing to free.
 */
int agent_req_parse(const void *json, size_t len, struct agent_req *out, char *err,
		    size_t errlen);

/* agent_req_free - release what r owns and zero it.  Safe on a zeroed r. */
void agent_req_free(struct agent_req *r);

/* agent_op_name - the op's wire name ("exec"), or "?". */
const char *agent_op_name(enum agent_op op);

#endif
