/*
 * vm.h - one sandbox's QEMU process: restore from a template, adopt after a
 * daemon restart, stop, pause/resume, status, and its agent connection.
 *
 * A run directory holds everything of one VM:
 *   jail/        what the jailed QEMU sees and writes (owned by its uid):
 *     qmp.sock     QMP (JSON) server socket
 *     agent.sock   the agent's virtio-serial port (chardev socket server)
 *     overlay.qcow2  the VM's writable disk layer over the template's disk.qcow2
 *   root/        the jail's root is mounted here, in QEMU's mount namespace only
 *   qemu.pid     QEMU's pid (decimal)
 *   console.log  the guest's serial console (capped)
 *   vm.json      what adopt needs: template name and bake, pid, accelerator,
 *                start time, uid
 *   deadline     when the monitor ends QEMU if nobody did (vm_set_deadline)
 * QEMU runs detached (its own session): it outlives the process that
 * started it, and vm_adopt finds it again from the run directory.
 *
 * Threads: a struct vm is used by one thread at a time for lifecycle calls
 * (the daemon holds its sandbox lock); vm_agent()'s connection is
 * thread-safe on its own.
 */
#ifndef PANDASTACK_VM_H
#define PANDASTACK_VM_H

#include <stddef.h>
#include <sys/types.h>

#include "engine/guest/guest_conn.h"
#include "engine/qemu/netslot.h"
#include "engine/template/template.h"

struct vm;

/* Outcome details for callers that report errors to users. */
struct vm_err {
	char msg[256];
};

/*
 * vm_restore - create a VM from template t in run_dir (created here, must
 * not exist): new qcow2 overlay on the template's disk layer, QEMU started
 * with the template's machine arguments, memory file share=off, -incoming
 * defer; x-ignore-shared; migrate-incoming of the state file; cont; agent
 * handshake; restore message (clock, entropy, and gopts: borrowed, may be
 * NULL; guest_conn.h).  Never boots, never copies the memory file or the
 * image.  timeout_ms bounds the whole call.
 * Returns 0 with *out owned by the caller, or -errno with err->msg saying
 * what failed (-ENOENT template files missing, -ETIMEDOUT, -EIO QEMU or the
 * agent failed: its console tail is in the message).  On failure nothing is
 * left running and run_dir is removed.
 */
int vm_restore(const struct template *t, const char *run_dir,
	       const struct guest_restore_opts *gopts, int timeout_ms, struct vm **out,
	       struct vm_err *err);

/*
 * vm_adopt - find the QEMU of run_dir again (after a daemon restart): read
 * vm.json and qemu.pid, check the process is alive and is that QEMU
 * (/proc/<pid>/cmdline names run_dir), reconnect QMP and the agent.  A
 * QEMU left stopped (a capture the dead process never finished) is
 * continued first.  Returns 0 with *out, -ESRCH (the process is gone),
 * -ENOENT (no vm.json), -EIO (sockets do not answer).
 */
int vm_adopt(const char *run_dir, int timeout_ms, struct vm **out, struct vm_err *err);

/* vm_pid - QEMU's pid. */
pid_t vm_pid(const struct vm *v);

/* vm_netns - the sandbox's network namespace (an fd owned by v; netslot.h),
 * for sockets towards the guest (netslot_connect_guest). */
int vm_netns(const struct vm *v);

/* vm_listeners - the daemon's sockets inside that namespace: the proxy
 * listener and the resolver's (owned by v, valid until vm_free). */
const struct netslot_listeners *vm_listeners(const struct vm *v);

/* vm_uid - the uid QEMU runs as in its jail; 0 when not jailed. */
uid_t vm_uid(const struct vm *v);

/*
 * vm_set_deadline - the time (Unix ms) after which QEMU's monitor ends it
 * even if no daemon is there to stop it (spawn.h); 0: no deadline.  The
 * daemon gives its TTL plus a grace period.  Call at create and at every
 * TTL change.
 * Returns 0 or -errno.
 */
int vm_set_deadline(struct vm *v, int64_t unix_ms);

/* vm_run_dir - the run directory (borrowed). */
const char *vm_run_dir(const struct vm *v);

/* vm_template_name - the template it was created from (borrowed). */
const char *vm_template_name(const struct vm *v);

/* vm_template_bake - template_bake_id of the bake it was created from
 * ("" for a VM adopted from a vm.json that did not record it). */
const char *vm_template_bake(const struct vm *v);

/*
 * vm_exit_fd - a pidfd for QEMU: becomes readable (POLLIN) when the process
 * exits, so a watcher notices a dead VM at once.  Owned by v.  -1 if the
 * kernel has no pidfd_open (then poll vm_alive).
 */
int vm_exit_fd(const struct vm *v);

/* vm_alive - 1 if QEMU is still running, 0 if not. */
int vm_alive(const struct vm *v);

/*
 * vm_exit_reason - after QEMU died, a one-line reason (borrowed, valid
 * until the next call): how it ended ("killed by signal 9 (SIGKILL)",
 * "exited 1") and QEMU's last error line (never the guest's console).
 * "running" while QEMU lives.  May wait up to 1 s for the monitor's record.
 */
const char *vm_exit_reason(struct vm *v);

/* vm_agent - the agent connection (borrowed; NULL if lost).  If the
 * connection dropped, vm_agent_reconnect makes a new one. */
struct guest_conn *vm_agent(struct vm *v);

/* vm_agent_reconnect - replace a lost agent connection.  0 or -errno. */
int vm_agent_reconnect(struct vm *v, int timeout_ms);

/* vm_set_log_label - name v's agent connection in log lines (the
 * sandbox's id), now and after any reconnect (guest_conn_set_label).
 * Threads: as vm_agent_reconnect. */
void vm_set_log_label(struct vm *v, const char *label);

/* vm_pause / vm_resume - QMP stop / cont.  0, -EIO (QMP error), -ESRCH. */
int vm_pause(struct vm *v);
int vm_resume(struct vm *v);

/* vm_status - QMP query-status into buf ("running", "paused", ...);
 * 0 or -errno. */
int vm_status(struct vm *v, char *buf, size_t buflen);

/*
 * vm_stop - end the VM: QMP quit, SIGKILL if it has not exited within
 * 2 s, then remove the run directory.  Safe on a VM whose QEMU already died.
 * Returns 0 or -errno (the process is gone either way).
 */
int vm_stop(struct vm *v);

/* vm_free - release the handle (connections, fds) without stopping QEMU.
 * NULL is a no-op. */
void vm_free(struct vm *v);

#endif
