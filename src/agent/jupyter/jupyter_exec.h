/*
 * jupyter_exec.h - one execution's state: the kernel messages whose parent
 * is our execute_request, turned into the product's events in order.
 *
 * Events (JSON objects, appended to x->events in the kernel's order):
 *   {"type": "stdout" | "stderr", "text"}
 *   {"type": "result", ...}                      (jupyter_map.h)
 * and at the end, from jupyter_exec_done:
 *   {"type": "done", "execution_count": n | null, "error": null | {...},
 *    "duration_ms": n, "timed_out": bool}
 *
 * An execution is complete when both execute_reply (shell) and
 * status idle (iopub) with our parent arrived; they travel on different
 * sockets, so either may come first (ipykernel sends the reply, then idle,
 * but nothing orders the two sockets).  The first error message
 * is the error; an error reply without one, or an aborted reply, supplies
 * it otherwise.  update_display_data, clear_output and comm messages are
 * dropped, as E2B does.
 *
 * Output is capped per execution (out_cap bytes of stream text and result
 * JSON): the stream that crosses the cap is cut on a character boundary and
 * ends with "\n[pandastack: output truncated at N bytes]\n"; later output
 * is dropped.  A result over JUPYTER_RESULT_MAX or over the cap is dropped
 * with a marker on stderr.  Stream text is split into events of at most
 * JUPYTER_STREAM_CHUNK bytes.
 *
 * Pure state machine, no I/O.  Threads: one thread per struct.
 */
#ifndef PANDASTACK_AGENT_JUPYTER_EXEC_H
#define PANDASTACK_AGENT_JUPYTER_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "agent/jupyter/jupyter_msg.h"

/* Largest single result event, bytes of JSON (fits an 8 MiB agent frame). */
#define JUPYTER_RESULT_MAX (6u * 1024u * 1024u)
/* Largest text of one stream event, bytes. */
#define JUPYTER_STREAM_CHUNK (1024u * 1024u)

struct jupyter_exec {
	char msg_id[JUPYTER_ID_SIZE]; /* our execute_request's msg_id */
	int got_reply, got_idle;
	int64_t execution_count;      /* -1 until known */
	json_t *error;                /* owned: from the error message */
	json_t *reply_error;          /* owned: from an error/aborted reply */
	int ask_exit;                 /* the reply asked the kernel to exit */
	size_t out_bytes, out_cap;
	int truncated;
	json_t *events;               /* owned array of pending events */
};

/* jupyter_exec_init - a fresh execution for request msg_id with an output
 * cap of out_cap bytes.  Returns 0 or -ENOMEM. */
int jupyter_exec_init(struct jupyter_exec *x, const char *msg_id, size_t out_cap);

/*
 * jupyter_exec_feed - apply one message (iopub or shell).  Returns 1 if its
 * parent is this execution (consumed), 0 if it belongs to someone else,
 * -ENOMEM.
 */
int jupyter_exec_feed(struct jupyter_exec *x, const struct jupyter_msg *m);

/*
 * jupyter_exec_stream - append stream text (len bytes, any bytes: invalid
 * UTF-8 is repaired) as a stdout (is_stderr 0) or stderr event, within the
 * cap.  Used for the fallback kernel's raw fd output too.  0 or -ENOMEM.
 */
int jupyter_exec_stream(struct jupyter_exec *x, int is_stderr, const char *text, size_t len);

/* jupyter_exec_complete - 1 when both the reply and idle arrived. */
int jupyter_exec_complete(const struct jupyter_exec *x);

/* jupyter_exec_take_events - the pending events (new reference to an
 * array, possibly empty), leaving none pending; NULL on memory. */
json_t *jupyter_exec_take_events(struct jupyter_exec *x);

/*
 * jupyter_exec_done - the final event.  error (stolen, may be NULL) wins
 * over what the kernel reported.  Returns a new reference or NULL; it
 * shares no object with x (it may be handed to another thread).
 */
json_t *jupyter_exec_done(struct jupyter_exec *x, int64_t duration_ms, int timed_out,
			  json_t *error);

/* jupyter_exec_clear - free everything x owns.  NULL-safe. */
void jupyter_exec_clear(struct jupyter_exec *x);

#endif
