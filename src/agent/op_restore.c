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
 * Threads: the loop thread only.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "agent/kernel.h"
#include "agent/astream.h"
#include "common/log.h"
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
	/* warm interpreters reseed their own generators (Python random,
	 * numpy) from the freshly seeded kernel pool, ahead of user code */
	int kernels = kernel_reseed_all();
	log_kv(LOG_DEBUG, "agent.restore_timing", "clock_us=%lld entropy_us=%lld reseed_us=%lld",
	       (long long)(t1 - t0), (long long)(t2 - t1), (long long)(util_now_us() - t2));
	json_t *o = json_object();
	if (o) {
		json_object_set_new(o, "clock_set", json_boolean(clock_set));
		json_object_set_new(o, "entropy_added", json_boolean(r == 0));
		if (r < 0)
			json_object_set_new(o, "entropy_error", json_string(agent_errname(r)));
		json_object_set_new(o, "kernels_reseeded", json_integer(kernels));
	}
	log_kv(LOG_INFO, "agent.restore", "clock_set=%d entropy=%d kernels=%d", clock_set, r == 0,
	       kernels);
	astream_end(s, o);
	return 0;
}
