/* SPDX-License-Identifier: GPL-2.0-or-later */
/* unmap_shim: an LD_PRELOAD library for integration/unmapped_enomem. It
 * stands in for the race the daemon must survive: a range unmapped after the
 * daemon's last look at it (the re-check right before the call) and before
 * its process_madvise(MADV_COLLAPSE). The daemon calls the kernel through
 * syscall(3); this library's syscall() does, for the first MADV_COLLAPSE
 * call on the process HC_UNMAP_SHIM_PID names, what an allocator would:
 * it has the process unmap its buffer (hc_workload, SIGRTMIN+3), waits until
 * /proc/PID/maps no longer shows the call's first block, then makes the
 * call, which the kernel answers with ENOMEM while thp_collapse_alloc_failed
 * stays put. Every other system call passes through unchanged. Test code
 * only: never built into the daemon. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

typedef long (*syscall_fn)(long, ...);

static syscall_fn real_syscall(void)
{
	static syscall_fn fn;

	if (!fn)
		fn = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
	return fn;
}

/* The PID a pidfd stands for, from /proc/self/fdinfo ("Pid:\t123"). */
static long pidfd_pid(long pidfd)
{
	char path[64], line[128];
	long pid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%ld", pidfd);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Pid:\t%ld", &pid) == 1)
			break;
	fclose(f);
	return pid;
}

/* Whether /proc/PID/maps has a mapping that holds addr. */
static bool mapped(long pid, uintptr_t addr)
{
	char path[64], line[512];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		uintptr_t lo, hi;

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &lo, &hi) == 2 && lo <= addr && addr < hi)
			found = true;
	}
	fclose(f);
	return found;
}

static void unmap_first(long pidfd, const struct iovec *iov, long vlen)
{
	static bool done;
	const char *want = getenv("HC_UNMAP_SHIM_PID");
	long pid;

	if (done || !want || vlen < 1 || (pid = pidfd_pid(pidfd)) != atol(want))
		return;
	done = true;
	if (real_syscall()(SYS_pidfd_send_signal, pidfd, SIGRTMIN + 3, NULL, 0) != 0)
		return;
	for (int i = 0; i < 5000 && mapped(pid, (uintptr_t)iov[0].iov_base); i++)
		nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
	fprintf(stderr, "unmap_shim: pid %ld unmapped 0x%" PRIxPTR " before the call\n", pid,
		(uintptr_t)iov[0].iov_base);
}

long syscall(long nr, ...)
{
	va_list ap;
	long a[6];

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_process_madvise && a[3] == MADV_COLLAPSE)
		unmap_first(a[0], (const struct iovec *)a[1], a[2]);
	return real_syscall()(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
