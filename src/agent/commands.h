/*
 * commands.h - the agent's background commands, by id: shell commands that
 * run on without a stream waiting for them (a dev server, a training job).
 * The operations that use them are op_command.c (docs/agent-protocol.md,
 * "Background commands").
 *
 * A command outlives the stream that started it and the host connection,
 * like a code context: the daemon names it (its id) and finds it again.
 * It is started as exec's commands are (child.h: its own session, process
 * group and cgroup), with its stdin on a pipe that stays open until the
 * host closes it (command_stdin) or the command exits, and its stdout and
 * stderr read all the time into a ring per channel that keeps the last
 * COMMAND_OUTPUT_KEEP bytes (ring.h: a reader asks "from offset N" and
 * learns how much was dropped).  Only a timeout it was given, a kill, the
 * eviction of its record or the agent's exit stop it.
 *
 * After the shell exits the command is "ended" (exit code, signal); its
 * record and output stay for later reads until COMMANDS_MAX records exist
 * and a new command needs the room (the oldest ended one goes).  Processes
 * it left running keep its cgroup (released as exec's lingering groups
 * are: cgroup.h) and can still be killed through it.
 *
 * Watchers: a stream waiting on a command (its start, new output, its end
 * after a kill, its stdin) links a struct command_watch; its callback runs
 * on every change of the command (output arrived, the shell started or
 * exited, stdin took bytes or closed) and once more with w->cmd NULL when
 * the command's record goes away.  The callback may unlink its own watch
 * and end its stream, nothing else.
 *
 * Threads: the loop thread only.
 */
#ifndef PANDASTACK_AGENT_COMMANDS_H
#define PANDASTACK_AGENT_COMMANDS_H

#include <stdint.h>

#include <jansson.h>

#include "agent/astream.h"
#include "agent/child.h"
#include "agent/infeed.h"
#include "agent/loop.h"
#include "agent/request.h"
#include "common/ring.h"

/* Most command records (running or ended) at once. */
#define COMMANDS_MAX 32
/* Output kept per channel of a command, bytes (the newest). */
#define COMMAND_OUTPUT_KEEP (1024u * 1024u)
/* Bytes of the command line shown in listings. */
#define COMMAND_CMD_SHOWN 4096u

struct agent_command;
struct command_watch;

/* Called on every change of w->cmd, and with w->cmd NULL when it is gone. */
typedef void (*command_watch_cb)(struct command_watch *w);

struct command_watch {
	struct agent_command *cmd;   /* NULL once the command is gone */
	command_watch_cb cb;
	void *ctx;                   /* the owner's (its stream's op) */
	struct command_watch *next;
};

struct command_chan {
	struct agent_command *c;
	int fd;                      /* read end, -1 once at EOF */
	struct loop_watch w;
	struct ring ring;            /* the newest COMMAND_OUTPUT_KEEP bytes */
};

struct agent_command {
	char id[AGENT_REQ_CTX_ID_MAX + 1];
	char *cmd_shown;             /* the first COMMAND_CMD_SHOWN bytes (UTF-8) */
	char cwd[AGENT_REQ_PATH_MAX + 1];
	struct child ch;
	struct exec_cgroup kill_cg;  /* ch's group after its release (path only) */
	int cg_released;
	struct command_chan out[2];  /* [0] stdout, [1] stderr */
	struct loop_watch errw;      /* on ch.err_fd */
	int started;                 /* the error pipe said how the shell started */
	int child_errno;             /* why the shell could not run (then 0 < it) */
	struct infeed in;            /* its stdin */
	struct astream *stdin_user;  /* the command_stdin stream feeding it, or NULL */
	struct loop_timer timeout;
	int timed_out;
	int reaped, status;
	int64_t started_wall_ms, ended_wall_ms;
	int64_t start_ms, exit_ms;   /* CLOCK_MONOTONIC */
	unsigned readers;            /* command_output answers being sent */
	struct command_watch *watches;
	struct agent_command *next;
};

/*
 * commands_start - start sp as command id with a timeout of timeout_ms (0:
 * none); cwd is recorded for listings.  When COMMANDS_MAX records exist the
 * oldest ended one is dropped first.  Returns 0 with *out (owned by the
 * registry; the shell's start is reported to watchers: c->started), -EEXIST
 * (id in use), -EMFILE (COMMANDS_MAX running), or child_spawn's -errno.
 */
int commands_start(struct agent_env *env, const char *id, const struct child_spec *sp,
		   uint64_t timeout_ms, struct agent_command **out);

/* commands_find - the command id, or NULL. */
struct agent_command *commands_find(const char *id);

/* commands_running - 1 while the shell has not been reaped. */
int commands_running(const struct agent_command *c);

/*
 * commands_kill - send sig to the command's process group; SIGKILL kills
 * its whole tree (its cgroup too, also after the shell exited).  Returns 0,
 * or -ESRCH when nothing was left to signal.
 */
int commands_kill(struct agent_command *c, int sig);

/*
 * commands_destroy - kill what is left of c, tell its watchers it is gone
 * (w->cmd NULL), release everything and free it.
 */
void commands_destroy(struct agent_command *c);

/* commands_watch / commands_unwatch - link w (w->cb set) to c, or detach
 * it (no-op when already detached). */
void commands_watch(struct agent_command *c, struct command_watch *w);
void commands_unwatch(struct command_watch *w);

/* commands_json - c as the agent describes it: {"id", "pid", "cmd",
 * "cwd", "started_at_ms", "running", "ended_at_ms", "exit_code", "signal",
 * "timed_out", "stdout_bytes", "stderr_bytes", "stdin_open"}.  New
 * reference or NULL (ENOMEM). */
json_t *commands_json(const struct agent_command *c);

/* commands_list_json - {"commands": [commands_json...]}, oldest first.
 * New reference or NULL. */
json_t *commands_list_json(void);

/* commands_shutdown - destroy every command (agent exit in the test
 * modes). */
void commands_shutdown(void);

#endif
