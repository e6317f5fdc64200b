/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Captures real seeds for fuzz_block_pagemap and fuzz_block_regions from
 * this kernel: maps blocks of anonymous memory in known states, then reads
 * its own /proc/self/pagemap, /proc/kpageflags and PAGEMAP_SCAN runs and
 * writes them in the targets' input formats (see those files). Run as root
 * (PFNs and kpageflags need CAP_SYS_ADMIN) with THP enabled=madvise:
 *   capture_seeds fuzz/corpus
 * The committed seeds came from Linux 6.18; rerun only to refresh them. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "range_scan.h"
#include "units.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

/* struct pm_scan_arg (include/uapi/linux/fs.h), as range_scan.c has it. */
struct scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted, category_mask,
	    category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN_IOCTL _IOWR('f', 16, struct scan_arg)
#define CATEGORIES         (HC_PAGE_IS_PRESENT | HC_PAGE_IS_SWAPPED | HC_PAGE_IS_PFNZERO | HC_PAGE_IS_HUGE)

/* READ: pages read before written. They would map the shared zero page,
 * but the 6.18 machine the seeds came from gave them real pages. */
enum pattern { FULL, HALF, SPARSE, READ, THP, LAZYFREE, SHARED, EMPTY, NPATTERNS };
static const char *const names[] = {"full", "half", "sparse", "read", "thp", "lazyfree", "shared", "empty"};

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void put(FILE *f, const void *p, size_t n)
{
	if (fwrite(p, 1, n, f) != n)
		die("fwrite");
}

/* flags, then the default limits (255, 0, 0, 50) as le16. */
static void put_header(FILE *f, uint8_t flags)
{
	const uint16_t lim[4] = {255, 0, 0, 50};

	put(f, &flags, 1);
	put(f, lim, sizeof(lim));
}

static FILE *create(const char *dir, const char *target, const char *name)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", dir, target, name);
	f = fopen(path, "w");
	if (!f)
		die(path);
	return f;
}

static void fill(char *b, enum pattern p)
{
	volatile char sink = 0;

	switch (p) {
	case FULL:
	case LAZYFREE:
	case SHARED:
	case THP:
		memset(b, 1, HPAGE_SIZE);
		break;
	case HALF:
		memset(b, 1, HPAGE_SIZE / 2);
		break;
	case SPARSE:
		for (unsigned i = 0; i < 10; i++)
			b[(size_t)i * 50 * PAGE_BYTES] = 1;
		break;
	case READ:
		for (unsigned i = 0; i < HPAGE_PAGES; i++)
			sink = (char)(sink + b[(size_t)i * PAGE_BYTES]);
		b[0] = 1; /* one real page, so a page table exists */
		break;
	case EMPTY:
	case NPATTERNS:
		break;
	}
	(void)sink;
	if (p == LAZYFREE && madvise(b, HPAGE_SIZE / 2, MADV_FREE) < 0)
		die("MADV_FREE");
	if (p == THP && madvise(b, HPAGE_SIZE, MADV_COLLAPSE) < 0)
		fprintf(stderr, "capture_seeds: MADV_COLLAPSE: %s (thp seed is PTE-mapped)\n", strerror(errno));
}

/* Writes block p as seen now, with and without its kpageflags. */
static void capture_block(const char *dir, int pm_fd, int kpf_fd, const char *base, int p)
{
	uint64_t pm[HPAGE_PAGES], kpf[HPAGE_PAGES] = {0};
	uint64_t addr = (uintptr_t)base + (uint64_t)p * HPAGE_SIZE;
	char name[64];
	FILE *f;

	if (pread(pm_fd, pm, sizeof(pm), (off_t)(addr / PAGE_BYTES * 8)) != sizeof(pm))
		die("pread pagemap");
	for (unsigned i = 0; i < HPAGE_PAGES; i++)
		if ((pm[i] & PM_PRESENT) && pread(kpf_fd, &kpf[i], 8, (off_t)((pm[i] & PM_PFN_MASK) * 8)) != 8)
			die("pread kpageflags");
	snprintf(name, sizeof(name), "%s_kpf", names[p]);
	f = create(dir, "block_pagemap", name);
	put_header(f, 3); /* anon, kpageflags known */
	put(f, pm, sizeof(pm));
	put(f, kpf, sizeof(kpf));
	fclose(f);
	snprintf(name, sizeof(name), "%s_nokpf", names[p]);
	f = create(dir, "block_pagemap", name);
	put_header(f, 1);
	put(f, pm, sizeof(pm));
	fclose(f);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "fuzz/corpus";
	size_t len = (NPATTERNS + 1) * HPAGE_SIZE;
	char *raw, *base;
	int pm_fd, kpf_fd;
	pid_t child;

	raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		die("mmap");
	base = (char *)(((uintptr_t)raw + HPAGE_SIZE - 1) & ~(uintptr_t)(HPAGE_SIZE - 1));
	/* Only the THP block may become huge, by MADV_COLLAPSE. */
	if (madvise(base, NPATTERNS * HPAGE_SIZE, MADV_NOHUGEPAGE) < 0 ||
	    madvise(base + THP * HPAGE_SIZE, HPAGE_SIZE, MADV_HUGEPAGE) < 0)
		die("madvise");
	for (int p = 0; p < NPATTERNS; p++)
		fill(base + p * HPAGE_SIZE, (enum pattern)p);
	pm_fd = open("/proc/self/pagemap", O_RDONLY);
	kpf_fd = open("/proc/kpageflags", O_RDONLY);
	if (pm_fd < 0 || kpf_fd < 0)
		die("open pagemap/kpageflags");
	for (int p = 0; p < NPATTERNS; p++)
		if (p != SHARED)
			capture_block(dir, pm_fd, kpf_fd, base, p);

	/* One PAGEMAP_SCAN over all blocks, as range_scan_vma() asks it. */
	{
		struct hc_page_region r[1024];
		struct scan_arg arg = {
		    .size = sizeof(arg),
		    .start = (uintptr_t)base,
		    .end = (uintptr_t)base + NPATTERNS * HPAGE_SIZE,
		    .vec = (uintptr_t)r,
		    .vec_len = 1024,
		    .category_anyof_mask = CATEGORIES,
		    .return_mask = CATEGORIES,
		};
		uint64_t first = (uintptr_t)base, prev = first;
		uint8_t nblocks = NPATTERNS - 1; /* the target adds one */
		long n = ioctl(pm_fd, PAGEMAP_SCAN_IOCTL, &arg);
		FILE *f;

		if (n < 0)
			die("PAGEMAP_SCAN");
		f = create(dir, "block_regions", "all_patterns");
		put_header(f, 1);
		put(f, &first, sizeof(first));
		put(f, &nblocks, 1);
		for (long i = 0; i < n; i++) {
			uint16_t gap = (uint16_t)((r[i].start - prev) / PAGE_BYTES);
			uint16_t len1 = (uint16_t)((r[i].end - r[i].start) / PAGE_BYTES - 1);
			uint8_t cat = (uint8_t)r[i].categories;

			put(f, &gap, 2);
			put(f, &len1, 2);
			put(f, &cat, 1);
			prev = r[i].end;
		}
		fclose(f);
		printf("capture_seeds: %d blocks, %ld PAGEMAP_SCAN runs\n", NPATTERNS, n);
	}
	/* A child holding the SHARED block keeps its pages not exclusive. */
	child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		pause();
		_exit(0);
	}

	capture_block(dir, pm_fd, kpf_fd, base, SHARED);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return 0;
}
