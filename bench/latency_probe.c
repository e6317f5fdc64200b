/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench_latency_probe: what a process feels while its memory is collapsed.
 *
 *   bench_latency_probe [--mb 256] [--interval-us 100] [--rt 1]
 *
 * The main thread holds --mb MiB of anonymous memory, faulted in as 4 KiB
 * pages and then MADV_HUGEPAGE'd (so it is a candidate under THP enabled =
 * madvise), and prints "ready PID 0xADDR LEN". A probe thread times
 * mmap(4 KiB) + one write fault + munmap every --interval-us: each of these
 * needs the mmap lock that MADV_COLLAPSE holds while it collapses.
 *   SIGUSR1  start recording (drops what was recorded before)
 *   SIGUSR2  stop, print "samples N p50_us X p99_us X p999_us X max_us X"
 *   SIGTERM  exit
 * Nothing is allocated while recording: the sample array is made up front.
 * --rt 1 runs the probe thread SCHED_FIFO, so that on a busy machine what
 * it records is the mmap lock, not a wait for a CPU. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "units.h"

#define MAX_SAMPLES (1u << 21) /* 210 s at 100 us */

static float *samples_us;
static volatile unsigned nsamples;
static volatile int recording, quit;
static long interval_ns = 100000;

static void *probe(void *arg)
{
	struct timespec next;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!quit) {
		double t0 = now_s();
		char *p = mmap(NULL, PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p != MAP_FAILED) {
			p[0] = 1;
			munmap(p, PAGE_BYTES);
		}
		if (recording && nsamples < MAX_SAMPLES)
			samples_us[nsamples++] = (float)((now_s() - t0) * 1e6);
		next.tv_nsec += interval_ns;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	return NULL;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

static void report(void)
{
	unsigned n = nsamples;

	if (!n) {
		printf("samples 0\n");
		fflush(stdout);
		return;
	}
	qsort(samples_us, n, sizeof(*samples_us), cmp_float);
	printf("samples %u p50_us %.0f p99_us %.0f p999_us %.0f max_us %.0f\n", n, samples_us[n / 2],
	       samples_us[(size_t)((n - 1) * 0.99)], samples_us[(size_t)((n - 1) * 0.999)], samples_us[n - 1]);
	fflush(stdout);
}

static char *map_aligned(size_t len)
{
	char *raw = mmap(NULL, len + HPAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *p;

	if (raw == MAP_FAILED)
		return NULL;
	p = (char *)(((uintptr_t)raw + HPAGE_SIZE - 1) & ~(HPAGE_SIZE - 1));
	if (p > raw)
		munmap(raw, (size_t)(p - raw));
	munmap(p + len, (size_t)(raw + len + HPAGE_SIZE - (p + len)));
	return p;
}

int main(int argc, char **argv)
{
	unsigned long mb = 256;
	int rt = 0;
	sigset_t set;
	pthread_t t;
	size_t len;
	char *buf;
	int sig;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--mb"))
			mb = strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--rt"))
			rt = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--interval-us"))
			interval_ns = strtol(argv[i + 1], NULL, 10) * 1000L;
		else {
			fprintf(stderr, "usage: bench_latency_probe [--mb N] [--interval-us US] [--rt 0|1]\n");
			return 2;
		}
	}
	len = mb * MIB_BYTES;
	samples_us = malloc(MAX_SAMPLES * sizeof(*samples_us));
	buf = map_aligned(len);
	if (!samples_us || !buf || interval_ns <= 0) {
		perror("bench_latency_probe: set-up");
		return 2;
	}
	/* Fill first (4 KiB pages under enabled=madvise), then advise. */
	for (size_t off = 0; off < len; off += PAGE_BYTES)
		buf[off] = (char)off | 1;
	if (madvise(buf, len, MADV_HUGEPAGE)) {
		perror("madvise(MADV_HUGEPAGE)");
		return 2;
	}
	memset(samples_us, 0, MAX_SAMPLES * sizeof(*samples_us)); /* fault it in now */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (pthread_create(&t, NULL, probe, NULL)) {
		fprintf(stderr, "bench_latency_probe: pthread_create failed\n");
		return 2;
	}
	if (rt) {
		struct sched_param sp = {.sched_priority = 10};

		if (pthread_setschedparam(t, SCHED_FIFO, &sp)) {
			fprintf(stderr, "bench_latency_probe: SCHED_FIFO refused\n");
			return 2;
		}
	}
	printf("ready %ld 0x%" PRIxPTR " %zu\n", (long)getpid(), (uintptr_t)buf, len);
	fflush(stdout);
	while (sigwait(&set, &sig) == 0) {
		if (sig == SIGUSR1) {
			recording = 0;
			nsamples = 0;
			recording = 1;
		} else if (sig == SIGUSR2) {
			recording = 0;
			usleep(2000); /* let a sample in flight land */
			report();
		} else {
			break;
		}
	}
	quit = 1;
	pthread_join(t, NULL);
	return 0;
}
