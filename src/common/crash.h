/*
 * crash.h - a last line on stderr when the process dies of a fault.
 *
 * crash_report_install - on SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT,
 * write `level=error event=<prog>.crash signal=N` and the faulting thread's
 * return addresses (backtrace_symbols_fd: resolve them with addr2line
 * against the binary) to stderr, then die of the same signal with its
 * default action (a core dump where the host keeps them).  The handler runs
 * on an alternate stack of the calling thread, so a stack overflow there is
 * reported too; other threads use their own stack.  prog is borrowed for
 * the process's life.  Returns 0 or -errno.  Call once, from main, before
 * threads start.
 */
#ifndef PANDASTACK_CRASH_H
#define PANDASTACK_CRASH_H

int crash_report_install(const char *prog);

#endif
