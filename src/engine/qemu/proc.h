/*
 * proc.h - run a short helper program (qemu-img, qemu --version, the
 * accelerator probe) to completion with a deadline, capturing its output.
 *
 * Uses posix_spawn (safe from any thread of a multi-threaded process) and
 * a pidfd to wait with a timeout.  The child gets stdin /dev/null and
 * stdout+stderr on one pipe.
 */
#ifndef PANDASTACK_PROC_H
#define PANDASTACK_PROC_H

#include <stddef.h>

/*
 * proc_run - run argv (argv[0] a path or a name looked up on PATH;
 * NULL-terminated; borrowed) for at most timeout_ms.  Output (stdout and
 * stderr merged) goes into out (outcap bytes, NUL-terminated, the excess
 * dropped); out may be NULL.  *status gets the wait status.
 * Returns 0 when the program ran and exited (whatever its status),
 * -ETIMEDOUT (it was killed with SIGKILL), or -errno (spawn failed,
 * -ENOENT no such program).  Any thread.
 */
int proc_run(char *const argv[], int timeout_ms, char *out, size_t outcap, int *status);

/*
 * proc_run_ok - proc_run, then require exit status 0: returns -EIO
 * otherwise, with the program's output left in out for the message.
 */
int proc_run_ok(char *const argv[], int timeout_ms, char *out, size_t outcap);

#endif
