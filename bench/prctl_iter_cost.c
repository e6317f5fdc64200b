/* What one walk of the prctl task iterator costs (src/scan/prctl_iter.h), and
 * what a status-file read per process costs for comparison: the daemon's
 * cost per pass. Usage: bench_prctl_iter_cost [ROUNDS]. Prints one line. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prctl_iter.h"

/* CPU time of this process: the iterator runs in its read(), and the
 * machine may be loaded by others, which wall time would include. */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* VmRSS of this process in kB: what loading the iterator costs in memory. */
static long rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 200;
	struct prctl_table t = {0};
	struct prctl_iter *it;
	double t0, open_s, walk_s, one_s;
	size_t disabled = 0;
	int r;

	long rss0 = rss_kb();

	t0 = now();
	r = prctl_iter_open(&it);
	open_s = now() - t0;
	printf("VmRSS %ld kB before the load, %ld kB after\n", rss0, rss_kb());
	if (r < 0) {
		fprintf(stderr, "prctl_iter_open: %s\n", strerror(-r));
		return 1;
	}
	t0 = now();
	for (int i = 0; i < rounds && r == 0; i++)
		r = prctl_iter_read(it, &t);
	walk_s = (now() - t0) / rounds;
	if (r < 0) {
		fprintf(stderr, "prctl_iter_read: %s\n", strerror(-r));
		return 1;
	}
	for (size_t i = 0; i < t.n; i++)
		disabled += t.rec[i].mode != 0;
	/* One process at a time: what a pass pays per process it scans. */
	t0 = now();
	for (int i = 0; i < rounds && r == 0; i++) {
		enum thp_prctl m;

		r = prctl_iter_read_pid(it, (pid_t)t.rec[(size_t)i % t.n].tgid, &m);
		if (r == -ESRCH)
			r = 0;
	}
	one_s = (now() - t0) / rounds;
	if (r < 0) {
		fprintf(stderr, "prctl_iter_read_pid: %s\n", strerror(-r));
		return 1;
	}
	printf("CPU time: open+load+attach %.1f ms; one walk %.1f us for %zu processes (%.0f ns each), %zu with a "
	       "prctl mode; one process %.1f us\n",
	       open_s * 1e3, walk_s * 1e6, t.n, t.n ? walk_s * 1e9 / (double)t.n : 0.0, disabled, one_s * 1e6);
	prctl_table_free(&t);
	prctl_iter_close(it);
	return 0;
}
