/*
 * crash.c - the report of a fatal signal (crash.h).  The handler uses only
 * write(2), backtrace_symbols_fd (which writes without allocating; backtrace
 * is called once at install so that its library is loaded before any fault)
 * and raise.
 */
#include "common/crash.h"

#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CRASH_FRAMES 64
#define CRASH_ALT_STACK (64u * 1024u)

static char crash_line[160]; /* "... event=<prog>.crash signal=" */
static size_t crash_len;

static void crash_handler(int sig)
{
	char num[16];
	size_t n = sizeof(num);
	unsigned v = (unsigned)sig;
	do {
		num[--n] = (char)('0' + v % 10);
		v /= 10;
	} while (v && n > 0);
	ssize_t w = write(STDERR_FILENO, crash_line, crash_len);
	w = write(STDERR_FILENO, num + n, sizeof(num) - n);
	w = write(STDERR_FILENO, "\n", 1);
	(void)w;
	void *frames[CRASH_FRAMES];
	int k = backtrace(frames, CRASH_FRAMES);
	backtrace_symbols_fd(frames, k, STDERR_FILENO);
	raise(sig); /* SA_RESETHAND: the default action now */
}

int crash_report_install(const char *prog)
{
	int len = snprintf(crash_line, sizeof(crash_line), "level=error event=%s.crash signal=", prog);
	if (len < 0 || (size_t)len >= sizeof(crash_line))
		return -EINVAL;
	crash_len = (size_t)len;
	void *warm[1];
	(void)backtrace(warm, 1);
	stack_t ss = {.ss_sp = malloc(CRASH_ALT_STACK), .ss_size = CRASH_ALT_STACK};
	if (!ss.ss_sp)
		return -ENOMEM;
	if (sigaltstack(&ss, NULL) < 0) {
		int e = errno;
		free(ss.ss_sp);
		return -e;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = crash_handler;
	sa.sa_flags = SA_RESETHAND | SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigaction(sigs[i], &sa, NULL) < 0)
			return -errno;
	return 0; /* the alternate stack stays for the process's life */
}
