/*
 * config.h - pandastackd's settings: defaults, then environment variables,
 * then command-line flags (flags win).  `pandastackd --help` lists them.
 *
 *   flag                         env                              default
 *   --listen HOST:PORT           PANDASTACK_LISTEN                127.0.0.1:8080
 *   --data-dir DIR               PANDASTACK_DATA_DIR              /var/lib/pandastack
 *   --cache DIR                  PANDASTACK_CACHE                 /var/cache/pandastack
 *   --pool-size N                PANDASTACK_POOL_SIZE             2 (0: off; ready
 *                                                                 sandboxes per template)
 *   --pool-sizes NAME=N,...      PANDASTACK_POOL_SIZES            (none: --pool-size for
 *                                                                 every template)
 *   --accel auto|kvm|tcg         PANDASTACK_ACCEL                 auto
 *   --max-sandboxes-per-team N   PANDASTACK_MAX_SANDBOXES_PER_TEAM 20
 *   --default-ttl S              PANDASTACK_DEFAULT_TTL           300
 *   --max-ttl S                  PANDASTACK_MAX_TTL               86400
 *   --exec-timeout S             PANDASTACK_EXEC_TIMEOUT          60 (default per exec)
 *   --exec-output-cap BYTES      PANDASTACK_EXEC_OUTPUT_CAP       4194304 (per stream, /exec)
 *   --max-upload BYTES           PANDASTACK_MAX_UPLOAD            4294967296
 *   --retention S                PANDASTACK_RETENTION             3600 (ended rows kept)
 *   --context-idle-timeout S     PANDASTACK_CONTEXT_IDLE_TIMEOUT  1800 (idle contexts reaped)
 *   --web-dir DIR                PANDASTACK_WEB_DIR               web/ beside the binary
 *                                                                 (the dashboard, `make web`)
 *   --jail-uid-first N           PANDASTACK_JAIL_UID_FIRST        1500000000
 *   --jail-uid-count N           PANDASTACK_JAIL_UID_COUNT        65536
 *   --vm-memory-overhead MIB     PANDASTACK_VM_MEMORY_OVERHEAD    384 (cgroup: RAM + this)
 *   --vm-pids-max N              PANDASTACK_VM_PIDS_MAX           256
 *   --reserve-disk MIB           PANDASTACK_RESERVE_DISK          1024 (503 host_full below)
 *   --reserve-memory MIB         PANDASTACK_RESERVE_MEMORY        512 (503 host_full below)
 *   --ttl-grace S                PANDASTACK_TTL_GRACE             10 (monitor's backstop)
 *   --paused-retention S         PANDASTACK_PAUSED_RETENTION      604800 (then stopped)
 *   --max-snapshots-per-team N   PANDASTACK_MAX_SNAPSHOTS_PER_TEAM 100
 *   --max-snapshot-disk-per-team MIB PANDASTACK_MAX_SNAPSHOT_DISK_PER_TEAM 20480
 *   --snapshot-max-depth N       PANDASTACK_SNAPSHOT_MAX_DEPTH    4 (deeper: flattened)
 *   --snapshot-merge-after N     PANDASTACK_SNAPSHOT_MERGE_AFTER  3 (creates; 0: never)
 *   --snapshot-merge-max N       PANDASTACK_SNAPSHOT_MERGE_MAX    4 (merged RAM images)
 *   --tls-cert FILE              PANDASTACK_TLS_CERT              (none: plain HTTP)
 *   --tls-key FILE               PANDASTACK_TLS_KEY               (none)
 *   --insecure-http              allow plain HTTP on a non-loopback address
 *   --max-conns-per-ip N         PANDASTACK_MAX_CONNS_PER_IP      64
 *   --idle-timeout S             PANDASTACK_IDLE_TIMEOUT          60 (a connection silent
 *                                                                   this long while sending
 *                                                                   headers or a body is cut)
 *   --pip-index-url URL          PANDASTACK_PIP_INDEX_URL         (none: pip's default, PyPI)
 *                                                                 the index every sandbox's
 *                                                                 pip uses, written into the
 *                                                                 guest at each restore
 *   --proxy-domain DOMAIN        PANDASTACK_PROXY_DOMAIN          (none: ports by path only)
 *                                                                 sandbox ports are also served
 *                                                                 at PORT-SANDBOX_ID.DOMAIN
 *                                                                 (Host header; docs/network.md)
 *   --dns-upstream IP[:PORT],... PANDASTACK_DNS_UPSTREAM          /etc/resolv.conf's servers
 *                                                                 (the sandboxes' resolver asks
 *                                                                 these; docs/network.md)
 *   --net-deny CIDR,...          PANDASTACK_NET_DENY              (none: more always-denied
 *                                                                 ranges for every sandbox)
 *   --net-max-conns N            PANDASTACK_NET_MAX_CONNS         4096 (proxied, daemon-wide)
 *   --net-max-conns-per-sandbox N PANDASTACK_NET_MAX_CONNS_PER_SANDBOX 256
 *   --cluster etcd://H:P[,H:P]   PANDASTACK_CLUSTER               (none: one host, no etcd)
 *   --node-name N                PANDASTACK_NODE_NAME             the host name
 *   --advertise URL              PANDASTACK_ADVERTISE             (needed with --cluster)
 *   --cluster-secret-file FILE   PANDASTACK_CLUSTER_SECRET_FILE   (needed with --cluster)
 *   --cluster-ttl S              PANDASTACK_CLUSTER_TTL           10 (the node's lease)
 *   --cluster-prefix P           PANDASTACK_CLUSTER_PREFIX        /pandastack/
 *   --cluster-ca-file FILE       PANDASTACK_CLUSTER_CA_FILE       (https etcd and peers)
 *   --cluster-etcd-user NAME     PANDASTACK_CLUSTER_ETCD_USER     (none: etcd without auth)
 *   --cluster-etcd-password-file FILE PANDASTACK_CLUSTER_ETCD_PASSWORD_FILE (with the user;
 *                                                                 mode 0600)
 *   --cluster-etcd-cert FILE     PANDASTACK_CLUSTER_ETCD_CERT     (none: no client certificate)
 *   --cluster-etcd-key FILE      PANDASTACK_CLUSTER_ETCD_KEY      (with the cert; mode 0600)
 *   --mcp-allowed-origins O,...  PANDASTACK_MCP_ALLOWED_ORIGINS   (none: this daemon's own
 *                                                                 address only; docs/mcp.md)
 *   --print-routes               print "METHOD PATTERN" per served route and exit
 *   --print-errors               print "STATUS CODE" per row of the error table and exit
 *
 * Port 0 asks the kernel for a free port; the chosen one is logged
 * (event=http.listening port=N).  Threads: main thread, at start.
 */
#ifndef PANDASTACK_DAEMON_CONFIG_H
#define PANDASTACK_DAEMON_CONFIG_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/pip_index.h"
#include "engine/qemu/accel.h"

/* Templates --pool-sizes may name. */
#define CONFIG_POOL_SIZES_MAX 16

/* One template's own pool size (--pool-sizes). */
struct config_pool_size {
	char name[65];
	unsigned size;
};

/* Limits of request bodies that come from the configuration (request_body.h
 * checks bodies against them; daemon.h keeps the daemon's). */
struct body_limits {
	int64_t max_ttl_seconds;          /* ttl_seconds must be 1..this */
	int64_t max_exec_timeout_seconds; /* timeout_seconds must be 0..this */
};

struct daemon_cfg {
	char listen_host[256];
	unsigned listen_port;
	char data_dir[PATH_MAX];
	char cache_dir[PATH_MAX];
	unsigned pool_size;            /* ready sandboxes per template (pool.h) */
	struct config_pool_size pool_sizes[CONFIG_POOL_SIZES_MAX]; /* per-template sizes */
	unsigned npool_sizes;
	unsigned max_sandboxes_per_team;
	int64_t default_ttl_s;
	int64_t max_ttl_s;
	int64_t exec_default_timeout_s;
	int64_t exec_max_timeout_s;
	uint64_t exec_output_cap;      /* bytes per channel kept by POST .../exec */
	uint64_t max_upload;           /* bytes per PUT .../fs */
	int64_t retention_s;           /* stopped/error rows kept this long */
	int64_t context_idle_timeout_s; /* idle code contexts reaped after this */
	char web_dir[PATH_MAX];        /* the dashboard's files; "" when unknown */
	uint32_t jail_uid_first;       /* jailed QEMUs' uid range */
	uint32_t jail_uid_count;
	uint32_t vm_memory_overhead_mib; /* cgroup memory = guest RAM + this */
	uint32_t vm_pids_max;
	uint32_t reserve_disk_mib;     /* free disk a create must leave (after its cap) */
	uint32_t reserve_memory_mib;   /* MemAvailable a create must leave (after its RAM) */
	uint32_t ttl_grace_s;          /* the monitor ends a sandbox this long past its TTL */
	int64_t paused_retention_s;    /* a paused sandbox is stopped after this long */
	uint32_t max_snapshots_per_team;
	uint64_t max_snapshot_disk_mib;  /* host disk a team's snapshots may hold */
	uint32_t snapshot_max_depth;   /* a snapshot this deep is flattened */
	uint32_t snapshot_merge_after; /* creates before a snapshot's RAM is merged; 0 never */
	uint32_t snapshot_merge_max;   /* merged RAM images at once */
	char tls_cert[PATH_MAX];       /* PEM certificate chain; "" = plain HTTP */
	char tls_key[PATH_MAX];        /* PEM private key */
	int insecure_http;             /* plain HTTP on a non-loopback address is allowed */
	uint32_t max_conns_per_ip;
	uint32_t idle_timeout_s;
	uint32_t head_timeout_s;         /* a request's head must be in within this */
	char pip_index_url[PIP_INDEX_URL_MAX + 1]; /* "" = none (common/pip_index.h) */
	char proxy_domain[256];        /* the Host form's domain, lower case; "" = off */
	char dns_upstream[512];        /* "IP[:PORT],..."; "" = /etc/resolv.conf */
	char net_deny[1024];           /* extra always-denied CIDRs, "A/N,..." */
	uint32_t net_max_conns;        /* proxied connections, daemon-wide */
	uint32_t net_max_conns_sandbox;
	/* the cluster (docs/cluster.md); cluster[0] == 0: one host */
	char cluster[1024];            /* etcd endpoints */
	char node_name[128];
	char advertise[512];           /* this node's API URL for the others */
	char cluster_secret_file[PATH_MAX];
	char cluster_ca_file[PATH_MAX];
	char cluster_prefix[128];
	int64_t cluster_ttl_s;
	char cluster_etcd_user[128];   /* "": no etcd authentication */
	char cluster_etcd_password_file[PATH_MAX];
	char cluster_etcd_cert[PATH_MAX]; /* "": no client certificate */
	char cluster_etcd_key[PATH_MAX];
	char mcp_allowed_origins[1024]; /* origins POST /mcp takes besides its own (origin.h) */
	enum accel_kind accel;
	int print_routes;
	int print_errors;
	int help;
};

/*
 * config_load - fill cfg from defaults, the environment and argv.
 * Returns 0, or -EINVAL with err (errlen bytes) naming the bad flag or
 * variable.  argv is not modified.
 */
int config_load(struct daemon_cfg *cfg, int argc, char **argv, char *err, size_t errlen);

/*
 * config_parse_pool_sizes - "NAME=N[,NAME=N...]" (N 0..64, a name at most
 * 64 bytes of [A-Za-z0-9_.-], at most CONFIG_POOL_SIZES_MAX pairs; a later
 * pair for the same name wins) into cfg->pool_sizes.  Returns 0 or -EINVAL
 * (cfg unchanged).  Pure.
 */
int config_parse_pool_sizes(const char *s, struct daemon_cfg *cfg);

/* config_pool_size_of - the pool size of template name: its --pool-sizes
 * entry, else --pool-size. */
unsigned config_pool_size_of(const struct daemon_cfg *cfg, const char *name);

/* config_host_is_loopback - 1 for "localhost", ::1 and 127.0.0.0/8. */
int config_host_is_loopback(const char *host);

/* config_usage - the --help text to f. */
void config_usage(FILE *f);

/*
 * config_parse_listen - split "HOST:PORT" or "[V6]:PORT" into host (hostlen
 * bytes) and *port (0..65535).  Returns 0 or -EINVAL.  Pure.
 */
int config_parse_listen(const char *s, char *host, size_t hostlen, unsigned *port);

#endif
