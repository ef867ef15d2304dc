/*
 * notebook.h - a code context's cells and outputs kept as a Jupyter
 * notebook file (nbformat 4.5, https://nbformat.readthedocs.io/en/latest/format_description.html):
 * every run of the context becomes a code cell, its printed text stream
 * outputs, its results display_data / execute_result outputs (the MIME
 * bundle the kernel gave: images, HTML tables, text), its exception an
 * error output.  The file is rewritten (a temporary file renamed over it)
 * when each run ends, so a download gets the work done so far.
 * docs/api.md, "Code contexts", says where the files go.
 *
 * Caps: at most NOTEBOOK_MAX bytes of JSON; a cell whose outputs would
 * pass it is kept with a marker instead of them, and once the code alone
 * passes it no more cells are added.  At most NOTEBOOK_PENDING_MAX runs
 * wait to start (older ones are forgotten: their cells are not kept).
 * A file that cannot be written is logged once; the context goes on.
 *
 * Threads: the agent's loop thread only.
 */
#ifndef PANDASTACK_AGENT_NOTEBOOK_H
#define PANDASTACK_AGENT_NOTEBOOK_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "agent/request.h"

/* Most bytes of a notebook's JSON. */
#define NOTEBOOK_MAX (32u * 1024u * 1024u)
/* Most runs queued and not yet ended that a notebook follows. */
#define NOTEBOOK_PENDING_MAX 64

struct notebook {
	char path[AGENT_REQ_PATH_MAX + 1]; /* "" : no file */
	json_t *doc;          /* the nbformat document, NULL until the first cell */
	json_t *pending;      /* [[exec_id, cell], ...] runs not yet ended, oldest first */
	size_t size;          /* bytes of doc's JSON as last written */
	uint64_t cells;       /* cells made (their ids) */
	int failed;           /* a write failed (logged once) */
};

/* notebook_init - a notebook written to path (absolute; NULL or "": none). */
void notebook_init(struct notebook *nb, const char *path);

/*
 * notebook_run - run exec_id of the context was queued with code (len
 * bytes, UTF-8 from the host): its cell is made now and filled by its
 * events.  Returns 0 or -ENOMEM (the cell is not kept).
 */
int notebook_run(struct notebook *nb, uint64_t exec_id, const char *code, size_t len);

/*
 * notebook_event - an event of run exec_id (borrowed; the agent's events:
 * {"type": "stdout"|"stderr", "text"}, {"type": "result", ...},
 * {"type": "done", "execution_count", "error"}): added to its cell; "done"
 * ends the cell and writes the file.  Events of runs it does not follow
 * are ignored.
 */
void notebook_event(struct notebook *nb, uint64_t exec_id, json_t *ev);

/* notebook_free - release it (the file stays). */
void notebook_free(struct notebook *nb);

#endif
