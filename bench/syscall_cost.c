/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the MADV_COLD observer (src/scan/cold_watch.h) costs every other process:
 * ns per getppid() in a tight loop (thread CPU time, the fastest of 20
 * slices), with no syscall tracepoint open and with
 * the daemon's own events open (cold_watch_open: both tracepoints on every
 * CPU, filtered), alternating ROUNDS times. Also ns per madvise(MADV_COLD)
 * of one page, the call that is recorded. Usage: bench_syscall_cost
 * [ROUNDS [CALLS]]. One line per round, then the medians. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cold_watch.h"
#include "units.h"

/* CPU time of this thread: others' load on a shared machine is not counted
 * (what the kernel does on our behalf in a system call is). */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The fastest of 20 slices: interference only ever adds. */
static double ns_per_getppid(long calls)
{
	double best = 1e9;

	for (int s = 0; s < 20; s++) {
		double t0 = now();

		for (long i = 0; i < calls / 20; i++)
			syscall(SYS_getppid);
		double ns = (now() - t0) / (double)(calls / 20) * 1e9;
		if (ns < best)
			best = ns;
	}
	return best;
}

static double ns_per_cold(char *page, long calls)
{
	double t0 = now();

	for (long i = 0; i < calls; i++)
		madvise(page, PAGE_BYTES, MADV_COLD);
	return (now() - t0) / (double)calls * 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 7;
	long calls = argc > 2 ? atol(argv[2]) : 2000000;
	double off[64], on[64], coff[64], con[64];
	char *page = mmap(NULL, PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char why[128] = "";

	if (rounds < 1 || rounds > 64 || calls < 1 || page == MAP_FAILED)
		return 2;
	page[0] = 1;
	for (int r = 0; r < rounds; r++) {
		struct cold_watch w;

		off[r] = ns_per_getppid(calls);
		coff[r] = ns_per_cold(page, calls / 10);
		if (cold_watch_open(&w, "/proc", why, sizeof(why)) < 0) {
			fprintf(stderr, "cannot open the observer: %s\n", why);
			return 1;
		}
		on[r] = ns_per_getppid(calls);
		con[r] = ns_per_cold(page, calls / 10);
		cold_watch_drain(&w);
		cold_watch_close(&w);
		printf(
		    "round %d: getppid %.1f ns off, %.1f ns on (%+.1f); madvise(MADV_COLD) %.1f ns off, %.1f ns on\n",
		    r, off[r], on[r], on[r] - off[r], coff[r], con[r]);
	}
	qsort(off, (size_t)rounds, sizeof(double), cmp);
	qsort(on, (size_t)rounds, sizeof(double), cmp);
	qsort(coff, (size_t)rounds, sizeof(double), cmp);
	qsort(con, (size_t)rounds, sizeof(double), cmp);
	printf(
	    "median: getppid %.1f ns off (%.1f-%.1f), %.1f ns on (%.1f-%.1f); madvise(MADV_COLD) %.1f off, %.1f on\n",
	    off[rounds / 2], off[0], off[rounds - 1], on[rounds / 2], on[0], on[rounds - 1], coff[rounds / 2],
	    con[rounds / 2]);
	return 0;
}
