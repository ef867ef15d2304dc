/*
 * spawn.h - start QEMU detached from the calling process, so that it
 * outlives a daemon restart, with its output captured in capped logs.
 *
 * Process tree after spawn_detached:
 *   init -> monitor ("ps-qemu-mon", own session) -> qemu
 * The caller forks a short-lived child that calls setsid() and forks the
 * monitor, then exits (double fork: the monitor is re-parented to init and
 * the caller reaps only the short-lived child).  The monitor forks QEMU
 * with stdin /dev/null and stdout/stderr on pipes, copies QEMU's stdout
 * (the guest's serial console) to <run>/console.log and its stderr to
 * <run>/qemu.log, each cut at log_cap bytes (then "[log truncated]" and the
 * rest drained and dropped, so a hostile guest cannot fill the disk or
 * block QEMU), and when QEMU exits writes its wait status to <run>/qemu.exit
 * ("exited N" or "killed by signal N (NAME)") and exits.  spawn_detached
 * writes QEMU's pid to <run>/qemu.pid.
 *
 * Only async-signal-safe calls run between fork and exec, so any thread of
 * a multi-threaded process may call spawn_detached.  The monitor runs as
 * root outside the jail; only QEMU is jailed.
 */
#ifndef PANDASTACK_SPAWN_H
#define PANDASTACK_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

/* Default cap for console.log and qemu.log, bytes. */
#define SPAWN_DEFAULT_LOG_CAP (1024u * 1024u)

/* The file in run_dir holding the deadline (Unix time in ms, decimal). */
#define SPAWN_DEADLINE_FILE "deadline"

struct jail;

/* Most descriptors handed down to QEMU (spawn_opts.pass_fds). */
#define SPAWN_PASS_MAX 4

/*
 * What the monitor does besides logging (all optional; NULL opts = none):
 *   jail       QEMU runs in this jail (jail.h): the monitor makes a new PID
 *              namespace for it, holds the uid lock until QEMU exited, then
 *              removes its control group.  QEMU's environment is empty in
 *              every case.
 *   watch      the monitor ends QEMU (SIGKILL) when run_dir is removed, and
 *              at the time written in <run>/deadline (spawn_set_deadline;
 *              rewritten at will, no file = no deadline), so no sandbox
 *              outlives its TTL even when no daemon is left to stop it.
 *   lifeline   the read end of a pipe whose write end the caller keeps: if
 *              it reaches EOF before one byte was written into it (the
 *              caller died before handing the VM out: a pool entry), QEMU is
 *              ended; after that byte it is ignored (spawn_release).
 * A QEMU ended by its monitor records why in qemu.exit ("killed by signal 9
 * (SIGKILL): deadline passed").
 */
struct spawn_opts {
	size_t log_cap;           /* bytes per log; 0: SPAWN_DEFAULT_LOG_CAP */
	const struct jail *jail;  /* NULL: not jailed */
	int watch;                /* 1: honour removal of run_dir and its deadline */
	int lifeline_fd;          /* -1 or 0 when unused (0 is never a pipe here) */
	int pass_fds[SPAWN_PASS_MAX]; /* descriptors QEMU inherits (its memfd, its tap) */
	int npass;
};

/*
 * spawn_detached - run argv (argv[0] an absolute path; NULL-terminated;
 * borrowed) detached as described above, with run_dir (existing) for the
 * logs and pid file, options o (NULL: none).
 * Returns 0 with *pid set to QEMU's pid once it has been exec'd, or -errno:
 * the exec's own errno (-ENOENT no such binary, -EACCES), a jail step's
 * errno, or fork/pipe failures.  Does not wait for QEMU to be ready.
 */
int spawn_detached(char *const argv[], const char *run_dir, const struct spawn_opts *o,
		   pid_t *pid);

/*
 * spawn_set_deadline - write <run_dir>/deadline (atomically): the Unix time
 * in ms after which the monitor ends QEMU; 0 removes it.
 * Returns 0 or -errno.
 */
int spawn_set_deadline(const char *run_dir, int64_t unix_ms);

/* spawn_release - write the byte that tells the monitor its VM was handed
 * out, and close fd (the write end of a lifeline).  0 or -errno. */
int spawn_release(int fd);

/*
 * spawn_exit_status - read <run>/qemu.exit into buf (buflen bytes,
 * NUL-terminated, newline dropped), waiting up to timeout_ms for the
 * monitor to write it.  Returns 0, -ENOENT if it never appeared.
 */
int spawn_exit_status(const char *run_dir, int timeout_ms, char *buf, size_t buflen);

/*
 * spawn_log_tail - the last non-empty line of <run>/<name> (at most the
 * last 4 KiB are read) that contains none of skip's phrases (a
 * NULL-terminated array, or NULL), into buf, control characters replaced.
 * Returns 0, -ENOENT, -ENODATA (empty log, or only lines to skip).
 */
int spawn_log_tail(const char *run_dir, const char *name, const char *const *skip, char *buf,
		   size_t buflen);

#endif
