/*
 * metrics.h - the daemon's counters and latency histograms, written in the
 * Prometheus text exposition format (version 0.0.4) by GET /metrics.
 *
 * State is process-wide (one daemon per process) and lock-free (C11
 * atomics): every function may be called from any thread at any time.
 * Gauges that describe current state (sandboxes by status, pool entries)
 * are computed by the /metrics handler, not kept here.
 */
#ifndef PANDASTACK_DAEMON_METRICS_H
#define PANDASTACK_DAEMON_METRICS_H

#include <stdint.h>
#include <stdio.h>


enum metrics_event {
	METRICS_VM_DIED = 0,      /* a QEMU process exited on its own */
	METRICS_TTL_EXPIRED,      /* the reaper stopped a sandbox */
	METRICS_ADOPTED,          /* a sandbox taken over after a restart */
	METRICS_ADOPT_FAILED,     /* a sandbox found dead after a restart */
	METRICS_EXEC_CLIENT_GONE, /* an exec cancelled because its client left */
	METRICS_POOL_HIT,         /* a create was served by a ready sandbox of the pool */
	METRICS_POOL_MISS,        /* a template with a pool had none ready (or the
				   * hand-out failed): the create restored one */
	METRICS_SNAPSHOT,         /* a capture of a running sandbox (snapshot, fork, pause) */
	METRICS_PAUSED,           /* a sandbox paused */
	METRICS_RESUMED,          /* a paused sandbox resumed */
	METRICS_HTTP_DROPPED,     /* a connection closed by the front before its
				   * request's head came in (its deadline, or to
				   * make room under a cap; http_front.h) */
	METRICS_N_EVENTS
};

/* How a request for an exposed port (api_ports.c) ended. */
enum metrics_port_result {
	METRICS_PORT_FORWARDED = 0, /* the server's answer went back to the caller */
	METRICS_PORT_UPGRADED,      /* a 101: the connection became a splice (WebSocket) */
	METRICS_PORT_REFUSED,       /* the credentials did not open the port (401, 404;
				     * 409 for a team key and a stopped sandbox) */
	METRICS_PORT_NOT_RUNNING,   /* the sandbox was not running or ended (409) */
	METRICS_PORT_NOT_OPEN,      /* nothing listened on the port (502) */
	METRICS_PORT_UNREACHABLE,   /* the connect did not complete (502) */
	METRICS_PORT_TIMEOUT,       /* the server did not answer in time (504) */
	METRICS_PORT_BAD_RESPONSE,  /* the server's head was not acceptable HTTP/1.x (502) */
	METRICS_PORT_BAD_REQUEST,   /* the caller's head could not be forwarded (404, 431) */
	METRICS_PORT_N_RESULTS
};

/* metrics_port_request - count one request for an exposed port. */
void metrics_port_request(enum metrics_port_result result);

/* metrics_port_bytes - add bytes carried for exposed ports: up (to the
 * sandbox's server: request bodies, a splice's caller side) and down (from
 * it: answer bodies, a splice's server side), in bytes. */
void metrics_port_bytes(uint64_t up, uint64_t down);

/* metrics_http_response - count one HTTP answer with this status. */
void metrics_http_response(unsigned status);

/* metrics_create - count one sandbox create (ok 1/0) taking ms. */
void metrics_create(int ok, int64_t ms);

/* metrics_exec - record one exec (plain or streamed) lasting ms, end to end
 * as the daemon saw it. */
void metrics_exec(int64_t ms);

/* metrics_event - count one event. */
void metrics_event(enum metrics_event e);

/* metrics_dns_answer - count one answer of the sandbox resolver with this
 * DNS rcode (net_dnsmsg.h). */
void metrics_dns_answer(unsigned rcode);

/* metrics_write - every counter and histogram as Prometheus text to f.
 * Returns 0 or -EIO (a write failed). */
int metrics_write(FILE *f);

#endif
