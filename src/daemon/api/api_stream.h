/*
 * api_stream.h - a 200 text/event-stream answer fed by a guest run
 * (guest_run.h): the one driver of POST .../exec_stream and POST
 * .../contexts/{ctx}/run_code_stream (docs/api.md).
 *
 * The answer is produced by a libmicrohttpd content reader on the
 * connection's own thread.  It waits for the run's next event at most
 * API_STREAM_POLL_MS at a time; between events it checks whether the
 * client is still there (when it left, the answer ends and the run is
 * closed, which cancels it in the guest) and sends ": keepalive" comment
 * lines after API_STREAM_KEEPALIVE_MS of silence.  The route turns events
 * into SSE events (its event callback); the driver itself answers what the
 * host found (the connection lost, the agent broke the protocol, the run's
 * deadline): a closing error event sandbox_not_running, agent_unavailable
 * or agent_timeout.
 *
 * Threads: the connection's thread (MHD calls the reader and the free
 * callback there).
 */
#ifndef PANDASTACK_DAEMON_API_STREAM_H
#define PANDASTACK_DAEMON_API_STREAM_H

#include <stdint.h>

#include "daemon/http/http_req.h"
#include "daemon/http/sse.h"
#include "daemon/sandbox/sandbox.h"
#include "engine/guest/guest_run.h"

/* Longest wait for an event before the client is checked, ms. */
#define API_STREAM_POLL_MS 250
/* Silence after which a keepalive comment is sent, ms. */
#define API_STREAM_KEEPALIVE_MS 15000

struct api_stream;

/* What a route adds to the driver. */
struct api_stream_ops {
	const char *what;     /* the operation in error texts ("exec", "the run") */
	const char *log_gone; /* log event when the client leaves */
	int count_gone;       /* 1: count it as METRICS_EXEC_CLIENT_GONE */
	/*
	 * event - add the SSE events for ev to s->out, and set s->done after
	 * the last one.  Gets every event except an ERROR without json (the
	 * host's own findings, which the driver answers).
	 */
	void (*event)(struct api_stream *s, const struct guest_event *ev);
	/* free - free the route's struct around s (s's fields are released
	 * already).  Called once. */
	void (*free)(struct api_stream *s);
};

/* The driver's state; a route embeds it first in its own struct. */
struct api_stream {
	const struct api_stream_ops *ops;
	struct sbx *sb;           /* reference owned */
	struct guest_run *x;      /* owned */
	struct MHD_Connection *conn;
	const char *ctx;          /* code context id for logs, or NULL */
	struct sse_buf out;       /* formatted events not yet handed to MHD */
	int done;                 /* the last event is in out */
	int64_t t0;               /* util_now_ms() at the run's open */
	int64_t last_send_ms;
};

/*
 * api_stream_respond - answer r with the stream s (its ops, sb, x and t0
 * set; taken: freed through ops->free when the answer ends, also when it
 * cannot start, in which case the request is aborted).
 */
void api_stream_respond(struct http_req *r, struct api_stream *s);

#endif
