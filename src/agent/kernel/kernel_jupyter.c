/*
 * kernel_jupyter.c - the ipykernel backend: launch
 * `python3 -m ipykernel_launcher -f <connection file>` with colours off
 * and history off, wait until it answers (kernel_info with the nudge
 * loop), send execute requests, drain every channel, keep the heartbeat.
 *
 * Readiness, as jupyter_client's wait_for_ready does it: send
 * kernel_info_request, again every NUDGE_MS, and once a reply arrived,
 * again at most every NUDGE_FAST_MS until some iopub message was seen too:
 * with an old PUB iopub (ipykernel before 7.2) the first messages are lost
 * until the subscription lands (slow joiner, jupyter_client#593), so the
 * reply alone does not prove iopub works.
 *
 * Execute requests carry allow_stdin false (input() fails at once) and
 * stop_on_error false: runs are queued here, one at a time, so the kernel
 * never holds a second request an error could abort; with true, ipykernel
 * 6 aborts a request that arrives just after an error (its abort window),
 * which would fail a later, independent run.
 *
 * Heartbeat: while a run is under way, ping every HB_INTERVAL_MS; a ping
 * unanswered for HB_TIMEOUT_MS recreates the REQ socket; HB_MISSES in a row
 * mean the process is frozen: the loop kills and restarts it.  An idle
 * kernel is not pinged: each ping woke four threads in the guest, the
 * largest part of an idle sandbox's host CPU under TCG; a kernel that froze
 * while idle is found by the next run's pings, one that died by its pidfd.
 *
 * The kernel's own stdout/stderr (its logs, and what child processes write
 * to the inherited fds) go to a pipe whose last bytes are kept for the
 * start-failure message.  Threads: the client thread only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/jupyter/jupyter_conn.h"
#include "agent/kernel/kernel_int.h"
#include "common/log.h"
#include "common/util.h"

#define NUDGE_MS 1000
#define NUDGE_FAST_MS 200
#define HB_INTERVAL_MS 3000
#define HB_TIMEOUT_MS 3000
/* 10 misses, 30 s: a guest starved of CPU on a loaded host (under TCG, a
 * restore among dozens of busy guests) answers late but is not frozen; at 9 s
 * it lost its warm kernels and the first context had to start one from
 * scratch. */
#define HB_MISSES 10
#define TAIL_MAX 1024
/* Messages drained per channel per wake, so one flood cannot starve the
 * others (the rest is read on the next iteration). */
#define DRAIN_MAX 256
/* ... or for this long, ms (drain). */
#define DRAIN_BUDGET_MS 100
/* Times the iopub link of one kernel is made again after it dropped. */
#define IOPUB_REOPEN_MAX 64u

struct jup {
	struct jupyter_conn conn;
	int log_fd;                   /* read end of the kernel's fd 1/2 */
	char tail[TAIL_MAX];
	size_t tail_len;
	int got_info, saw_iopub;
	json_t *info;                 /* kernel_info_reply content */
	int64_t next_nudge;
	int hb_misses;
	int64_t hb_next;
	unsigned iopub_reopens;       /* iopub_check */
};

static void jup_free(struct jup *j)
{
	if (!j)
		return;
	jupyter_conn_close(&j->conn);
	if (j->log_fd >= 0)
		close(j->log_fd);
	json_decref(j->info);
	free(j);
}

static void nudge(struct kernel_ctx *c, struct jup *j, int64_t now)
{
	int r = jupyter_conn_send(&j->conn, JUPYTER_SHELL, "kernel_info_request", NULL, NULL);
	if (r < 0)
		log_kv(LOG_DEBUG, "kernel.nudge_failed", "r=%d", r);
	j->next_nudge = now + NUDGE_MS;
	(void)c;
}

static int jup_start(struct kernel_ctx *c)
{
	struct jup *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->log_fd = -1;
	int pipefd[2] = { -1, -1 };
	int r = jupyter_conn_prepare(&j->conn, c->dir);
	if (r == 0)
		r = jupyter_conn_open(&j->conn);
	if (r == 0 && pipe2(pipefd, O_CLOEXEC) < 0)
		r = -errno;
	if (r == 0) {
		j->log_fd = pipefd[0];
		fcntl(j->log_fd, F_SETFL, O_NONBLOCK);
		char *argv[] = {
			c->cfg.python, "-m", "ipykernel_launcher", "-f", j->conn.file,
			"--InteractiveShell.colors=NoColor", "--HistoryManager.enabled=False",
			NULL,
		};
		struct kernel_spawn s = {
			.path = c->cfg.python, .argv = argv, .envp = c->cfg.envp,
			.cwd = c->cfg.cwd, .fd = { -1, pipefd[1], pipefd[1], -1 },
			.nice = c->cfg.nice,
			.idle = c->cfg.idle,
		};
		r = kernel_proc_spawn(&s, &c->proc);
		close(pipefd[1]);
	}
	if (r < 0) {
		jup_free(j);
		return r;
	}
	c->bs = j;
	nudge(c, j, util_now_ms());
	return 0;
}

static void jup_stop(struct kernel_ctx *c)
{
	jup_free(c->bs);
	c->bs = NULL;
}

static int jup_fill_poll(struct kernel_ctx *c, zmq_pollitem_t *it, int max)
{
	struct jup *j = c->bs;
	static const enum jupyter_channel chans[] = { JUPYTER_IOPUB, JUPYTER_SHELL,
						      JUPYTER_CONTROL, JUPYTER_STDIN, JUPYTER_HB };
	int n = 0;
	if (max < 7)
		return 0;
	for (size_t i = 0; i < sizeof(chans) / sizeof(chans[0]); i++)
		it[n++] = (zmq_pollitem_t){ .socket = jupyter_conn_socket(&j->conn, chans[i]),
					    .events = ZMQ_POLLIN };
	it[n++] = (zmq_pollitem_t){ .fd = j->log_fd, .events = j->log_fd >= 0 ? ZMQ_POLLIN : 0 };
	it[n++] = (zmq_pollitem_t){ .socket = jupyter_conn_iopub_watch(&j->conn),
				    .events = ZMQ_POLLIN };
	/* A closed socket (NULL) must not reach zmq_poll as fd 0. */
	for (int i = 0; i < n; i++)
		if (!it[i].socket && it[i].fd == 0) {
			it[i].fd = -1;
			it[i].events = 0;
		}
	return n;
}

static void check_ready(struct kernel_ctx *c, struct jup *j)
{
	if (c->st == KS_STARTING && j->got_info && j->saw_iopub) {
		j->hb_next = util_now_ms() + HB_INTERVAL_MS;
		kernel__on_ready(c, j->info);
	}
}

/*
 * Read what waits on ch: at most DRAIN_MAX messages or DRAIN_BUDGET_MS,
 * so that the loop gets back to its requests (an interrupt, a cancel)
 * while a cell floods output.  Once a run's output reached its cap, more
 * is dropped before it is parsed: a cell printing faster than the agent
 * parses would otherwise leave a backlog (unbounded: RCVHWM 0) that holds
 * up its interrupt's reply and every later run for as long as it takes to
 * read.  So is the output of the last run cut short (c->cut_msg_id) that
 * arrives after its end: parsed, it would delay the next run's own
 * messages past that run's grace for them.
 */
static void drain(struct kernel_ctx *c, struct jup *j, enum jupyter_channel ch, int64_t now)
{
	for (int k = 0; k < DRAIN_MAX && c->bs == j; k++) {
		if (k > 0 && util_now_ms() - now >= DRAIN_BUDGET_MS)
			return;
		struct jupyter_msg m;
		j->conn.drop_output = c->cur != NULL && c->x.truncated;
		j->conn.drop_parent = c->cut_msg_id[0] ? c->cut_msg_id : NULL;
		int r = jupyter_conn_recv(&j->conn, ch, &m);
		if (r == -EAGAIN || r == -ENOTSOCK || r == -EINVAL || r == -ETERM)
			return;
		if (r == -ECANCELED)
			continue; /* output past the run's cap */
		if (r < 0) {
			log_kv(LOG_DEBUG, "kernel.bad_message", "channel=%d r=%d", (int)ch, r);
			continue;
		}
		if (ch == JUPYTER_IOPUB) {
			j->saw_iopub = 1;
		} else if (ch == JUPYTER_SHELL && strcmp(m.msg_type, "kernel_info_reply") == 0) {
			j->got_info = 1;
			json_decref(j->info);
			j->info = json_incref(m.content);
			if (!j->saw_iopub && j->next_nudge > now + NUDGE_FAST_MS)
				j->next_nudge = now + NUDGE_FAST_MS;
		}
		if (c->st == KS_STARTING)
			check_ready(c, j);
		if (ch == JUPYTER_IOPUB || ch == JUPYTER_SHELL)
			kernel__on_message(c, &m); /* may end the kernel: c->bs changes */
		jupyter_msg_clear(&m);
	}
}

static void read_log(struct jup *j)
{
	char buf[4096];
	for (int k = 0; k < 64; k++) {
		ssize_t n = read(j->log_fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0 || errno != EAGAIN) {
				close(j->log_fd);
				j->log_fd = -1;
			}
			return;
		}
		size_t keep = (size_t)n > TAIL_MAX ? TAIL_MAX : (size_t)n;
		const char *src = buf + (size_t)n - keep;
		if (j->tail_len + keep > TAIL_MAX) {
			size_t drop = j->tail_len + keep - TAIL_MAX;
			memmove(j->tail, j->tail + drop, j->tail_len - drop);
			j->tail_len -= drop;
		}
		memcpy(j->tail + j->tail_len, src, keep);
		j->tail_len += keep;
	}
}

/* The iopub link dropped.  While the kernel lives, that was a frame over
 * JUPYTER_FRAME_MAX: the link is made again (at most IOPUB_REOPEN_MAX
 * times for one kernel, so a link that keeps dropping cannot spin) and the
 * current run is told its output has a gap.  The link of a kernel that
 * ended is the death path's: nothing is made again for it. */
static void iopub_check(struct kernel_ctx *c, struct jup *j)
{
	if (!jupyter_conn_iopub_dropped(&j->conn))
		return;
	char st;
	uint64_t cpu;
	int alive = kernel_proc_sample(&c->proc, &st, &cpu) == 0 && st != 'Z' && st != 'X';
	log_kv(alive ? LOG_WARN : LOG_DEBUG, "kernel.iopub_dropped",
	       "pid=%ld alive=%d reopened=%u max_frame=%lld", (long)c->proc.pid, alive,
	       j->iopub_reopens, (long long)JUPYTER_FRAME_MAX);
	if (!alive)
		return;
	int r = j->iopub_reopens++ < IOPUB_REOPEN_MAX ? jupyter_conn_iopub_reopen(&j->conn) : -EMLINK;
	if (r < 0)
		kernel__on_lost(c, "the kernel's output channel could not be made again");
	else
		kernel__on_iopub_gap(c);
}

static void jup_on_poll(struct kernel_ctx *c, zmq_pollitem_t *it, int n, int64_t now)
{
	struct jup *j = c->bs;
	if (n < 7)
		return;
	if (it[5].revents & (ZMQ_POLLIN | ZMQ_POLLERR))
		read_log(j);
	if (it[4].revents & ZMQ_POLLIN) {
		if (jupyter_conn_hb_recv(&j->conn) == 1) {
			j->hb_misses = 0;
			j->hb_next = now + HB_INTERVAL_MS;
		}
	}
	if (it[3].revents & ZMQ_POLLIN)
		drain(c, j, JUPYTER_STDIN, now);
	if (c->bs == j && (it[2].revents & ZMQ_POLLIN))
		drain(c, j, JUPYTER_CONTROL, now);
	/* iopub before shell: output precedes the reply that ends a run. */
	if (c->bs == j && (it[0].revents & ZMQ_POLLIN))
		drain(c, j, JUPYTER_IOPUB, now);
	if (c->bs == j && (it[1].revents & ZMQ_POLLIN))
		drain(c, j, JUPYTER_SHELL, now);
	if (c->bs == j && (it[6].revents & ZMQ_POLLIN))
		iopub_check(c, j); /* may end the kernel */
}

/*
 * Internal jobs (warm-up, reseed, setup) are not silent, only kept out of
 * IPython's history and execution count (store_history false): a silent
 * request takes other paths through ipykernel and IPython than a user's
 * cell, and running the same paths at bake and at restore leaves them warm
 * (imported, cached, and under TCG translated) for the user's first run.
 * Their output is dropped by the loop.
 */
static int jup_execute(struct kernel_ctx *c, const char *code, int internal,
		       char msg_id[JUPYTER_ID_SIZE])
{
	struct jup *j = c->bs;
	size_t len = c->cur ? c->cur->code_len : strlen(code);
	json_t *content = json_pack("{s:s%, s:b, s:b, s:{}, s:b, s:b}", "code", code, len,
				    "silent", 0, "store_history", !internal,
				    "user_expressions", "allow_stdin", 0, "stop_on_error", 0);
	if (!content)
		return -ENOMEM;
	int r = jupyter_conn_send(&j->conn, JUPYTER_SHELL, "execute_request", content, msg_id);
	json_decref(content);
	return r;
}

static int64_t jup_next_due(struct kernel_ctx *c)
{
	struct jup *j = c->bs;
	if (c->st == KS_STARTING)
		return j->next_nudge;
	if (j->conn.hb_waiting)
		return j->conn.hb_sent_ms + HB_TIMEOUT_MS;
	return c->cur ? j->hb_next : INT64_MAX;
}

static void jup_on_time(struct kernel_ctx *c, int64_t now)
{
	struct jup *j = c->bs;
	if (c->st == KS_STARTING) {
		if (now >= j->next_nudge)
			nudge(c, j, now);
		return;
	}
	if (j->conn.hb_waiting && now - j->conn.hb_sent_ms >= HB_TIMEOUT_MS) {
		j->hb_misses++;
		log_kv(LOG_WARN, "kernel.heartbeat_missed", "pid=%ld misses=%d", (long)c->proc.pid,
		       j->hb_misses);
		if (j->hb_misses >= HB_MISSES) {
			char why[96];
			snprintf(why, sizeof(why), "the kernel stopped answering heartbeats for %d s",
				 HB_MISSES * HB_TIMEOUT_MS / 1000);
			kernel__on_lost(c, why);
			return;
		}
		jupyter_conn_hb_reset(&j->conn);
		j->hb_next = now;
	}
	if (!c->cur) /* idle: the first ping comes HB_INTERVAL_MS into a run */
		j->hb_next = now + HB_INTERVAL_MS;
	else if (!j->conn.hb_waiting && now >= j->hb_next)
		jupyter_conn_hb_ping(&j->conn, now);
}

static void jup_shutdown(struct kernel_ctx *c)
{
	struct jup *j = c->bs;
	json_t *content = json_pack("{s:b}", "restart", 0);
	if (content)
		jupyter_conn_send(&j->conn, JUPYTER_CONTROL, "shutdown_request", content, NULL);
	json_decref(content);
}

static void jup_log_tail(struct kernel_ctx *c, char *out, size_t n)
{
	struct jup *j = c->bs;
	if (n == 0)
		return;
	out[0] = '\0';
	if (!j)
		return;
	if (j->log_fd >= 0)
		read_log(j);
	size_t len = j->tail_len < n - 1 ? j->tail_len : n - 1;
	memcpy(out, j->tail + j->tail_len - len, len);
	out[len] = '\0';
}

const struct kernel_backend kernel_jupyter_backend = {
	.name = "jupyter",
	.start = jup_start,
	.stop = jup_stop,
	.fill_poll = jup_fill_poll,
	.on_poll = jup_on_poll,
	.execute = jup_execute,
	.next_due = jup_next_due,
	.on_time = jup_on_time,
	.shutdown = jup_shutdown,
	.log_tail = jup_log_tail,
};
