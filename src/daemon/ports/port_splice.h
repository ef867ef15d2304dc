/*
 * port_splice.h - an upgraded connection to a sandbox's port (WebSocket or
 * any other protocol a server switches to with 101): after the 101, bytes
 * are copied both ways between the client's socket and the guest's, each
 * direction through one bounded buffer (PORT_SPLICE_BUF bytes), by a thread
 * of the splice's own (libmicrohttpd's connection thread must return: with
 * TLS it carries the client's bytes itself).
 *
 * A splice ends when both directions have ended (each side's end of input
 * is passed on as a shutdown of the other side's output), when either side
 * fails, when neither side sent a byte for idle_ms, when the sandbox ends,
 * or at port_splice_stop_all.  Then the guest socket is closed and the
 * client's is handed back to libmicrohttpd (MHD_UPGRADE_ACTION_CLOSE).
 *
 * Threads: port_splice_start from the upgrade callback (any thread);
 * port_splice_stop_all from the thread that stops the HTTP server, before
 * MHD_stop_daemon (which must not find an upgraded connection open).
 */
#ifndef PANDASTACK_DAEMON_PORT_SPLICE_H
#define PANDASTACK_DAEMON_PORT_SPLICE_H

#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#define PORT_SPLICE_BUF (64u * 1024) /* bytes in flight per direction */
#define PORT_SPLICE_MAX 1024         /* splices at once (each has a thread) */

struct sbx;

/* What a splice is given; every field is taken by port_splice_start. */
struct port_splice_ends {
	struct MHD_UpgradeResponseHandle *urh; /* closes the client's socket */
	int client_fd;           /* from the upgrade callback (not ours to close) */
	const char *client_extra; /* client bytes libmicrohttpd read already */
	size_t client_extra_len;
	int guest_fd;            /* connected to the guest's port; closed at the end */
	const char *guest_extra; /* guest bytes read after its 101 head */
	size_t guest_extra_len;
	struct sbx *sb;          /* a reference (released at the end) */
	unsigned port;           /* for logs */
	int64_t idle_ms;
};

/*
 * port_splice_start - copy the extra bytes (at most PORT_SPLICE_BUF each)
 * and start the splice's thread.  Takes everything in e, also on failure
 * (then it closes both sides at once).  Returns 0, or -EMFILE (over
 * PORT_SPLICE_MAX or stopping), -ENOMEM, -E2BIG, -errno of pthread_create.
 */
int port_splice_start(const struct port_splice_ends *e);

/* port_splice_stop_all - end every splice and wait for their threads;
 * splices started afterwards are refused. */
void port_splice_stop_all(void);

/* port_splice_count - splices running now. */
unsigned port_splice_count(void);

#endif
