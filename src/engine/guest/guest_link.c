/*
 * guest_link.c - the bottom of the host's guest client (guest_conn_int.h):
 * writing one frame on the connection's socket, killing the connection,
 * and its memory (references held by the handle and by every stream).
 * Calls nothing of guest_stream.c or guest_conn.c.
 *
 * Threads: any; writers serialise on c->wlock, one whole frame at a time.
 */
#include "engine/guest/guest_conn_int.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "common/deadline.h"
#include "common/log.h"

void guest_link_free(struct guest_conn *c)
{
	proto_decoder_free(&c->dec);
	json_decref(c->info);
	json_decref(c->gate_end);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->wlock);
	pthread_cond_destroy(&c->gate_cond);
	free(c);
}

int guest_link_unref_locked(struct guest_conn *c)
{
	return --c->refs == 0;
}

void guest_link_kill_locked(struct guest_conn *c)
{
	if (!c->alive)
		return;
	c->alive = 0;
	shutdown(c->fd, SHUT_RDWR);
}

static size_t global_json_bytes;

int guest_link_global_charge(long n)
{
	if (n <= 0) {
		__atomic_sub_fetch(&global_json_bytes, (size_t)-n, __ATOMIC_RELAXED);
		return 0;
	}
	size_t now = __atomic_load_n(&global_json_bytes, __ATOMIC_RELAXED);
	do {
		if (now + (size_t)n > GLOBAL_JSON_CAP)
			return -ENOBUFS;
	} while (!__atomic_compare_exchange_n(&global_json_bytes, &now, now + (size_t)n, 1,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return 0;
}

json_t *guest_link_parse_object(const uint8_t *buf, size_t len)
{
	json_t *j = json_loadb((const char *)buf, len, JSON_ALLOW_NUL, NULL);
	if (j && !json_is_object(j)) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

int guest_link_send(struct guest_conn *c, uint8_t type, uint8_t flags, uint32_t id,
		    const void *payload, uint32_t len, int timeout_ms)
{
	uint8_t hdr[PROTO_HDR_SIZE];
	int r = proto_encode_hdr(hdr, type, flags, id, len);
	if (r < 0)
		return r;
	int64_t deadline = deadline_after(timeout_ms);
	pthread_mutex_lock(&c->wlock);
	pthread_mutex_lock(&c->lock);
	int alive = c->alive;
	pthread_mutex_unlock(&c->lock);
	if (!alive) {
		pthread_mutex_unlock(&c->wlock);
		return -ECONNRESET;
	}
	size_t total = PROTO_HDR_SIZE + len, done = 0;
	r = 0;
	while (done < total) {
		struct iovec iov[2];
		int n = 0;
		if (done < PROTO_HDR_SIZE) {
			iov[n].iov_base = hdr + done;
			iov[n++].iov_len = PROTO_HDR_SIZE - done;
			if (len) {
				iov[n].iov_base = (void *)payload;
				iov[n++].iov_len = len;
			}
		} else {
			iov[n].iov_base = (uint8_t *)payload + (done - PROTO_HDR_SIZE);
			iov[n++].iov_len = total - done;
		}
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
		ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
		if (w > 0) {
			done += (size_t)w;
			/* a frame under way is finished, not cut (that would break
			 * the byte stream), unless the agent stops reading for the
			 * longer of timeout_ms and CONTROL_SEND_TIMEOUT_MS */
			if (deadline >= 0)
				deadline = deadline_after(timeout_ms > CONTROL_SEND_TIMEOUT_MS
								  ? timeout_ms
								  : CONTROL_SEND_TIMEOUT_MS);
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			r = -ECONNRESET;
			break;
		}
		int64_t wait = deadline_left(deadline);
		if (wait == 0) {
			r = -ETIMEDOUT;
			break;
		}
		struct pollfd p = {.fd = c->fd, .events = POLLOUT};
		if (poll(&p, 1, (int)wait) < 0 && errno != EINTR) {
			r = -ECONNRESET;
			break;
		}
		if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) {
			r = -ECONNRESET;
			break;
		}
	}
	if (r < 0 && (done > 0 || r == -ECONNRESET)) {
		pthread_mutex_lock(&c->lock);
		guest_link_kill_locked(c);
		pthread_mutex_unlock(&c->lock);
		if (r == -ETIMEDOUT && done > 0)
			log_kv(LOG_WARN, "guest_conn.write_stalled", "stream=%u", id);
	}
	pthread_mutex_unlock(&c->wlock);
	return r;
}
