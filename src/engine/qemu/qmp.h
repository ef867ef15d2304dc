/*
 * qmp.h - a small QMP client (QEMU Machine Protocol, QEMU's
 * docs/interop/qmp-spec) on jansson, over a Unix stream socket.
 *
 * One JSON object per line each way.  On connect the server sends the
 * greeting {"QMP": {...}}; the client answers qmp_capabilities.  Commands
 * carry an "id" which the reply echoes; asynchronous events ({"event": ...})
 * may arrive between a command and its reply and are queued (at most
 * QMP_MAX_EVENTS, the oldest dropped first) for qmp_event_next.
 * Errors ({"error": {"class", "desc"}}) map to -errno; the desc text is kept
 * for qmp_last_error.  Lines are capped at QMP_MAX_LINE bytes: a longer one
 * breaks the connection (-EMSGSIZE); a line that is not a JSON object is
 * skipped and counted.  QEMU's replies are treated as outside input.
 *
 * Threads: a struct qmp is used by one thread at a time (the owner of the
 * VM's lifecycle); it keeps no global state.
 */
#ifndef PANDASTACK_QMP_H
#define PANDASTACK_QMP_H

#include <stddef.h>

#include <jansson.h>

/* Longest line accepted from the server, bytes. */
#define QMP_MAX_LINE (1024u * 1024u)
/* Events kept while nobody takes them. */
#define QMP_MAX_EVENTS 64u

struct qmp;

/*
 * qmp_attach - take ownership of a connected stream socket fd, read the
 * greeting and negotiate capabilities, all within timeout_ms.
 * Returns 0 with *out (free with qmp_close), or -errno (fd is closed):
 * -ETIMEDOUT, -EBADMSG (no valid greeting), -ECONNRESET, -ENOMEM.
 */
int qmp_attach(int fd, int timeout_ms, struct qmp **out);

/*
 * qmp_connect - connect to the QMP socket at path, retrying while it does
 * not exist yet or refuses (QEMU still starting) until timeout_ms, then
 * qmp_attach.  Returns 0 with *out, or -errno as qmp_attach, -ENOENT /
 * -ECONNREFUSED if the socket never appeared, -ENAMETOOLONG.
 */
int qmp_connect(const char *path, int timeout_ms, struct qmp **out);

/*
 * qmp_call - run command cmd with args (borrowed JSON object, or NULL) and
 * wait up to timeout_ms for its reply.  On success *ret (if ret is not NULL)
 * is a new reference to the "return" value.
 * Returns 0, -ETIMEDOUT, -ECONNRESET / -EPIPE (connection lost),
 * -EMSGSIZE (an oversized line broke the connection), -EBADMSG (malformed
 * reply), or the error class mapped: GenericError -EIO, CommandNotFound
 * -EOPNOTSUPP, DeviceNotFound / DeviceNotActive -ENODEV, KVMMissingCap
 * -ENOTSUP; then qmp_last_error has the server's text.
 */
int qmp_call(struct qmp *q, const char *cmd, json_t *args, int timeout_ms, json_t **ret);

/*
 * qmp_call_fd - as qmp_call, passing the open descriptor fd (not consumed)
 * with the command through SCM_RIGHTS, as `getfd` and `add-fd` need.
 */
int qmp_call_fd(struct qmp *q, const char *cmd, json_t *args, int fd, int timeout_ms,
		json_t **ret);

/*
 * qmp_event_next - take the oldest queued event, reading from the socket
 * for up to timeout_ms (0: only what has arrived) if none is queued.
 * Returns 1 with *ev (new reference: the whole {"event", "data", ...}
 * object), 0 on timeout, or -errno as qmp_call.
 */
int qmp_event_next(struct qmp *q, int timeout_ms, json_t **ev);

/* qmp_last_error - text of the last failure (borrowed; "" if none). */
const char *qmp_last_error(const struct qmp *q);

/* qmp_greeting - the greeting's "QMP" object (borrowed). */
json_t *qmp_greeting(const struct qmp *q);

/* qmp_fd - the socket, for poll (POLLIN means something to read). */
int qmp_fd(const struct qmp *q);

/* qmp_skipped_lines - lines dropped as not JSON objects or unmatched. */
unsigned long qmp_skipped_lines(const struct qmp *q);

/* qmp_close - close the socket and free.  NULL is a no-op. */
void qmp_close(struct qmp *q);

#endif
