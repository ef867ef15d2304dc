/*
 * guest_run.h - the one reader of a command or a code cell running in the
 * guest: op "exec" and op "context_run" of the agent protocol
 * (docs/agent-protocol.md), read as typed events.  Every exec on the host
 * goes through it (the daemon's /exec, /exec_stream, /run_code and code
 * context routes, the bake, the operator tool, tests, benchmarks).
 *
 *   guest_run_open / guest_run_start   send the request, copy stdin
 *   guest_run_next                     the next event, waiting up to a timeout
 *   guest_run_cancel, guest_run_close  stop it / free it
 *   guest_run_collect, guest_run_exec  everything at once (convenience)
 *
 * Events of an exec: STARTED (pid), STDOUT and STDERR (raw bytes from DATA
 * on PROTO_CH_STDOUT / PROTO_CH_STDERR), then EXIT (the END object) or
 * ERROR.  Events of a code cell: STARTED (the agent accepted the run),
 * STDOUT and STDERR (the text of the kernel's stream events), RESULT (a
 * result / display-data object), then EXIT (the END object: the cell's
 * execution_count and its exception, if any) or ERROR.  Exactly one EXIT or
 * ERROR ends every run, whatever the guest does: a guest that breaks the
 * protocol (an unknown channel, bad JSON, a flood) or goes away ends the
 * run with ERROR, never a crash or a hang.
 *
 * Stdin: fed by the reader itself, interleaved with reading, in the thread
 * that calls guest_run_next: each call first writes as much of the input
 * as the agent's credit allows (never waiting for credit), then takes the
 * next message, and while there is none waits for either a message or new
 * credit (guest_stream_poll).  Input and output therefore flow together
 * and a command that echoes more than the protocol's window of its input
 * cannot stall both sides (writing all input before reading would
 * deadlock).  Interleaving rather than a writer thread: no thread to
 * start, cancel and join per exec, no second owner of the stream, and the
 * caller's timeout bounds the writes as well as the reads.  Input is only
 * sent while someone calls guest_run_next; a streamed answer that waits
 * for its client pauses the command's input as it pauses its output.
 *
 * Trust: everything from the guest is checked; output beyond the caller's
 * cap is not delivered (and is flagged), JSON events are the agent
 * connection's capped objects.
 *
 * Threads: a run is used by one thread at a time; different runs on one
 * connection may be used from different threads.
 */
#ifndef PANDASTACK_GUEST_RUN_H
#define PANDASTACK_GUEST_RUN_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "engine/guest/guest_stream.h"

/* What the agent has after a command's own timeout to end it, ms: the
 * agent kills the process tree at its timeout and then sends END. */
#define GUEST_RUN_END_GRACE_MS 30000

enum guest_run_kind {
	GUEST_RUN_EXEC = 1, /* op "exec" */
	GUEST_RUN_CELL,     /* op "context_run" */
};

enum guest_event_type {
	GUEST_EV_STARTED = 1, /* exec: started (pid); cell: accepted (json) */
	GUEST_EV_STDOUT,      /* data, len */
	GUEST_EV_STDERR,      /* data, len */
	GUEST_EV_RESULT,      /* cell: json is the agent's result event */
	GUEST_EV_EXIT,        /* last: json is the END object */
	GUEST_EV_ERROR,       /* last: err, json */
};

/* One event.  data and json are borrowed from the run until the next call
 * of guest_run_next (or guest_run_close); take a reference to keep json. */
struct guest_event {
	enum guest_event_type type;
	const uint8_t *data;  /* STDOUT, STDERR: the bytes (exec: raw, any
			       * bytes; cell: UTF-8 text, may hold U+0000) */
	size_t len;
	/* STDOUT, STDERR, RESULT: the output cap was reached at this event:
	 * its bytes are cut (bytes of an exec) or left out whole (a cell's
	 * text, len 0, or result, json NULL), and nothing more of the capped
	 * output is delivered.  Set on one event per cap. */
	int truncated;
	int64_t pid;          /* STARTED of an exec: the command's pid, or -1 */
	json_t *json;         /* STARTED: the agent's event; RESULT; EXIT: the
			       * END object; ERROR: the agent's answer (the END
			       * object holding "error": {"code", "message"},
			       * or the ERROR frame's {"code", "message"}), or
			       * NULL when the host ended the run */
	/* ERROR: why, -errno: -EPROTO the agent reported a failure (json
	 * set) or broke the protocol on this stream (json NULL);
	 * -ECONNRESET the connection was lost; -ETIMEDOUT the run's
	 * deadline passed (the run was cancelled); -ENOMEM. */
	int err;
};

struct guest_run_opts {
	enum guest_run_kind kind;
	/* exec: bytes to feed as stdin then EOF (copied by the open; the
	 * request must say "stdin": true), or NULL for none. */
	const void *stdin_data;
	size_t stdin_len;
	/* Output the reader delivers, bytes (0: no cap): with cap_shared 0,
	 * stdout and stderr each; with cap_shared 1, stdout, stderr and
	 * results together (the size of a result is its JSON text). */
	size_t output_cap;
	int cap_shared;
	/* Host-side bound on the whole run from its open, ms (0: none): past
	 * it the run is cancelled and ends with ERROR -ETIMEDOUT.  For an
	 * exec: its timeout_ms + GUEST_RUN_END_GRACE_MS. */
	int64_t deadline_ms;
};

struct guest_run;

/*
 * guest_run_start - read st, a stream just opened with an "exec" or
 * "context_run" request (as o->kind says), as a run.  Takes st (closed with
 * the run, also on failure).  Returns 0 with *out owned by the caller
 * (guest_run_close), -EINVAL (no kind), -ENOMEM.
 */
int guest_run_start(struct guest_stream *st, const struct guest_run_opts *o,
		    struct guest_run **out);

/*
 * guest_run_open - guest_stream_open(c, req) then guest_run_start.  req is
 * borrowed.  Returns 0, or the errors of both.
 */
int guest_run_open(struct guest_conn *c, json_t *req, const struct guest_run_opts *o,
		   struct guest_run **out);

/*
 * guest_run_next - feed what stdin the agent has credit for, then take the
 * next event, waiting up to timeout_ms (-1: no bound; 0: do not wait).
 * Returns 1 with *ev filled; -ETIMEDOUT when no event came within
 * timeout_ms (the run goes on: check what you need, e.g. that the client
 * is still there, and call again); 0 after the last event (EXIT or ERROR)
 * was taken.
 */
int guest_run_next(struct guest_run *x, struct guest_event *ev, int timeout_ms);

/* guest_run_again - make the next guest_run_next return the event it
 * returned last, again (a caller that looked at the first event before
 * deciding how to answer).  No-op before the first event. */
void guest_run_again(struct guest_run *x);

/* guest_run_received - bytes the agent sent on STDOUT or STDERR (type) so
 * far, including those past the cap.  0 for other types. */
uint64_t guest_run_received(const struct guest_run *x, enum guest_event_type type);

/* guest_run_cancel - ask the agent to stop the run (CANCEL) and stop
 * feeding stdin; the run then ends with ERROR (the agent's ECANCELED, or
 * EXIT if it had already ended).  Returns 0 or -errno. */
int guest_run_cancel(struct guest_run *x);

/* guest_run_close - cancel the run if it has not ended, free it.  NULL is a
 * no-op. */
void guest_run_close(struct guest_run *x);

/* --- everything at once (guest_run_collect.c) ----------------------------- */

/* What guest_run_collect gathered.  Free with guest_run_result_free. */
struct guest_run_result {
	int exit_code;           /* exec: the END's exit_code, -1 if none */
	int signal;              /* exec: the END's signal, 0 if none */
	int timed_out;           /* the END's timed_out */
	char *out, *err;         /* delivered stdout / stderr, NUL-terminated, owned */
	size_t out_len, err_len; /* their bytes */
	uint64_t out_total, err_total; /* bytes the agent sent, past the cap too */
	int out_truncated, err_truncated; /* the cap cut stdout / stderr */
	int results_truncated;   /* cell: a result was left out at the cap */
	json_t *results;         /* cell: array of the result events (owned) */
	json_t *end;             /* the EXIT object, or the ERROR's json (owned) */
};

/*
 * guest_run_collect - take every event of x until its end into r (filled;
 * free it with guest_run_result_free also on error).  Waits poll_ms at a
 * time (-1: no bound) and after every wait that saw nothing asks stop(arg)
 * (NULL: never stop); stop returning nonzero ends the collect with
 * -ECANCELED (close x to cancel the run).
 * Returns 0 (EXIT: r->end holds it), or the ERROR's err (-EPROTO with
 * r->end the agent's answer when it gave one, -ECONNRESET, -ETIMEDOUT,
 * -ENOMEM), or -ECANCELED.
 */
int guest_run_collect(struct guest_run *x, struct guest_run_result *r, int poll_ms,
		      int (*stop)(void *arg), void *arg);

/* guest_run_result_free - release what r holds; r may be reused. */
void guest_run_result_free(struct guest_run_result *r);

/* Options of guest_run_exec. */
struct guest_run_exec_opts {
	int timeout_ms;         /* guest-side timeout (0: none); the host waits
				 * this + GUEST_RUN_END_GRACE_MS */
	json_t *env;            /* borrowed object of strings, or NULL */
	const char *cwd;        /* NULL: the agent's default */
	const void *stdin_data; /* bytes sent as stdin, or NULL for /dev/null */
	size_t stdin_len;
	size_t capture_cap;     /* bytes kept per channel (0: 1 MiB); the rest is counted */
};

/*
 * guest_run_exec - run cmd (/bin/sh -c) on c and collect it: for the
 * bake's warm-up, the operator tool, tests and benchmarks.  o may be NULL
 * (defaults).  r is filled (free with guest_run_result_free even on
 * error).  Returns 0 when the command ran (whatever its exit code), -EPROTO
 * (the agent answered with an error; r->end has it), -ETIMEDOUT,
 * -ECONNRESET, -ENOMEM.  Any thread (each call has its own stream).
 */
int guest_run_exec(struct guest_conn *c, const char *cmd, const struct guest_run_exec_opts *o,
		   struct guest_run_result *r);

#endif
