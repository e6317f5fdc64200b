/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hc_fault_storm: many short-lived processes that fault, none of them
 * enough to be news (news_gate.h: 16 MiB), as a shell's or a build's short
 * commands fault, for tests/integration/news_filter.sh.
 *
 *   hc_fault_storm --per-s N --mb M
 *
 * Starts N children a second until SIGTERM/SIGINT. Each maps M MiB of
 * anonymous memory with MADV_NOHUGEPAGE (one fault per 4 KiB page, on any
 * THP policy), writes every page and exits. The parent prints
 * "ready PID" once the first child has been reaped, and on SIGTERM/SIGINT
 * reaps its children and prints "spawned N". */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "units.h"

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static int child(size_t len)
{
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (buf == MAP_FAILED || madvise(buf, len, MADV_NOHUGEPAGE))
		return 2;
	for (size_t off = 0; off < len; off += 4096)
		buf[off] = 1;
	return 0;
}

int main(int argc, char **argv)
{
	long per_s = 0, mb = 0, spawned = 0;
	struct sigaction sa = {.sa_handler = on_stop};
	struct timespec gap;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--per-s"))
			per_s = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--mb"))
			mb = atol(argv[i + 1]);
	}
	if (per_s < 1 || per_s > 1000 || mb < 1 || mb > 1024) {
		fprintf(stderr, "usage: hc_fault_storm --per-s 1..1000 --mb 1..1024\n");
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	gap.tv_sec = 0;
	gap.tv_nsec = 1000000000L / per_s;
	while (!stop) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(child((size_t)mb * MIB_BYTES));
		if (pid > 0) {
			spawned++;
			waitpid(pid, NULL, 0);
		}
		if (spawned == 1) {
			printf("ready %d\n", (int)getpid());
			fflush(stdout);
		}
		nanosleep(&gap, NULL);
	}
	printf("spawned %ld\n", spawned);
	return 0;
}
