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

#include "daemon/sandbox.h"
#include "daemon/store.h"
#include "engine/vm.h"

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
