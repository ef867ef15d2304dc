/*
 * astream.c - what operations call to talk on their stream: queue DATA
 * within the credit, EOF, EVENT and END, grant credit for input (see
 * astream.h).  Threads: the loop thread only.
 */
#include "agent/astream.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/link.h"
#include "common/utf8.h"

uint32_t astream_room(struct astream *s)
{
	if (s->ended)
		return 0;
	struct proto_stream_state *st = proto_mux_find(&s->link->mux, s->id);
	if (!st || st->send_credit <= 0 || s->q.bytes >= ASTREAM_QUEUE_CAP)
		return 0;
	int64_t room = (int64_t)(ASTREAM_QUEUE_CAP - s->q.bytes);
	if (st->send_credit < room)
		room = st->send_credit;
	return (uint32_t)room;
}

int astream_data(struct astream *s, uint8_t ch, const void *p, uint32_t n)
{
	if (s->ended)
		return -EPIPE;
	if (n == 0)
		return 0;
	if (n > PROTO_MAX_DATA || n > astream_room(s))
		return -ENOSPC;
	struct outq_frame *it = outq_frame_new(PROTO_DATA, ch, s->id, p, n);
	if (!it)
		return -ENOMEM;
	proto_mux_take_credit(&s->link->mux, s->id, n);
	outq_push(&s->q, it);
	return 0;
}

int astream_eof(struct astream *s, uint8_t ch)
{
	if (s->ended)
		return -EPIPE;
	struct outq_frame *it = outq_frame_new(PROTO_EOF, ch, s->id, NULL, 0);
	if (!it)
		return -ENOMEM;
	outq_push(&s->q, it);
	return 0;
}

/* Serialise obj (stolen) as a frame of type on s.  NULL on failure, with
 * *too_big set when the JSON exceeded the payload cap. */
static struct outq_frame *json_frame(uint8_t type, uint32_t id, json_t *obj, int *too_big)
{
	char *txt = json_dumps(obj, JSON_COMPACT);
	json_decref(obj);
	if (!txt)
		return NULL;
	size_t n = strlen(txt);
	struct outq_frame *it = NULL;
	if (n <= PROTO_MAX_PAYLOAD)
		it = outq_frame_new(type, 0, id, txt, (uint32_t)n);
	else if (too_big)
		*too_big = 1;
	free(txt);
	return it;
}

int astream_event(struct astream *s, json_t *obj)
{
	if (s->ended) {
		json_decref(obj);
		return -EPIPE;
	}
	if (!obj)
		return -ENOMEM;
	int too_big = 0;
	struct outq_frame *it = json_frame(PROTO_EVENT, s->id, obj, &too_big);
	if (!it)
		return too_big ? -E2BIG : -ENOMEM;
	outq_push(&s->q, it);
	return 0;
}

void astream_end(struct astream *s, json_t *obj)
{
	if (s->ended) {
		json_decref(obj);
		return;
	}
	if (!obj)
		obj = json_object();
	int too_big = 0;
	struct outq_frame *it = obj ? json_frame(PROTO_END, s->id, obj, &too_big) : NULL;
	if (!it) {
		/* too large or out of memory: a fixed error still ends the stream */
		static const char nomem[] =
			"{\"error\":{\"code\":\"ENOMEM\",\"message\":\"result could not be encoded\"}}";
		static const char big[] =
			"{\"error\":{\"code\":\"E2BIG\",\"message\":\"result larger than 8 MiB\"}}";
		it = too_big ? outq_frame_new(PROTO_END, 0, s->id, big, sizeof(big) - 1)
			     : outq_frame_new(PROTO_END, 0, s->id, nomem, sizeof(nomem) - 1);
	}
	if (it) {
		it->closes = 1;
		outq_push(&s->q, it);
	}
	s->ended = 1;
	s->link->busy = 1;
}

const char *agent_errname(int err)
{
	if (err < 0)
		err = -err;
	const char *n = err ? strerrorname_np(err) : NULL;
	return n ? n : "EIO";
}

void astream_end_err(struct astream *s, int err, const char *fmt, ...)
{
	if (s->ended)
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_t *e = json_object();
	json_t *o = json_object();
	if (e && o) {
		json_object_set_new(e, "code", json_string(agent_errname(err)));
		json_object_set_new(e, "message", utf8_json_lossy(msg, strlen(msg)));
		json_object_set_new(o, "error", e);
		e = NULL;
	}
	json_decref(e);
	astream_end(s, o); /* NULL o falls back to the fixed error */
}

void astream_consumed(struct astream *s, uint32_t n)
{
	uint32_t grant = proto_mux_consumed(&s->link->mux, s->id, n);
	if (!grant)
		return;
	uint8_t p[4];
	proto_put_u32(p, grant);
	struct outq_frame *it = outq_frame_new(PROTO_WINDOW, 0, s->id, p, 4);
	if (it)
		link_queue_prio(s->link, it);
}

void astream_kick(struct astream *s)
{
	s->kick = 1;
	s->link->busy = 1;
}
