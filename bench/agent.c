/*
 * bench/agent.c - the agent protocol's own cost on the host (make
 * bench-agent): pandastack-agent --listen on a Unix socket, driven through
 * guest_conn (execs through the exec reader, guest_run), against peers run
 * by this same process.
 *
 *   exec_rtt      round trip of `true` (OPEN to END), p50/p90 of BENCH_N (300)
 *   spawn_rtt     peer: fork + exec of /bin/sh -c true + waitpid here
 *   exec_64       64 `true` at once on one connection, wall time
 *   upload        file_write of BENCH_MIB (512) MiB, MiB/s
 *   write_peer    peer: write() of the same bytes to a file here
 *   download      file_read of that file, MiB/s
 *   read_peer     peer: read() of the file here
 *   stdout        `head -c BENCH_MIB MiB /dev/zero` streamed back, MiB/s
 *   pipe_peer     peer: the same command's stdout read from a pipe here
 * Figures go to stdout, one "name value unit" line each, then the ratios.
 * The agent binary is $PANDASTACK_AGENT_BIN (default build/pandastack-agent).
 * Temporary files live in a mkdtemp folder under /tmp, removed at the end.
 *
 * BENCH_AGENT_SOCK=PATH measures an agent that is already running there
 * instead (a guest's agent.sock, whose files go to BENCH_AGENT_WS, default
 * /workspace); the peers still run on this host, so only the agent's
 * figures are printed then.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "engine/guest/guest_run.h"

static char dir[PATH_MAX], sock[PATH_MAX + 16], ws[PATH_MAX + 16];
static pid_t agent_pid;

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);
	return v && atoi(v) > 0 ? atoi(v) : def;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, int p)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return v[(n - 1) * p / 100];
}

static int start_agent(void)
{
	const char *bin = getenv("PANDASTACK_AGENT_BIN");
	if (!bin || !*bin)
		bin = "build/pandastack-agent";
	snprintf(dir, sizeof(dir), "/tmp/pandastack-bench-agent-XXXXXX");
	if (!mkdtemp(dir))
		return -errno;
	snprintf(sock, sizeof(sock), "%s/agent.sock", dir);
	snprintf(ws, sizeof(ws), "%s/ws", dir);
	mkdir(ws, 0755);
	agent_pid = fork();
	if (agent_pid < 0)
		return -errno;
	if (agent_pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 2);
		execl(bin, bin, "--listen", sock, "--workdir", ws, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		if (access(sock, F_OK) == 0)
			return 0;
		usleep(10000);
	}
	return -ETIMEDOUT;
}

static void stop_agent(void)
{
	if (agent_pid > 0) {
		kill(agent_pid, SIGTERM);
		waitpid(agent_pid, NULL, 0);
	}
	util_rm_rf(dir);
}

/* Run cmd through the exec reader, discard its output (counted into
 * *out_bytes); returns the END's exit code or -errno. */
static int bench_exec(struct guest_conn *c, const char *cmd, size_t *out_bytes)
{
	json_t *req = json_pack("{s:s, s:s, s:I}", "op", "exec", "cmd", cmd, "output_cap",
				(json_int_t)1 << 40);
	struct guest_run_opts o = {.kind = GUEST_RUN_EXEC};
	struct guest_run *x;
	int r = guest_run_open(c, req, &o, &x);
	json_decref(req);
	if (r < 0)
		return r;
	int code = -EPROTO;
	struct guest_event ev;
	while ((r = guest_run_next(x, &ev, 60000)) == 1) {
		if ((ev.type == GUEST_EV_STDOUT || ev.type == GUEST_EV_STDERR) && out_bytes)
			*out_bytes += ev.len;
		if (ev.type == GUEST_EV_EXIT)
			code = (int)json_integer_value(json_object_get(ev.json, "exit_code"));
		if (ev.type == GUEST_EV_ERROR)
			code = ev.err;
	}
	guest_run_close(x);
	return r < 0 ? r : code;
}

/* remove path through the agent (the upload lives where the agent is) */
static json_t *remove_path(struct guest_conn *c, const char *path)
{
	json_t *req = json_pack("{s:s, s:s}", "op", "remove", "path", path), *res = NULL;
	guest_call(c, req, 60000, &res);
	json_decref(req);
	return res;
}

static double spawn_true(void)
{
	double t0 = now_s();
	pid_t p = fork();
	if (p == 0) {
		execl("/bin/sh", "sh", "-c", "true", (char *)NULL);
		_exit(127);
	}
	waitpid(p, NULL, 0);
	return now_s() - t0;
}

int main(void)
{
	int n = env_int("BENCH_N", 300);
	size_t mib = (size_t)env_int("BENCH_MIB", 512), total = mib << 20;
	signal(SIGPIPE, SIG_IGN);
	const char *remote = getenv("BENCH_AGENT_SOCK");
	if (remote && *remote) {
		snprintf(sock, sizeof(sock), "%s", remote);
		const char *rws = getenv("BENCH_AGENT_WS");
		snprintf(ws, sizeof(ws), "%s", rws && *rws ? rws : "/workspace");
	} else if (start_agent() < 0) {
		fprintf(stderr, "bench-agent: cannot start the agent (build it: make)\n");
		return 1;
	}
	struct guest_conn *c;
	if (guest_conn_open(sock, 5000, &c) < 0) {
		fprintf(stderr, "bench-agent: cannot connect\n");
		stop_agent();
		return 1;
	}
	double *v = calloc((size_t)n, sizeof(double));
	for (int i = 0; i < n; i++) {
		double t0 = now_s();
		bench_exec(c, "true", NULL);
		v[i] = (now_s() - t0) * 1000;
	}
	double exec50 = pct(v, n, 50), exec90 = pct(v, n, 90);
	for (int i = 0; i < n && !remote; i++)
		v[i] = spawn_true() * 1000;
	double spawn50 = remote ? 0 : pct(v, n, 50);
	free(v);

	struct guest_run *s[64];
	struct guest_run_opts ro = {.kind = GUEST_RUN_EXEC};
	double t0 = now_s();
	for (int i = 0; i < 64; i++) {
		json_t *req = json_pack("{s:s, s:s}", "op", "exec", "cmd", "true");
		if (guest_run_open(c, req, &ro, &s[i]) < 0)
			s[i] = NULL;
		json_decref(req);
	}
	for (int i = 0; i < 64; i++) {
		struct guest_event ev;
		while (s[i] && guest_run_next(s[i], &ev, 60000) == 1)
			;
		guest_run_close(s[i]);
	}
	double exec64 = (now_s() - t0) * 1000;

	/* upload, then the peer write */
	size_t chunk = 1u << 20;
	uint8_t *buf = malloc(chunk);
	for (size_t i = 0; i < chunk; i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 24);
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/up.bin", ws);
	json_t *req = json_pack("{s:s, s:s}", "op", "file_write", "path", path);
	struct guest_stream *up;
	guest_stream_open(c, req, &up);
	json_decref(req);
	sync(); /* start both writes without dirty pages from before */
	t0 = now_s();
	for (size_t off = 0; off < total; off += chunk)
		guest_stream_write(up, buf, chunk, 60000);
	guest_stream_write_eof(up);
	struct guest_msg m;
	while (guest_stream_read(up, &m, 60000) == 1)
		guest_msg_clear(&m);
	guest_stream_close(up);
	double upload = (double)mib / (now_s() - t0);

	char peer[PATH_MAX + 32];
	snprintf(peer, sizeof(peer), "%s/peer.bin", remote ? "/tmp" : ws);
	sync();
	t0 = now_s();
	int fd = open(peer, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	for (size_t off = 0; off < total; off += chunk)
		util_write_all(fd, buf, chunk);
	close(fd);
	double write_peer = (double)mib / (now_s() - t0);

	/* download, then the peer read (both from the page cache) */
	req = json_pack("{s:s, s:s}", "op", "file_read", "path", path);
	struct guest_stream *down;
	guest_stream_open(c, req, &down);
	json_decref(req);
	size_t got = 0;
	t0 = now_s();
	while (guest_stream_read(down, &m, 60000) == 1) {
		if (m.kind == GUEST_MSG_DATA)
			got += m.len;
		guest_msg_clear(&m);
	}
	double download = (double)mib / (now_s() - t0);
	guest_stream_close(down);
	t0 = now_s();
	fd = open(peer, O_RDONLY);
	while (util_read_full(fd, buf, chunk) > 0)
		;
	close(fd);
	unlink(peer);
	double read_peer = (double)mib / (now_s() - t0);
	json_decref(remove_path(c, path));

	/* stdout streaming, then the same command into a pipe here */
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "head -c %zu /dev/zero", total);
	size_t out = 0;
	t0 = now_s();
	bench_exec(c, cmd, &out);
	double stdout_rate = (double)mib / (now_s() - t0);
	t0 = now_s();
	FILE *pf = popen(cmd, "r");
	while (pf && fread(buf, 1, chunk, pf) > 0)
		;
	if (pf)
		pclose(pf);
	double pipe_peer = (double)mib / (now_s() - t0);
	free(buf);

	guest_conn_close(c);
	if (!remote)
		stop_agent();
	if (got != total || out != total)
		fprintf(stderr, "bench-agent: short transfer (%zu / %zu of %zu bytes)\n", got, out,
			total);

	printf("exec_rtt_p50 %.3f ms\n", exec50);
	printf("exec_rtt_p90 %.3f ms\n", exec90);
	printf("exec_64_wall %.1f ms\n", exec64);
	printf("upload %.1f MiB/s\n", upload);
	printf("download %.1f MiB/s\n", download);
	printf("stdout %.1f MiB/s\n", stdout_rate);
	if (remote)
		return got == total && out == total ? 0 : 1;
	printf("spawn_rtt_p50 %.3f ms\n", spawn50);
	printf("write_peer %.0f MiB/s\n", write_peer);
	printf("read_peer %.0f MiB/s\n", read_peer);
	printf("pipe_peer %.0f MiB/s\n", pipe_peer);
	printf("ratio exec_rtt/spawn_rtt %.2f\n", exec50 / spawn50);
	printf("ratio upload/write_peer %.2f\n", upload / write_peer);
	printf("ratio download/read_peer %.2f\n", download / read_peer);
	printf("ratio stdout/pipe_peer %.2f\n", stdout_rate / pipe_peer);
	return got == total && out == total ? 0 : 1;
}
