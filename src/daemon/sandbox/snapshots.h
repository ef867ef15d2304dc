/*
 * snapshots.h - the daemon's snapshots on disk: <data-dir>/snapshots/<id>/
 * (the engine's format, engine/vm/snapshot.h), their rows (store.h), the
 * snapshots loaded for restores and captures, and the background work that
 * keeps them cheap: a merged RAM image for a snapshot restored often,
 * flattening chains past a depth, removing files nothing needs.
 *
 * A snapshot's files are needed as long as its row is a visible user
 * snapshot, a running or paused sandbox sits on it (the sandbox row's
 * `snapshot`: its disk's backing layer and its RAM's base), another
 * snapshot has it as parent, or a restore or capture holds it loaded
 * (snaps_get).  snaps_gc removes the rest (docs/engine.md, "Snapshots").
 *
 * Loaded snapshots are cached by id with their parents; a handle from
 * snaps_get is valid until snaps_put.  A snapshot of a template that was
 * baked again since is stale (-ESTALE): its pages sit on the old RAM.
 *
 * Threads: every function may be called from any thread.
 */
#ifndef PANDASTACK_DAEMON_SNAPSHOTS_H
#define PANDASTACK_DAEMON_SNAPSHOTS_H

#include <limits.h>
#include <stddef.h>

#include "daemon/sandbox/templates.h"
#include "daemon/store/store.h"
#include "engine/vm/snapshot.h"

struct daemon;
struct snaps;
struct snap;

/* Snapshot ids: "snap_" + 20 lowercase hex digits. */
#define SNAP_ID_HEX 20

/* snap_id_valid - 1 if s has the form of a snapshot id.  Pure. */
int snap_id_valid(const char *s);

/* snap_id_new - a new random id into out (STORE_ID_MAX bytes).  0 or -errno. */
int snap_id_new(char *out);

/*
 * snaps_new - the registry for daemon d (its store, templates, cfg and
 * data dir set); creates <data-dir>/snapshots.  0 with *out, or -errno.
 */
int snaps_new(struct daemon *d, struct snaps **out);

/* snaps_free - wait for background work, free every loaded snapshot (their
 * files stay).  NULL is a no-op. */
void snaps_free(struct snaps *ss);

/* snaps_dir - <data-dir>/snapshots/<id> into out (PATH_MAX bytes).
 * 0 or -ENAMETOOLONG. */
int snaps_dir(struct snaps *ss, const char *id, char *out);

/*
 * snaps_get - snapshot id loaded with its chain, and its template, each
 * with a reference (release both with snaps_put).  The row may be of any
 * kind, ready or deleted (the caller checks what the user may see).
 * Returns 0 with *out and *t, -ENOENT (no such snapshot or its files are
 * gone), -EAGAIN (its capture is still running), -ESTALE (its template was
 * baked again since), -EINVAL / -EIO (its files are damaged); err says why.
 */
int snaps_get(struct snaps *ss, const char *id, struct snap **out, struct tpl **t, char *err,
	      size_t errlen);

/* snaps_put - release what snaps_get returned.  NULLs are no-ops. */
void snaps_put(struct snap *s, struct tpl *t);

/* snap_engine - the engine's snapshot (borrowed while referenced). */
const struct snapshot *snap_engine(struct snap *s);

/*
 * snap_note_restore - count one more restore of s; past the configured
 * number (--snapshot-merge-after) its merged RAM image is made in the
 * background, so later restores share its pages.
 */
void snap_note_restore(struct snap *s);

/*
 * snaps_captured - a capture of id (depth: its snapshot_depth) finished:
 * past --snapshot-max-depth, flatten it in the background.
 */
void snaps_captured(struct snaps *ss, const char *id, int depth);

/*
 * snaps_gc - remove the files and rows of snapshots nothing needs any
 * more (see above), a loaded one only when no handle holds it.  Cheap when
 * there is nothing to do; called after every change that may free one.
 */
void snaps_gc(struct snaps *ss);

/*
 * snaps_recover - at start-up, after the sandboxes were adopted: settle
 * captures a crash interrupted (a pending row whose disk was already
 * frozen becomes ready and its sandbox sits on it; any other is removed),
 * remove folders without a row, then snaps_gc.  0 or -EIO.
 */
int snaps_recover(struct snaps *ss);

/* snaps_merged_count - merged RAM images held now (for /metrics). */
unsigned snaps_merged_count(struct snaps *ss);

#endif
