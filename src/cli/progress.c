/*
 * progress.c - the transfer progress bar on a terminal (see progress.h).
 */
#include "cli/progress.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

char *progress_human(char *out, size_t cap, int64_t n)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
	if (n < 0)
		n = 0;
	if (n < 1024) {
		snprintf(out, cap, "%lld B", (long long)n);
		return out;
	}
	double v = (double)n / 1024.0;
	size_t u = 0;
	while (v >= 1024.0 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024.0;
		u++;
	}
	snprintf(out, cap, "%.1f %s", v, units[u]);
	return out;
}

char *progress_format(char *out, size_t cap, const char *label, int64_t done, int64_t total,
		      int64_t elapsed_ms)
{
	char bar[PROGRESS_BAR_WIDTH + 1];
	char d[32], t[32], r[32];
	if (done < 0)
		done = 0;
	int pct = -1;
	if (total > 0) {
		if (done > total)
			done = total;
		pct = (int)((done * 100) / total);
	}
	int fill = pct < 0 ? 0 : pct * PROGRESS_BAR_WIDTH / 100;
	for (int i = 0; i < PROGRESS_BAR_WIDTH; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[PROGRESS_BAR_WIDTH] = '\0';
	int64_t rate = elapsed_ms > 0 ? done * 1000 / elapsed_ms : 0;
	progress_human(d, sizeof(d), done);
	progress_human(r, sizeof(r), rate);
	if (pct >= 0) {
		progress_human(t, sizeof(t), total);
		snprintf(out, cap, "%s  [%s] %3d%%  %s/%s  %s/s", label, bar, pct, d, t, r);
	} else {
		snprintf(out, cap, "%s  %s  %s/s", label, d, r);
	}
	return out;
}

void progress_init(struct progress *p, const char *label, int fd)
{
	memset(p, 0, sizeof(*p));
	/* Only printable ASCII reaches the terminal. */
	size_t o = 0;
	for (const char *s = label ? label : ""; *s && o + 1 < sizeof(p->label); s++) {
		unsigned char ch = (unsigned char)*s;
		p->label[o++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
	}
	p->label[o] = '\0';
	p->fd = fd;
	p->tty = isatty(fd);
	p->start_ms = util_now_ms();
	p->total = -1;
}

static void draw(struct progress *p, int64_t now)
{
	char line[256];
	progress_format(line + 1, sizeof(line) - 8, p->label, p->done, p->total, now - p->start_ms);
	line[0] = '\r';
	size_t n = strlen(line);
	memcpy(line + n, "\033[K", 3); /* clear what a longer line left */
	n += 3;
	if (util_write_all(p->fd, line, n) == 0)
		p->drawn = 1;
	p->last_ms = now;
}

void progress_update(struct progress *p, int64_t done, int64_t total)
{
	if (!p->tty)
		return;
	p->done = done;
	if (total >= 0)
		p->total = total;
	if (p->total >= 0 ? p->total <= PROGRESS_MIN_BYTES : done <= PROGRESS_MIN_BYTES)
		return;
	int64_t now = util_now_ms();
	if (p->drawn && now - p->last_ms < PROGRESS_EVERY_MS)
		return;
	draw(p, now);
}

void progress_finish(struct progress *p)
{
	if (!p->drawn)
		return;
	draw(p, util_now_ms());
	util_write_all(p->fd, "\n", 1);
}
