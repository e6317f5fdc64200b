/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench_collapse_throughput: MB/s of MADV_COLLAPSE through process_madvise,
 * one batched call (many iovecs) against one call per 2 MiB block.
 *
 *   bench_collapse_throughput [--mb 256] [--rounds 3]
 *
 * A child process holds the memory, as the daemon's targets do: for every
 * measurement it maps a fresh 2 MiB-aligned region and writes every 4 KiB
 * page (THP enabled=madvise, no MADV_HUGEPAGE: 4 KiB pages). The parent then
 * collapses it through a pidfd and times only the collapse. Modes alternate
 * within each round so drift hits them alike. Prints markdown table rows:
 * mode | rounds | MiB | collapsed | median MB/s | overall MB/s | min..max | us per 2 MiB block */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collapse.h"
#include "bench_util.h"
#include "units.h"

#define MAX_ROUND 100

enum mode { BATCHED, PER_BLOCK, LIBRARY, NR_MODES };
static const char *const mode_names[] = {
    "one process_madvise, all blocks as iovecs",
    "one process_madvise per 2 MiB block",
    "collapse_blocks() (the daemon's path, batched)",
};

/* The child: on each byte from cmd, replace its region with a fresh
 * populated one and answer its address. */
static void child(size_t len, int cmd, int ans)
{
	char *cur = NULL, c;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	while (read(cmd, &c, 1) == 1) {
		char *raw, *buf;
		uintptr_t start;

		if (cur)
			munmap(cur, len);
		raw = mmap(NULL, len + HPAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (raw == MAP_FAILED)
			_exit(2);
		start = ((uintptr_t)raw + HPAGE_SIZE - 1) & ~(HPAGE_SIZE - 1);
		if (start > (uintptr_t)raw)
			munmap(raw, start - (uintptr_t)raw);
		if ((uintptr_t)raw + HPAGE_SIZE > start)
			munmap((char *)start + len, (uintptr_t)raw + HPAGE_SIZE - start);
		buf = (char *)start;
		for (size_t o = 0; o < len; o += PAGE_BYTES)
			memset(buf + o, (int)(o >> 12) | 1, 64);
		cur = buf;
		if (write(ans, &start, sizeof(start)) != sizeof(start))
			_exit(2);
	}
	_exit(0);
}

/* Bytes collapsed, timed into *secs. */
static size_t collapse(enum mode m, int pidfd, uintptr_t start, size_t len, double *secs)
{
	size_t n = len / HPAGE_SIZE, done = 0;
	struct iovec iov[COLLAPSE_MAX_IOV];
	uint64_t addrs[COLLAPSE_MAX_IOV];
	uint8_t out[COLLAPSE_MAX_IOV];
	double t0;

	for (size_t i = 0; i < n; i++) {
		iov[i] = (struct iovec){(void *)(start + i * HPAGE_SIZE), HPAGE_SIZE};
		addrs[i] = start + i * HPAGE_SIZE;
	}
	t0 = now_s();
	if (m == BATCHED) {
		ssize_t r = sys_process_madvise(pidfd, iov, n, MADV_COLLAPSE, 0);
		done = r > 0 ? (size_t)r : 0;
	} else if (m == PER_BLOCK) {
		for (size_t i = 0; i < n; i++) {
			ssize_t r = sys_process_madvise(pidfd, &iov[i], 1, MADV_COLLAPSE, 0);
			done += r > 0 ? (size_t)r : 0;
		}
	} else {
		done = collapse_blocks(pidfd, addrs, n, sys_process_madvise, out) * HPAGE_SIZE;
	}
	*secs = now_s() - t0;
	return done;
}

int main(int argc, char **argv)
{
	unsigned long mb = 256, rounds = 3;
	double secs[NR_MODES][MAX_ROUND];
	size_t bytes[NR_MODES] = {0};
	int cmd[2], ans[2], pidfd;
	pid_t pid;
	size_t len;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--mb"))
			mb = strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--rounds"))
			rounds = strtoul(argv[i + 1], NULL, 10);
	}
	len = (mb * MIB_BYTES) & ~(HPAGE_SIZE - 1);
	if (!len || len / HPAGE_SIZE > COLLAPSE_MAX_IOV || !rounds || rounds > MAX_ROUND) {
		fprintf(stderr, "usage: bench_collapse_throughput [--mb 2..2046] [--rounds 1..%d]\n", MAX_ROUND);
		return 2;
	}
	if (pipe(cmd) || pipe(ans))
		return 2;
	pid = fork();
	if (pid == 0) {
		close(cmd[1]);
		close(ans[0]);
		child(len, cmd[0], ans[1]);
	}
	close(cmd[0]);
	close(ans[1]);
	pidfd = pidfd_open_pid(pid);
	if (pid < 0 || pidfd < 0) {
		fprintf(stderr, "bench_collapse_throughput: fork/pidfd_open: %s\n", strerror(errno));
		return 2;
	}
	/* Round 0 warms up (page allocator, LRU caches) and is not counted;
	 * the mode order rotates from round to round. */
	for (unsigned long r = 0; r <= rounds; r++)
		for (int k = 0; k < NR_MODES; k++) {
			int m = (int)((k + r) % NR_MODES);
			uintptr_t start;
			double s;
			size_t b;

			if (write(cmd[1], "p", 1) != 1 || read(ans[0], &start, sizeof(start)) != sizeof(start)) {
				fprintf(stderr, "bench_collapse_throughput: child failed\n");
				return 2;
			}
			b = collapse((enum mode)m, pidfd, start, len, &s);
			if (r > 0) {
				bytes[m] += b;
				secs[m][r - 1] = s;
			}
		}
	close(cmd[1]);
	waitpid(pid, NULL, 0);

	for (int m = 0; m < NR_MODES; m++) {
		double rate[MAX_ROUND], total = 0;

		for (unsigned long r = 0; r < rounds; r++) {
			rate[r] = len / secs[m][r] / 1e6;
			total += secs[m][r];
		}
		qsort(rate, rounds, sizeof(rate[0]), cmp_double);
		printf("| %s | %lu | %zu | %.0f%% | %.0f | %.0f | %.0f..%.0f | %.0f |\n", mode_names[m], rounds,
		       len >> 20, 100.0 * bytes[m] / (len * rounds), rate[rounds / 2], len * rounds / total / 1e6,
		       rate[0], rate[rounds - 1], total / rounds / (len / HPAGE_SIZE) * 1e6);
	}
	return 0;
}
