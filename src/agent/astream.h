/*
 * astream.h - one open stream on the agent side, and the contract between the
 * session (which owns streams and talks to the host) and an operation
 * (exec, file transfer, ...) running on a stream.
 *
 * Life of a stream: the host's OPEN creates it and the op's start function
 * runs.  The op produces output with astream_data/astream_eof/astream_event and
 * finishes with exactly one astream_end* call; after that the session calls
 * ops->destroy (never from inside the op's own call) and closes the stream
 * once the END frame is on the wire.  When the host cancels or goes away the
 * session calls ops->cancel (kill, remove temporaries; send nothing) and
 * then ops->destroy, and ends the stream itself.
 *
 * Flow control: DATA may only be queued within astream_room(), which is the
 * smaller of the credit the host granted and the per-stream queue cap.  When
 * room appears (WINDOW from the host, frames written) the session calls
 * ops->pump.  Input bytes (DATA from the host) must be reported with
 * astream_consumed when the op has used them; that grants the host credit.
 *
 * Threads: the loop thread only.
 */
#ifndef PANDASTACK_AGENT_ASTREAM_H
#define PANDASTACK_AGENT_ASTREAM_H

#include <stdint.h>

#include <jansson.h>

#include "agent/loop.h"
#include "agent/outq.h"
#include "agent/request.h"

/* The agent's global context, shared by every stream. */
struct agent_env {
	struct loop *loop;
	int init_mode;          /* PID 1: set the clock, exec cgroups, ... */
	const char *mode_name;  /* "init", "listen", "port" */
	const char *workdir;    /* default cwd of exec */
	const char *cgroup_dir; /* cgroup v2 folder for exec groups, or NULL */
	const char *pip_conf;   /* the pip config file restore manages, or NULL */
	const char *hooks_dir;  /* the after-restore hooks' folder, or NULL */
	const char *hooks_report; /* where restore writes its hooks' report
	                         * (JSON), or NULL */
	int64_t boot_ms;        /* CLOCK_MONOTONIC at the agent's start */
	uint64_t seq;           /* counter for unique names (temp files, cgroups) */
	uint64_t child_nofile;  /* RLIMIT_NOFILE soft limit for commands (the
	                         * agent raises its own for many pipes) */
};

struct astream;

/* What an operation implements.  Any callback may be NULL. */
struct op_ops {
	const char *name;
	/* DATA on channel 0: use or hold the bytes; call astream_consumed for
	 * what was used.  Return 0, or -errno to end the stream with that error
	 * (the op must not call astream_end itself then). */
	int (*input)(struct astream *s, const uint8_t *p, uint32_t len);
	/* EOF on channel 0.  Same return convention as input. */
	int (*input_eof)(struct astream *s);
	/* room to send appeared (credit or queue space): produce more. */
	void (*pump)(struct astream *s);
	/* stop now: kill processes, remove temporaries; queue nothing. */
	void (*cancel)(struct astream *s);
	/* release the op state; the stream no longer reaches the op. */
	void (*destroy)(struct astream *s);
};

/* Most DATA bytes queued per stream, bytes (the credit bounds it too). */
#define ASTREAM_QUEUE_CAP (256u * 1024u)

struct link;

struct astream {
	uint32_t id;
	struct link *link;      /* the session's credit and priority queue */
	struct agent_env *env;
	const struct op_ops *ops;
	void *op;               /* the op's state */
	struct outq q;        /* frames waiting for the wire */
	int ended;              /* END or ERROR queued: input is dropped */
	int destroyed;          /* ops->destroy ran */
	int kick;               /* call ops->pump at the next idle pass */
};

/*
 * astream_room - DATA bytes the op may queue now (0: wait for ops->pump).
 */
uint32_t astream_room(struct astream *s);

/*
 * astream_data - queue n bytes (<= 64 KiB and <= astream_room) as DATA on
 * channel ch, consuming credit.  Returns 0, -ENOSPC (over the room: nothing
 * queued), -ENOMEM, -EPIPE (stream ended).
 */
int astream_data(struct astream *s, uint8_t ch, const void *p, uint32_t n);

/* astream_eof - queue EOF on channel ch.  0 or -errno. */
int astream_eof(struct astream *s, uint8_t ch);

/* astream_event - queue EVENT with obj (reference stolen).  0 or -errno. */
int astream_event(struct astream *s, json_t *obj);

/* astream_end - queue END with obj (stolen; NULL sends {}) and end the
 * stream.  No-op (obj released) if already ended. */
void astream_end(struct astream *s, json_t *obj);

/* astream_end_err - END {"error": {"code": errno name of err (> 0 or < 0),
 * "message": fmt...}}.  No-op if already ended. */
void astream_end_err(struct astream *s, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* astream_consumed - the op used n input bytes: grants the host credit. */
void astream_consumed(struct astream *s, uint32_t n);

/* astream_kick - ask for ops->pump at the next idle pass. */
void astream_kick(struct astream *s);

/* agent_errname - "ENOENT" for ENOENT or -ENOENT; "EIO" if unknown. */
const char *agent_errname(int err);

/*
 * agent_env_build - the environment of what the agent starts for the user
 * (exec commands, code-context kernels): the base (PATH, HOME=/root,
 * LANG=C.UTF-8) with req->env added, same names replaced.  Returns a
 * NULL-terminated array of strings borrowed from req and static storage
 * (free the array only), or NULL (ENOMEM).
 */
char **agent_env_build(const struct agent_req *req);

/*
 * agent_cwd_ready - the working directory of what the agent starts for the
 * user: req_cwd, or the default workdir when NULL (recreated, mode 0755,
 * when a user removed it).  Returns 0 with *out set (borrowed), or 1 after
 * ending s with ENOENT / ENOTDIR / the errno naming what is wrong.  Loop
 * thread.
 */
int agent_cwd_ready(struct astream *s, const char *req_cwd, const char **out);

/* Operation entry points: each either starts the work (setting s->ops and
 * s->op) or ends the stream at once.  It may take strings out of req (set
 * the field to NULL); the session frees what is left with agent_req_free.
 * Return 0, or -errno to end the stream with that error. */
int op_restore_start(struct astream *s, struct agent_req *req);
int op_exec_start(struct astream *s, struct agent_req *req);
int op_file_write_start(struct astream *s, struct agent_req *req);
int op_file_read_start(struct astream *s, struct agent_req *req);
int op_fs_start(struct astream *s, struct agent_req *req); /* stat list remove mkdir */
int op_context_start(struct astream *s, struct agent_req *req); /* context_* */
int op_command_start(struct astream *s, struct agent_req *req); /* command_* */

#endif
