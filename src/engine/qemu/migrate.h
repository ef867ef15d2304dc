/*
 * migrate.h - moving a VM's device and CPU state to and from a file over
 * QMP with an fd: URI (QEMU docs/devel/migration.rst; `getfd` passes the
 * open file, since -sandbox spawn=deny forbids exec: URIs).  With
 * x-ignore-shared on, RAM that lives in a share=on memory file is not
 * written: the state file holds only device and CPU state.
 * Threads: whoever owns the struct qmp.
 */
#ifndef PANDASTACK_MIGRATE_H
#define PANDASTACK_MIGRATE_H

#include <stdint.h>

#include "engine/qemu/qmp.h"

/* migrate_set_caps - turn on x-ignore-shared and MIGRATION events.
 * Returns 0 or -errno (qmp_last_error has QEMU's text). */
int migrate_set_caps(struct qmp *q, int timeout_ms);

/*
 * migrate_save - stop-and-copy the VM's state into path (created or
 * truncated, mode 0644) and wait for completion within timeout_ms.
 * The caller stops the VM first and sets the capabilities.
 * Returns 0, -ETIMEDOUT, -EIO (migration failed: msg has QEMU's reason),
 * -errno.
 */
int migrate_save(struct qmp *q, const char *path, int timeout_ms, char *msg, size_t msglen);

/*
 * migrate_load - feed the state file path to a QEMU waiting in
 * `-incoming defer` and wait for completion within timeout_ms.  The VM
 * is left paused (the saved run state); the caller sends `cont`.
 * Returns 0, -ENOENT (no state file), -ETIMEDOUT, -EIO (msg says why).
 */
int migrate_load(struct qmp *q, const char *path, int timeout_ms, char *msg, size_t msglen);

/*
 * migrate_load_start / migrate_wait - migrate_load in two steps, for callers
 * that time them: start feeds path to QEMU (getfd + migrate-incoming; 0,
 * -ENOENT, -errno with msg), wait waits up to timeout_ms for the MIGRATION
 * event saying it completed (0, -ETIMEDOUT, -EIO with msg).
 */
int migrate_load_start(struct qmp *q, const char *path, int timeout_ms, char *msg,
		       size_t msglen);
int migrate_wait(struct qmp *q, int timeout_ms, char *msg, size_t msglen);

#endif
