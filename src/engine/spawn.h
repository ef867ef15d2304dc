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
 * a multi-threaded process may call spawn_detached.
 */
#ifndef PANDASTACK_SPAWN_H
#define PANDASTACK_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

/* Default cap for console.log and qemu.log, bytes. */
#define SPAWN_DEFAULT_LOG_CAP (1024u * 1024u)

/*
 * spawn_detached - run argv (argv[0] an absolute path; NULL-terminated;
 * borrowed) detached as described above, with run_dir (existing) for the
 * logs and pid file, log_cap bytes per log (0: the default).
 * Returns 0 with *pid set to QEMU's pid once it has been exec'd, or -errno:
 * the exec's own errno (-ENOENT no such binary, -EACCES), or fork/pipe
 * failures.  Does not wait for QEMU to be ready.
 */
int spawn_detached(char *const argv[], const char *run_dir, size_t log_cap, pid_t *pid);

/*
 * spawn_exit_status - read <run>/qemu.exit into buf (buflen bytes,
 * NUL-terminated, newline dropped), waiting up to timeout_ms for the
 * monitor to write it.  Returns 0, -ENOENT if it never appeared.
 */
int spawn_exit_status(const char *run_dir, int timeout_ms, char *buf, size_t buflen);

/*
 * spawn_log_tail - the last non-empty line of <run>/<name> (at most the
 * last 4 KiB are read) into buf, control characters replaced.
 * Returns 0, -ENOENT, -ENODATA (empty log).
 */
int spawn_log_tail(const char *run_dir, const char *name, char *buf, size_t buflen);

#endif
