/*
 * monitor.h - one thread that watches every running sandbox:
 *   - a QEMU that exits is noticed at once (its pidfd, vm_exit_fd, becomes
 *     readable; VMs without one are checked with vm_alive every 500 ms) and
 *     the sandbox ends with status "error" and the engine's reason;
 *   - a sandbox past its expiry (TTL) is stopped with status "stopped",
 *     reason "ttl expired";
 *   - rows of stopped and failed sandboxes older than the retention are
 *     removed once a minute.
 * Ends run in their own threads (sbx_end_async), so one slow stop never
 * delays noticing the next death.
 *
 * Threads: monitor_start / monitor_stop from the main thread.
 */
#ifndef PANDASTACK_DAEMON_MONITOR_H
#define PANDASTACK_DAEMON_MONITOR_H

struct daemon;
struct monitor;

/* monitor_start - start the thread.  Returns 0 with *out or -errno. */
int monitor_start(struct daemon *d, struct monitor **out);

/* monitor_stop - stop and join the thread, free.  NULL is a no-op. */
void monitor_stop(struct monitor *m);

#endif
