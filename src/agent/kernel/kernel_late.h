/*
 * kernel_late.h - output a cell did not produce itself: text a kernel
 * printed while none of the user's runs was current (a thread started by
 * a cell that prints after the cell ended), kept until the context's next
 * run, which delivers it first, before its own output
 * (docs/agent-protocol.md, "Code contexts"; docs/api.md states the
 * policy).  Output of that kind that arrives while a run is current is
 * that run's (kernel_life.c).
 *
 * At most KERNEL_LATE_MAX bytes wait; more is counted and reported by a
 * marker on stderr instead.
 *
 * Threads: the kernel's client thread only.
 */
#ifndef PANDASTACK_AGENT_KERNEL_LATE_H
#define PANDASTACK_AGENT_KERNEL_LATE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "agent/jupyter/jupyter_exec.h"
#include "agent/jupyter/jupyter_msg.h"

/* Most bytes of output kept between runs. */
#define KERNEL_LATE_MAX (1024u * 1024u)

struct kernel_late {
	json_t *chunks;   /* [[is_stderr, "text"], ...], oldest first; NULL when empty */
	size_t bytes;     /* text bytes held */
	uint64_t dropped; /* bytes left out at the cap */
};

/*
 * kernel_late_add - keep n bytes of s (any bytes: invalid UTF-8 becomes
 * U+FFFD) printed on stderr (is_stderr) or stdout.  Past KERNEL_LATE_MAX
 * the rest is only counted.  Returns 0 or -ENOMEM (the text is dropped and
 * counted).
 */
int kernel_late_add(struct kernel_late *l, int is_stderr, const char *s, size_t n);

/*
 * kernel_late_flush - give what waits to run x as its first stream output
 * (jupyter_exec_stream, in order; then the marker of what was dropped) and
 * forget it.  Returns 0 or -ENOMEM.
 */
int kernel_late_flush(struct kernel_late *l, struct jupyter_exec *x);

/*
 * kernel_late_route - where the kernel message m goes if it is stream
 * output of no current run (its parent is not cur_msg_id, the msg_id of
 * the current run, or NULL when none runs): to user_x, the current run
 * when it is one of the user's (NULL otherwise), else into l.  Returns 0
 * when m is not such output (the caller handles it), 2 when it went to
 * user_x (whose events the caller flushes), 1 when it was kept (or was
 * malformed and dropped).  Output of cut_msg_id (the last run, ended cut
 * short: interrupted, timed out or at its cap; NULL or "" if none) is
 * dropped (1): what such a run printed before it stopped is nobody's.
 */
int kernel_late_route(struct kernel_late *l, const struct jupyter_msg *m, const char *cur_msg_id,
		      const char *cut_msg_id, struct jupyter_exec *user_x);

/* kernel_late_clear - forget what waits (e.g. a spare's warm-up output). */
void kernel_late_clear(struct kernel_late *l);

#endif
