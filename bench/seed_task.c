/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench_seed_task: one task of the hot1 -> cold -> hot2 scenario from the
 * "Improve khugepaged scan logic" series (linux-mm, Dec 2025 - Feb 2026).
 *
 *   bench_seed_task --mode hot|cold|free [--mb 128] [--rate-file FILE]
 *
 * Every mode maps a 2 MiB-aligned private buffer with MAP_POPULATE (4 KiB
 * pages: THP enabled=madvise and no MADV_HUGEPAGE yet), then calls
 * MADV_HUGEPAGE and prints "ready PID 0xADDR LEN".
 *   hot:  once a second memset the whole buffer, then random 8-byte reads
 *         for the rest of the second; appends "SECONDS MREADS_PER_CPU_S
 *         THP_PCT" to the rate file after every second. The rate is per
 *         second of this task's own CPU time in the read phase, so that
 *         waiting for a CPU on a busy machine does not count as slowness;
 *         THP_PCT is AnonHugePages of the buffer (smaps_rollup), so a rate
 *         can be matched to the page size it ran on.
 *   cold: touches the buffer once, then MADV_COLD and sleeps.
 *   free: touches the buffer once, then MADV_FREE and sleeps.
 * SIGTERM/SIGINT end it; it also dies with its parent. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "units.h"

enum mode { HOT, COLD, FREE };

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static void die(const char *what)
{
	fprintf(stderr, "bench_seed_task: %s: %s\n", what, strerror(errno));
	exit(2);
}

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now_s(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* Reserve an aligned hole, then populate exactly the aligned part, so every
 * 2 MiB block of the buffer can become a THP. */
static char *map_populated(size_t len)
{
	char *raw = mmap(NULL, len + HPAGE_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uintptr_t start;
	char *buf;

	if (raw == MAP_FAILED)
		die("mmap reserve");
	start = ((uintptr_t)raw + HPAGE_SIZE - 1) & ~(HPAGE_SIZE - 1);
	buf = mmap((void *)start, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_POPULATE,
		   -1, 0);
	if (buf == MAP_FAILED)
		die("mmap populate");
	if (start > (uintptr_t)raw)
		munmap(raw, start - (uintptr_t)raw);
	if ((uintptr_t)raw + HPAGE_SIZE > start)
		munmap(buf + len, (uintptr_t)raw + HPAGE_SIZE - start);
	return buf;
}

/* AnonHugePages of this process (the buffer is nearly all of its memory). */
static unsigned long anon_huge_kb(void)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	unsigned long kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Memset once per second, random reads until the second is over. */
static void run_hot(char *buf, size_t len, FILE *rate)
{
	const volatile uint64_t *w = (const volatile uint64_t *)buf;
	size_t nwords = len / sizeof(uint64_t);
	uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid(), sum = 0;
	double t0 = now_s();
	unsigned round = 0;

	while (!stop) {
		double start = now_s(), end = start + 1.0, cpu0;
		uint64_t reads = 0;

		memset(buf, (int)(++round & 0xff) | 1, len);
		cpu0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
		do {
			for (int i = 0; i < 4096; i++)
				sum += w[xorshift(&seed) % nwords];
			reads += 4096;
		} while (now_s() < end && !stop);
		if (rate) {
			double cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - cpu0;

			fprintf(rate, "%.2f %.3f %zu\n", now_s() - t0, cpu > 0 ? reads / cpu / 1e6 : 0,
				(size_t)(anon_huge_kb() * 1024 * 100 / len));
			fflush(rate);
		}
	}
	if (sum == 42) /* keeps the reads from being optimised away */
		fputc(' ', stderr);
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_seed_task --mode hot|cold|free [--mb N] [--rate-file FILE]\n");
	exit(2);
}

static enum mode parse_mode(const char *s)
{
	if (!strcmp(s, "hot"))
		return HOT;
	if (!strcmp(s, "cold"))
		return COLD;
	if (!strcmp(s, "free"))
		return FREE;
	usage();
	return HOT;
}

int main(int argc, char **argv)
{
	enum mode m = HOT;
	unsigned long mb = 128;
	const char *rate_path = NULL;
	struct sigaction sa = {.sa_handler = on_stop};
	FILE *rate = NULL;
	size_t len;
	char *buf;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
			m = parse_mode(argv[++i]);
		} else if (!strcmp(argv[i], "--mb") && i + 1 < argc) {
			mb = strtoul(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--rate-file") && i + 1 < argc) {
			rate_path = argv[++i];
		} else {
			usage();
		}
	}
	if (!mb)
		usage();
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (rate_path && !(rate = fopen(rate_path, "w")))
		die(rate_path);

	len = mb * MIB_BYTES;
	buf = map_populated(len);
	if (m != HOT)
		memset(buf, 0x5a, len); /* the brief access before going cold */
	if (madvise(buf, len, MADV_HUGEPAGE))
		die("madvise(MADV_HUGEPAGE)");
	if (m == COLD && madvise(buf, len, MADV_COLD))
		die("madvise(MADV_COLD)");
	if (m == FREE && madvise(buf, len, MADV_FREE))
		die("madvise(MADV_FREE)");
	printf("ready %ld 0x%" PRIxPTR " %zu\n", (long)getpid(), (uintptr_t)buf, len);
	fflush(stdout);

	if (m == HOT)
		run_hot(buf, len, rate);
	else
		while (!stop)
			pause();
	return 0;
}
