/*
 * config.h - pandastackd's settings: defaults, then environment variables,
 * then command-line flags (flags win).  `pandastackd --help` lists them.
 *
 *   flag                         env                              default
 *   --listen HOST:PORT           PANDASTACK_LISTEN                127.0.0.1:8080
 *   --data-dir DIR               PANDASTACK_DATA_DIR              /var/lib/pandastack
 *   --cache DIR                  PANDASTACK_CACHE                 /var/cache/pandastack
 *   --pool-size N                PANDASTACK_POOL_SIZE             2 (0: off)
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

#include "engine/accel.h"

struct daemon_cfg {
	char listen_host[256];
	unsigned listen_port;
	char data_dir[PATH_MAX];
	char cache_dir[PATH_MAX];
	unsigned pool_size;
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

/* config_usage - the --help text to f. */
void config_usage(FILE *f);

/*
 * config_parse_listen - split "HOST:PORT" or "[V6]:PORT" into host (hostlen
 * bytes) and *port (0..65535).  Returns 0 or -EINVAL.  Pure.
 */
int config_parse_listen(const char *s, char *host, size_t hostlen, unsigned *port);

#endif
