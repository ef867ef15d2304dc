/*
 * jupyter_conn.c - connection file and zmq sockets for one kernel (see
 * jupyter_conn.h).
 */
#include "agent/jupyter/jupyter_conn.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zmq.h>

#include "common/util.h"

/* ipc "ports" of each channel, in enum order. */
static const int port_of[JUPYTER_NCHANNELS] = { 1, 2, 3, 4, 5 };
static const int type_of[JUPYTER_NCHANNELS] = { ZMQ_DEALER, ZMQ_SUB, ZMQ_DEALER, ZMQ_DEALER,
						ZMQ_REQ };

static void *zctx;
static pthread_once_t zctx_once = PTHREAD_ONCE_INIT;

static void zctx_make(void)
{
	zctx = zmq_ctx_new();
	if (zctx) {
		zmq_ctx_set(zctx, ZMQ_IO_THREADS, 1);
		zmq_ctx_set(zctx, ZMQ_BLOCKY, 0);
	}
}

void *jupyter_zmq_context(void)
{
	pthread_once(&zctx_once, zctx_make);
	return zctx;
}

static void ipc_path(const struct jupyter_conn *c, int port, char *out, size_t n)
{
	snprintf(out, n, "%s/k-%d", c->dir, port);
}

static void remove_ipc_files(const struct jupyter_conn *c)
{
	char p[JUPYTER_DIR_MAX + 16];
	for (int i = 0; i < JUPYTER_NCHANNELS; i++) {
		ipc_path(c, port_of[i], p, sizeof(p));
		unlink(p);
	}
}

int jupyter_conn_prepare(struct jupyter_conn *c, const char *dir)
{
	memset(c, 0, sizeof(*c));
	if (strlen(dir) >= JUPYTER_DIR_MAX)
		return -ENAMETOOLONG;
	snprintf(c->dir, sizeof(c->dir), "%s", dir);
	snprintf(c->file, sizeof(c->file), "%s/kernel.json", dir);
	uint8_t k[32];
	int r = util_random(k, sizeof(k));
	if (r == 0)
		r = util_random(c->routing_id, sizeof(c->routing_id));
	if (r == 0)
		r = jupyter_new_id(c->session);
	if (r < 0)
		return r;
	util_hex(k, sizeof(k), c->key);
	remove_ipc_files(c);
	char ip[JUPYTER_DIR_MAX + 4];
	snprintf(ip, sizeof(ip), "%s/k", dir);
	json_t *doc = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:s, s:s, s:s}",
				"transport", "ipc", "ip", ip,
				"shell_port", port_of[JUPYTER_SHELL], "iopub_port", port_of[JUPYTER_IOPUB],
				"stdin_port", port_of[JUPYTER_STDIN],
				"control_port", port_of[JUPYTER_CONTROL], "hb_port", port_of[JUPYTER_HB],
				"key", c->key, "signature_scheme", "hmac-sha256",
				"kernel_name", "python3");
	char *text = doc ? json_dumps(doc, JSON_INDENT(1)) : NULL;
	json_decref(doc);
	if (!text)
		return -ENOMEM;
	r = util_write_file(c->file, text, strlen(text), 0600);
	free(text);
	return r;
}

/* Create and connect one socket; NULL with errno on failure. */
static void *open_one(struct jupyter_conn *c, enum jupyter_channel ch)
{
	void *s = zmq_socket(jupyter_zmq_context(), type_of[ch]);
	if (!s)
		return NULL;
	int zero = 0, ivl = 50;
	int64_t max = JUPYTER_FRAME_MAX;
	int ok = zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero)) == 0 &&
		 zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &max, sizeof(max)) == 0 &&
		 zmq_setsockopt(s, ZMQ_RECONNECT_IVL, &ivl, sizeof(ivl)) == 0;
	if (ok && type_of[ch] == ZMQ_DEALER)
		ok = zmq_setsockopt(s, ZMQ_ROUTING_ID, c->routing_id, sizeof(c->routing_id)) == 0;
	if (ok && ch == JUPYTER_IOPUB)
		ok = zmq_setsockopt(s, ZMQ_RCVHWM, &zero, sizeof(zero)) == 0 &&
		     zmq_setsockopt(s, ZMQ_SUBSCRIBE, "", 0) == 0;
	char ep[JUPYTER_DIR_MAX + 32], p[JUPYTER_DIR_MAX + 16];
	ipc_path(c, port_of[ch], p, sizeof(p));
	snprintf(ep, sizeof(ep), "ipc://%s", p);
	if (ok)
		ok = zmq_connect(s, ep) == 0;
	if (!ok) {
		int e = errno;
		zmq_close(s);
		errno = e;
		return NULL;
	}
	return s;
}

/* Watch the iopub socket for a dropped link: its monitor's events go to
 * an inproc PAIR of ours, connected before the monitor binds (inproc
 * allows it), so that no event is ever sent with nobody to take it.
 * 0 or -errno. */
static int watch_iopub(struct jupyter_conn *c)
{
	/* A name of its own each time: a closed monitor's name may stay
	 * taken for a while. */
	static unsigned long long seq;
	char ep[64];
	snprintf(ep, sizeof(ep), "inproc://jupyter-iopub-%llu",
		 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	void *w = zmq_socket(jupyter_zmq_context(), ZMQ_PAIR);
	int zero = 0;
	if (!w || zmq_setsockopt(w, ZMQ_LINGER, &zero, sizeof(zero)) < 0 || zmq_connect(w, ep) < 0 ||
	    zmq_socket_monitor(c->sock[JUPYTER_IOPUB], ep, ZMQ_EVENT_DISCONNECTED) < 0) {
		int e = errno ? errno : EIO;
		if (w)
			zmq_close(w);
		return -e;
	}
	c->iopub_watch = w;
	return 0;
}

/* The monitor stops before its reader goes: libzmq's I/O thread sends
 * monitor events blocking, and one sent to a PAIR with no peer (a kernel's
 * link dropping as it is killed) would stall every socket of the context. */
static void close_iopub(struct jupyter_conn *c)
{
	if (c->sock[JUPYTER_IOPUB])
		zmq_socket_monitor(c->sock[JUPYTER_IOPUB], NULL, 0);
	if (c->iopub_watch)
		zmq_close(c->iopub_watch);
	c->iopub_watch = NULL;
	if (c->sock[JUPYTER_IOPUB])
		zmq_close(c->sock[JUPYTER_IOPUB]);
	c->sock[JUPYTER_IOPUB] = NULL;
}

int jupyter_conn_open(struct jupyter_conn *c)
{
	if (!jupyter_zmq_context())
		return -ENOMEM;
	for (int i = 0; i < JUPYTER_NCHANNELS; i++) {
		c->sock[i] = open_one(c, (enum jupyter_channel)i);
		if (!c->sock[i]) {
			int e = errno ? errno : EIO;
			jupyter_conn_close(c);
			return -e;
		}
	}
	int r = watch_iopub(c);
	if (r < 0) {
		jupyter_conn_close(c);
		return r;
	}
	c->hb_waiting = 0;
	return 0;
}

void *jupyter_conn_iopub_watch(const struct jupyter_conn *c)
{
	return c->iopub_watch;
}

int jupyter_conn_iopub_dropped(struct jupyter_conn *c)
{
	int dropped = 0;
	for (;;) {
		zmq_msg_t m;
		zmq_msg_init(&m);
		int n = c->iopub_watch ? zmq_msg_recv(&m, c->iopub_watch, ZMQ_DONTWAIT) : -1;
		int more = n >= 0 && zmq_msg_more(&m);
		/* An event: 2 bytes of event number, 4 of value, then a frame
		 * with the endpoint. */
		if (n >= 6) {
			uint16_t ev;
			memcpy(&ev, zmq_msg_data(&m), sizeof(ev));
			dropped |= ev == ZMQ_EVENT_DISCONNECTED;
		}
		zmq_msg_close(&m);
		if (n < 0)
			break;
		while (more) {
			zmq_msg_init(&m);
			more = zmq_msg_recv(&m, c->iopub_watch, 0) >= 0 && zmq_msg_more(&m);
			zmq_msg_close(&m);
		}
	}
	return dropped;
}

int jupyter_conn_iopub_reopen(struct jupyter_conn *c)
{
	close_iopub(c);
	c->sock[JUPYTER_IOPUB] = open_one(c, JUPYTER_IOPUB);
	if (!c->sock[JUPYTER_IOPUB])
		return -(errno ? errno : EIO);
	int r = watch_iopub(c);
	if (r < 0)
		close_iopub(c);
	return r;
}

void jupyter_conn_close(struct jupyter_conn *c)
{
	close_iopub(c);
	for (int i = 0; i < JUPYTER_NCHANNELS; i++) {
		if (c->sock[i])
			zmq_close(c->sock[i]);
		c->sock[i] = NULL;
	}
	if (c->dir[0]) {
		remove_ipc_files(c);
		unlink(c->file);
	}
}

void *jupyter_conn_socket(const struct jupyter_conn *c, enum jupyter_channel ch)
{
	return ch < JUPYTER_NCHANNELS ? c->sock[ch] : NULL;
}

int jupyter_conn_send(struct jupyter_conn *c, enum jupyter_channel ch, const char *msg_type,
		      const json_t *content, char msg_id[JUPYTER_ID_SIZE])
{
	if (ch != JUPYTER_SHELL && ch != JUPYTER_CONTROL && ch != JUPYTER_STDIN)
		return -EINVAL;
	if (!c->sock[ch])
		return -ENOTCONN;
	struct jupyter_wire w;
	int r = jupyter_msg_encode(c->session, msg_type, content, c->key, strlen(c->key), &w);
	if (r < 0)
		return r;
	const void *data[6] = { JUPYTER_DELIM, w.sig, w.part[0], w.part[1], w.part[2], w.part[3] };
	size_t len[6] = { sizeof(JUPYTER_DELIM) - 1, strlen(w.sig), w.len[0], w.len[1], w.len[2],
			  w.len[3] };
	for (int i = 0; i < 6 && r == 0; i++) {
		int flags = ZMQ_DONTWAIT | (i < 5 ? ZMQ_SNDMORE : 0);
		if (zmq_send(c->sock[ch], data[i], len[i], flags) < 0)
			r = -errno;
	}
	if (r == 0 && msg_id)
		memcpy(msg_id, w.msg_id, JUPYTER_ID_SIZE);
	jupyter_wire_clear(&w);
	return r;
}

int jupyter_conn_recv(struct jupyter_conn *c, enum jupyter_channel ch, struct jupyter_msg *m)
{
	memset(m, 0, sizeof(*m));
	if (ch >= JUPYTER_HB || !c->sock[ch])
		return -EINVAL;
	zmq_msg_t parts[JUPYTER_FRAMES_MAX], extra;
	size_t n = 0, got = 0;
	int more = 1, r = 0;
	while (more) {
		/* Frames past the cap go to a scratch message and are dropped. */
		zmq_msg_t *p = n < JUPYTER_FRAMES_MAX ? &parts[n] : &extra;
		zmq_msg_init(p);
		if (zmq_msg_recv(p, c->sock[ch], got == 0 ? ZMQ_DONTWAIT : 0) < 0) {
			r = -errno;
			zmq_msg_close(p);
			break;
		}
		got++;
		more = zmq_msg_more(p);
		if (p == &extra) {
			zmq_msg_close(p);
			r = -EBADMSG;
		} else {
			n++;
		}
	}
	if (r == 0) {
		struct jupyter_frame f[JUPYTER_FRAMES_MAX];
		for (size_t i = 0; i < n; i++) {
			f[i].data = zmq_msg_data(&parts[i]);
			f[i].len = zmq_msg_size(&parts[i]);
		}
		if (ch == JUPYTER_IOPUB &&
		    ((c->drop_output && jupyter_msg_is_output(f, n)) ||
		     (c->drop_parent && jupyter_msg_is_output_of(f, n, c->drop_parent))))
			r = -ECANCELED; /* neither verified nor parsed: nobody wants it */
		else
			r = jupyter_msg_parse(f, n, c->key, strlen(c->key), m);
	}
	for (size_t i = 0; i < n; i++)
		zmq_msg_close(&parts[i]);
	return r;
}

int jupyter_conn_hb_ping(struct jupyter_conn *c, int64_t now)
{
	if (!c->sock[JUPYTER_HB])
		return -ENOTCONN;
	if (c->hb_waiting)
		return 0;
	uint64_t seq = ++c->hb_seq;
	if (zmq_send(c->sock[JUPYTER_HB], &seq, sizeof(seq), ZMQ_DONTWAIT) < 0)
		return -errno;
	c->hb_waiting = 1;
	c->hb_sent_ms = now;
	return 0;
}

int jupyter_conn_hb_recv(struct jupyter_conn *c)
{
	uint64_t buf[2];
	if (!c->sock[JUPYTER_HB])
		return -ENOTCONN;
	int n = zmq_recv(c->sock[JUPYTER_HB], buf, sizeof(buf), ZMQ_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	if (!c->hb_waiting)
		return 0;
	if (n != (int)sizeof(uint64_t) || buf[0] != c->hb_seq)
		return 0;
	c->hb_waiting = 0;
	return 1;
}

int jupyter_conn_hb_reset(struct jupyter_conn *c)
{
	if (c->sock[JUPYTER_HB])
		zmq_close(c->sock[JUPYTER_HB]);
	c->hb_waiting = 0;
	c->sock[JUPYTER_HB] = open_one(c, JUPYTER_HB);
	return c->sock[JUPYTER_HB] ? 0 : -(errno ? errno : EIO);
}
