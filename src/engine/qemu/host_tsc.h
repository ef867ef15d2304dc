/*
 * host_tsc.h - the host's TSC rate, for TCG guests.
 *
 * Under TCG the guest's TSC ticks at the host's rate.  A guest kernel
 * calibrates it against the PIT at boot, and on a busy host that
 * calibration fails ("tsc: Unable to calibrate against PIT ... Marking TSC
 * unstable") and the boot hangs with no output: about 1 in 5 TCG microvm
 * cold boots on an idle host, far more often under load.  The
 * bake passes the measured rate as tsc_early_khz= so the guest skips that
 * calibration.  x86-64 only (rdtsc).  Any thread.
 */
#ifndef PANDASTACK_HOST_TSC_H
#define PANDASTACK_HOST_TSC_H

/*
 * host_tsc_khz - measure the TSC rate against CLOCK_MONOTONIC_RAW over
 * about 100 ms (the best of three windows).  Returns 0 with *khz, or
 * -ENOTSUP (not x86-64, or an implausible rate).
 */
int host_tsc_khz(unsigned *khz);

#endif
