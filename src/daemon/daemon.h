/*
 * daemon.h - the state one pandastackd process shares between its parts:
 * configuration, the store, the sandbox registry, the template cache.
 *
 * main.c fills it at start (in that order) and tears it down at exit; every
 * other part receives a pointer.  Fields are set before the HTTP server
 * starts and not changed afterwards, so any thread may read them.
 */
#ifndef PANDASTACK_DAEMON_DAEMON_H
#define PANDASTACK_DAEMON_DAEMON_H

#include <limits.h>
#include <stdint.h>

#include "daemon/config.h"
#include "engine/qemu/accel.h"

struct net;
struct store;
struct sandboxes;
struct templates;
struct api_mcp;
struct cluster;
struct http_gate;
struct snaps;

struct daemon {
	struct daemon_cfg cfg;
	struct store *store;
	struct sandboxes *sandboxes;
	struct templates *templates;
	struct snaps *snaps;             /* snapshots (snapshots.h) */
	struct api_mcp *mcp;             /* the MCP endpoint (api_mcp.h) */
	struct net *net;                 /* the sandboxes' proxy and resolver */
	struct cluster *cluster;         /* NULL: one host (cluster.h) */
	const struct http_gate *gate;    /* NULL: none (http_server.h); the cluster's */
	enum accel_kind accel;           /* resolved: ACCEL_KVM or ACCEL_TCG */
	char accel_why[256];             /* why that accelerator */
	char sandboxes_dir[PATH_MAX];    /* <data-dir>/sandboxes */
	char pool_dir[PATH_MAX];         /* <data-dir>/pool */
	char snapshots_dir[PATH_MAX];    /* <data-dir>/snapshots (same filesystem as
					  * sandboxes_dir: a capture moves a disk layer) */
	struct body_limits limits;       /* from cfg, for request validation */
	int64_t started_wall_ms;
};

/* Version reported by /healthz and --help. */
#define PANDASTACK_VERSION "0.1.0"

#endif
