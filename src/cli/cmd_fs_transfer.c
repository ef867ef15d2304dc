/*
 * cmd_fs_transfer.c - `pandastack fs upload` and `fs download` (see
 * cmd_fs_transfer.h).  Routes: docs/api.md "PUT /v1/sandboxes/{id}/fs?path=P"
 * and "GET /v1/sandboxes/{id}/fs?path=P".
 */
#include "cli/cmd_fs_transfer.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/output.h"
#include "cli/progress.h"
#include "client/client_transfer.h"

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* What lasts as long as one transfer: its progress bar, and SIGINT and
 * SIGTERM caught (the previous handlers in old) so that it can clean up. */
struct transfer {
	struct progress bar;
	struct sigaction old[2];
};

static void transfer_begin(struct transfer *t, const char *label)
{
	progress_init(&t->bar, label, STDERR_FILENO);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	interrupted = 0;
	sigaction(SIGINT, &sa, &t->old[0]);
	sigaction(SIGTERM, &sa, &t->old[1]);
}

static void transfer_end(struct transfer *t)
{
	progress_finish(&t->bar);
	sigaction(SIGINT, &t->old[0], NULL);
	sigaction(SIGTERM, &t->old[1], NULL);
}

/* client_progress_fn on a struct transfer: draw the bar; stop when a
 * signal came. */
static int on_progress(void *arg, int64_t done, int64_t total)
{
	struct transfer *t = arg;
	progress_update(&t->bar, done, total);
	return interrupted ? 1 : 0;
}

/* The last path component of p ("" when p ends in "/"). */
static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* What upload and download start with: u = /v1/sandboxes/{ID}/fs?path=remote
 * and the client.  Returns CLI_EXIT_OK or the exit code (after printing). */
static int transfer_request(struct cli_ctx *ctx, const struct args_result *a,
			    const char *remote, struct urlpath *u, struct client **client)
{
	cli_sandbox_path(u, a->pos[0], "/fs");
	urlpath_query(u, "path", remote);
	if (urlpath_status(u))
		return cli_usage_error(ctx, "ID is empty, '.' or '..', or R is too long");
	return cli_client(ctx, client);
}

/* ---- upload ----------------------------------------------------------------------- */

static const struct arg_flag upload_flags[] = {
	{"local", ARG_VALUE, 1, "L", "file to send (\"-\": standard input)"},
	{"remote", ARG_VALUE, 1, "R", "absolute path in the sandbox; replaced if it exists"},
	{NULL, 0, 0, NULL, NULL},
};

static const char *const id_pos[] = {"ID", NULL};

const struct args_spec cmd_upload_spec = {
	.path = "fs upload",
	.usage = "ID --local L --remote R",
	.summary = "Copy a local file into a sandbox (streamed; any size up to the server's cap).",
	.details = "Missing parent directories of R are created; the file appears whole or not\n"
		   "at all.  A progress bar is drawn on stderr for files over 4 MiB when stderr\n"
		   "is a terminal.  Prints nothing on success (--json: the API's answer).\n\n"
		   "Example:\n  pandastack fs upload \"$id\" --local ./data.csv --remote "
		   "/workspace/data.csv\n",
	.flags = upload_flags,
	.positionals = id_pos,
};

int cmd_upload_run(struct cli_ctx *ctx, const struct args_result *a)
{
	const char *local = args_value(a, "local");
	struct urlpath u;
	struct client *client;
	int code = transfer_request(ctx, a, args_value(a, "remote"), &u, &client);
	if (code)
		return code;

	int fd = STDIN_FILENO;
	int64_t size = -1;
	if (strcmp(local, "-") != 0) {
		fd = open(local, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			out_error("cannot open %s: %s", local, strerror(errno));
			return CLI_EXIT_API;
		}
	}
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		out_error("%s is a directory", local);
		if (fd != STDIN_FILENO)
			close(fd);
		return CLI_EXIT_API;
	}
	if (fd != STDIN_FILENO && S_ISREG(st.st_mode))
		size = (int64_t)st.st_size;

	struct transfer t;
	transfer_begin(&t, base_name(local));
	struct client_response r;
	struct client_error err;
	int rc = client_upload(client, u.s, fd, size, on_progress, &t, &r, &err);
	transfer_end(&t);
	if (fd != STDIN_FILENO)
		close(fd);
	if (rc) {
		out_client_error(&err);
		return CLI_EXIT_API;
	}
	return cli_show_nothing(ctx, &r);
}

/* ---- download --------------------------------------------------------------------- */

static const struct arg_flag download_flags[] = {
	{"remote", ARG_VALUE, 1, "R", "absolute path of the file in the sandbox"},
	{"local", ARG_VALUE, 1, "L",
	 "where to write it (a directory: keep R's name; \"-\": standard output)"},
	{NULL, 0, 0, NULL, NULL},
};

const struct args_spec cmd_download_spec = {
	.path = "fs download",
	.usage = "ID --remote R --local L",
	.summary = "Copy a file out of a sandbox (streamed).",
	.details = "The bytes go to a temporary file beside L, which is renamed to L only when\n"
		   "the whole file arrived: L is never left half-written.  A progress bar is\n"
		   "drawn on stderr for files over 4 MiB when stderr is a terminal.\n\n"
		   "Example:\n  pandastack fs download \"$id\" --remote /workspace/result.csv "
		   "--local ./result.csv\n",
	.flags = download_flags,
	.positionals = id_pos,
};

int cmd_download_target(const char *local, const char *remote, char *out, size_t cap)
{
	struct stat st;
	int n;
	if (stat(local, &st) == 0 && S_ISDIR(st.st_mode)) {
		const char *b = base_name(remote);
		if (!*b || strcmp(b, ".") == 0 || strcmp(b, "..") == 0)
			return -EINVAL;
		size_t ll = strlen(local);
		n = snprintf(out, cap, "%s%s%s", local, ll && local[ll - 1] == '/' ? "" : "/", b);
	} else {
		n = snprintf(out, cap, "%s", local);
	}
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* A new temporary file beside target: its name in tmp (cap bytes), fd in *fd. */
static int make_temp(const char *target, char *tmp, size_t cap, int *fd)
{
	const char *b = base_name(target);
	int n = snprintf(tmp, cap, "%.*s.%s.pandastack-XXXXXX", (int)(b - target), target, b);
	if (n < 0 || (size_t)n >= cap)
		return -ENAMETOOLONG;
	*fd = mkostemp(tmp, O_CLOEXEC);
	return *fd < 0 ? -errno : 0;
}

/* Give the finished temporary file the mode a new file would get. */
static void set_default_mode(int fd)
{
	mode_t mask = umask(0);
	umask(mask);
	fchmod(fd, 0666 & ~mask);
}

/* Download into fd with the bar; returns 0 or prints and returns exit 1. */
static int fetch(struct client *client, const struct urlpath *u, int fd, const char *label)
{
	struct transfer t;
	transfer_begin(&t, label);
	struct client_error err;
	int64_t written = 0;
	int rc = client_download(client, u->s, fd, on_progress, &t, &written, &err);
	transfer_end(&t);
	if (rc) {
		out_client_error(&err);
		return CLI_EXIT_API;
	}
	return CLI_EXIT_OK;
}

int cmd_download_run(struct cli_ctx *ctx, const struct args_result *a)
{
	const char *local = args_value(a, "local");
	const char *remote = args_value(a, "remote");
	struct urlpath u;
	struct client *client;
	int code = transfer_request(ctx, a, remote, &u, &client);
	if (code)
		return code;
	if (strcmp(local, "-") == 0)
		return fetch(client, &u, STDOUT_FILENO, base_name(remote));

	char target[4096], tmp[4200];
	int rc = cmd_download_target(local, remote, target, sizeof(target));
	if (rc == -EINVAL)
		return cli_usage_error(ctx, "L is a directory and R names no file to keep");
	if (rc)
		return cli_usage_error(ctx, "L is too long");
	int fd;
	rc = make_temp(target, tmp, sizeof(tmp), &fd);
	if (rc) {
		out_error("cannot create a file beside %s: %s", target, strerror(-rc));
		return CLI_EXIT_API;
	}
	code = fetch(client, &u, fd, base_name(target));
	if (code == CLI_EXIT_OK) {
		set_default_mode(fd);
		if (fsync(fd) != 0) {
			out_error("cannot write %s: %s", tmp, strerror(errno));
			code = CLI_EXIT_API;
		}
	}
	if (close(fd) != 0 && code == CLI_EXIT_OK) {
		out_error("cannot write %s: %s", tmp, strerror(errno));
		code = CLI_EXIT_API;
	}
	if (code == CLI_EXIT_OK && rename(tmp, target) != 0) {
		out_error("cannot rename %s to %s: %s", tmp, target, strerror(errno));
		code = CLI_EXIT_API;
	}
	if (code != CLI_EXIT_OK)
		unlink(tmp);
	return code;
}
