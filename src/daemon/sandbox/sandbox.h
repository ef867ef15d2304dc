/*
 * sandbox.h - live sandboxes: the in-memory registry of the sandboxes whose
 * QEMU this daemon holds, their lifecycle (create, use, end) and the rules
 * that keep concurrent calls safe.
 *
 * The SQLite row (store.h) is the record users see; a struct sbx is the
 * handle on a running one.  States:
 *
 *    CREATING --restore ok--> RUNNING --delete / ttl / QEMU died--> ENDING --> ENDED
 *        \--restore failed--> (removed: no row, no dir, no process)
 *
 * Locking: the registry mutex guards the list and reference counts; each
 * sbx's mutex guards its state, expiry and `ops` (threads inside the engine
 * with this VM's pointers).  Order: registry, then sbx.  No lock is held
 * across a blocking call: a create restores QEMU unlocked (its slot in the
 * team's limit is reserved first, atomically, as a CREATING entry), and an
 * end waits for `ops` to drain after killing QEMU, which wakes them.
 * Agent streams stay valid after their VM ends (guest_stream.h): their reads
 * then fail with -ECONNRESET, so long streams never delay an end.
 *
 * Threads: every function may be called from any thread.
 */
#ifndef PANDASTACK_DAEMON_SANDBOX_H
#define PANDASTACK_DAEMON_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/body_caps.h"
#include "daemon/api_errors.h"
#include "daemon/http/request_body.h"
#include "daemon/store/store.h"
#include "engine/guest/guest_stream.h"

struct daemon;
struct sandboxes;
struct sbx;

/* Sandbox ids (SBX_ID_HEX, sandbox_id_valid): common/body_caps.h. */

/*
 * sandboxes_new - an empty registry for daemon d (d's store, templates and
 * dirs must be set).  Returns 0 with *out, or -errno.
 */
int sandboxes_new(struct daemon *d, struct sandboxes **out);

/*
 * sandboxes_free - release every handle without stopping QEMU (sandboxes
 * outlive the daemon and are adopted again at the next start).
 */
void sandboxes_free(struct sandboxes *reg);

/* sandboxes_wake_fd - an eventfd that becomes readable when the set of
 * running sandboxes or an expiry changed (the monitor polls it; it reads
 * it to reset). */
int sandboxes_wake_fd(struct sandboxes *reg);

/* sandboxes_count_running - sandboxes in RUNNING state now. */
unsigned sandboxes_count_running(struct sandboxes *reg);

/* An API error for a failed call: a row of the error table, a message. */
struct sbx_err {
	enum api_err err;
	char message[400];
};

/*
 * sbx_create - the whole create: check the template or the team's
 * snapshot b names, reserve a slot under the team's limit (429), restore
 * the snapshot, or take a ready sandbox from the template's pool (pool.h)
 * or, when none is ready, restore a VM from the template, into
 * <data-dir>/sandboxes/<id>, store the row.  On success *row is the stored
 * row (strings owned by the caller: sandbox_row_clear) and *restored_from
 * says which path served it: "pool", "template" or "snapshot" (a static
 * string).  On failure returns -errno with *err filled and leaves nothing
 * behind.
 */
int sbx_create(struct sandboxes *reg, const char *team, const struct create_sandbox_body *b,
	       struct sandbox_row *row, const char **restored_from, struct sbx_err *err);

/*
 * sbx_acquire - a reference on the live sandbox id of team.  Returns 0 with
 * *out (release with sbx_release), -ENOENT (no such sandbox for this team:
 * 404), -ESRCH (it exists but is not running: 409; *row_status set when
 * not NULL, STORE_STATUS_MAX bytes).
 */
int sbx_acquire(struct sandboxes *reg, const char *team, const char *id, struct sbx **out,
		char *row_status);

/* sbx_release - drop a reference from sbx_acquire.  NULL is a no-op. */
void sbx_release(struct sbx *sb);

/* sbx_id - the sandbox's id (borrowed, valid while referenced). */
const char *sbx_id(const struct sbx *sb);

/* sbx_env - the sandbox's default exec environment (borrowed JSON object,
 * immutable, valid while referenced). */
json_t *sbx_env(const struct sbx *sb);

/* sbx_ending - 1 once the sandbox is being stopped or has ended. */
int sbx_ending(struct sbx *sb);

/*
 * sbx_stream_open - open an agent stream with request req (borrowed) on the
 * sandbox's agent connection (reconnecting once if it was lost).  The
 * stream is the caller's (guest_stream_close) and stays safe to use after
 * the sandbox ends.  Returns 0, -ESRCH (not running), -ECONNRESET (the
 * agent is unreachable), -EMFILE (too many streams), -ENOMEM.
 */
int sbx_stream_open(struct sbx *sb, json_t *req, struct guest_stream **out);

/*
 * sbx_call - one request/answer operation (guest_call) on the sandbox's
 * agent: *result is the END object (new reference).  Returns as
 * guest_call, or -ESRCH when the sandbox is not running.
 */
int sbx_call(struct sbx *sb, json_t *req, int timeout_ms, json_t **result);

/* ---- exposed ports (api_ports.c, docs/network.md) ----------------------- */

/*
 * sbx_acquire_any - a reference on the live (running, not ending) sandbox
 * id whatever its team: for a request whose credentials are the sandbox's
 * own token, or none for public ports.  The caller decides who may use it.
 * Returns 0 with *out (sbx_release), or -ENOENT.
 */
int sbx_acquire_any(struct sandboxes *reg, const char *id, struct sbx **out);

/* sbx_token_ok - 1 if token (may be NULL) is the sandbox's access token. */
int sbx_token_ok(const struct sbx *sb, const char *token);

/* sbx_public_ports - 1 if the sandbox's ports answer without credentials. */
int sbx_public_ports(struct sbx *sb);

/*
 * sbx_set_public_ports - make the sandbox's ports public (1) or private
 * (0) from now on, in memory and in its row.  Returns 0, -ESRCH (not
 * running), -EIO (the store failed).
 */
int sbx_set_public_ports(struct sbx *sb, int public_ports);

/*
 * sbx_connect_port - a TCP socket made in the sandbox's network namespace,
 * connecting (non-blocking: the connect may be in progress) to the guest's
 * port (1..65535).  The socket is the caller's and stays valid after the
 * sandbox ends.  Returns the fd, -ESRCH (not running) or -errno
 * (netslot_connect_guest).
 */
int sbx_connect_port(struct sbx *sb, unsigned port);

/*
 * sbx_delete - stop the sandbox id of team (if running) and remove its row.
 * Returns 0, -ENOENT (no such sandbox for this team), -EIO.
 */
int sbx_delete(struct sandboxes *reg, const char *team, const char *id);

/*
 * sbx_set_ttl - make the sandbox expire ttl_s seconds from now.  On success
 * *row is the updated row (caller clears).  Returns 0, -ENOENT, -ESRCH (not
 * running), -EIO.
 */
int sbx_set_ttl(struct sandboxes *reg, const char *team, const char *id, int64_t ttl_s,
		struct sandbox_row *row);

/* ---- snapshots, forks, pause and resume (sandbox_snapshot.c) ------------ */

/*
 * sbx_snapshot - capture the live sandbox id of team into a new user
 * snapshot named name (NULL: none); the sandbox pauses only for the
 * capture.  On success *out is the snapshot's row (caller clears).
 * Returns 0, or -errno with err: 404 sandbox_not_found, 409
 * sandbox_not_running, 429 too_many_snapshots, 409 snapshot_stale (its
 * template was baked again since it started), 507 host_disk_full, 500
 * snapshot_failed.
 */
int sbx_snapshot(struct sandboxes *reg, const char *team, const char *id, const char *name,
		 struct snapshot_row *out, struct sbx_err *err);

/*
 * sbx_fork - capture the live sandbox id of team once and create count
 * sandboxes from that capture (in parallel), each living ttl_s seconds (0:
 * the default) with the source's environment and metadata.  *rows (count
 * rows; free with sandbox_rows_free) on success; on failure none is left.
 */
int sbx_fork(struct sandboxes *reg, const char *team, const char *id, unsigned count,
	     int64_t ttl_s, struct sandbox_row **rows, struct sbx_err *err);

/*
 * sbx_pause - capture the live sandbox id of team and end its QEMU: it is
 * "paused" (its TTL stops; it is kept --paused-retention seconds), its
 * contexts kept.  *row is the updated row.  Errors as sbx_snapshot.
 */
int sbx_pause(struct sandboxes *reg, const char *team, const char *id, struct sandbox_row *row,
	      struct sbx_err *err);

/*
 * sbx_resume - restore the paused sandbox id of team under the same id,
 * with a TTL of ttl_s seconds (> 0), else (0) the TTL it had left when it
 * was paused, or the daemon's default TTL when it was paused at its TTL
 * (on_timeout "pause": nothing left).  *row is the updated row.  Errors:
 * 404 sandbox_not_found, 409 sandbox_not_paused, 429 too_many_sandboxes,
 * 409 snapshot_stale, 500/503 vm_start_failed, 503 host_full.
 */
int sbx_resume(struct sandboxes *reg, const char *team, const char *id, int64_t ttl_s,
	       struct sandbox_row *row, struct sbx_err *err);

/*
 * sbx_expire_async - the TTL of sb ended: pause it when it was created with
 * on_timeout "pause" (and stop it if that fails), else stop it
 * (sbx_end_async).  Returns as sbx_end_async.
 */
int sbx_expire_async(struct sbx *sb);

/*
 * sandboxes_paused_expire - stop paused sandboxes kept past
 * --paused-retention (status "stopped"); their snapshots go.  0 or -EIO.
 */
int sandboxes_paused_expire(struct sandboxes *reg);

/* ---- for the monitor (monitor.c) --------------------------------------- */

/* One running sandbox as the monitor sees it. */
struct sbx_watch {
	struct sbx *sb;       /* a reference: sbx_release when done */
	int exit_fd;          /* vm_exit_fd, or -1 (then poll sbx_vm_alive) */
	int64_t expires_at_ms;
};

/*
 * sandboxes_watch_list - references on up to cap RUNNING sandboxes not yet
 * asked to end.  Returns how many were written to out.
 */
size_t sandboxes_watch_list(struct sandboxes *reg, struct sbx_watch *out, size_t cap);

/* sbx_vm_alive - 1 while the sandbox's QEMU runs (for VMs without pidfd). */
int sbx_vm_alive(struct sbx *sb);

/*
 * sbx_end_async - end the sandbox in a new detached thread: status
 * "stopped" with reason for an expiry, "error" for a QEMU that died (the
 * reason is then read from the engine when reason is NULL).  Only the first
 * request counts.  Returns 1 if this call started the end, 0 if an end
 * (delete, expiry, death) was already under way, -errno if the thread could
 * not start (the monitor retries).
 */
int sbx_end_async(struct sbx *sb, const char *status, const char *reason);

/* ---- start-up (sandbox_adopt.c) ----------------------------------------- */

/*
 * sandboxes_adopt - take over every sandbox whose row says running: adopt
 * its QEMU (vm_adopt) or mark it error with the reason.  Then stop and
 * remove run dirs that have no running row (left by a create that was
 * interrupted by a crash).  Returns 0 or -EIO (the store failed).
 */
int sandboxes_adopt(struct sandboxes *reg);

/*
 * sandboxes_settle_captures - after sandboxes_adopt, before snaps_recover:
 * for each capture a crash cut short whose sandbox was adopted running,
 * finish the snapshot folder its disk may already sit on
 * (vm_snapshot_settle), so that snaps_recover keeps it and the sandbox can
 * be captured again.  Returns 0 or -EIO (the store failed).
 */
int sandboxes_settle_captures(struct sandboxes *reg);

#endif
