/*
 * op_restore.c - the restore operation (docs/agent-protocol.md, "restore"):
 * after every boot and every snapshot restore the host sends its wall clock
 * and 64 bytes of fresh entropy, so that clones of one template have the
 * right time and never share random numbers.
 *
 * Init mode: clock_settime(CLOCK_REALTIME), then RNDADDENTROPY (512 bits
 * credited) and RNDRESEEDCRNG on /dev/urandom; a failure is an error.
 * Test modes (--listen, --port) never set the host's clock; entropy is
 * still added when permitted, and the END says what was done.  Then every
 * code context (and the warm spare) is told to reseed its Python-level
 * generators (kernel_reseed_all).
 *
 * The host's package index (pip_index_url, optional) goes into the pip
 * config file env->pip_conf (PID 1: /etc/xdg/pip/pip.conf; test modes: only
 * with --pip-conf): written when the host names one, removed when it does
 * not, so the file always says what the last restore said (a template
 * baked by one daemon serves another).  A failure there is an error.
 *
 * Threads: the loop thread only.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/random.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "agent/kernel.h"
#include "agent/astream.h"
#include "common/log.h"
#include "common/pip_index.h"
#include "common/util.h"

/* Add the bytes to the kernel pool (credited) and reseed the CRNG. */
static int add_entropy(const uint8_t *bytes, size_t n)
{
	/* struct rand_pool_info ends in a flexible array: room for it after the header */
	union {
		struct rand_pool_info info;
		uint8_t raw[sizeof(struct rand_pool_info) + AGENT_REQ_ENTROPY_BYTES];
	} e;
	if (n > AGENT_REQ_ENTROPY_BYTES)
		return -EINVAL;
	memset(&e, 0, sizeof(e));
	e.info.entropy_count = (int)(n * 8);
	e.info.buf_size = (int)n;
	memcpy(e.raw + sizeof(struct rand_pool_info), bytes, n);
	int fd = open("/dev/urandom", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = 0;
	if (ioctl(fd, RNDADDENTROPY, &e) < 0)
		rc = -errno;
	else if (ioctl(fd, RNDRESEEDCRNG) < 0)
		rc = -errno;
	close(fd);
	explicit_bzero(&e, sizeof(e));
	return rc;
}

/* The pip config for index url (checked by the request parser): index-url,
 * and trusted-host for plain http (pip refuses an http index otherwise).
 * Written without fsync: it is rewritten at every restore. */
static int write_pip_conf(const char *path, const char *url)
{
	char host[PIP_INDEX_URL_MAX + 1], text[2 * PIP_INDEX_URL_MAX + 256];
	int http = 0;
	if (pip_index_check(url, host, sizeof(host), &http, NULL) < 0)
		return -EINVAL;
	int n = snprintf(text, sizeof(text),
			 "# The host's package index (pandastackd --pip-index-url), written by\n"
			 "# the agent at every restore.  /etc/pip.conf is read after this file.\n"
			 "[global]\nindex-url = %s\n%s%s%s",
			 url, http ? "trusted-host = " : "", http ? host : "", http ? "\n" : "");
	if (n < 0 || (size_t)n >= sizeof(text))
		return -E2BIG;
	char dir[PATH_MAX], tmp[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		int r = util_mkdir_p(dir, 0755);
		if (r < 0)
			return r;
	}
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	int r = util_write_all(fd, text, (size_t)n);
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r)
		unlink(tmp);
	return r;
}

/* Apply the request's index to env->pip_conf.  1 if the file now names
 * it, 0 if there was nothing to do, or -errno. */
static int apply_pip_index(const struct agent_env *env, const char *url)
{
	if (!env->pip_conf)
		return 0;
	if (url) {
		int r = write_pip_conf(env->pip_conf, url);
		return r < 0 ? r : 1;
	}
	return unlink(env->pip_conf) < 0 && errno != ENOENT ? -errno : 0;
}

int op_restore_start(struct astream *s, struct agent_req *req)
{
	int init = s->env->init_mode;
	int clock_set = 0;
	int64_t t0 = util_now_us();
	if (init) {
		struct timespec ts = {
			.tv_sec = (time_t)(req->wall_clock_ns / 1000000000u),
			.tv_nsec = (long)(req->wall_clock_ns % 1000000000u),
		};
		if (clock_settime(CLOCK_REALTIME, &ts) < 0) {
			int e = errno;
			astream_end_err(s, e, "clock_settime: %s", strerror(e));
			return 0;
		}
		clock_set = 1;
	}
	int64_t t1 = util_now_us();
	int r = add_entropy(req->entropy, sizeof(req->entropy));
	int64_t t2 = util_now_us();
	explicit_bzero(req->entropy, sizeof(req->entropy));
	if (r < 0 && init) {
		astream_end_err(s, r, "adding entropy: %s", strerror(-r));
		return 0;
	}
	int pip = apply_pip_index(s->env, req->pip_index_url);
	int64_t t3 = util_now_us();
	if (pip < 0) {
		astream_end_err(s, pip, "pip config %s: %s", s->env->pip_conf, strerror(-pip));
		return 0;
	}
	/* warm interpreters reseed their own generators (Python random,
	 * numpy) from the freshly seeded kernel pool, ahead of user code */
	int kernels = kernel_reseed_all();
	log_kv(LOG_DEBUG, "agent.restore_timing",
	       "clock_us=%lld entropy_us=%lld pip_us=%lld reseed_us=%lld", (long long)(t1 - t0),
	       (long long)(t2 - t1), (long long)(t3 - t2), (long long)(util_now_us() - t3));
	json_t *o = json_object();
	if (o) {
		json_object_set_new(o, "clock_set", json_boolean(clock_set));
		json_object_set_new(o, "entropy_added", json_boolean(r == 0));
		if (r < 0)
			json_object_set_new(o, "entropy_error", json_string(agent_errname(r)));
		json_object_set_new(o, "kernels_reseeded", json_integer(kernels));
		json_object_set_new(o, "pip_index_url", json_boolean(pip == 1));
	}
	log_kv(LOG_INFO, "agent.restore", "clock_set=%d entropy=%d kernels=%d pip_index_url=%d",
	       clock_set, r == 0, kernels, pip == 1);
	astream_end(s, o);
	return 0;
}
