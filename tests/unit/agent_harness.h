/*
 * agent_harness.h - helpers for the host tests of the agent
 * (test_agent_host.c, test_agent_files.c): start pandastack-agent --listen on
 * a socket in a fresh temporary folder (its --pip-conf, --hooks-dir and
 * --hooks-report there too), connect through guest_conn, run
 * execs (through the exec reader, guest_run) and file transfers, look for
 * leftover processes.
 *
 * The agent binary is $PANDASTACK_AGENT_BIN, else pandastack-agent-dyn in the
 * build folder above the test binary (the Makefile builds it; in check-asan
 * it carries the sanitizers too).  Header-only: each test binary is one .c.
 * Threads: the test's main thread, except where a test says otherwise.
 */
#ifndef PANDASTACK_TESTS_AGENT_HARNESS_H
#define PANDASTACK_TESTS_AGENT_HARNESS_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/proto.h"
#include "common/util.h"
#include "engine/guest/guest_run.h"

/* Each test uses some of the helpers. */
#define HARNESS static __attribute__((unused))

struct agent_proc {
	pid_t pid;
	char dir[PATH_MAX];   /* temporary folder, removed by harness_stop */
	char sock[PATH_MAX + 16];
	char ws[PATH_MAX + 16]; /* the agent's default working directory */
	char log[PATH_MAX + 16];
	char pip_conf[PATH_MAX + 16]; /* --pip-conf: restore's pip config file */
	char hooks_dir[PATH_MAX + 16]; /* --hooks-dir (not made: a test makes it) */
	char hooks_report[PATH_MAX + 32]; /* --hooks-report */
};

/* The agent binary to run. */
HARNESS const char *harness_agent_bin(void)
{
	static char path[2 * PATH_MAX];
	const char *env = getenv("PANDASTACK_AGENT_BIN");
	if (env && *env)
		return env;
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return "build/pandastack-agent-dyn";
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	snprintf(path, sizeof(path), "%s/../pandastack-agent-dyn", self);
	return path;
}

/*
 * harness_start - start an agent.  uid: run it as this user (0: as we are;
 * needs root otherwise).  cgroup_dir: passed as --cgroup, or NULL.
 * Returns 0 once the socket exists, or -errno.
 */
HARNESS int harness_start_as(struct agent_proc *a, uid_t uid, const char *cgroup_dir)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->dir, sizeof(a->dir), "/tmp/pandastack-agent-test-XXXXXX");
	if (!mkdtemp(a->dir))
		return -errno;
	snprintf(a->sock, sizeof(a->sock), "%s/agent.sock", a->dir);
	snprintf(a->ws, sizeof(a->ws), "%s/ws", a->dir);
	snprintf(a->log, sizeof(a->log), "%s/agent.log", a->dir);
	snprintf(a->pip_conf, sizeof(a->pip_conf), "%s/pip/pip.conf", a->dir);
	snprintf(a->hooks_dir, sizeof(a->hooks_dir), "%s/hooks", a->dir);
	snprintf(a->hooks_report, sizeof(a->hooks_report), "%s/run/after-restore.json", a->dir);
	if (mkdir(a->ws, 0755) < 0)
		return -errno;
	if (uid && (chown(a->dir, uid, uid) < 0 || chown(a->ws, uid, uid) < 0))
		return -errno;
	const char *bin = harness_agent_bin();
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* a test that fails half-way must not leave its agent behind */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		int fd = open(a->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		if (uid && (setgid(uid) < 0 || setuid(uid) < 0))
			_exit(111);
		if (cgroup_dir)
			execl(bin, bin, "--listen", a->sock, "--workdir", a->ws, "--pip-conf",
			      a->pip_conf, "--hooks-dir", a->hooks_dir, "--hooks-report",
			      a->hooks_report, "--cgroup", cgroup_dir, (char *)NULL);
		else
			execl(bin, bin, "--listen", a->sock, "--workdir", a->ws, "--pip-conf",
			      a->pip_conf, "--hooks-dir", a->hooks_dir, "--hooks-report",
			      a->hooks_report, (char *)NULL);
		_exit(127);
	}
	a->pid = pid;
	for (int i = 0; i < 500; i++) {
		struct stat st;
		if (stat(a->sock, &st) == 0)
			return 0;
		int status;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			a->pid = 0;
			return -ECHILD;
		}
		usleep(10 * 1000);
	}
	return -ETIMEDOUT;
}

HARNESS int harness_start(struct agent_proc *a)
{
	return harness_start_as(a, 0, NULL);
}

/* harness_alive - 1 if the agent process is still running. */
HARNESS int harness_alive(struct agent_proc *a)
{
	int status;
	return a->pid > 0 && waitpid(a->pid, &status, WNOHANG) == 0;
}

/* harness_stop - SIGTERM the agent (it kills its commands and exits 0),
 * wait, remove the folder (printing the agent's log first if it did not
 * exit cleanly).  Returns the agent's wait status (0: clean), or -1. */
HARNESS int harness_stop(struct agent_proc *a)
{
	int status = -1;
	if (a->pid > 0) {
		kill(a->pid, SIGTERM);
		for (int i = 0; i < 500; i++) {
			if (waitpid(a->pid, &status, WNOHANG) == a->pid)
				break;
			usleep(10 * 1000);
			if (i == 499) {
				kill(a->pid, SIGKILL);
				waitpid(a->pid, &status, 0);
			}
		}
		a->pid = 0;
	}
	if (status != 0 && a->log[0]) { /* show why (sanitizer reports land here) */
		char *txt = NULL;
		size_t len = 0;
		if (util_read_file(a->log, 1u << 20, &txt, &len) == 0) {
			fprintf(stderr, "--- agent log (exit status %d) ---\n%s--- end ---\n", status,
				txt);
			free(txt);
		}
	}
	if (a->dir[0])
		util_rm_rf(a->dir);
	a->dir[0] = '\0';
	return status;
}

/* Collected outcome of one exec. */
struct exec_result {
	uint8_t *out, *err;
	size_t outlen, errlen;
	json_t *end;     /* END or ERROR object */
	json_t *started; /* the first EVENT ("started", file_read's "stat") */
};

HARNESS void exec_result_clear(struct exec_result *r)
{
	free(r->out);
	free(r->err);
	json_decref(r->end);
	json_decref(r->started);
	memset(r, 0, sizeof(*r));
}

HARNESS int buf_append(uint8_t **b, size_t *len, const uint8_t *p, size_t n)
{
	uint8_t *nb = realloc(*b, *len + n + 1);
	if (!nb)
		return -ENOMEM;
	memcpy(nb + *len, p, n);
	*len += n;
	nb[*len] = '\0';
	*b = nb;
	return 0;
}

/* Read a raw stream (a file transfer, or an exec a test drives by hand) to
 * its end, collecting stdout, stderr, the first EVENT and the END.
 * Returns 0 or the guest_stream_read error. */
HARNESS int harness_collect(struct guest_stream *s, struct exec_result *r, int timeout_ms)
{
	int64_t deadline = util_now_ms() + timeout_ms;
	for (;;) {
		int64_t left = deadline - util_now_ms();
		if (left < 0)
			left = 0;
		struct guest_msg m;
		int k = guest_stream_read(s, &m, (int)left);
		if (k == 0)
			return 0;
		if (k < 0)
			return k;
		if (m.kind == GUEST_MSG_DATA && m.channel == PROTO_CH_STDOUT)
			buf_append(&r->out, &r->outlen, m.data, m.len);
		else if (m.kind == GUEST_MSG_DATA && m.channel == PROTO_CH_STDERR)
			buf_append(&r->err, &r->errlen, m.data, m.len);
		else if (m.kind == GUEST_MSG_EVENT && !r->started)
			r->started = json_incref(m.json);
		else if (m.kind == GUEST_MSG_END || m.kind == GUEST_MSG_ERROR)
			r->end = json_incref(m.json);
		guest_msg_clear(&m);
	}
}

/*
 * harness_exec - run the exec req (stolen) on c through the exec reader
 * (guest_run); when in is non-NULL it is fed as stdin while the output is
 * read (req must say "stdin": true).  timeout_ms bounds the whole run.
 * Returns 0 with r filled (r->end: the END, or the agent's error answer),
 * or -errno (no answer from the agent: -ETIMEDOUT, -ECONNRESET, -EPROTO).
 */
HARNESS int harness_exec(struct guest_conn *c, json_t *req, const void *in, size_t inlen,
			struct exec_result *r, int timeout_ms)
{
	memset(r, 0, sizeof(*r));
	struct guest_run_opts o = {.kind = GUEST_RUN_EXEC, .stdin_data = in, .stdin_len = inlen,
				   .deadline_ms = timeout_ms};
	struct guest_run *x;
	int k = guest_run_open(c, req, &o, &x);
	json_decref(req);
	if (k < 0)
		return k;
	struct guest_event ev;
	while ((k = guest_run_next(x, &ev, -1)) == 1) {
		if (ev.type == GUEST_EV_STDOUT)
			buf_append(&r->out, &r->outlen, ev.data, ev.len);
		else if (ev.type == GUEST_EV_STDERR)
			buf_append(&r->err, &r->errlen, ev.data, ev.len);
		else if (ev.type == GUEST_EV_STARTED && !r->started)
			r->started = json_incref(ev.json);
		else if (ev.type == GUEST_EV_EXIT || ev.type == GUEST_EV_ERROR)
			r->end = json_incref(ev.json);
		if (ev.type == GUEST_EV_ERROR && !ev.json)
			k = ev.err;
		if (ev.type == GUEST_EV_EXIT || ev.type == GUEST_EV_ERROR)
			break;
	}
	guest_run_close(x);
	return k < 0 ? k : 0;
}

/* Shorthand: exec cmd with defaults. */
HARNESS int harness_sh(struct guest_conn *c, const char *cmd, struct exec_result *r)
{
	return harness_exec(c, json_pack("{s:s, s:s}", "op", "exec", "cmd", cmd), NULL, 0, r,
			    30000);
}

/* The error code of an END ("ENOENT"), or NULL if it succeeded. */
HARNESS const char *end_error(json_t *end)
{
	return json_string_value(json_object_get(json_object_get(end, "error"), "code"));
}

HARNESS json_int_t end_int(json_t *end, const char *key)
{
	return json_integer_value(json_object_get(end, key));
}

/* One-shot request (stolen); returns the END object (new ref) or NULL. */
HARNESS json_t *harness_call(struct guest_conn *c, json_t *req)
{
	json_t *res = NULL;
	int r = guest_call(c, req, 30000, &res);
	json_decref(req);
	if (r < 0 && r != -EPROTO) {
		json_decref(res);
		return NULL;
	}
	return res;
}

/* harness_write_file - file_write of len bytes in 1 MiB pieces.  Returns
 * the END object (new ref) or NULL. */
HARNESS json_t *harness_write_file(struct guest_conn *c, const char *path, const void *data,
				  size_t len, int mode)
{
	json_t *req = json_pack("{s:s, s:s, s:i}", "op", "file_write", "path", path, "mode", mode);
	struct guest_stream *s;
	int k = guest_stream_open(c, req, &s);
	json_decref(req);
	if (k < 0)
		return NULL;
	k = guest_stream_write(s, data, len, 30000);
	if (k == 0)
		k = guest_stream_write_eof(s);
	struct exec_result r = {0};
	harness_collect(s, &r, 30000); /* also after -EPIPE: the END says why */
	guest_stream_close(s);
	json_t *end = json_incref(r.end);
	exec_result_clear(&r);
	return end;
}

/* harness_read_file - file_read into a new buffer.  Returns the END object
 * (new ref) or NULL; *data and *len hold the bytes (free *data). */
HARNESS json_t *harness_read_file(struct guest_conn *c, const char *path, uint8_t **data,
				 size_t *len, json_t **stat_event)
{
	json_t *req = json_pack("{s:s, s:s}", "op", "file_read", "path", path);
	struct guest_stream *s;
	int k = guest_stream_open(c, req, &s);
	json_decref(req);
	if (k < 0)
		return NULL;
	struct exec_result r = {0};
	k = harness_collect(s, &r, 30000);
	guest_stream_close(s);
	if (k < 0 || !r.end) {
		exec_result_clear(&r);
		return NULL;
	}
	json_t *end = json_incref(r.end);
	*data = r.out;
	*len = r.outlen;
	r.out = NULL;
	if (stat_event)
		*stat_event = json_incref(r.started);
	exec_result_clear(&r);
	return end;
}

/* harness_count_procs - processes whose command line contains token. */
HARNESS int harness_count_procs(const char *token)
{
	DIR *d = opendir("/proc");
	if (!d)
		return -errno;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		char p[300], buf[4096];
		snprintf(p, sizeof(p), "/proc/%s/cmdline", de->d_name);
		int fd = open(p, O_RDONLY);
		if (fd < 0)
			continue;
		ssize_t len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		for (ssize_t i = 0; i < len; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		buf[len] = '\0';
		if (strstr(buf, token))
			n++;
	}
	closedir(d);
	return n;
}

/* harness_kill_procs - SIGKILL every process whose command line holds
 * token (a test's own leftovers).  Returns how many were signalled. */
HARNESS int harness_kill_procs(const char *token)
{
	DIR *d = opendir("/proc");
	if (!d)
		return -errno;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		char p[300], buf[4096];
		snprintf(p, sizeof(p), "/proc/%s/cmdline", de->d_name);
		int fd = open(p, O_RDONLY);
		if (fd < 0)
			continue;
		ssize_t len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		for (ssize_t i = 0; i < len; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		buf[len] = '\0';
		if (strstr(buf, token) && kill((pid_t)atoi(de->d_name), SIGKILL) == 0)
			n++;
	}
	closedir(d);
	return n;
}

/* Wait up to ms for exactly n processes to carry token (a process in the
 * middle of execve(2) briefly shows an empty command line); returns the
 * final count. */
HARNESS int harness_wait_procs(const char *token, int n, int ms)
{
	int64_t end = util_now_ms() + ms;
	int got;
	while ((got = harness_count_procs(token)) != n && util_now_ms() < end)
		usleep(20 * 1000);
	return got;
}

/* Wait up to ms for no process to carry token; returns the final count. */
HARNESS int harness_wait_no_procs(const char *token, int ms)
{
	return harness_wait_procs(token, 0, ms);
}

/* A unique decimal like 1000.012345007 for `sleep` (found in /proc later). */
HARNESS const char *harness_sleep_token(char *buf, size_t len)
{
	static unsigned counter;
	snprintf(buf, len, "1000.%06d%03u", (int)(getpid() % 1000000), ++counter % 1000);
	return buf;
}

/* The fixture of a test that talks to one agent: the agent and a link to
 * it (guest_conn), and a scratch path for the test. */
struct agent_fixture {
	struct agent_proc a;
	struct guest_conn *c;
	char path[PATH_MAX];
};

/* cmocka setup: start an agent, link to it.  0, or -1 (the test fails). */
HARNESS int agent_fixture_setup(void **state)
{
	struct agent_fixture *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	if (harness_start(&f->a) != 0) {
		free(f);
		return -1;
	}
	if (guest_conn_open(f->a.sock, 5000, &f->c) != 0) {
		harness_stop(&f->a);
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

/* A cmocka test of fn with an agent_fixture. */
#define AGENT_TEST(fn) \
	cmocka_unit_test_setup_teardown(fn, agent_fixture_setup, agent_fixture_teardown)

/* cmocka teardown: the agent must still be alive (nothing a test did
 * killed it) and exit cleanly (no leak or sanitizer report).  0 or -1. */
HARNESS int agent_fixture_teardown(void **state)
{
	struct agent_fixture *f = *state;
	guest_conn_close(f->c);
	int alive = harness_alive(&f->a);
	int clean = harness_stop(&f->a) == 0;
	free(f);
	return alive && clean ? 0 : -1;
}

/* Deterministic test bytes: xorshift64 continuing from *state; the stream
 * is the same however it is sliced as long as every n is a multiple of 8. */
HARNESS void harness_fill(uint64_t *state, uint8_t *p, size_t n)
{
	uint64_t x = *state;
	for (size_t i = 0; i < n; i++) {
		if ((i & 7) == 0) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		p[i] = (uint8_t)(x >> ((i & 7) * 8));
	}
	*state = x;
}

#endif
