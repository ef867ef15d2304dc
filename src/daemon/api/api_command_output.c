/*
 * api_command_output.c - GET /v1/sandboxes/{id}/commands/{cid}/output
 * (docs/api.md, "Background commands"): what a background command wrote so
 * far on stdout and stderr, from the offsets the caller read up to, and
 * its state.
 *
 * The agent keeps the newest 1 MiB of each channel and numbers every byte
 * (docs/agent-protocol.md, command_output); it sends the bytes as DATA and
 * the offsets in its END.  All of that is guest data: the bytes arrive
 * through the run's cap (guest_run.h, the read's max_bytes per channel),
 * and the offsets the answer gives are the daemon's own count from the
 * first byte the guest says it sent, bounded by what was asked.  A UTF-8
 * character cut at the end of a read is held back (next_offset points at
 * its first byte) while more may follow, so text is only replaced with
 * U+FFFD where it is really invalid.
 *
 * Threads: the connection's thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "daemon/api/api.h"
#include "daemon/daemon.h"
#include "daemon/http/http_reply.h"
#include "engine/guest/guest_run.h"

/* The most bytes one read returns per channel (the agent keeps 1 MiB). */
#define OUTPUT_CHANNEL_MAX (1024u * 1024u)
/* Longest wait of a read for something new, seconds. */
#define OUTPUT_WAIT_MAX_S 60
/* Offsets are byte counts: at most 2^53 (exact in every JSON reader). */
#define OFFSET_MAX ((uint64_t)1 << 53)

/* What one channel of a read gave. */
struct chan_read {
	uint64_t asked;   /* the offset asked for */
	uint64_t start;   /* the offset of the first byte returned */
	size_t len;       /* bytes returned (after holding back a cut character) */
	uint64_t total;   /* bytes the command wrote on it so far */
};

/*
 * Place the n bytes received on a channel: g is the END's object for it
 * ({"offset", "total", ...}, guest data).  While more bytes may follow
 * (the command runs, or the guest says it wrote more) a cut character at
 * the end is held back.  Returns 0, or -ERANGE when the guest says it wrote
 * fewer bytes than the offset asked for (c->total gets its count): an
 * answer then would make the reader skip what is written in between.
 */
static int place(struct chan_read *c, json_t *g, const char *buf, size_t n, int running)
{
	json_t *tot0 = json_object_get(g, "total");
	if (json_is_integer(tot0) && json_integer_value(tot0) >= 0 &&
	    (uint64_t)json_integer_value(tot0) < c->asked) {
		c->total = (uint64_t)json_integer_value(tot0);
		return -ERANGE;
	}
	json_t *off = json_object_get(g, "offset");
	c->start = c->asked;
	if (json_is_integer(off) && json_integer_value(off) >= 0 &&
	    (uint64_t)json_integer_value(off) > c->asked &&
	    (uint64_t)json_integer_value(off) <= OFFSET_MAX)
		c->start = (uint64_t)json_integer_value(off);
	c->len = n;
	json_t *tot = json_object_get(g, "total");
	uint64_t next = c->start + n;
	c->total = json_is_integer(tot) && json_integer_value(tot) >= 0 &&
				   (uint64_t)json_integer_value(tot) >= next &&
				   (uint64_t)json_integer_value(tot) <= OFFSET_MAX
			   ? (uint64_t)json_integer_value(tot)
			   : next;
	if (running || c->total > next)
		c->len -= utf8_incomplete_tail(buf, n);
	return 0;
}

static void add_chan(json_t *o, const char *name, const struct chan_read *c, const char *buf)
{
	char k[32];
	json_object_set_new(o, name, utf8_json_lossy(buf, c->len));
	snprintf(k, sizeof(k), "%s_offset", name);
	json_object_set_new(o, k, json_integer((json_int_t)c->start));
	snprintf(k, sizeof(k), "next_%s_offset", name);
	json_object_set_new(o, k, json_integer((json_int_t)(c->start + c->len)));
	snprintf(k, sizeof(k), "%s_dropped", name);
	json_object_set_new(o, k, json_integer((json_int_t)(c->start - c->asked)));
	snprintf(k, sizeof(k), "%s_total", name);
	json_object_set_new(o, k, json_integer((json_int_t)c->total));
}

/* The query of a read: offsets, max_bytes, wait (their names were checked
 * with the route, routes.c).  Answers 400 and returns -EINVAL when one is
 * bad. */
static int parse_query(struct http_req *r, struct chan_read c[2], uint64_t *max,
		       uint64_t *wait_s)
{
	struct body_error be;
	if (body_parse_uint_query("stdout_offset", http_query(r, "stdout_offset"), 0, OFFSET_MAX,
				  &c[0].asked, &be) < 0 ||
	    body_parse_uint_query("stderr_offset", http_query(r, "stderr_offset"), 0, OFFSET_MAX,
				  &c[1].asked, &be) < 0 ||
	    body_parse_uint_query("max_bytes", http_query(r, "max_bytes"), 0, OUTPUT_CHANNEL_MAX,
				  max, &be) < 0 ||
	    body_parse_uint_query("wait_seconds", http_query(r, "wait_seconds"), 0,
				  OUTPUT_WAIT_MAX_S, wait_s, &be) < 0) {
		api_reply_body_error(r, &be);
		return -EINVAL;
	}
	if (*max == 0)
		*max = OUTPUT_CHANNEL_MAX;
	return 0;
}

void api_commands_output(struct http_req *r)
{
	struct chan_read c[2] = {{0}};
	uint64_t max = 0, wait_s = 0;
	if (parse_query(r, c, &max, &wait_s) < 0 || !api_command_check_cid(r))
		return;
	struct sbx *sb = api_acquire(r);
	if (!sb)
		return;
	json_t *req = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}", "op", "command_output", "id",
				r->params[1], "stdout_offset", (json_int_t)c[0].asked,
				"stderr_offset", (json_int_t)c[1].asked, "max_bytes",
				(json_int_t)max, "wait_ms", (json_int_t)(wait_s * 1000));
	struct guest_run_opts run = {
		.kind = GUEST_RUN_EXEC,
		.output_cap = max, /* per channel: a guest sending more is cut */
		.deadline_ms = (int64_t)wait_s * 1000 + GUEST_RUN_END_GRACE_MS,
	};
	struct guest_run_result res = {0};
	int e = api_command_call(r, sb, req, &run, &res);
	json_decref(req);
	json_t *cmd = NULL;
	if (e == -ECANCELED) {
		r->abort = 1; /* nobody to answer */
	} else if (e && e != -EPROTO) {
		api_reply_agent_failure(r, sb, e, "command output");
	} else if (api_command_reply_error(r, res.end)) {
		/* answered */
	} else if (!(cmd = api_command_json(json_object_get(res.end, "command")))) {
		http_reply_error(r, API_ERR_AGENT_ERROR,
				 "the guest agent's answer to command output makes no sense");
	} else {
		int running = json_is_true(json_object_get(cmd, "running"));
		static const char *const names[2] = {"stdout", "stderr"};
		int past = -1;
		if (place(&c[0], json_object_get(res.end, "stdout"), res.out, res.out_len, running) < 0)
			past = 0;
		else if (place(&c[1], json_object_get(res.end, "stderr"), res.err, res.err_len,
			       running) < 0)
			past = 1;
		if (past >= 0) {
			http_reply_error(r, API_ERR_INVALID_QUERY,
					 "%s_offset %llu is past the %llu bytes written on %s so far",
					 names[past], (unsigned long long)c[past].asked,
					 (unsigned long long)c[past].total, names[past]);
			json_decref(cmd);
			guest_run_result_free(&res);
			sbx_release(sb);
			return;
		}
		json_t *o = json_object();
		if (o) {
			add_chan(o, "stdout", &c[0], res.out);
			add_chan(o, "stderr", &c[1], res.err);
			json_object_set(o, "command", cmd);
		}
		http_reply_json(r, 200, o);
	}
	json_decref(cmd);
	guest_run_result_free(&res);
	sbx_release(sb);
}
