/*
 * main.c - pandastack-agent: the guest agent (PID 1) and its test modes.
 *
 *   pandastack-agent                  as PID 1: init duties, then serve the
 *                                     virtio-serial port org.pandastack.agent
 *   pandastack-agent --listen PATH    serve the protocol on a Unix socket,
 *                                     one connection at a time (tests; no
 *                                     init duties, never sets the clock)
 *   pandastack-agent --port DEV       serve on the given device
 *   options: --workdir DIR (default cwd of exec, default /workspace),
 *            --cgroup DIR (a cgroup2 folder: one group per exec),
 *            --pip-conf FILE (the pip config file restore writes the
 *            host's package index into; PID 1: AGENT_PIP_CONF, test modes:
 *            none, so a test never writes the host's),
 *            --hooks-dir DIR (the after-restore hooks' folder; PID 1:
 *            AGENT_HOOKS_DIR, test modes: none), --hooks-report FILE (the
 *            report of the last restore's hooks; PID 1: AGENT_HOOKS_REPORT,
 *            test modes: none)
 *
 * Exit codes (test modes only; PID 1 never exits): 0 after SIGTERM/SIGINT,
 * 100 usage, 111 system error.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/cgroup.h"
#include "agent/commands.h"
#include "agent/contexts.h"
#include "agent/init.h"
#include "agent/kernel/kernel.h"
#include "agent/loop.h"
#include "agent/session.h"
#include "common/log.h"
#include "common/util.h"

#define AGENT_PORT_NAME "org.pandastack.agent"
/* PID 1's pip config file for the host's package index: read by pip before
 * /etc/pip.conf (the image's), so that one keeps its settings. */
#define AGENT_PIP_CONF "/etc/xdg/pip/pip.conf"
/* PID 1: the after-restore hooks' folder (docs/snapshots.md) and the
 * report of the last restore's hooks. */
#define AGENT_HOOKS_DIR "/etc/pandastack/after-restore.d"
#define AGENT_HOOKS_REPORT "/run/pandastack/after-restore.json"
/* At exit (test modes), how long kernels get to stop, ms. */
#define KERNELS_STOP_WAIT_MS 5000
/* How long a stop waits for exec groups whose last processes are still
 * going (killed at a timeout, say), ms, and how often it looks. */
#define GROUPS_STOP_WAIT_MS 2000
#define GROUPS_STOP_POLL_MS 10

static int stop_requested;

static void on_stop_signal(struct loop_watch *w, uint32_t ev)
{
	(void)ev;
	struct signalfd_siginfo si;
	while (read(w->fd, &si, sizeof(si)) > 0)
		stop_requested = 1;
}

/* A child nobody registered with the loop: maybe a Jupyter kernel (its
 * owner polls for the status), else an orphan re-parented to us. */
static void on_orphan(void *ctx, pid_t pid, int status)
{
	(void)ctx;
	kernel_note_exit(pid, status);
	if (cgroup_lingering())
		cgroup_sweep();
}

static void usage(void)
{
	fprintf(stderr, "usage: pandastack-agent [--listen PATH | --port DEV] [--workdir DIR] "
			"[--cgroup DIR] [--pip-conf FILE]\n"
			"       [--hooks-dir DIR] [--hooks-report FILE]\n"
			"       (no mode: PID 1 init mode)\n");
}

/* Allow many concurrent execs (each holds a few pipes).  Returns the soft
 * limit commands should get back: the one we started with, or 1024. */
static uint64_t raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1024;
	uint64_t before = rl.rlim_cur;
	rlim_t want = 65536;
	if (rl.rlim_max < want && getpid() == 1)
		rl.rlim_max = want;
	rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
	setrlimit(RLIMIT_NOFILE, &rl);
	return before < 1024 ? before : 1024;
}

/* Before the agent exits: remove the exec groups left for a later sweep
 * once their processes are gone (they are swept when an orphan is reaped,
 * and the last process may not have been one).  A group whose processes
 * outlive the wait stays. */
static void sweep_groups_before_exit(void)
{
	int64_t end = util_now_ms() + GROUPS_STOP_WAIT_MS;
	struct timespec pause = {0, GROUPS_STOP_POLL_MS * 1000000L};
	for (;;) {
		cgroup_sweep();
		if (!cgroup_lingering() || util_now_ms() >= end)
			return;
		nanosleep(&pause, NULL);
	}
}

/* Serve until asked to stop (never, as PID 1).  Returns an exit code. */
static int serve(struct agent_env *env, enum session_transport kind, const char *path)
{
	struct session *S = NULL;
	int r = session_new(env, kind, path, &S);
	if (r < 0) {
		char q[256];
		log_kv(LOG_ERROR, "agent.serve_failed", "path=%s errno=%d",
		       log_quote(path, q, sizeof(q)), -r);
		return 111;
	}
	while (!stop_requested) {
		r = loop_run_once(env->loop, session_busy(S) ? 0 : -1);
		if (r < 0) {
			log_kv(LOG_ERROR, "agent.loop_failed", "errno=%d", -r);
			if (!env->init_mode)
				break;
			sleep(1);
		}
	}
	session_free(S);
	return r < 0 ? 111 : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"listen", required_argument, NULL, 'l'},
		{"port", required_argument, NULL, 'p'},
		{"workdir", required_argument, NULL, 'w'},
		{"cgroup", required_argument, NULL, 'c'},
		{"pip-conf", required_argument, NULL, 'i'},
		{"hooks-dir", required_argument, NULL, 'k'},
		{"hooks-report", required_argument, NULL, 'r'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct agent_env env = {.boot_ms = util_now_ms(), .workdir = INIT_WORKDIR};
	const char *listen_path = NULL, *port_path = NULL, *cgroup_dir = NULL;
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			listen_path = optarg;
			break;
		case 'p':
			port_path = optarg;
			break;
		case 'w':
			env.workdir = optarg;
			break;
		case 'c':
			cgroup_dir = optarg;
			break;
		case 'i':
			env.pip_conf = optarg;
			break;
		case 'k':
		case 'r':
			if (optarg[0] != '/') {
				fprintf(stderr, "pandastack-agent: --%s needs an absolute path\n",
					c == 'k' ? "hooks-dir" : "hooks-report");
				return 100;
			}
			*(c == 'k' ? &env.hooks_dir : &env.hooks_report) = optarg;
			break;
		default:
			usage();
			return c == 'h' ? 0 : 100;
		}
	}
	env.init_mode = !listen_path && !port_path;
	if (optind != argc || (listen_path && port_path) || (env.init_mode && getpid() != 1)) {
		usage();
		return 100;
	}
	umask(0); /* the agent applies explicit modes; children get 022 */
	signal(SIGPIPE, SIG_IGN);
	env.child_nofile = raise_fd_limit();

	struct init_report rep;
	if (env.init_mode) {
		env.mode_name = "init";
		if (!env.pip_conf)
			env.pip_conf = AGENT_PIP_CONF;
		if (!env.hooks_dir)
			env.hooks_dir = AGENT_HOOKS_DIR;
		if (!env.hooks_report)
			env.hooks_report = AGENT_HOOKS_REPORT;
		init_system(env.boot_ms, &rep);
		if (rep.cgroup_ok)
			env.cgroup_dir = INIT_CGROUP_DIR;
		char line[512];
		snprintf(line, sizeof(line),
			 "pandastack-agent: up %lld ms after boot, init %lld ms (modules %u in "
			 "%lld ms, root %s at %lld ms, network %s at %lld ms)%s%s",
			 (long long)env.boot_ms, (long long)rep.done_ms, rep.modules_loaded,
			 (long long)rep.modules_ms, rep.root_switched ? "mounted" : "NOT mounted",
			 (long long)rep.root_ms,
			 rep.nic_up ? "up" : rep.nic_found ? "NOT configured" : "absent",
			 (long long)rep.net_ms, rep.error[0] ? "; error: " : "", rep.error);
		init_console_line(line);
	} else {
		env.mode_name = listen_path ? "listen" : "port";
		/* orphans of our commands come back to us, so we can reap them */
		prctl(PR_SET_CHILD_SUBREAPER, 1);
		if (cgroup_dir) {
			int r = cgroup_prepare(cgroup_dir);
			if (r < 0) {
				fprintf(stderr, "pandastack-agent: --cgroup %s: %s\n", cgroup_dir,
					strerror(-r));
				return 111;
			}
			env.cgroup_dir = cgroup_dir;
		}
	}

	int r = loop_new(&env.loop);
	while (r < 0) { /* only PID 1 retries: it must never exit */
		log_kv(LOG_ERROR, "agent.loop_failed", "errno=%d", -r);
		if (!env.init_mode)
			return 111;
		sleep(1);
		r = loop_new(&env.loop);
	}
	loop_set_orphan_hook(env.loop, on_orphan, NULL);

	struct loop_watch stopw;
	int sfd = -1;
	if (!env.init_mode) {
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGTERM);
		sigaddset(&set, SIGINT);
		sigprocmask(SIG_BLOCK, &set, NULL);
		sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
		loop_watch_init(&stopw, on_stop_signal, NULL);
		if (sfd >= 0)
			loop_watch_add(env.loop, &stopw, sfd, EPOLLIN);
	}

	int code;
	if (listen_path)
		code = serve(&env, SESSION_LISTEN, listen_path);
	else if (port_path)
		code = serve(&env, SESSION_PORT, port_path);
	else
		for (;;) /* PID 1 never returns */
			serve(&env, SESSION_PORT_NAMED, AGENT_PORT_NAME), sleep(1);
	/* code contexts: shut their kernels down (their groups are killed) */
	contexts_shutdown(KERNELS_STOP_WAIT_MS);
	/* background commands: killed with their trees */
	commands_shutdown();
	sweep_groups_before_exit();
	if (sfd >= 0) {
		loop_watch_del(env.loop, &stopw);
		close(sfd);
	}
	loop_free(env.loop);
	return code;
}
