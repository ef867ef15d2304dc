/*
 * session.c - the agent's protocol connection (see session.h and
 * docs/agent-protocol.md): transport, handshake, frame dispatch, the stream
 * table and the fair writer.  Where the transport comes from (a named
 * virtio-serial port, a Unix socket) is endpoint.c.
 *
 * Every byte read from the transport is untrusted.  Frames pass the decoder
 * (caps, magic) and proto_mux_check (roles, credit) before anything acts on
 * them; a bad frame costs its stream (ERROR, stream closed), never the
 * agent.  Streams live in slot[], parallel to the mux table: slot[i] is the
 * stream whose state is mux.s[i].
 *
 * Threads: the loop thread only.
 */
#include "agent/session.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent/endpoint.h"
#include "common/log.h"
#include "common/utf8.h"
#include "common/util.h"

#define AGENT_VERSION "0.1.0"
#define READ_CHUNK (64u * 1024u)
#define READ_SEGMENT 4096u /* one virtio-serial receive buffer (PAGE_SIZE) */
#define READ_BUDGET (1024u * 1024u) /* bytes read per readiness event */

static void host_away(struct session *S, const char *why);
static void host_arrived(struct session *S);
static void flush(struct session *S);
static int port_host_present(struct session *S);

/* --- stream table --------------------------------------------------------- */

static int slot_index(struct session *S, uint32_t id)
{
	struct proto_stream_state *st = proto_mux_find(&S->link.mux, id);
	return st ? (int)(st - S->link.mux.s) : -1;
}

static struct astream *stream_of(struct session *S, uint32_t id)
{
	int i = slot_index(S, id);
	return i >= 0 ? S->slot[i] : NULL;
}

/* Run the op's destroy once. */
static void destroy_op(struct astream *s)
{
	if (s->destroyed)
		return;
	s->destroyed = 1;
	if (s->ops && s->ops->destroy)
		s->ops->destroy(s);
	s->op = NULL;
}

/* Forget stream s entirely: op, queued frames, mux entry, memory.  Frames
 * of s already on the wire are still written but no longer close anything. */
static void free_stream(struct session *S, struct astream *s)
{
	if (!s->ended && s->ops && s->ops->cancel && !s->destroyed)
		s->ops->cancel(s);
	destroy_op(s);
	outq_clear(&s->q);
	for (int i = 0; i < S->wire.n; i++)
		if (S->wire.item[i]->stream == s->id)
			S->wire.item[i]->closes = 0;
	int i = slot_index(S, s->id);
	if (i >= 0 && S->slot[i] == s) {
		S->slot[i] = NULL;
		proto_mux_close(&S->link.mux, s->id);
	}
	free(s);
}

/* Cancel and drop every stream; used when the host leaves or re-greets. */
static void reset_streams(struct session *S, int keep_partial)
{
	for (unsigned i = 0; i < PROTO_MAX_STREAMS; i++)
		if (S->slot[i])
			free_stream(S, S->slot[i]);
	link_reset(&S->link);
	outq_wire_clear(&S->wire, keep_partial);
	for (int i = 0; i < S->wire.n; i++)
		S->wire.item[i]->closes = 0;
}

/* An ERROR frame {"code","message"} on stream id. */
static struct outq_frame *error_frame(uint32_t id, int err, const char *msg)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "code", json_string(agent_errname(err)));
	json_object_set_new(o, "message", utf8_json_lossy(msg, strlen(msg)));
	char *txt = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!txt)
		return NULL;
	struct outq_frame *it = outq_frame_new(PROTO_ERROR, 0, id, txt, (uint32_t)strlen(txt));
	free(txt);
	return it;
}

/*
 * A protocol error on stream id: an open stream is stopped and closed with
 * ERROR; otherwise ERROR goes out on id (or 0) as a droppable notice.
 */
static void protocol_error(struct session *S, uint32_t id, int err, const char *msg)
{
	struct astream *s = id ? stream_of(S, id) : NULL;
	if (s && !s->ended) {
		if (s->ops && s->ops->cancel)
			s->ops->cancel(s);
		outq_clear(&s->q);
		struct outq_frame *it = error_frame(id, err, msg);
		s->ended = 1;
		if (it) {
			it->closes = 1;
			outq_push(&s->q, it);
		}
		return;
	}
	struct outq_frame *it = error_frame(id, err, msg);
	if (it) {
		it->droppable = 1;
		link_queue_prio(&S->link, it);
	}
}

/* --- handshake ------------------------------------------------------------ */

static json_t *agent_info(struct session *S)
{
	struct utsname u;
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "agent", json_string("pandastack-agent"));
	json_object_set_new(o, "version", json_string(AGENT_VERSION));
	json_object_set_new(o, "proto", json_integer(PROTO_VERSION));
	json_object_set_new(o, "mode", json_string(S->env->mode_name));
	json_object_set_new(o, "pid", json_integer(getpid()));
	json_object_set_new(o, "uptime_ms", json_integer(util_now_ms() - S->env->boot_ms));
	json_object_set_new(o, "max_streams", json_integer(PROTO_MAX_STREAMS));
	if (uname(&u) == 0) {
		json_object_set_new(o, "kernel", utf8_json_lossy(u.release, strlen(u.release)));
		json_object_set_new(o, "hostname",
				    utf8_json_lossy(u.nodename, strlen(u.nodename)));
	}
	json_t *ops = json_array();
	for (int op = AGENT_OP_RESTORE; op <= AGENT_OP_LAST; op++)
		json_array_append_new(ops, json_string(agent_op_name((enum agent_op)op)));
	json_object_set_new(o, "ops", ops);
	/* what the host may ask beyond the ops: "restore_hooks": restore takes
	 * sandbox_id and runs the after-restore hooks */
	json_object_set_new(o, "features", json_pack("[s]", "restore_hooks"));
	return o;
}

static void on_hello(struct session *S, const struct proto_frame *f)
{
	struct proto_hello h;
	if (proto_hello_decode(f->payload, f->len, &h) < 0) {
		protocol_error(S, 0, EBADMSG, "HELLO shorter than 12 bytes");
		return;
	}
	if (h.version != PROTO_VERSION) {
		char msg[96];
		snprintf(msg, sizeof(msg), "agent speaks version %u, host sent %u", PROTO_VERSION,
			 h.version);
		struct outq_frame *it = error_frame(0, EPROTONOSUPPORT, msg);
		if (it)
			link_queue_prio(&S->link, it);
		return;
	}
	if (S->greeted)
		reset_streams(S, 1);
	S->greeted = 1;
	json_t *info = agent_info(S);
	char *txt = info ? json_dumps(info, JSON_COMPACT) : NULL;
	json_decref(info);
	size_t jl = txt ? strlen(txt) : 2;
	uint8_t *p = malloc(PROTO_HELLO_SIZE + jl);
	if (p) {
		struct proto_hello ack = {.version = PROTO_VERSION, .nonce = h.nonce};
		proto_hello_encode(p, &ack);
		memcpy(p + PROTO_HELLO_SIZE, txt ? txt : "{}", jl);
		struct outq_frame *it =
			outq_frame_new(PROTO_HELLO_ACK, 0, 0, p, (uint32_t)(PROTO_HELLO_SIZE + jl));
		if (it)
			link_queue_prio(&S->link, it);
		free(p);
	}
	free(txt);
	/* a host resends HELLO until it sees the ACK: log a nonce once */
	log_kv(h.nonce == S->last_nonce ? LOG_DEBUG : LOG_INFO, "agent.hello",
	       "nonce=%016llx since_host_us=%lld", (unsigned long long)h.nonce,
	       (long long)(util_now_us() - S->arrived_us));
	S->last_nonce = h.nonce;
}

/* --- streams: open, input, cancel ------------------------------------------ */

static void open_stream(struct session *S, const struct proto_frame *f)
{
	int i = slot_index(S, f->stream);
	struct astream *s = i >= 0 ? calloc(1, sizeof(*s)) : NULL;
	if (!s) {
		if (i >= 0)
			proto_mux_close(&S->link.mux, f->stream);
		protocol_error(S, f->stream, ENOMEM, "out of memory");
		return;
	}
	s->id = f->stream;
	s->link = &S->link;
	s->env = S->env;
	S->slot[i] = s;

	struct agent_req req;
	char err[256];
	int r = agent_req_parse(f->payload, f->len, &req, err, sizeof(err));
	if (r == -EBADMSG) {
		protocol_error(S, f->stream, EBADMSG, err);
		return;
	}
	if (r < 0) {
		astream_end_err(s, r, "%s", err);
		return;
	}
	switch (req.op) {
	case AGENT_OP_RESTORE:
		r = op_restore_start(s, &req);
		break;
	case AGENT_OP_EXEC:
		r = op_exec_start(s, &req);
		break;
	case AGENT_OP_FILE_WRITE:
		r = op_file_write_start(s, &req);
		break;
	case AGENT_OP_FILE_READ:
		r = op_file_read_start(s, &req);
		break;
	case AGENT_OP_STAT:
	case AGENT_OP_LIST:
	case AGENT_OP_REMOVE:
	case AGENT_OP_MKDIR:
		r = op_fs_start(s, &req);
		break;
	case AGENT_OP_COMMAND_START:
	case AGENT_OP_COMMAND_LIST:
	case AGENT_OP_COMMAND_KILL:
	case AGENT_OP_COMMAND_OUTPUT:
	case AGENT_OP_COMMAND_STDIN:
		r = op_command_start(s, &req);
		break;
	default:
		r = op_context_start(s, &req);
		break;
	}
	if (r < 0)
		astream_end_err(s, r, "%s: %s", agent_op_name(req.op), strerror(-r));
	agent_req_free(&req);
}

static void on_input(struct session *S, struct astream *s, const struct proto_frame *f)
{
	if (f->flags != PROTO_CH_IN) {
		protocol_error(S, s->id, EPROTO, "host data must be on channel 0");
		return;
	}
	if (s->ended)
		return;
	int r = 0;
	if (f->type == PROTO_DATA) {
		if (s->ops && s->ops->input)
			r = s->ops->input(s, f->payload, f->len);
		else
			astream_consumed(s, f->len); /* the op takes no input: drop it */
	} else if (s->ops && s->ops->input_eof) {
		r = s->ops->input_eof(s);
	}
	if (r < 0 && !s->ended) {
		if (s->ops && s->ops->cancel)
			s->ops->cancel(s);
		astream_end_err(s, r, "%s", strerror(-r));
	}
}

static void cancel_stream(struct astream *s)
{
	if (s->ended)
		return;
	if (s->ops && s->ops->cancel)
		s->ops->cancel(s);
	outq_clear(&s->q);
	astream_end_err(s, ECANCELED, "cancelled by the host");
}

/* --- frame dispatch -------------------------------------------------------- */

static void on_frame(struct session *S, const struct proto_frame *f)
{
	S->frames_in++;
	if (!S->greeted && f->type != PROTO_HELLO)
		return; /* before HELLO everything is line noise */
	switch (f->type) {
	case PROTO_HELLO:
		if (f->stream != 0)
			protocol_error(S, f->stream, EPROTO, "HELLO must be on stream 0");
		else
			on_hello(S, f);
		return;
	case PROTO_PING:
		if (f->stream != 0 || f->len != 8) {
			protocol_error(S, f->stream, EPROTO, "PING must be 8 bytes on stream 0");
		} else {
			struct outq_frame *it = outq_frame_new(PROTO_PONG, 0, 0, f->payload, 8);
			if (it) {
				it->droppable = 1;
				link_queue_prio(&S->link, it);
			}
		}
		return;
	case PROTO_PONG:
		return;
	default:
		break;
	}
	int r = proto_mux_check(&S->link.mux, f);
	if (r == -ENOENT)
		return; /* in flight when the stream closed */
	if (r < 0) {
		char msg[96];
		snprintf(msg, sizeof(msg), "%s frame refused on stream %u", proto_type_name(f->type),
			 f->stream);
		protocol_error(S, f->stream, -r, msg);
		return;
	}
	if (f->type == PROTO_ERROR && f->stream == 0) {
		char q[200];
		char txt[160];
		size_t n = f->len < sizeof(txt) - 1 ? f->len : sizeof(txt) - 1;
		memcpy(txt, f->payload, n);
		txt[n] = '\0';
		log_kv(LOG_WARN, "agent.host_error", "msg=%s", log_quote(txt, q, sizeof(q)));
		return;
	}
	if (f->type == PROTO_OPEN) {
		open_stream(S, f);
		return;
	}
	struct astream *s = stream_of(S, f->stream);
	if (!s)
		return;
	switch (f->type) {
	case PROTO_DATA:
	case PROTO_EOF:
		on_input(S, s, f);
		break;
	case PROTO_WINDOW:
		astream_kick(s);
		break;
	case PROTO_CANCEL:
		cancel_stream(s);
		break;
	case PROTO_ERROR:
		/* the host closed the stream: stop quietly, send nothing more */
		free_stream(S, s);
		break;
	default:
		break;
	}
}

/* Feed n bytes to the decoder without ever exceeding its cap, handling
 * every frame as it completes. */
static void feed(struct session *S, const uint8_t *p, size_t n)
{
	struct proto_decoder *d = &S->dec;
	while (n > 0) {
		size_t chunk = proto_decoder_room(d);
		if (chunk > n)
			chunk = n;
		if (proto_decoder_feed(d, p, chunk) < 0) {
			proto_decoder_resync(d); /* out of memory: lose the line, not the agent */
			return;
		}
		p += chunk;
		n -= chunk;
		struct proto_frame f;
		int r;
		while ((r = proto_decoder_next(d, &f)) != 0) {
			if (r == 1) {
				on_frame(S, &f);
				continue;
			}
			if (!S->greeted)
				continue;
			S->garbage_errors++;
			if (r == -EBADMSG)
				protocol_error(S, 0, EBADMSG, "bad frame magic; resynchronising");
			else
				protocol_error(S, f.stream, -r,
					       r == -EMSGSIZE ? "frame over its size cap"
							      : "unknown frame type");
		}
	}
}

/* --- transport ------------------------------------------------------------- */

static void set_io_events(struct session *S)
{
	if (S->fd < 0 || !S->host_present)
		return;
	loop_watch_set(S->env->loop, &S->watch, EPOLLIN | (S->wire.n ? EPOLLOUT : 0));
}

static void on_transport(struct loop_watch *w, uint32_t ev)
{
	struct session *S = w->ctx;
	if (!S->host_present) {
		/* a port whose host is away, watched edge-triggered: something
		 * changed on it (the host connected, or a spurious wake-up) */
		if (!port_host_present(S))
			return;
		host_arrived(S);
		ev = EPOLLIN; /* the HELLO may be there already */
	}
	if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		static uint8_t buf[READ_CHUNK];
		/* A virtio-serial port returns at most one 4 KiB buffer per
		 * read(); the kernel's readv loop goes on to the next segment
		 * while segments come back full, so page-sized segments fetch up
		 * to READ_CHUNK bytes per syscall.  On a socket it is a read. */
		struct iovec iov[READ_CHUNK / READ_SEGMENT];
		for (size_t i = 0; i < sizeof(iov) / sizeof(iov[0]); i++) {
			iov[i].iov_base = buf + i * READ_SEGMENT;
			iov[i].iov_len = READ_SEGMENT;
		}
		size_t budget = READ_BUDGET;
		while (budget > 0 && S->fd >= 0) {
			ssize_t r = readv(S->fd, iov, (int)(sizeof(iov) / sizeof(iov[0])));
			if (r > 0) {
				feed(S, buf, (size_t)r);
				budget -= (size_t)r < budget ? (size_t)r : budget;
				continue;
			}
			if (r == 0) {
				host_away(S, "eof");
				return;
			}
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			host_away(S, strerror(errno));
			return;
		}
		if (budget == 0)
			S->link.busy = 1;
	}
	if (S->fd >= 0 && S->host_present && (ev & EPOLLOUT))
		flush(S);
}

/* Watch the transport for events (added on first use).  0 or -errno. */
static int watch_transport(struct session *S, uint32_t events)
{
	if (S->watch.fd >= 0)
		return loop_watch_set(S->env->loop, &S->watch, events);
	return loop_watch_add(S->env->loop, &S->watch, S->fd, events);
}

/* 1 if the port has a host on it now (poll: no POLLHUP/POLLERR). */
static int port_host_present(struct session *S)
{
	struct pollfd p = {.fd = S->fd, .events = POLLIN};
	return poll(&p, 1, 0) >= 0 && !(p.revents & (POLLHUP | POLLERR | POLLNVAL));
}

/*
 * Wait for the host of a port to come (back).  The port reports POLLHUP for
 * as long as no host is connected, so a level-triggered watch would spin;
 * an edge-triggered one wakes once per change of the port instead (the
 * driver wakes its readers when the host opens the port), so the host's
 * return is seen at once and an idle guest without a host does not wake.
 * The probe timer stays as a slow fallback.
 */
static void await_port_host(struct session *S)
{
	int r = watch_transport(S, EPOLLIN | EPOLLOUT | EPOLLET);
	if (r < 0)
		log_kv(LOG_WARN, "agent.watch_failed", "errno=%d", -r);
	loop_timer_arm(S->env->loop, &S->probe,
		       util_now_ms() + (r < 0 ? SESSION_AWAY_FAST_MS : SESSION_AWAY_POLL_MS));
}

static void host_arrived(struct session *S)
{
	S->arrived_us = util_now_us();
	S->host_present = 1;
	S->greeted = 0;
	proto_decoder_resync(&S->dec);
	S->dec.dropped = 0;
	loop_timer_cancel(S->env->loop, &S->probe);
	int r = watch_transport(S, EPOLLIN);
	if (r < 0)
		log_kv(LOG_ERROR, "agent.watch_failed", "errno=%d", -r);
	log_kv(LOG_INFO, "agent.host_connected", "transport=%s",
	       S->kind == SESSION_LISTEN ? "socket" : "port");
}

static void host_away(struct session *S, const char *why)
{
	char q[80];
	log_kv(LOG_INFO, "agent.host_away", "why=%s streams=%u", log_quote(why, q, sizeof(q)),
	       S->link.mux.nopen);
	reset_streams(S, 0);
	outq_wire_clear(&S->wire, 0);
	proto_decoder_resync(&S->dec);
	S->greeted = 0;
	S->host_present = 0;
	if (S->kind == SESSION_LISTEN) {
		loop_watch_del(S->env->loop, &S->watch);
		if (S->fd >= 0)
			close(S->fd);
		S->fd = -1;
		loop_watch_set(S->env->loop, &S->lwatch, EPOLLIN);
	} else {
		await_port_host(S);
	}
}

static void on_accept(struct loop_watch *w, uint32_t ev)
{
	(void)ev;
	struct session *S = w->ctx;
	int fd = accept4(S->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (S->fd >= 0) { /* one host at a time */
		close(fd);
		return;
	}
	S->fd = fd;
	loop_watch_set(S->env->loop, &S->lwatch, 0);
	host_arrived(S);
}

/* Probe timer: open a port not found yet, or check whether the host came
 * back to one it had left. */
static void on_probe(struct loop_timer *t, int64_t now)
{
	struct session *S = t->ctx;
	if (S->fd < 0) {
		char dev[PATH_MAX];
		const char *path = S->path;
		if (S->kind == SESSION_PORT_NAMED) {
			if (endpoint_find_virtio_port(S->path, dev, sizeof(dev)) < 0) {
				loop_timer_arm(S->env->loop, t, now + SESSION_FIND_POLL_MS);
				return;
			}
			path = dev;
		}
		S->fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		if (S->fd < 0) {
			loop_timer_arm(S->env->loop, t, now + SESSION_FIND_POLL_MS);
			return;
		}
		log_kv(LOG_INFO, "agent.port_open", "dev=%s", path);
	}
	if (!port_host_present(S)) {
		await_port_host(S);
		return;
	}
	host_arrived(S);
}

/* --- writer ----------------------------------------------------------------- */

static void on_written(void *ctx, const struct outq_frame *it)
{
	struct session *S = ctx;
	S->frames_out++;
	if (!it->closes)
		return;
	struct astream *s = stream_of(S, it->stream);
	if (s && s->ended)
		free_stream(S, s);
}

/* Move frames to the wire: priority frames first, then one frame per stream
 * in turn. */
static void fill_wire(struct session *S)
{
	while (outq_wire_room(&S->wire)) {
		struct outq_frame *it = link_pop_prio(&S->link);
		if (it) {
			outq_wire_add(&S->wire, it);
			continue;
		}
		int found = 0;
		for (unsigned k = 1; k <= PROTO_MAX_STREAMS; k++) {
			unsigned i = (S->rr + k) % PROTO_MAX_STREAMS;
			struct astream *s = S->slot[i];
			if (!s || !s->q.head)
				continue;
			it = outq_pop(&s->q);
			if (it->type == PROTO_DATA && !s->ended)
				astream_kick(s);
			outq_wire_add(&S->wire, it);
			S->rr = i;
			found = 1;
			break;
		}
		if (!found)
			return;
	}
}

static void flush(struct session *S)
{
	if (S->fd < 0 || !S->host_present)
		return;
	for (;;) {
		fill_wire(S);
		if (S->wire.n == 0)
			break;
		int again = 0;
		ssize_t r = outq_wire_write(&S->wire, S->fd, &again, on_written, S);
		if (r < 0) {
			host_away(S, strerror((int)-r));
			return;
		}
		if (again)
			break;
	}
	set_io_events(S);
}

/* After every loop iteration: run pumps, write, release finished ops. */
static void on_idle(void *ctx)
{
	struct session *S = ctx;
	S->link.busy = 0;
	for (int round = 0; round < 4; round++) {
		int kicked = 0;
		for (unsigned i = 0; i < PROTO_MAX_STREAMS; i++) {
			struct astream *s = S->slot[i];
			if (!s)
				continue;
			if (s->kick) {
				s->kick = 0;
				if (!s->ended && s->ops && s->ops->pump) {
					s->ops->pump(s);
					kicked = 1;
				}
			}
		}
		/* the frames go out first, then ended ops are released: an exec's
		 * END does not wait for the removal of its cgroup */
		flush(S);
		for (unsigned i = 0; i < PROTO_MAX_STREAMS; i++) {
			struct astream *s = S->slot[i];
			if (s && s->ended && !s->destroyed)
				destroy_op(s);
		}
		if (!kicked)
			break;
	}
	for (unsigned i = 0; i < PROTO_MAX_STREAMS; i++)
		if (S->slot[i] && S->slot[i]->kick)
			S->link.busy = 1;
	if (S->link.prio.head && S->wire.n == 0 && S->host_present)
		S->link.busy = 1;
}

int session_busy(struct session *S)
{
	return S->link.busy;
}

/* --- setup ------------------------------------------------------------------ */

int session_new(struct agent_env *env, enum session_transport kind, const char *path,
		struct session **out)
{
	struct session *S = calloc(1, sizeof(*S));
	if (!S)
		return -ENOMEM;
	S->env = env;
	S->kind = kind;
	S->lfd = S->fd = -1;
	S->path = strdup(path);
	proto_decoder_init(&S->dec);
	link_init(&S->link);
	loop_watch_init(&S->lwatch, on_accept, S);
	loop_watch_init(&S->watch, on_transport, S);
	loop_timer_init(&S->probe, on_probe, S);
	int r = S->path ? 0 : -ENOMEM;
	if (!r && kind == SESSION_LISTEN) {
		S->lfd = endpoint_listen_unix(path);
		r = S->lfd < 0 ? S->lfd : loop_watch_add(env->loop, &S->lwatch, S->lfd, EPOLLIN);
	} else if (!r) {
		loop_timer_arm(env->loop, &S->probe, util_now_ms());
	}
	if (r < 0) {
		if (S->lfd >= 0)
			close(S->lfd);
		free(S->path);
		proto_decoder_free(&S->dec);
		free(S);
		return r;
	}
	loop_set_idle(env->loop, on_idle, S);
	*out = S;
	return 0;
}

void session_free(struct session *S)
{
	if (!S)
		return;
	reset_streams(S, 0);
	outq_wire_clear(&S->wire, 0);
	loop_watch_del(S->env->loop, &S->watch);
	loop_watch_del(S->env->loop, &S->lwatch);
	loop_timer_cancel(S->env->loop, &S->probe);
	loop_set_idle(S->env->loop, NULL, NULL);
	if (S->fd >= 0)
		close(S->fd);
	if (S->lfd >= 0) {
		close(S->lfd);
		unlink(S->path);
	}
	proto_decoder_free(&S->dec);
	free(S->path);
	free(S);
}
