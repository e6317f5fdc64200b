/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench_pagemap_paths: page-table scan time of one process on the
 * PAGEMAP_SCAN path (6.7+) against the pre-6.7 pread path, forced.
 *
 *   bench_pagemap_paths [--rounds 20] [--mb 1024]
 *
 * A child holds a 1 TiB PROT_NONE reservation (as Go, JVM and sanitizer
 * runtimes make) next to MB MiB of memory, in two variants: THP
 * (MADV_HUGEPAGE, then touched) and 4 KiB pages (MADV_NOHUGEPAGE, touched).
 * The parent reads its smaps once per variant and times range_scan_vma()
 * over every VMA, as the daemon does after smaps. Each path is measured
 * with the smaps shortcuts on (VMAs with no Rss and no Swap, or whose Rss is
 * all AnonHugePages, are not read), with only the first (so THP VMAs are
 * read), and, on the read path, with none (every VMA read in chunks, as if
 * smaps had shown Rss everywhere). Prints markdown table rows:
 * memory | path | median ms | min..max ms | ioctls | pagemap preads | kpageflags preads | x PAGEMAP_SCAN
 * (the last column: against PAGEMAP_SCAN with the same skips; the no-skip
 * row against PAGEMAP_SCAN with the empty-VMA skip only). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "range_scan.h"
#include "smaps_scan.h"
#include "bench_util.h"
#include "units.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#define TIB       (UINT64_C(1) << 40)
#define MAX_ROUND 200

/* The child: maps, touches, says so on the pipe, waits to be killed. */
static void child(int wfd, size_t mb, bool thp)
{
	size_t len = mb * MIB_BYTES;
	char *res = mmap(NULL, TIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *raw = mmap(NULL, len + HPAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (res == MAP_FAILED || raw == MAP_FAILED)
		_exit(2);
	char *p = (char *)(((uintptr_t)raw + HPAGE_SIZE - 1) & ~(uintptr_t)(HPAGE_SIZE - 1));
	madvise(p, len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	for (size_t off = 0; off < len; off += PAGE_BYTES)
		p[off] = 1;
	if (thp)
		madvise(p, len, MADV_COLLAPSE); /* any block that got small pages */
	if (write(wfd, "r", 1) != 1)
		_exit(2);
	for (;;)
		pause();
}

struct row {
	double ms[MAX_ROUND];
	struct range_scan_stats per_scan;
};

enum shortcuts { ALL, RSS_ONLY, NONE };
static const char *const shortcut_names[] = {"all smaps skips", "empty-VMA skip only", "no smaps skip"};

/* rounds scans of every VMA. RSS_ONLY: as if no VMA had AnonHugePages;
 * NONE: also as if every VMA had Rss (none is skipped). Returns 0 or
 * -errno. */
static int measure(int dirfd, pid_t pid, const struct vma_list *l, enum pagemap_mode mode, enum shortcuts sc,
		   int rounds, struct row *out)
{
	static const struct collapse_limits lim = COLLAPSE_LIMITS_DEFAULT;
	struct range_scanner s;
	struct hc_paths paths;
	int r;

	hc_paths_default(&paths);
	r = range_scanner_init(&s, mode, &paths);

	if (r < 0)
		return r;
	r = range_scanner_attach(&s, dirfd, pid);
	for (int i = 0; i < rounds && r == 0; i++) {
		uint64_t res[SCAN_NR_RESULTS] = {0};
		s.stats = (struct range_scan_stats){0};
		double t0 = now_s();

		for (size_t k = 0; k < l->n && r == 0; k++) {
			struct vma v = l->v[k];

			if (sc != ALL)
				v.anon_huge_kb = 0;
			if (sc == NONE && !v.rss_kb)
				v.rss_kb = 4;
			r = range_scan_vma(&s, &v, v.lazyfree_kb > 0, &lim, res, NULL, NULL);
		}
		out->ms[i] = (now_s() - t0) * 1e3;
		out->per_scan = s.stats;
	}
	range_scanner_free(&s);
	return r;
}

static double median(struct row *row, int rounds)
{
	qsort(row->ms, (size_t)rounds, sizeof(double), cmp_double);
	return row->ms[rounds / 2];
}

static void print_row(const char *mem, const char *path, enum shortcuts sc, struct row *row, int rounds, double ref_ms)
{
	double med = median(row, rounds);
	printf("| %s | %s, %s | %.3f | %.3f..%.3f | %llu | %llu | %llu | %.1f |\n", mem, path, shortcut_names[sc], med,
	       row->ms[0], row->ms[rounds - 1], (unsigned long long)row->per_scan.scan_ioctls,
	       (unsigned long long)row->per_scan.pagemap_preads, (unsigned long long)row->per_scan.kpageflags_preads,
	       ref_ms > 0 ? med / ref_ms : 1.0);
}

static int variant(size_t mb, bool thp, int rounds)
{
	int pfd[2];
	char c, path[64], mem[96];

	if (pipe(pfd))
		return -errno;
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		close(pfd[0]);
		child(pfd[1], mb, thp);
	}
	close(pfd[1]);
	int r = read(pfd[0], &c, 1) == 1 ? 0 : -EIO;
	close(pfd[0]);

	struct vma_list l;
	char *buf = NULL;
	size_t cap = 0;
	vma_list_init(&l);
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	int dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r == 0 && dirfd < 0)
		r = -errno;
	double t0 = now_s();
	if (r == 0)
		r = read_smaps(dirfd, &buf, &cap, &l);
	double smaps_ms = (now_s() - t0) * 1e3;

	static struct row scan[2], rd[3];
	int slow = rounds < 3 ? rounds : 3; /* the no-skip rows take seconds */
	for (int sc = ALL; sc <= RSS_ONLY && r == 0; sc++) {
		r = measure(dirfd, pid, &l, PAGEMAP_AUTO, (enum shortcuts)sc, rounds, &scan[sc]);
		if (r == 0)
			r = measure(dirfd, pid, &l, PAGEMAP_READ, (enum shortcuts)sc, rounds, &rd[sc]);
	}
	if (r == 0)
		r = measure(dirfd, pid, &l, PAGEMAP_READ, NONE, slow, &rd[NONE]);
	if (r == 0) {
		snprintf(mem, sizeof(mem), "1 TiB PROT_NONE + %zu MiB %s (%zu VMAs; smaps %.2f ms)", mb,
			 thp ? "THP" : "4 KiB pages", l.n, smaps_ms);
		for (int sc = ALL; sc <= RSS_ONLY; sc++) {
			double ref = median(&scan[sc], rounds);
			print_row(mem, "PAGEMAP_SCAN", (enum shortcuts)sc, &scan[sc], rounds, ref);
			print_row(mem, "pread (--pagemap-read)", (enum shortcuts)sc, &rd[sc], rounds, ref);
		}
		print_row(mem, "pread (--pagemap-read)", NONE, &rd[NONE], slow, median(&scan[RSS_ONLY], rounds));
	}
	if (dirfd >= 0)
		close(dirfd);
	vma_list_free(&l);
	free(buf);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return r;
}

int main(int argc, char **argv)
{
	int rounds = 20;
	size_t mb = 1024;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--rounds"))
			rounds = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--mb"))
			mb = (size_t)strtoul(argv[i + 1], NULL, 10);
	}
	if (rounds < 1 || rounds > MAX_ROUND || mb < 2) {
		fprintf(stderr, "usage: bench_pagemap_paths [--rounds 1..%d] [--mb N>=2]\n", MAX_ROUND);
		return 2;
	}
	for (int thp = 1; thp >= 0; thp--) {
		int r = variant(mb, thp, rounds);
		if (r < 0) {
			fprintf(stderr, "bench_pagemap_paths: %s\n", strerror(-r));
			return 1;
		}
	}
	return 0;
}
