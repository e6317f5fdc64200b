/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench_small_tasks: many small processes, for the scan-cost and scale
 * benchmarks.
 *
 *   bench_small_tasks --n N [--churn-pct P] [--kb K]
 *
 * Forks N children. Each touches a private K KiB heap in 4 KiB pages (no
 * MADV_HUGEPAGE: nothing to collapse) and sleeps. The first P percent also
 * touch one new 4 KiB page every second (new RSS and a page fault: a
 * changed process for hugecollapsed). The parent prints "ready PID N" once
 * every child has its heap, and on SIGTERM/SIGINT kills exactly its own
 * children by PID, reaps them and exits. Children die with the parent. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "units.h"

#define CHURN_PAGES 65536ul /* 256 MiB of address space: 18 hours at one page a second */

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static void touch(char *p, size_t len)
{
	for (size_t o = 0; o < len; o += PAGE_BYTES)
		p[o] = 1;
}

static void child(size_t heap_kb, int churn, int ready_fd)
{
	char *heap = mmap(NULL, heap_kb * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *more = NULL;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (heap == MAP_FAILED)
		_exit(2);
	touch(heap, heap_kb * 1024);
	if (churn) {
		more = mmap(NULL, CHURN_PAGES * PAGE_BYTES, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (more == MAP_FAILED)
			_exit(2);
	}
	if (write(ready_fd, "r", 1) != 1)
		_exit(2);
	close(ready_fd);
	for (size_t i = 0; !stop; i = (i + 1) % CHURN_PAGES) {
		if (!churn) {
			pause();
			continue;
		}
		more[i * PAGE_BYTES] = 1;
		sleep(1);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	unsigned long n = 0, churn_pct = 0, kb = 64;
	struct sigaction sa = {.sa_handler = on_stop};
	pid_t *pids;
	int fds[2];
	char c;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--n"))
			n = strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--churn-pct"))
			churn_pct = strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--kb"))
			kb = strtoul(argv[i + 1], NULL, 10);
	}
	if (!n || churn_pct > 100 || !kb || argc % 2 == 0) {
		fprintf(stderr, "usage: bench_small_tasks --n N [--churn-pct P] [--kb K]\n");
		return 2;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	pids = calloc(n, sizeof(*pids));
	if (!pids || pipe(fds))
		return 2;
	for (unsigned long i = 0; i < n && !stop; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			fprintf(stderr, "bench_small_tasks: fork %lu: %s\n", i, strerror(errno));
			stop = 1;
			pids[i] = 0;
			break;
		}
		if (pids[i] == 0) {
			close(fds[0]);
			child(kb, i < n * churn_pct / 100, fds[1]);
		}
	}
	close(fds[1]);
	for (unsigned long i = 0; i < n && !stop; i++)
		if (read(fds[0], &c, 1) != 1)
			stop = 1;
	if (!stop) {
		printf("ready %ld %lu\n", (long)getpid(), n);
		fflush(stdout);
	}
	while (!stop)
		pause();
	for (unsigned long i = 0; i < n; i++)
		if (pids[i] > 0)
			kill(pids[i], SIGKILL);
	for (unsigned long i = 0; i < n; i++)
		if (pids[i] > 0)
			waitpid(pids[i], NULL, 0);
	return 0;
}
