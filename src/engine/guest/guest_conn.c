/*
 * guest_conn.c - the host's connection to the guest agent (guest_conn.h,
 * docs/agent-protocol.md): connect, handshake, start the reader thread
 * (guest_stream.c), close, and the restore operation.
 *
 * Structure: one connected, nonblocking Unix socket; one reader thread that
 * decodes frames and files them into per-stream message queues
 * (guest_stream_reader_main); callers' threads write frames under wlock, one
 * frame at a time (guest_link_send), so streams interleave.  Calls go one
 * way: this file -> guest_stream.c -> guest_link.c (guest_conn_int.h).
 */
#include "engine/guest/guest_conn_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/deadline.h"

#include "common/log.h"
#include "common/pip_index.h"
#include "common/util.h"

#define HELLO_RESEND_MS 50

/* --- connection --------------------------------------------------------------------- */

static int send_hello(struct guest_conn *c)
{
	uint8_t p[PROTO_HELLO_SIZE];
	struct proto_hello h = {.version = PROTO_VERSION, .nonce = c->nonce};
	proto_hello_encode(p, &h);
	return guest_link_send(c, PROTO_HELLO, 0, 0, p, sizeof(p), HELLO_RESEND_MS);
}

/* Look at one frame during the handshake.  Returns 1 when done, 0 to go
 * on, or -errno. */
static int handshake_frame(struct guest_conn *c, const struct proto_frame *f)
{
	if (f->stream != 0)
		return 0;
	if (f->type == PROTO_ERROR) {
		json_t *j = guest_link_parse_object(f->payload, f->len);
		const char *code = json_string_value(json_object_get(j, "code"));
		int unsupported = code && strcmp(code, "EPROTONOSUPPORT") == 0;
		json_decref(j);
		return unsupported ? -EPROTONOSUPPORT : 0;
	}
	if (f->type != PROTO_HELLO_ACK)
		return 0;
	struct proto_hello h;
	if (proto_hello_decode(f->payload, f->len, &h) < 0 || h.nonce != c->nonce)
		return 0; /* an answer to an older HELLO, or noise */
	if (h.version != PROTO_VERSION)
		return -EPROTONOSUPPORT;
	json_t *info = json_loadb((const char *)f->payload + PROTO_HELLO_SIZE,
				  f->len - PROTO_HELLO_SIZE, 0, NULL);
	if (!json_is_object(info)) {
		json_decref(info);
		info = json_object();
	}
	c->info = info;
	return c->info ? 1 : -ENOMEM;
}

static int handshake(struct guest_conn *c, int timeout_ms)
{
	int64_t deadline = util_now_ms() + timeout_ms, next_hello = 0;
	uint8_t *buf = malloc(READ_CHUNK);
	if (!buf)
		return -ENOMEM;
	int rc = -ETIMEDOUT;
	for (;;) {
		int64_t now = util_now_ms();
		if (now >= deadline)
			break;
		if (now >= next_hello) {
			int r = send_hello(c);
			if (r == -ECONNRESET) {
				rc = r;
				break;
			}
			c->stats.hellos++;
			next_hello = now + HELLO_RESEND_MS;
		}
		int64_t until = next_hello < deadline ? next_hello : deadline;
		struct pollfd p = {.fd = c->fd, .events = POLLIN};
		int pr = poll(&p, 1, (int)(until - now > 0 ? until - now : 0));
		if (pr <= 0)
			continue;
		ssize_t n = read(c->fd, buf, READ_CHUNK);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0) {
			rc = -ECONNRESET;
			break;
		}
		const uint8_t *q = buf;
		size_t left = (size_t)n;
		int r = 0;
		while (left > 0 && r == 0) {
			size_t held = c->dec.len - c->dec.off - c->dec.skip;
			size_t chunk = DECODER_CAP - held < left ? DECODER_CAP - held : left;
			if (proto_decoder_feed(&c->dec, q, chunk) < 0) {
				r = -ENOMEM;
				break;
			}
			q += chunk;
			left -= chunk;
			struct proto_frame f;
			int k;
			while (r == 0 && (k = proto_decoder_next(&c->dec, &f)) != 0)
				if (k == 1)
					r = handshake_frame(c, &f);
		}
		if (r != 0) {
			rc = r > 0 ? 0 : r;
			break;
		}
	}
	free(buf);
	return rc;
}

int guest_conn_open(const char *sock_path, int timeout_ms, struct guest_conn **out)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(sock_path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, sock_path);
	int64_t t0 = util_now_us();
	struct guest_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		int e = -errno;
		free(c);
		return e;
	}
	if (connect(c->fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int e = -errno;
		close(c->fd);
		free(c);
		return e;
	}
	fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->wlock, NULL);
	if (deadline_cond_init(&c->gate_cond) < 0) {
		close(c->fd);
		pthread_mutex_destroy(&c->lock);
		pthread_mutex_destroy(&c->wlock);
		free(c);
		return -ENOMEM;
	}
	proto_decoder_init(&c->dec);
	proto_mux_init(&c->mux, PROTO_ROLE_HOST);
	c->alive = 1;
	c->refs = 1;
	c->next_id = 1;
	int64_t t1 = util_now_us();
	c->stats.connect_us = t1 - t0;
	int r = util_random(&c->nonce, sizeof(c->nonce));
	if (!r)
		r = handshake(c, timeout_ms);
	c->stats.handshake_us = util_now_us() - t1;
	log_kv(LOG_DEBUG, "guest_conn.handshake", "rc=%d connect_us=%lld handshake_us=%lld hellos=%u",
	       r, (long long)c->stats.connect_us, (long long)c->stats.handshake_us,
	       c->stats.hellos);
	if (!r) {
		int e = pthread_create(&c->reader, NULL, guest_stream_reader_main, c);
		r = e ? -e : 0;
		c->reader_started = !e;
	}
	if (r < 0) {
		close(c->fd);
		guest_link_free(c);
		return r;
	}
	*out = c;
	return 0;
}

void guest_conn_close(struct guest_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	guest_link_kill_locked(c);
	pthread_mutex_unlock(&c->lock);
	guest_stream_gate_drop(c);
	if (c->reader_started)
		pthread_join(c->reader, NULL);
	/* a writer between its liveness check and its write holds wlock: wait
	 * for it, so the fd number is never closed (and reused) under it */
	pthread_mutex_lock(&c->wlock);
	pthread_mutex_lock(&c->lock);
	guest_stream_fail_all_locked(c);
	close(c->fd);
	c->fd = -1;
	int last = guest_link_unref_locked(c);
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&c->wlock);
	if (last)
		guest_link_free(c);
}

int guest_conn_alive(struct guest_conn *c)
{
	pthread_mutex_lock(&c->lock);
	int a = c->alive;
	pthread_mutex_unlock(&c->lock);
	return a;
}

json_t *guest_conn_info(struct guest_conn *c)
{
	return c->info;
}

void guest_conn_set_label(struct guest_conn *c, const char *label)
{
	pthread_mutex_lock(&c->lock);
	snprintf(c->label, sizeof(c->label), "%s", label);
	pthread_mutex_unlock(&c->lock);
}

void guest_conn_stats(const struct guest_conn *c, struct guest_conn_stats *out)
{
	*out = c->stats; /* written before the reader thread started, never after */
}

/* 1 if the agent's HELLO_ACK lists feature name (the guest's word: it
 * only decides what the host may send it). */
static int agent_has_feature(struct guest_conn *c, const char *name)
{
	json_t *f = json_object_get(c->info, "features"), *v;
	size_t i;
	json_array_foreach(f, i, v) {
		if (json_is_string(v) && strcmp(json_string_value(v), name) == 0)
			return 1;
	}
	return 0;
}

static int sandbox_id_ok(const char *id)
{
	size_t n = strlen(id);
	return n > 0 && n <= GUEST_SANDBOX_ID_MAX &&
	       strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

int guest_conn_restore_send(struct guest_conn *c, const struct guest_restore_opts *opts,
			    int timeout_ms)
{
	const char *pip = opts && opts->pip_index_url && opts->pip_index_url[0]
				  ? opts->pip_index_url
				  : NULL;
	const char *sid = opts && opts->sandbox_id && opts->sandbox_id[0] ? opts->sandbox_id
									   : NULL;
	if (pip && pip_index_check(pip, NULL, 0, NULL, NULL) < 0)
		return -EINVAL;
	if (sid && !sandbox_id_ok(sid))
		return -EINVAL;
	if (sid && !agent_has_feature(c, "restore_hooks"))
		sid = NULL; /* an agent older than the hooks: it would refuse the field */
	uint8_t ent[64];
	char hex[2 * sizeof(ent) + 1], clock[24];
	int r = util_random(ent, sizeof(ent));
	if (r < 0)
		return r;
	util_hex(ent, sizeof(ent), hex);
	explicit_bzero(ent, sizeof(ent));
	snprintf(clock, sizeof(clock), "%llu", (unsigned long long)util_wall_ns());
	json_t *req = json_pack("{s:s, s:s, s:s}", "op", "restore", "wall_clock_ns", clock,
				"entropy", hex);
	explicit_bzero(hex, sizeof(hex));
	/* only when set: the request of a host without one is what agents
	 * older than the field accept */
	if (req && pip && json_object_set_new(req, "pip_index_url", json_string(pip)) < 0) {
		json_decref(req);
		req = NULL;
	}
	if (req && sid && json_object_set_new(req, "sandbox_id", json_string(sid)) < 0) {
		json_decref(req);
		req = NULL;
	}
	if (!req)
		return -ENOMEM;
	r = guest_stream_gate_open(c, req, timeout_ms);
	json_decref(req);
	return r;
}

/* Most hooks of one restore logged one by one. */
#define HOOKS_LOGGED_MAX 32

/* Log what the agent says the after-restore hooks did for sandbox_id (its
 * END: the guest's words, quoted and cut).  Failures at warn, a summary at
 * info when anything ran. */
static void log_hooks(struct guest_conn *c, const char *sandbox_id, const json_t *end)
{
	const json_t *hooks = json_object_get(end, "hooks");
	const json_t *kh = json_object_get(end, "kernel_hooks");
	if (!json_is_array(hooks) && !json_is_object(kh))
		return;
	char label[GUEST_CONN_LABEL_MAX];
	pthread_mutex_lock(&c->lock);
	snprintf(label, sizeof(label), "%s",
		 sandbox_id && sandbox_id[0] ? sandbox_id : c->label[0] ? c->label : "-");
	pthread_mutex_unlock(&c->lock);
	size_t i;
	json_t *h;
	json_array_foreach(hooks, i, h) {
		if (i >= HOOKS_LOGGED_MAX)
			break;
		const json_t *code = json_object_get(h, "exit_code");
		int skipped = json_is_true(json_object_get(h, "skipped"));
		int timed_out = json_is_true(json_object_get(h, "timed_out"));
		if (!skipped && !timed_out && json_is_integer(code) && json_integer_value(code) == 0)
			continue;
		const char *name = json_string_value(json_object_get(h, "name"));
		const char *out = json_string_value(json_object_get(h, "output"));
		char qn[300], qo[300];
		log_kv(LOG_WARN, "guest.restore_hook_failed",
		       "sandbox=%s name=%s exit_code=%lld timed_out=%d skipped=%d output=%s", label,
		       log_quote(name ? name : "", qn, sizeof(qn)),
		       (long long)json_integer_value(code), timed_out, skipped,
		       log_quote(out ? out : "", qo, sizeof(qo)));
	}
	json_int_t kran = json_integer_value(json_object_get(kh, "ran"));
	json_int_t kfail = json_integer_value(json_object_get(kh, "failed"));
	json_int_t kunf = json_integer_value(json_object_get(kh, "unfinished"));
	if (kfail || kunf) {
		char *errs = json_dumps(json_object_get(kh, "errors"), JSON_COMPACT);
		char q[400];
		log_kv(LOG_WARN, "guest.restore_kernel_hooks_failed",
		       "sandbox=%s failed=%lld unfinished=%lld errors=%s", label, (long long)kfail,
		       (long long)kunf, log_quote(errs ? errs : "", q, sizeof(q)));
		free(errs);
	}
	if (json_array_size(hooks) || kran)
		log_kv(LOG_INFO, "guest.restore_hooks", "sandbox=%s hooks=%zu kernels=%lld ms=%lld",
		       label, json_array_size(hooks), (long long)kran,
		       (long long)json_integer_value(json_object_get(end, "hooks_ms")));
}

int guest_conn_restore(struct guest_conn *c, const struct guest_restore_opts *opts,
		       int timeout_ms)
{
	int r = guest_conn_restore_send(c, opts, timeout_ms);
	if (r == 0)
		r = guest_stream_gate_wait(c);
	if (r == 0) {
		json_t *end = guest_stream_gate_end(c);
		log_hooks(c, opts ? opts->sandbox_id : NULL, end);
		json_decref(end);
	}
	return r;
}

int guest_conn_restore_hooks_found(struct guest_conn *c)
{
	json_t *end = guest_stream_gate_end(c);
	json_int_t n = json_integer_value(json_object_get(end, "hooks_found"));
	json_decref(end);
	return n > 0 ? (n < INT32_MAX ? (int)n : INT32_MAX) : 0;
}
