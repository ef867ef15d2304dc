/*
 * sandbox_int.h - the registry's structures, shared by sandbox.c (use and
 * end), sandbox_create.c and sandbox_adopt.c.  Private: callers use
 * sandbox.h.  Locking rules are in sandbox.h.
 */
#ifndef PANDASTACK_DAEMON_SANDBOX_INT_H
#define PANDASTACK_DAEMON_SANDBOX_INT_H

#include <pthread.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon/sandbox/sandbox.h"
#include "daemon/store/store.h"
#include "engine/vm/vm.h"

enum sbx_state {
	SBX_CREATING = 0, /* slot reserved, QEMU being restored; invisible to users */
	SBX_RUNNING,      /* vm set; operations allowed */
	SBX_ENDING,       /* an end is stopping it; new operations refused */
	SBX_ENDED,        /* QEMU stopped and the row updated or removed */
};

struct sbx {
	struct sandboxes *reg;
	char id[STORE_ID_MAX];
	char team[STORE_NAME_MAX];
	char template_name[STORE_NAME_MAX];
	json_t *env;              /* default exec environment; immutable */
	char access_token[STORE_TOKEN_MAX]; /* exposed ports' token; immutable */
	int on_timeout_pause;     /* its TTL's end pauses it instead of stopping it */

	pthread_mutex_t life;     /* one capture (snapshot, fork, pause) at a time */
	char snapshot[STORE_ID_MAX]; /* life: the snapshot its RAM and disk sit on */

	pthread_mutex_t lock;
	pthread_cond_t cond;      /* broadcast when ops drops or state changes */
	enum sbx_state state;     /* lock */
	int end_requested;        /* lock: an end was asked for (monitor, delete) */
	int ops;                  /* lock: threads using vm's pointers now */
	int64_t expires_at_ms;    /* lock: wall clock */
	int public_ports;         /* lock: its ports answer without credentials */
	struct vm *vm;            /* set once before RUNNING; freed at the last unref */

	int refs;                 /* registry lock */
	int linked;               /* registry lock: on the list */
	struct sbx *prev, *next;  /* registry lock */
};

struct sandboxes {
	struct daemon *d;
	pthread_mutex_t lock;
	pthread_cond_t cond;      /* broadcast when ending drops */
	struct sbx *head;
	int ending;               /* lock: end threads still running */
	int wake_fd;              /* eventfd */
};

/* sbx__new - a CREATING or RUNNING handle with one reference (the caller's),
 * not linked.  env is borrowed (a reference is taken).  NULL on ENOMEM. */
struct sbx *sbx__new(struct sandboxes *reg, const char *id, const char *team,
		     const char *template_name, json_t *env, int64_t expires_at_ms);

/* sbx__set_origin - what a new handle came from: the snapshot it sits on
 * ("" for its template) and its on_timeout ("pause" or anything else). */
void sbx__set_origin(struct sbx *sb, const char *snapshot, const char *on_timeout);

/* sbx__pin / sbx__unpin - one more thread inside the engine with sb's VM
 * (-ESRCH when it is not running); see sandbox.c. */
int sbx__pin(struct sbx *sb);
void sbx__unpin(struct sbx *sb);

/*
 * sbx__end - end sb: refuse new operations, drain running ones, stop QEMU,
 * remove its run dir; then, unless status is NULL, record status and
 * reason in its row (delete_row: remove the row instead).  Unlinks sb.
 */
void sbx__end(struct sbx *sb, const char *status, const char *reason, int delete_row);

/* What a create starts from (sandbox_create.c). */
struct net_policy;

struct create_spec {
	const char *id;           /* NULL: a new one; resume: the paused sandbox's */
	int resume;               /* update the paused row instead of inserting one */
	struct tpl *t;            /* its template (referenced by the caller) */
	struct snap *snap;        /* NULL: the template; else restored from this */
	const char *snapshot_id;  /* snap's id */
	int64_t ttl_ms;
	json_t *env;              /* borrowed */
	json_t *metadata;         /* borrowed */
	const char *on_timeout;   /* "stop" or "pause" */
	int public_ports;         /* its ports answer without credentials */
	const char *access_token; /* resume: the paused row's; NULL: a new one */
	const struct net_policy *network; /* its network policy (copied) */
};

/* sbx__team_live - how many of team's sandboxes are being created or run
 * (what counts toward --max-sandboxes-per-team).  Any thread. */
unsigned sbx__team_live(struct sandboxes *reg, const char *team);

/*
 * sbx__create - reserve a slot for team (429), restore a VM as cs says
 * into <sandboxes>/<id>, record the row, link the handle RUNNING.  On
 * success *row is the stored row and *restored_from (when not NULL) says
 * which path served it: "pool", "template" or "snapshot" (static).  On failure -errno with *err filled and
 * nothing left behind (a resume leaves its paused row as it was).
 */
int sbx__create(struct sandboxes *reg, const char *team, const struct create_spec *cs,
		struct sandbox_row *row, const char **restored_from, struct sbx_err *err);

/*
 * sbx__row_policy - the network policy a sandbox row records (its
 * network_json), or a policy denying all egress when it cannot be read (a
 * foreign or corrupt row); NULL only when out of memory.  Caller frees
 * (net_policy_free).
 */
struct net_policy *sbx__row_policy(const struct sandbox_row *row);

/* sbx__snapshot_err - the API error for snaps_get's failure r on snapshot
 * id (why: its message).  Returns -EINVAL. */
int sbx__snapshot_err(struct sbx_err *err, int r, const char *id, const char *why);

/*
 * sbx__start_ending - run fn(arg) on a detached thread that ends sb: takes
 * a reference to sb and counts the thread in reg->ending (sandboxes_free
 * waits for it); fn drops both when done.  Returns 0, or -errno with both
 * given back (the caller's own reference is untouched).  Any thread.
 */
int sbx__start_ending(struct sbx *sb, void *(*fn)(void *), void *arg);

/* sbx__set_err - fill err; returns -EINVAL. */
int sbx__set_err(struct sbx_err *err, enum api_err e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* sbx__link - put sb on the registry list, taking a reference for it.
 * Registry lock held by the caller. */
void sbx__link(struct sandboxes *reg, struct sbx *sb);

/* sbx__unlink - take sb off the list and drop the list's reference (the
 * caller still holds its own).  Takes the registry lock. */
void sbx__unlink(struct sbx *sb);

/* sbx__wake - tell the monitor that something changed. */
void sbx__wake(struct sandboxes *reg);

/* sbx__run_dir - <data-dir>/sandboxes/<id> into out (PATH_MAX bytes).
 * Returns 0 or -ENAMETOOLONG. */
int sbx__run_dir(struct sandboxes *reg, const char *id, char *out, size_t outlen);

/* sbx__kill_orphan - SIGKILL the QEMU recorded in run_dir/qemu.pid if that
 * process's command line names run_dir (a process we cannot adopt). */
void sbx__kill_orphan(const char *run_dir);

#endif
