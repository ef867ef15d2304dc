/*
 * progress.h - the progress bar of file transfers, drawn on stderr only
 * when stderr is a terminal and the transfer is larger than
 * PROGRESS_MIN_BYTES (or of unknown size and already past it):
 *
 *   data.csv  [##########..........]  52%  26.0/50.0 MiB  8.4 MiB/s
 *
 * It is redrawn in place ("\r") at most every PROGRESS_EVERY_MS and ended
 * with a newline.  Threads: the transfer's thread only.
 */
#ifndef PANDASTACK_CLI_PROGRESS_H
#define PANDASTACK_CLI_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#define PROGRESS_MIN_BYTES (4 * 1024 * 1024)
#define PROGRESS_EVERY_MS 100
#define PROGRESS_BAR_WIDTH 20 /* characters inside the brackets */

struct progress {
	char label[48];   /* shown first: a file's base name, cut to fit */
	int fd;           /* where to draw (stderr) */
	int tty;          /* fd is a terminal */
	int drawn;        /* something was drawn: finish with a newline */
	int64_t start_ms;
	int64_t last_ms;
	int64_t done;     /* last values seen */
	int64_t total;
};

/* progress_init - a bar for label drawn on fd when fd is a terminal.
 * label is copied (cut to fit). */
void progress_init(struct progress *p, const char *label, int fd);

/* progress_update - done of total bytes (total -1: unknown) moved so far;
 * redraws when due. */
void progress_update(struct progress *p, int64_t done, int64_t total);

/* progress_finish - draw the last state and end the line, if anything was
 * drawn. */
void progress_finish(struct progress *p);

/*
 * progress_format - the bar's text (without "\r") for done of total bytes
 * (total -1: unknown) after elapsed_ms, into out (cap bytes with the NUL,
 * cut to fit).  Returns out.  Pure.
 */
char *progress_format(char *out, size_t cap, const char *label, int64_t done, int64_t total,
		      int64_t elapsed_ms);

/* progress_human - n bytes as "512 B", "3.2 KiB", "26.0 MiB", "1.5 GiB" into
 * out (cap bytes).  Returns out.  Pure. */
char *progress_human(char *out, size_t cap, int64_t n);

#endif
