/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hc_cpu_probe: a yardstick for CPU-time bounds, run beside the daemon.
 *
 *   hc_cpu_probe SECONDS
 *
 * Every 250 ms for SECONDS it does a fixed amount of the work an idle pass
 * does (a readdir of /proc, preads of kept /proc files, a timed sleep),
 * then prints the CPU time it used, in microseconds, from
 * /proc/self/schedstat: the clock integration/back_to_back_idle reads for
 * the daemon. A guest with no steal accounting (steal reads 0 in
 * /proc/stat on the CI machines) counts a contended host's delays as CPU
 * time, so the same work costs several times as much there; a bound that
 * scales with this probe's cost, measured over the same seconds, holds on
 * a slow machine and still catches a daemon that spins. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static unsigned long long schedstat_ns(void)
{
	unsigned long long ns = 0;
	FILE *f = fopen("/proc/self/schedstat", "r");

	if (f) {
		if (fscanf(f, "%llu", &ns) != 1)
			ns = 0;
		fclose(f);
	}
	return ns;
}

static void one_round(int stat_fd, int meminfo_fd)
{
	static char buf[8192];
	DIR *d = opendir("/proc");

	if (d) {
		while (readdir(d))
			;
		closedir(d);
	}
	for (int i = 0; i < 8; i++)
		if (pread(stat_fd, buf, sizeof(buf), 0) < 0)
			break;
	if (pread(meminfo_fd, buf, sizeof(buf), 0) < 0)
		return;
}

int main(int argc, char **argv)
{
	struct timespec tick = {.tv_nsec = 250 * 1000 * 1000};
	unsigned long long ns0;
	int stat_fd, meminfo_fd;
	long rounds;

	if (argc != 2 || atoi(argv[1]) <= 0) {
		fprintf(stderr, "usage: %s SECONDS\n", argv[0]);
		return 2;
	}
	rounds = atol(argv[1]) * 4L;
	stat_fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	meminfo_fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
	if (stat_fd < 0 || meminfo_fd < 0) {
		perror("hc_cpu_probe: open");
		return 1;
	}
	ns0 = schedstat_ns();
	for (long r = 0; r < rounds; r++) {
		one_round(stat_fd, meminfo_fd);
		nanosleep(&tick, NULL);
	}
	printf("%llu\n", (schedstat_ns() - ns0) / 1000);
	return 0;
}
