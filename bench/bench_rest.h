/*
 * bench_rest.h - a pandastackd started by a benchmark, and creates timed
 * through its REST API (docs/api.md), for bench/create.
 *
 * The daemon runs as a child process on a fresh data directory under the
 * caller's folder, listening on a free loopback port read back from its log
 * (event=http.listening), with the admin key it writes.  Requests go over
 * libcurl.  Threads: one thread per struct bench_daemon.
 */
#ifndef PANDASTACK_BENCH_REST_H
#define PANDASTACK_BENCH_REST_H

#include <limits.h>
#include <sys/types.h>

struct bench_daemon {
	pid_t pid;
	unsigned port;
	char key[128];
	char dir[PATH_MAX];
};

/*
 * bench_daemon_start - start `daemon` (the pandastackd binary) with
 * --data-dir <dir>/data --cache cache --pool-size 0 --pool-sizes
 * <template>=<pool> and wait (up to 120 s) until it listens.  Returns 0 or
 * -errno (its log is <dir>/daemon.log).
 */
int bench_daemon_start(struct bench_daemon *d, const char *daemon, const char *dir,
		       const char *cache, const char *template, unsigned pool);

/* bench_daemon_stop - SIGTERM, wait; then SIGKILL any QEMU left under its
 * data directory. */
void bench_daemon_stop(struct bench_daemon *d);

/* bench_pool_ready - pool_ready of template in GET /v1/templates, or -errno. */
int bench_pool_ready(struct bench_daemon *d, const char *template);

/*
 * bench_create - POST /v1/sandboxes {"template", "ttl_seconds": 600}, timed
 * from the request to the whole answer: *ms (wall clock, fractional), the
 * new id in id (at least 64 bytes), and *from_pool (1: "restored_from" was
 * "pool").  Returns 0 or -errno (-EIO: not 201).
 */
int bench_create(struct bench_daemon *d, const char *template, double *ms, char *id,
		 int *from_pool);

/*
 * bench_exec - POST /v1/sandboxes/<id>/exec {"cmd": cmd}, timed from the
 * request to the whole answer (*ms).  The command's stdout (NUL-terminated,
 * at most outlen - 1 bytes) goes to out when out is not NULL.  Returns 0
 * when it answered 200 with exit_code 0, -EIO otherwise (the answer on
 * stderr), or -errno.
 */
int bench_exec(struct bench_daemon *d, const char *id, const char *cmd, double *ms, char *out,
	       size_t outlen);

/* bench_delete - DELETE /v1/sandboxes/<id>.  0 or -errno. */
int bench_delete(struct bench_daemon *d, const char *id);

#endif
