/*
 * qmp.c - QMP client: line reader with caps, command/reply matching by id,
 * event queue, SCM_RIGHTS fd passing (see qmp.h).
 */
#include "engine/qemu/qmp.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

struct qmp {
	int fd;
	char *buf;              /* read buffer, QMP_MAX_LINE + 1 bytes */
	size_t len;             /* bytes held */
	int broken;             /* 0, or the -errno that ended the connection */
	json_t *greeting;       /* the "QMP" object */
	json_t *events[QMP_MAX_EVENTS];
	unsigned ev_head, ev_count;
	unsigned long skipped;  /* garbage or unmatched lines */
	unsigned long dropped;  /* events dropped because the queue was full */
	unsigned long next_id;
	char err[512];
};

__attribute__((format(printf, 2, 3)))
static void set_err(struct qmp *q, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(q->err, sizeof(q->err), fmt, ap);
	va_end(ap);
}

/* Remaining ms until deadline (monotonic ms), never negative; -1 stays -1. */
static int remaining(int64_t deadline)
{
	if (deadline < 0)
		return -1;
	int64_t left = deadline - util_now_ms();
	return left > 0 ? (int)(left > 0x7fffffff ? 0x7fffffff : left) : 0;
}

static int64_t deadline_in(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : util_now_ms() + timeout_ms;
}

static void push_event(struct qmp *q, json_t *ev)
{
	if (q->ev_count == QMP_MAX_EVENTS) {
		json_decref(q->events[q->ev_head]);
		q->ev_head = (q->ev_head + 1) % QMP_MAX_EVENTS;
		q->ev_count--;
		q->dropped++;
	}
	q->events[(q->ev_head + q->ev_count) % QMP_MAX_EVENTS] = json_incref(ev);
	q->ev_count++;
}

/*
 * Read one complete line as a JSON object into *obj (new reference),
 * waiting until deadline.  Returns 1, 0 on timeout, -errno when broken.
 * Lines that are not JSON objects are skipped here.
 */
static int read_object(struct qmp *q, int64_t deadline, json_t **obj)
{
	for (;;) {
		if (q->broken)
			return q->broken;
		char *nl = memchr(q->buf, '\n', q->len);
		if (nl) {
			size_t linelen = (size_t)(nl - q->buf);
			json_error_t jerr;
			json_t *o = NULL;
			if (linelen > 0)
				o = json_loadb(q->buf, linelen, JSON_REJECT_DUPLICATES, &jerr);
			memmove(q->buf, nl + 1, q->len - linelen - 1);
			q->len -= linelen + 1;
			if (!o || !json_is_object(o)) {
				/* Blank lines are only skipped; real garbage is counted. */
				if (o || linelen > 1) {
					q->skipped++;
					log_kv(LOG_DEBUG, "qmp.garbage", "bytes=%zu", linelen);
				}
				json_decref(o);
				continue;
			}
			*obj = o;
			return 1;
		}
		if (q->len >= QMP_MAX_LINE) {
			q->broken = -EMSGSIZE;
			set_err(q, "QMP line over %u bytes", QMP_MAX_LINE);
			return q->broken;
		}
		struct pollfd p = {.fd = q->fd, .events = POLLIN};
		int r = poll(&p, 1, remaining(deadline));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return 0;
		ssize_t n = read(q->fd, q->buf + q->len, QMP_MAX_LINE - q->len);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			q->broken = -errno;
			set_err(q, "QMP read failed: %s", strerror(-q->broken));
			return q->broken;
		}
		if (n == 0) {
			q->broken = -ECONNRESET;
			set_err(q, "QMP connection closed by QEMU");
			return q->broken;
		}
		q->len += (size_t)n;
	}
}

static int send_all(struct qmp *q, const char *msg, size_t len, int fd, int64_t deadline)
{
	size_t off = 0;
	int first = 1;
	while (off < len) {
		struct iovec iov = {.iov_base = (char *)msg + off, .iov_len = len - off};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} cm;
		if (first && fd >= 0) {
			memset(&cm, 0, sizeof(cm));
			mh.msg_control = cm.buf;
			mh.msg_controllen = sizeof(cm.buf);
			struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(c), &fd, sizeof(int));
		}
		ssize_t n = sendmsg(q->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct pollfd p = {.fd = q->fd, .events = POLLOUT};
				int r = poll(&p, 1, remaining(deadline));
				if (r == 0) {
					/* Half a command on the wire cannot be taken back. */
					if (off > 0)
						q->broken = -ETIMEDOUT;
					return -ETIMEDOUT;
				}
				continue;
			}
			int e = -errno;
			q->broken = e;
			set_err(q, "QMP write failed: %s", strerror(-e));
			return q->broken;
		}
		first = 0;
		off += (size_t)n;
	}
	return 0;
}

static int map_class(const char *cls)
{
	if (!cls)
		return -EIO;
	if (!strcmp(cls, "CommandNotFound"))
		return -EOPNOTSUPP;
	if (!strcmp(cls, "DeviceNotFound") || !strcmp(cls, "DeviceNotActive"))
		return -ENODEV;
	if (!strcmp(cls, "KVMMissingCap"))
		return -ENOTSUP;
	return -EIO;
}

/* Send cmd and wait for the reply with our id (or, defensively, a reply
 * without an id, which QEMU sends for requests it could not parse). */
static int qmp_exchange(struct qmp *q, const char *cmd, json_t *args, int fd, int timeout_ms,
		json_t **ret)
{
	int64_t deadline = deadline_in(timeout_ms);
	char id[32];
	if (ret)
		*ret = NULL;
	if (q->broken)
		return q->broken;
	if (args && !json_is_object(args))
		return -EINVAL;
	snprintf(id, sizeof(id), "ps-%lu", ++q->next_id);
	json_t *req = json_pack("{s:s, s:s}", "execute", cmd, "id", id);
	if (!req)
		return -ENOMEM;
	if (args && json_object_set(req, "arguments", args) < 0) {
		json_decref(req);
		return -ENOMEM;
	}
	char *msg = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (!msg)
		return -ENOMEM;
	size_t mlen = strlen(msg);
	char *line = realloc(msg, mlen + 2);
	if (!line) {
		free(msg);
		return -ENOMEM;
	}
	line[mlen] = '\n';
	line[mlen + 1] = '\0';
	int r = send_all(q, line, mlen + 1, fd, deadline);
	free(line);
	if (r < 0)
		return r;
	for (;;) {
		json_t *o = NULL;
		r = read_object(q, deadline, &o);
		if (r == 0) {
			set_err(q, "QMP command %s timed out", cmd);
			return -ETIMEDOUT;
		}
		if (r < 0)
			return r;
		if (json_object_get(o, "event")) {
			push_event(q, o);
			json_decref(o);
			continue;
		}
		json_t *rid = json_object_get(o, "id");
		if (rid && !(json_is_string(rid) && !strcmp(json_string_value(rid), id))) {
			q->skipped++; /* a late reply to a call that timed out */
			json_decref(o);
			continue;
		}
		json_t *rv = json_object_get(o, "return");
		json_t *er = json_object_get(o, "error");
		if (rv) {
			if (ret)
				*ret = json_incref(rv);
			q->err[0] = '\0';
			json_decref(o);
			return 0;
		}
		if (er && json_is_object(er)) {
			const char *cls = json_string_value(json_object_get(er, "class"));
			const char *desc = json_string_value(json_object_get(er, "desc"));
			snprintf(q->err, sizeof(q->err), "%s: %s", cmd, desc ? desc : "(no text)");
			r = map_class(cls);
			json_decref(o);
			return r;
		}
		set_err(q, "malformed QMP reply to %s", cmd);
		json_decref(o);
		return -EBADMSG;
	}
}

int qmp_call(struct qmp *q, const char *cmd, json_t *args, int timeout_ms, json_t **ret)
{
	return qmp_exchange(q, cmd, args, -1, timeout_ms, ret);
}

int qmp_call_fd(struct qmp *q, const char *cmd, json_t *args, int fd, int timeout_ms,
		json_t **ret)
{
	if (fd < 0)
		return -EBADF;
	return qmp_exchange(q, cmd, args, fd, timeout_ms, ret);
}

int qmp_event_next(struct qmp *q, int timeout_ms, json_t **ev)
{
	int64_t deadline = deadline_in(timeout_ms);
	for (;;) {
		if (q->ev_count) {
			*ev = q->events[q->ev_head];
			q->events[q->ev_head] = NULL;
			q->ev_head = (q->ev_head + 1) % QMP_MAX_EVENTS;
			q->ev_count--;
			return 1;
		}
		json_t *o = NULL;
		int r = read_object(q, deadline, &o);
		if (r <= 0)
			return r;
		if (json_is_string(json_object_get(o, "event")))
			push_event(q, o);
		else
			q->skipped++; /* a reply nobody waits for */
		json_decref(o);
	}
}

int qmp_attach(int fd, int timeout_ms, struct qmp **out)
{
	int64_t deadline = deadline_in(timeout_ms);
	struct qmp *q = calloc(1, sizeof(*q));
	if (!q) {
		close(fd);
		return -ENOMEM;
	}
	q->fd = fd;
	q->buf = malloc(QMP_MAX_LINE + 1);
	if (!q->buf) {
		qmp_close(q);
		return -ENOMEM;
	}
	json_t *o = NULL;
	int r = read_object(q, deadline, &o);
	if (r <= 0) {
		qmp_close(q);
		return r == 0 ? -ETIMEDOUT : r;
	}
	json_t *g = json_object_get(o, "QMP");
	if (!json_is_object(g)) {
		json_decref(o);
		qmp_close(q);
		return -EBADMSG;
	}
	q->greeting = json_incref(g);
	json_decref(o);
	r = qmp_call(q, "qmp_capabilities", NULL, remaining(deadline), NULL);
	if (r < 0) {
		qmp_close(q);
		return r;
	}
	*out = q;
	return 0;
}

int qmp_connect(const char *path, int timeout_ms, struct qmp **out)
{
	int64_t deadline = deadline_in(timeout_ms);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return qmp_attach(fd, remaining(deadline), out);
		int e = -errno;
		close(fd);
		if (e != -ENOENT && e != -ECONNREFUSED)
			return e;
		if (remaining(deadline) == 0)
			return e;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
}

const char *qmp_last_error(const struct qmp *q)
{
	return q->err;
}

json_t *qmp_greeting(const struct qmp *q)
{
	return q->greeting;
}

int qmp_fd(const struct qmp *q)
{
	return q->fd;
}

unsigned long qmp_skipped_lines(const struct qmp *q)
{
	return q->skipped;
}

void qmp_close(struct qmp *q)
{
	if (!q)
		return;
	if (q->fd >= 0)
		close(q->fd);
	for (unsigned i = 0; i < q->ev_count; i++)
		json_decref(q->events[(q->ev_head + i) % QMP_MAX_EVENTS]);
	json_decref(q->greeting);
	free(q->buf);
	free(q);
}
