/*
 * snapshot.h - snapshots of running sandboxes: capture one (its memory,
 * CPU and device state and its disk at one instant, pausing the guest only
 * for the capture) and restore new VMs from it (forks, creates from a
 * snapshot, resume after a pause).  docs/engine.md, "Snapshots".
 *
 * A snapshot is a directory (made by vm_snapshot, never changed after but
 * by snapshot_flatten):
 *   snapshot.json   format, key (random, names this capture), template
 *                   name and key, RAM size, the parent's key or null
 *   state           QEMU's device and CPU state without RAM
 *                   (xen-save-devices-state, ~20 KiB)
 *   memory          a sparse file of the guest RAM's size holding only the
 *                   pages that differ from the parent's RAM image (the
 *                   template's RAM when there is no parent); holes take the
 *                   parent's page
 *   disk.qcow2      the sandbox's disk overlay frozen at the capture (its
 *                   backing file is the parent's disk.qcow2, or the
 *                   template's); root-owned, 0444
 *   overlay-seed.qcow2  an empty overlay on disk.qcow2, copied by restores
 * A snapshot's RAM image is its template's RAM with each ancestor's pages
 * written over it, root first; its disk is the qcow2 chain.
 *
 * The capture (vm_snapshot): QMP stop; xen-save-devices-state into the
 * jail's folder; the guest RAM pages that differ from the base (found in
 * /proc/<qemu>/pagemap: present or swapped and not file-backed, that is
 * the VM's private copy-on-write pages) read with process_vm_readv,
 * compared with the base image and the differing ones written at their
 * offsets; the disk frozen (a new overlay made ahead, blockdev-add'ed and
 * installed over the current one with blockdev-snapshot: the old overlay
 * becomes disk.qcow2); cont.  A failure before the disk step leaves the VM
 * as it was (running) and removes dir.
 *
 * The restore (vm_restore_snapshot): QEMU started as a clone of the
 * template (-incoming defer, -global migration.send-configuration=off, an
 * overlay on disk.qcow2, the chain shown in the jail), then every page of
 * the chain written into its RAM through /proc/<pid>/mem BEFORE the device
 * state is loaded (virtio-serial checks its queues against guest RAM while
 * loading), then migrate-incoming of state, cont, the agent's handshake
 * and its restore message (clock, entropy, reseeded interpreters).
 *
 * Threads: a loaded struct snapshot may be used by any number of threads
 * (snapshot_memory_fd makes its memfd under a lock).  vm_snapshot uses the
 * VM's QMP connection: one lifecycle call at a time per VM (vm.h).
 */
#ifndef PANDASTACK_ENGINE_SNAPSHOT_H
#define PANDASTACK_ENGINE_SNAPSHOT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/template/template.h"
#include "engine/vm/vm.h"

struct snapshot;

/* Bytes of a snapshot key in hex (16 random bytes), without the NUL. */
#define SNAPSHOT_KEY_HEX 32

/* How long each step of a capture took (us) and what it found. */
struct snapshot_stats {
	int64_t prepare_us;      /* before the pause: the new overlay, snapshot.json */
	int64_t precopy_us;      /* before the pause: the warm-up copy (opts.precopy) */
	int64_t stop_us;         /* QMP stop */
	int64_t state_us;        /* xen-save-devices-state */
	int64_t scan_us;         /* pagemap scan */
	int64_t copy_us;         /* reading, comparing and writing pages */
	int64_t disk_us;         /* blockdev-add + blockdev-snapshot */
	int64_t cont_us;         /* QMP cont */
	int64_t paused_us;       /* from stop to cont answered */
	int64_t finish_us;       /* after cont: layer moved, seed, fsync */
	uint64_t private_pages;  /* the VM's own pages (present, not the template's) */
	uint64_t stored_pages;   /* those that differ from the base image */
	uint64_t memory_bytes;   /* bytes the memory file takes on disk */
	uint64_t state_bytes;
	uint64_t disk_bytes;     /* the frozen layer's size on disk */
};

/* Options of a capture. */
struct snapshot_opts {
	int sync;                /* 1: fsync memory, state and layer before returning */
	int leave_paused;        /* 1: no cont: the VM stays paused (it is about to end) */
	int precopy;             /* 1: copy the pages once while the VM still runs, so that
				    the copy in the pause finds them and the memory file's
				    in memory (shorter pause, longer capture) */
};

/*
 * vm_snapshot - capture v (a clone of t; base: the snapshot v's RAM and
 * disk derive from now, NULL when that is t itself) into dir (must not
 * exist; its parent folder must be on the filesystem of v's run directory,
 * since the frozen overlay is moved there).  The guest is paused only
 * from stop to cont.  On success the VM runs on a new overlay whose backing
 * file is dir/disk.qcow2, so dir must be kept as long as v or a VM or
 * snapshot made from dir lives.  Fills *st (may be NULL).
 * Returns 0, or -errno with err->msg: -ENOSPC / -EDQUOT / -EFBIG (no room
 * for the snapshot; the VM keeps running as before and dir is removed),
 * -ESRCH (QEMU is gone), -EIO (QEMU refused a step), -EINVAL (base is not
 * a snapshot of t).  Any failure leaves the VM running.  Only a failure
 * after the disk was frozen (moving files within one filesystem: it does
 * not happen in practice) keeps dir, since the VM's disk now needs it.
 */
int vm_snapshot(struct vm *v, const struct template *t, const struct snapshot *base,
		const char *dir, const struct snapshot_opts *opts, struct snapshot_stats *st,
		struct vm_err *err);

/*
 * vm_snapshot_settle - after a restart, the capture of v into dir that a
 * crash cut short (its row still pending; v adopted, vm_adopt): if v's
 * disk was already swapped onto dir, finish dir's files so that v can be
 * captured again: the frozen layer and the state moved in; the memory
 * file kept when it was whole, else left empty and marked incomplete (the
 * level then stands for its parent's RAM, a later capture of v uses it as
 * its base, and vm_restore_snapshot refuses it with -ESTALE).  Returns 1
 * (dir is needed: keep it), 0 (v does not sit on dir: remove it), or
 * -errno with err->msg.  Uses v's QMP: no other lifecycle call on v
 * meanwhile.
 */
int vm_snapshot_settle(struct vm *v, const char *dir, struct vm_err *err);

/*
 * snapshot_open - load the snapshot in dir, taken from a clone of t, whose
 * parent is parent (the loaded snapshot its snapshot.json names, NULL when
 * it names none; borrowed: must outlive the result).  Checks the files,
 * the template key (a snapshot of another bake of t is -ESTALE) and the
 * parent's key.  Returns 0 with *out (snapshot_free), or -errno with err
 * filled: -ENOENT (files missing), -EINVAL (bad snapshot.json or parent),
 * -ESTALE (t was baked again since).
 */
int snapshot_open(const char *dir, const struct template *t, const struct snapshot *parent,
		  struct snapshot **out, char *err, size_t errlen);

/* snapshot_free - release a loaded snapshot (its files stay).  NULL ok. */
void snapshot_free(struct snapshot *s);

/*
 * snapshot_read_parent_key - the parent key recorded in dir/snapshot.json
 * into out (SNAPSHOT_KEY_HEX + 1 bytes; "" when it has none), so a caller
 * can load the parent first.  0 or -errno.
 */
int snapshot_read_parent_key(const char *dir, char *out, size_t outlen);

/* Accessors (borrowed, valid while s lives). */
const char *snapshot_dir(const struct snapshot *s);
const char *snapshot_key(const struct snapshot *s);
const struct snapshot *snapshot_parent(const struct snapshot *s);
/* Ancestors: 0 for a snapshot taken from a template's clone. */
int snapshot_depth(const struct snapshot *s);

/*
 * snapshot_size - bytes this snapshot's own files take on disk (memory,
 * state, frozen layer), counted from their allocated blocks.  0 or -errno.
 */
int snapshot_size(const struct snapshot *s, uint64_t *bytes);

/*
 * vm_restore_snapshot - a new VM in run_dir (must not exist) from s, a
 * snapshot of t: as vm_restore (gopts: what the restore message carries,
 * borrowed, may be NULL), with s's RAM, devices and disk.  Uses the
 * merged memfd when snapshot_memory_fd made one, else writes the pages of
 * s's chain into the new QEMU.  timeout_ms bounds the whole call.
 * Returns 0 with *out, or -errno with err->msg (-ESTALE: s is of another
 * bake of t, or an incomplete level: vm_snapshot_settle; nothing left running,
 * run_dir removed).
 */
int vm_restore_snapshot(const struct template *t, const struct snapshot *s, const char *run_dir,
			const struct guest_restore_opts *gopts, int timeout_ms, struct vm **out,
			struct vm_err *err);

/*
 * snapshot_memory_fd - s's whole RAM image (the template's RAM with the
 * chain's pages over it) as a sealed memfd like a template's
 * (template_int.h), made at the first call (about a second per GiB of
 * RAM; it holds the whole RAM size in memory until snapshot_free) and
 * kept: later restores of s map it and share its pages instead of each
 * holding its own copy.  Returns the descriptor (owned by s) or -errno.
 */
int snapshot_memory_fd(struct snapshot *s, const struct template *t);

/* snapshot_has_memory_fd - 1 when snapshot_memory_fd has made it. */
int snapshot_has_memory_fd(const struct snapshot *s);

/*
 * snapshot_flatten - make s stand alone: its memory file gets every page
 * of its ancestors it did not have, its disk layer every cluster of the
 * ancestors' layers (qemu-img rebase onto the template's disk), and its
 * snapshot.json drops the parent.  Files are replaced by rename, so VMs
 * and restores using them are unaffected.  Slow (seconds): run it off the
 * request path.  Afterwards load s again with snapshot_open (parent NULL);
 * the loaded s still describes the old chain.  0 or -errno with err.
 */
int snapshot_flatten(const struct snapshot *s, const struct template *t, char *err,
		     size_t errlen);

#endif
