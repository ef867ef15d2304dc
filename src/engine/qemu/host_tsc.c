/*
 * host_tsc.c - measure the host TSC rate (see host_tsc.h).
 */
#include "engine/qemu/host_tsc.h"

#include <errno.h>
#include <stdint.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>

static uint64_t mono_raw_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One window: the TSC ticks per ms over about ms_window ms.  The clock is
 * read on both sides of each rdtsc and the tighter pair kept. */
static double window_khz(unsigned ms_window)
{
	uint64_t n0 = mono_raw_ns();
	uint64_t c0 = __rdtsc();
	uint64_t n0b = mono_raw_ns();
	struct timespec sl = {0, (long)ms_window * 1000000L};
	nanosleep(&sl, NULL);
	uint64_t n1 = mono_raw_ns();
	uint64_t c1 = __rdtsc();
	uint64_t n1b = mono_raw_ns();
	double ns = (double)((n1 + n1b) / 2 - (n0 + n0b) / 2);
	if (ns <= 0)
		return 0;
	return (double)(c1 - c0) / ns * 1e6;
}

int host_tsc_khz(unsigned *khz)
{
	/* The median of three windows: a preemption inside one of the
	 * clock/rdtsc pairs skews that window only. */
	double k[3];
	for (int i = 0; i < 3; i++)
		k[i] = window_khz(35);
	double mid = k[0] > k[1] ? (k[1] > k[2] ? k[1] : (k[0] > k[2] ? k[2] : k[0]))
				 : (k[0] > k[2] ? k[0] : (k[1] > k[2] ? k[2] : k[1]));
	if (mid < 100000.0 || mid > 10000000.0) /* 0.1 .. 10 GHz */
		return -ENOTSUP;
	*khz = (unsigned)(mid + 0.5);
	return 0;
}
#else
int host_tsc_khz(unsigned *khz)
{
	(void)khz;
	return -ENOTSUP;
}
#endif
