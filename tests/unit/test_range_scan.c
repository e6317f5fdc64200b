/* SPDX-License-Identifier: GPL-2.0-or-later */
/* range_scan on the real kernel, against this test's own memory. Every test
 * runs twice: on the PAGEMAP_SCAN path (group "pagemap_scan") and on the
 * pre-6.7 pread path forced with PAGEMAP_READ (group "pagemap_read"). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <linux/userfaultfd.h>

#include "lazyfree.h"
#include "range_scan.h"
#include "units.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

static const struct collapse_limits lim = COLLAPSE_LIMITS_DEFAULT;

struct fixture {
	struct range_scanner s;
	enum pagemap_mode mode;
	int self_dirfd;
	char *mem; /* 4 blocks: PMD-mapped, 4K-full, untouched, 1 in 16 */
	char *lazy;
	char *mixed;      /* 300 written pages, the rest read */
	char *zeroed;     /* 300 written pages, the rest UFFDIO_ZEROPAGE */
	bool zero_mapped; /* UFFDIO_ZEROPAGE worked */
};

/* MADV_FREE, with every page lazy-free when it returns. Freed pages reach
 * the lazy-free state through a per-CPU batch; until it drains they read
 * as not lazy-free, so smaps LazyFree read first and kpageflags read later
 * could disagree (then the scan would probe). madvise_free_single_vma()
 * drains this CPU's batch first, so a second MADV_FREE on the same CPU
 * completes the first. */
static int madvise_free_drained(char *p, size_t len)
{
	cpu_set_t all, one;
	int r;

	if (sched_getaffinity(0, sizeof(all), &all))
		return -1;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		return -1;
	r = madvise(p, len, MADV_FREE) || madvise(p, len, MADV_FREE) ? -1 : 0;
	if (sched_setaffinity(0, sizeof(all), &all))
		r = -1;
	return r;
}

/* A 2 MiB-aligned anonymous region that stays 4K-mapped while touched. */
static char *map_blocks(size_t nblocks)
{
	size_t len = nblocks * HPAGE_SIZE;
	char *p = mmap(NULL, len + HPAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	char *a = (char *)(((uintptr_t)p + HPAGE_SIZE - 1) & ~(uintptr_t)(HPAGE_SIZE - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	munmap(a + len, (size_t)(p + HPAGE_SIZE - a));
	madvise(a, len, MADV_NOHUGEPAGE);
	return a;
}

static void touch(char *p, size_t len, size_t stride)
{
	for (size_t off = 0; off < len; off += stride)
		p[off] = 1;
}

static unsigned read_pages(const volatile char *p, size_t len)
{
	unsigned sum = 0;
	for (size_t off = 0; off < len; off += PAGE_BYTES)
		sum += (unsigned)p[off];
	return sum;
}

/* Maps the shared zero page into [p + off, p + HPAGE_SIZE) with
 * UFFDIO_ZEROPAGE, which does so also where read faults map real pages
 * (pvm_no_zero_page=1 here). Registering the whole block keeps its VMA in
 * one piece. False where userfaultfd is unavailable. */
static bool map_zero_pages(char *p, size_t off)
{
	struct uffdio_api api = {.api = UFFD_API};
	struct uffdio_register reg = {.range = {(uintptr_t)p, HPAGE_SIZE}, .mode = UFFDIO_REGISTER_MODE_MISSING};
	struct uffdio_zeropage zp = {.range = {(uintptr_t)p + off, HPAGE_SIZE - off}};
	struct uffdio_range all = {(uintptr_t)p, HPAGE_SIZE};
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	bool ok;

	if (fd < 0)
		return false;
	ok = !ioctl(fd, UFFDIO_API, &api) && !ioctl(fd, UFFDIO_REGISTER, &reg);
	ok = ok && !ioctl(fd, UFFDIO_ZEROPAGE, &zp) && zp.zeropage == (int64_t)(HPAGE_SIZE - off);
	ok = !ioctl(fd, UFFDIO_UNREGISTER, &all) && ok;
	close(fd);
	return ok;
}

/* The real paths (paths.h), for range_scanner_init(). */
static const struct hc_paths *real_paths(void)
{
	static struct hc_paths p;

	hc_paths_default(&p);
	return &p;
}

static int setup(void **state, enum pagemap_mode mode)
{
	struct fixture *f = calloc(1, sizeof(*f));
	if (!f || range_scanner_init(&f->s, mode, real_paths()) != 0)
		return -1;
	f->mode = mode;
	/* This kernel (6.18) has PAGEMAP_SCAN: the forced mode must win. */
	if (f->s.use_scan_ioctl != (mode == PAGEMAP_AUTO))
		return -1;
	f->self_dirfd = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->self_dirfd < 0 || range_scanner_attach(&f->s, f->self_dirfd, getpid()) != 0)
		return -1;
	f->mem = map_blocks(4);
	f->lazy = map_blocks(1);
	f->mixed = map_blocks(1);
	f->zeroed = map_blocks(1);
	if (!f->mem || !f->lazy || !f->mixed || !f->zeroed)
		return -1;
	touch(f->mem, 2 * HPAGE_SIZE, PAGE_BYTES);
	touch(f->mem + 3 * HPAGE_SIZE, HPAGE_SIZE, 16 * PAGE_BYTES);
	/* Only block 0 leaves NOHUGEPAGE, so khugepaged cannot touch the rest. */
	if (madvise(f->mem, HPAGE_SIZE, MADV_HUGEPAGE) || madvise(f->mem, HPAGE_SIZE, MADV_COLLAPSE))
		return -1;
	touch(f->lazy, HPAGE_SIZE, PAGE_BYTES);
	if (madvise_free_drained(f->lazy, HPAGE_SIZE))
		return -1;
	/* Reading keeps lazy-free pages lazy-free (only a write re-dirties),
	 * and they still hold their data until reclaim takes them. */
	if (read_pages(f->lazy, HPAGE_SIZE) != HPAGE_PAGES)
		return -1;
	touch(f->mixed, 300 * PAGE_BYTES, PAGE_BYTES);
	read_pages(f->mixed + 300 * PAGE_BYTES, HPAGE_SIZE - 300 * PAGE_BYTES);
	touch(f->zeroed, 300 * PAGE_BYTES, PAGE_BYTES);
	f->zero_mapped = map_zero_pages(f->zeroed, 300 * PAGE_BYTES);
	*state = f;
	return 0;
}

static int setup_scan(void **state)
{
	return setup(state, PAGEMAP_AUTO);
}

static int setup_read(void **state)
{
	return setup(state, PAGEMAP_READ);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	range_scanner_free(&f->s);
	close(f->self_dirfd);
	munmap(f->mem, 4 * HPAGE_SIZE);
	munmap(f->lazy, HPAGE_SIZE);
	munmap(f->mixed, HPAGE_SIZE);
	munmap(f->zeroed, HPAGE_SIZE);
	free(f);
	return 0;
}

/* As smaps would show it: resident, nothing lazy-free. */
static struct vma anon_vma(const char *start, size_t nblocks)
{
	return (struct vma){.start = (uintptr_t)start,
			    .end = (uintptr_t)start + nblocks * HPAGE_SIZE,
			    .kind = VMA_ANON,
			    .rss_kb = nblocks * 2048};
}

/* The real smaps record of the VMA that starts at p. */
static struct vma smaps_vma(struct fixture *f, const char *p)
{
	struct vma_list l;
	char *buf = NULL;
	size_t cap = 0;
	struct vma v = {0};

	vma_list_init(&l);
	assert_int_equal(read_smaps(f->self_dirfd, &buf, &cap, &l), 0);
	for (size_t i = 0; i < l.n; i++)
		if (l.v[i].start == (uintptr_t)p)
			v = l.v[i];
	vma_list_free(&l);
	free(buf);
	assert_int_equal(v.start, (uintptr_t)p);
	return v;
}

struct seen {
	unsigned n;
	uint64_t addr[8];
	struct block_counts c[8];
};

static void on_candidate(void *ctx, uint64_t addr, const struct block_counts *c)
{
	struct seen *s = ctx;
	if (s->n < 8) {
		s->addr[s->n] = addr;
		s->c[s->n] = *c;
	}
	s->n++;
}

/* The result of the one block at p, in a VMA of that block alone. */
static enum scan_result scan_vma_one(struct range_scanner *s, const struct vma *v, bool lazy,
				     const struct collapse_limits *l)
{
	uint64_t res[SCAN_NR_RESULTS] = {0};
	assert_int_equal(range_scan_vma(s, v, lazy, l, res, NULL, NULL), 0);
	for (int r = 0; r < SCAN_NR_RESULTS; r++)
		if (res[r]) {
			assert_int_equal(res[r], 1);
			return (enum scan_result)r;
		}
	fail_msg("no result");
	return SCAN_NR_RESULTS;
}

static enum scan_result scan_one(struct range_scanner *s, const char *p, bool lazy, const struct collapse_limits *l)
{
	struct vma v = anon_vma(p, 1);
	return scan_vma_one(s, &v, lazy, l);
}

static void test_four_blocks(void **state)
{
	struct fixture *f = *state;
	struct range_scan_stats before = f->s.stats;
	uint64_t res[SCAN_NR_RESULTS] = {0};
	struct seen seen = {0};
	struct vma v = anon_vma(f->mem, 4);
	/* Partial blocks at both ends are not ours to count. */
	v.start -= 8192;
	v.end += 8192;

	assert_int_equal(range_scan_vma(&f->s, &v, false, &lim, res, on_candidate, &seen), 0);
	assert_int_equal(res[SCAN_PMD_MAPPED], 1);
	assert_int_equal(res[SCAN_CANDIDATE], 1);
	assert_int_equal(res[SCAN_NO_PTE_TABLE], 1);
	assert_int_equal(res[SCAN_EXCEED_NONE_PTE], 1);
	assert_int_equal(seen.n, 1);
	assert_int_equal(seen.addr[0], (uintptr_t)f->mem + HPAGE_SIZE);
	assert_int_equal(seen.c[0].present, HPAGE_PAGES);
	assert_int_equal(seen.c[0].shared, 0);
	if (f->mode == PAGEMAP_AUTO) {
		assert_true(f->s.stats.scan_ioctls > before.scan_ioctls);
	} else {
		assert_int_equal(f->s.stats.scan_ioctls, before.scan_ioctls);
		/* The four blocks come in one chunk: one pread. */
		assert_int_equal(f->s.stats.pagemap_preads - before.pagemap_preads, 1);
	}

	assert_int_equal(scan_one(&f->s, f->mem, false, &lim), SCAN_PMD_MAPPED);
	assert_int_equal(scan_one(&f->s, f->mem + HPAGE_SIZE, false, &lim), SCAN_CANDIDATE);
	assert_int_equal(scan_one(&f->s, f->mem + 2 * HPAGE_SIZE, false, &lim), SCAN_NO_PTE_TABLE);
	assert_int_equal(scan_one(&f->s, f->mem + 3 * HPAGE_SIZE, false, &lim), SCAN_EXCEED_NONE_PTE);
	/* 32 of 512 present: allowed only when max_ptes_none reaches 480. */
	struct collapse_limits l = lim;
	l.max_ptes_none = 480;
	assert_int_equal(scan_one(&f->s, f->mem + 3 * HPAGE_SIZE, false, &l), SCAN_CANDIDATE);
	l.max_ptes_none = 479;
	assert_int_equal(scan_one(&f->s, f->mem + 3 * HPAGE_SIZE, false, &l), SCAN_EXCEED_NONE_PTE);
}

/* smaps says nothing is resident or swapped: not read at all. */
static void test_empty_vma_not_read(void **state)
{
	struct fixture *f = *state;
	struct range_scan_stats before = f->s.stats;
	uint64_t res[SCAN_NR_RESULTS] = {0};
	struct vma v = anon_vma(f->mem, 4);
	v.rss_kb = 0;

	assert_int_equal(range_scan_vma(&f->s, &v, true, &lim, res, NULL, NULL), 0);
	assert_int_equal(res[SCAN_NO_PTE_TABLE], 4);
	assert_int_equal(f->s.stats.scan_ioctls, before.scan_ioctls);
	assert_int_equal(f->s.stats.pagemap_preads, before.pagemap_preads);
	assert_int_equal(f->s.stats.vmas_skipped - before.vmas_skipped, 1);
	/* All resident memory PMD-mapped: counted from smaps, unread. */
	v.rss_kb = v.anon_huge_kb = 2048;
	memset(res, 0, sizeof(res));
	assert_int_equal(range_scan_vma(&f->s, &v, true, &lim, res, NULL, NULL), 0);
	assert_int_equal(res[SCAN_PMD_MAPPED], 1);
	assert_int_equal(res[SCAN_NO_PTE_TABLE], 3);
	assert_int_equal(f->s.stats.pagemap_preads, before.pagemap_preads);
	assert_int_equal(f->s.stats.vmas_skipped - before.vmas_skipped, 2);
	/* Swap alone is enough to look. */
	v.rss_kb = v.anon_huge_kb = 0;
	v.swap_kb = 4;
	memset(res, 0, sizeof(res));
	assert_int_equal(range_scan_vma(&f->s, &v, false, &lim, res, NULL, NULL), 0);
	assert_int_equal(res[SCAN_CANDIDATE], 1);
}

/* A VMA of one clean lazy-free block: smaps LazyFree covers every page
 * kpageflags calls lazy-free, so it is skipped and nothing is probed. */
static void test_lazyfree(void **state)
{
	struct fixture *f = *state;
	uint64_t kpf = f->s.stats.kpageflags_preads;
	struct vma v = smaps_vma(f, f->lazy);

	assert_true(v.lazyfree_kb > 0);
	range_scanner_set_probe(&f->s, sys_process_madvise);
	assert_int_equal(scan_vma_one(&f->s, &v, true, &lim), SCAN_PAGE_LAZYFREE);
	range_scanner_set_probe(&f->s, NULL);
	assert_int_equal(f->s.stats.probe_calls, 0);
	assert_true(f->s.stats.kpageflags_preads > kpf);
	assert_int_equal(scan_one(&f->s, f->mem + HPAGE_SIZE, true, &lim), SCAN_CANDIDATE);
	/* Without check_lazyfree (smaps LazyFree 0), lazy-free pages are not
	 * looked for: kpageflags is read only for the LAZY_SAMPLE pages that
	 * the re-check before collapse compares (range_scan_recheck). */
	uint64_t res[SCAN_NR_RESULTS] = {0};
	struct seen seen = {0};
	kpf = f->s.stats.kpageflags_preads;
	assert_int_equal(range_scan_vma(&f->s, &v, false, &lim, res, on_candidate, &seen), 0);
	assert_int_equal(seen.n, 1);
	assert_int_equal(seen.c[0].lazy_sampled, LAZY_SAMPLE);
	if (f->mode == PAGEMAP_AUTO)
		assert_int_equal(f->s.stats.kpageflags_preads - kpf, LAZY_SAMPLE);
}

/* Lazy-free asked but kpageflags unreadable: never collapse blindly. */
static void test_lazyfree_unknowable(void **state)
{
	struct fixture *f = *state;
	int fd = f->s.kpageflags_fd;
	f->s.kpageflags_fd = -1;
	assert_int_equal(scan_one(&f->s, f->mem + HPAGE_SIZE, true, &lim), SCAN_PAGE_LAZYFREE);
	assert_int_equal(scan_one(&f->s, f->mem + HPAGE_SIZE, false, &lim), SCAN_CANDIDATE);
	f->s.kpageflags_fd = fd;
}

/* How many of the n pages from p map the shared zero page: kpageflags says
 * so where PFNs show; elsewhere it is the only page of a private anonymous
 * mapping (this process never forked it) that is not exclusive. */
static unsigned zero_pages(const char *p, unsigned n)
{
	uint64_t e[HPAGE_PAGES], flags;
	unsigned zero = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC), kfd = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0 && n <= HPAGE_PAGES);
	assert_int_equal(pread(fd, e, n * sizeof(e[0]), (off_t)((uintptr_t)p / PAGE_BYTES * sizeof(e[0]))),
			 n * sizeof(e[0]));
	for (unsigned i = 0; i < n; i++) {
		uint64_t pfn = e[i] & PM_PFN_MASK;

		if (!(e[i] & PM_PRESENT))
			continue;
		if (kfd >= 0 && pfn && pread(kfd, &flags, sizeof(flags), (off_t)(pfn * sizeof(flags))) == sizeof(flags))
			zero += (flags >> KPF_ZERO_PAGE) & 1;
		else
			zero += !(e[i] & PM_MMAP_EXCLUSIVE);
	}
	close(fd);
	if (kfd >= 0)
		close(kfd);
	return zero;
}

/* A block of 300 written pages and 212 zero-page entries: those count as
 * none and are not mistaken for shared pages. */
static void check_zero_block(struct fixture *f, char *p)
{
	struct collapse_limits l = lim;
	struct seen seen = {0};
	uint64_t res[SCAN_NR_RESULTS] = {0};
	struct vma v = anon_vma(p, 1);

	l.max_ptes_none = 212;
	assert_int_equal(range_scan_vma(&f->s, &v, false, &l, res, on_candidate, &seen), 0);
	assert_int_equal(res[SCAN_CANDIDATE], 1);
	assert_int_equal(seen.c[0].present, 300);
	assert_int_equal(seen.c[0].zero, 212);
	assert_int_equal(seen.c[0].shared, 0);
	l.max_ptes_none = 211;
	assert_int_equal(scan_one(&f->s, p, false, &l), SCAN_EXCEED_NONE_PTE);
}

/* The zero page on the real kernel: UFFDIO_ZEROPAGE maps it wherever
 * userfaultfd exists, and a read fault maps it on most kernels but not on
 * all (pvm_no_zero_page=1 here). Where a read fault maps a real page, that
 * page is exclusive memory the process already holds: it counts as present,
 * as khugepaged counts it, and collapsing it costs no memory. The zero-page
 * paths are also driven on fixtures in test_range_scan_zero, on any kernel. */
static void test_zero_pages(void **state)
{
	struct fixture *f = *state;
	unsigned read_zero = zero_pages(f->mixed + 300 * PAGE_BYTES, HPAGE_PAGES - 300);

	if (f->zero_mapped) {
		assert_int_equal(zero_pages(f->zeroed, HPAGE_PAGES), 212);
		check_zero_block(f, f->zeroed);
	} else {
		print_message("userfaultfd unavailable: the zero page is driven on fixtures only\n");
	}
	assert_int_equal(zero_pages(f->mixed, 300), 0);
	if (read_zero) {
		assert_int_equal(read_zero, 212); /* all read faults alike */
		check_zero_block(f, f->mixed);
		return;
	}
	print_message("read faults map real pages on this kernel\n");
	struct collapse_limits l = lim;
	struct seen seen = {0};
	uint64_t res[SCAN_NR_RESULTS] = {0};
	struct vma v = anon_vma(f->mixed, 1);
	l.max_ptes_none = 0;
	assert_int_equal(range_scan_vma(&f->s, &v, false, &l, res, on_candidate, &seen), 0);
	assert_int_equal(res[SCAN_CANDIDATE], 1);
	assert_int_equal(seen.c[0].present, HPAGE_PAGES);
	assert_int_equal(seen.c[0].zero, 0);
	assert_int_equal(seen.c[0].shared, 0);
}

/* After fork() every anonymous page is mapped twice: shared. */
static void test_shared_after_fork(void **state)
{
	struct fixture *f = *state;
	int pipefd[2];
	assert_int_equal(pipe(pipefd), 0);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		char c;
		close(pipefd[1]);
		_exit(read(pipefd[0], &c, 1) < 0);
	}
	close(pipefd[0]);
	struct collapse_limits l = lim;
	enum scan_result r[3];
	l.max_ptes_shared = 0;
	r[0] = scan_one(&f->s, f->mem + HPAGE_SIZE, false, &l);
	l.max_ptes_shared = 511;
	r[1] = scan_one(&f->s, f->mem + HPAGE_SIZE, false, &l);
	l.max_ptes_shared = 512; /* no page-by-page look at all */
	r[2] = scan_one(&f->s, f->mem + HPAGE_SIZE, false, &l);
	close(pipefd[1]);
	assert_int_equal(waitpid(child, NULL, 0), child);
	assert_int_equal(r[0], SCAN_EXCEED_SHARED_PTE);
	assert_int_equal(r[1], SCAN_EXCEED_SHARED_PTE);
	assert_int_equal(r[2], SCAN_CANDIDATE);
}

/* PAGEMAP_SCAN as some kernels answer it on a dead mm: no regions, the walk
 * complete, no error (6.18 here answers ESRCH). */
static unsigned dead_mm_emulated;
static int scan_ioctl_dead_mm_empty(int fd, void *arg)
{
	int n = sys_pagemap_scan(fd, arg);
	if (n < 0 && errno == ESRCH) {
		struct {
			uint64_t size, flags, start, end, walk_end;
		} *a = arg;
		a->walk_end = a->end;
		dead_mm_emulated++;
		return 0;
	}
	return n;
}

/* A process that is gone: -ESRCH, not an empty result. The child is reaped
 * before the scan, so its mm is certainly torn down. */
static void test_dead_process(void **state)
{
	struct fixture *f = *state;
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	char path[32];
	snprintf(path, sizeof(path), "/proc/%d", (int)child);
	int dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dirfd >= 0);
	struct range_scanner s;
	assert_int_equal(range_scanner_init(&s, f->mode, real_paths()), 0);
	assert_int_equal(range_scanner_attach(&s, dirfd, child), 0);
	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, NULL, 0), child);
	struct vma v = anon_vma(f->mem, 4); /* inherited by the child */
	for (int emulate = 0; emulate < 2; emulate++) {
		uint64_t res[SCAN_NR_RESULTS] = {0};
		s.scan_ioctl = emulate ? scan_ioctl_dead_mm_empty : sys_pagemap_scan;
		assert_int_equal(range_scan_vma(&s, &v, false, &lim, res, NULL, NULL), -ESRCH);
		assert_int_equal(range_scan_vma(&s, &v, true, &lim, res, NULL, NULL), -ESRCH);
	}
	if (f->mode == PAGEMAP_AUTO)
		assert_int_equal(dead_mm_emulated, 2); /* the empty answer was really given */
	range_scanner_free(&s);
	close(dirfd);
}

/* A VMA of PMD-mapped THPs: one PAGEMAP_SCAN call and nothing else; on the
 * read path two 128 KiB preads and one kpageflags read per THP. */
static void test_pmd_mapped_vma(void **state)
{
	struct fixture *f = *state;
	enum { N = 64 };
	char *p = map_blocks(N);
	assert_non_null(p);
	madvise(p, N * HPAGE_SIZE, MADV_HUGEPAGE);
	touch(p, N * HPAGE_SIZE, PAGE_BYTES);
	madvise(p, N * HPAGE_SIZE, MADV_COLLAPSE); /* for any block that got small pages */

	struct range_scan_stats before = f->s.stats;
	uint64_t res[SCAN_NR_RESULTS] = {0};
	struct vma v = anon_vma(p, N);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(range_scan_vma(&f->s, &v, true, &lim, res, NULL, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	munmap(p, N * HPAGE_SIZE);
	assert_int_equal(res[SCAN_PMD_MAPPED], N);
	if (f->mode == PAGEMAP_AUTO) {
		assert_int_equal(f->s.stats.scan_ioctls - before.scan_ioctls, 1);
		assert_int_equal(f->s.stats.pagemap_preads, before.pagemap_preads);
		assert_int_equal(f->s.stats.kpageflags_preads, before.kpageflags_preads);
	} else {
		assert_int_equal(f->s.stats.pagemap_preads - before.pagemap_preads, N / PM_CHUNK_BLOCKS);
		assert_int_equal(f->s.stats.kpageflags_preads - before.kpageflags_preads, N);
	}
	print_message("%d PMD-mapped blocks in %ld ns\n", N,
		      (long)((t1.tv_sec - t0.tv_sec) * 1000000000L + t1.tv_nsec - t0.tv_nsec));
}

/* ---- lazy-free blocks of every kind in one VMA ---------------------------- */

static unsigned probe_calls;
static size_t probe_iovs;
static ssize_t counting_madvise(int pidfd, const struct iovec *iov, size_t vlen, int advice, unsigned int flags)
{
	assert_int_equal(advice, MADV_PAGEOUT);
	probe_calls++;
	probe_iovs += vlen;
	return sys_process_madvise(pidfd, iov, vlen, advice, flags);
}

static bool fake_swap_on;
static bool fake_swap(const char *proc_root)
{
	(void)proc_root;
	return fake_swap_on;
}

static uint8_t pattern(size_t block, size_t page)
{
	return (uint8_t)(1 + (block * 512 + page) % 251);
}

/* Block 0 clean lazy-free, block 1 written again after MADV_FREE, block 2
 * never freed, block 3 freed and then three quarters written again. */
static char *lazy_mix(void)
{
	char *p = map_blocks(4);
	assert_non_null(p);
	for (size_t b = 0; b < 4; b++)
		for (size_t i = 0; i < HPAGE_PAGES; i++)
			p[b * HPAGE_SIZE + i * PAGE_BYTES] = (char)pattern(b, i);
	assert_int_equal(madvise(p, HPAGE_SIZE, MADV_FREE), 0);
	assert_int_equal(madvise(p + HPAGE_SIZE, HPAGE_SIZE, MADV_FREE), 0);
	assert_int_equal(madvise(p + 3 * HPAGE_SIZE, HPAGE_SIZE, MADV_FREE), 0);
	for (size_t i = 0; i < HPAGE_PAGES; i++)
		p[HPAGE_SIZE + i * PAGE_BYTES] = (char)pattern(1, i);
	for (size_t i = 0; i < HPAGE_PAGES * 3 / 4; i++)
		p[3 * HPAGE_SIZE + i * PAGE_BYTES] = (char)pattern(3, i);
	return p;
}

static void scan_mix(struct fixture *f, char *p, enum scan_result r[4], struct seen *seen)
{
	struct vma v = smaps_vma(f, p);
	uint64_t res[SCAN_NR_RESULTS] = {0};

	assert_int_equal(v.end, (uintptr_t)p + 4 * HPAGE_SIZE);
	assert_true(v.lazyfree_kb > 0);
	*seen = (struct seen){0};
	assert_int_equal(range_scan_vma(&f->s, &v, true, &lim, res, on_candidate, seen), 0);
	for (int b = 0; b < 4; b++)
		r[b] = scan_one(&f->s, p + b * HPAGE_SIZE, false, &lim); /* what the page tables now say */
	/* Candidates come in address order. */
	for (unsigned i = 1; i < seen->n; i++)
		assert_true(seen->addr[i] > seen->addr[i - 1]);
	assert_int_equal(res[SCAN_CANDIDATE], seen->n);
}

/* scan_mix() with no swap and PROBE allowed, the probe counters zeroed
 * first; the fixture's swap check and probe are restored afterwards. */
static void scan_mix_probed(struct fixture *f, char *p, enum scan_result r[4], struct seen *seen,
			    process_madvise_fn probe)
{
	f->s.swap_configured = fake_swap;
	fake_swap_on = false;
	range_scanner_set_probe(&f->s, probe);
	probe_calls = 0;
	probe_iovs = 0;
	scan_mix(f, p, r, seen);
	f->s.swap_configured = swap_configured;
	range_scanner_set_probe(&f->s, NULL);
}

/* Swap configured, or no probe allowed (a dry run): a mixed VMA's lazy-free
 * blocks stay out, the hot one goes in, and memory is left alone. */
static void test_lazy_mix_no_probe(void **state)
{
	struct fixture *f = *state;
	char *p = lazy_mix();
	enum scan_result r[4];
	struct seen seen;

	f->s.swap_configured = fake_swap;
	for (int i = 0; i < 2; i++) {
		fake_swap_on = i == 0;
		range_scanner_set_probe(&f->s, counting_madvise);
		if (i == 1)
			range_scanner_set_probe(&f->s, NULL);
		probe_calls = 0;
		scan_mix(f, p, r, &seen);
		assert_int_equal(probe_calls, 0);
		assert_int_equal(seen.n, 1);
		assert_int_equal(seen.addr[0], (uintptr_t)p + 2 * HPAGE_SIZE);
		for (int b = 0; b < 4; b++)
			assert_int_equal(r[b], SCAN_CANDIDATE); /* nothing discarded */
	}
	f->s.swap_configured = swap_configured;
	range_scanner_set_probe(&f->s, NULL);
	munmap(p, 4 * HPAGE_SIZE);
}

/* No swap and the probe allowed: one MADV_PAGEOUT call for the three
 * blocks with lazy-free pages, then the written-again ones are candidates
 * with their data intact, and the clean one is gone (what MADV_FREE
 * allowed). Block 3 keeps its 384 written pages and loses 128 clean ones:
 * 128 none, within max_ptes_none (255), so it is a candidate too. */
static void test_lazy_mix_probe(void **state)
{
	struct fixture *f = *state;
	char *p = lazy_mix();
	enum scan_result r[4];
	struct seen seen;

	uint64_t probed = f->s.stats.probed_blocks;
	scan_mix_probed(f, p, r, &seen, counting_madvise);

	assert_int_equal(probe_calls, 1);
	assert_int_equal(probe_iovs, 3);
	assert_int_equal(f->s.stats.probed_blocks - probed, 3);
	assert_int_equal(seen.n, 3);
	assert_int_equal(seen.addr[0], (uintptr_t)p + HPAGE_SIZE);
	assert_int_equal(seen.addr[1], (uintptr_t)p + 2 * HPAGE_SIZE);
	assert_int_equal(seen.addr[2], (uintptr_t)p + 3 * HPAGE_SIZE);
	/* A page still in a per-CPU lazy-free batch of another CPU (at most
	 * 31, the last freed) is not lazy-free yet and is kept: then block 3
	 * has a few more present pages, block 0 a few, and neither changes the
	 * decision. */
	assert_in_range(seen.c[2].present, 384, 384 + 31);
	assert_int_equal(seen.c[0].lazyfree, 0);
	assert_true(r[0] == SCAN_NO_PTE_TABLE || r[0] == SCAN_EXCEED_NONE_PTE);
	for (size_t b = 1; b < 4; b++)
		for (size_t i = 0; i < HPAGE_PAGES; i++) {
			uint8_t got = (uint8_t)p[b * HPAGE_SIZE + i * PAGE_BYTES];
			if (b == 3 && i >= HPAGE_PAGES * 3 / 4 && got == 0)
				continue; /* discarded, as MADV_FREE allowed */
			assert_int_equal(got, pattern(b, i));
		}
	munmap(p, 4 * HPAGE_SIZE);
}

static ssize_t failing_madvise(int pidfd, const struct iovec *iov, size_t vlen, int advice, unsigned int flags)
{
	(void)pidfd, (void)iov, (void)flags;
	assert_int_equal(advice, MADV_PAGEOUT);
	probe_calls++;
	probe_iovs += vlen;
	errno = EINVAL; /* a kernel without MADV_PAGEOUT in process_madvise */
	return -1;
}

/* The probe fails (or does nothing): what kpageflags says afterwards still
 * decides, so the lazy-free blocks stay out and nothing changed. */
static void test_lazy_mix_probe_fails(void **state)
{
	struct fixture *f = *state;
	char *p = lazy_mix();
	enum scan_result r[4];
	struct seen seen;

	scan_mix_probed(f, p, r, &seen, failing_madvise);
	assert_int_equal(probe_calls, 1);
	assert_int_equal(probe_iovs, 3);
	assert_int_equal(seen.n, 1);
	assert_int_equal(seen.addr[0], (uintptr_t)p + 2 * HPAGE_SIZE);
	for (int b = 0; b < 4; b++)
		assert_int_equal(r[b], SCAN_CANDIDATE); /* nothing discarded */
	munmap(p, 4 * HPAGE_SIZE);
}

/* Every lazy-free page written again: smaps LazyFree is 0 while kpageflags
 * still says lazy-free, so the block is collapsed without a probe. */
static void test_lazy_all_redirtied(void **state)
{
	struct fixture *f = *state;
	char *p = map_blocks(1);
	assert_non_null(p);
	touch(p, HPAGE_SIZE, PAGE_BYTES);
	assert_int_equal(madvise(p, HPAGE_SIZE, MADV_FREE), 0);
	touch(p, HPAGE_SIZE, PAGE_BYTES);
	struct vma v = smaps_vma(f, p);
	assert_int_equal(v.lazyfree_kb, 0);
	range_scanner_set_probe(&f->s, counting_madvise);
	probe_calls = 0;
	assert_int_equal(scan_vma_one(&f->s, &v, true, &lim), SCAN_CANDIDATE);
	range_scanner_set_probe(&f->s, NULL);
	assert_int_equal(probe_calls, 0);
	munmap(p, HPAGE_SIZE);
}

/* ---- a hostile reservation --------------------------------------------- */

#define HOSTILE_SIZE (UINT64_C(64) << 40)  /* 64 TiB: MAP_NORESERVE costs no memory */
#define HOSTILE_FAR  (UINT64_C(100) << 30) /* past the read path's first bound (64 GiB) */

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Any unprivileged process can reserve 64 TiB and touch two blocks of it:
 * the first full then 64 of its pages MADV_FREEd (so the VMA's lazy-free
 * count runs), the second 100 GiB further. One scan call costs well under
 * a second on both paths (issue 16: 31-37 s with PAGEMAP_SCAN, 60.9 s on
 * the read path, both walking the whole range). PAGEMAP_SCAN finds both
 * blocks in one call; the read path stops at its bound and finds the far
 * block when resumed, each call within the bound. */
static void test_hostile_reservation(void **state)
{
	struct fixture *f = *state;
	char *raw = mmap(NULL, HOSTILE_SIZE + HPAGE_SIZE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(raw != MAP_FAILED);
	char *p = (char *)(((uintptr_t)raw + HPAGE_SIZE - 1) & ~(uintptr_t)(HPAGE_SIZE - 1));
	if (p > raw)
		munmap(raw, (size_t)(p - raw));
	munmap(p + HOSTILE_SIZE, (size_t)(raw + HPAGE_SIZE - p));
	assert_int_equal(madvise(p, HOSTILE_SIZE, MADV_NOHUGEPAGE), 0); /* 4K pages, and khugepaged keeps off */
	touch(p, HPAGE_SIZE, PAGE_BYTES);
	assert_int_equal(madvise_free_drained(p, 64 * PAGE_BYTES), 0);
	touch(p + HOSTILE_FAR, HPAGE_SIZE, PAGE_BYTES);

	struct vma v = smaps_vma(f, p);
	uint64_t nblocks = HOSTILE_SIZE / HPAGE_SIZE;
	uint64_t res[SCAN_NR_RESULTS] = {0};
	struct seen seen = {0};
	struct timespec t0;
	double took;
	int r;

	assert_true(v.lazyfree_kb > 0);
	assert_int_equal(range_scanner_attach(&f->s, f->self_dirfd, getpid()), 0); /* a fresh bound: a new pass */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = range_scan_vma(&f->s, &v, true, &lim, res, on_candidate, &seen);
	took = seconds_since(&t0);
	print_message("64 TiB, first call: %.3f s, %d\n", took, r);
	assert_true(took < 1.0);
	assert_int_equal(res[SCAN_PAGE_LAZYFREE], 1);
	if (f->mode == PAGEMAP_AUTO) {
		assert_int_equal(r, 0);
		assert_int_equal(seen.n, 1);
		assert_int_equal(seen.addr[0], (uintptr_t)p + HOSTILE_FAR);
		assert_int_equal(res[SCAN_NO_PTE_TABLE], nblocks - 2);
	} else {
		uint64_t calls = 1;

		assert_int_equal(r, -EINPROGRESS);
		assert_int_equal(f->s.stopped_at, (uintptr_t)p + PM_PAGES_PER_ATTACH * PAGE_BYTES);
		assert_int_equal(seen.n, 0);
		/* Each attach (a pass) resumes where the last stopped. */
		while (r == -EINPROGRESS && seen.n == 0) {
			uint64_t from = f->s.stopped_at;

			assert_int_equal(range_scanner_attach(&f->s, f->self_dirfd, getpid()), 0);
			clock_gettime(CLOCK_MONOTONIC, &t0);
			r = range_scan_vma_from(&f->s, &v, from, true, &lim, res, on_candidate, &seen);
			took = seconds_since(&t0);
			assert_true(took < 1.0);
			assert_true(f->s.stopped_at > from || r == 0);
			calls++;
		}
		print_message("64 TiB, far block found in call %llu (%.3f s)\n", (unsigned long long)calls, took);
		assert_int_equal(calls, 2);
		assert_int_equal(seen.n, 1);
		assert_int_equal(seen.addr[0], (uintptr_t)p + HOSTILE_FAR);
	}
	munmap(p, HOSTILE_SIZE);
}

int main(void)
{
	/* Each runs twice: once per path, in the two groups below. */
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_four_blocks),
	    cmocka_unit_test(test_empty_vma_not_read),
	    cmocka_unit_test(test_lazyfree),
	    cmocka_unit_test(test_lazyfree_unknowable),
	    cmocka_unit_test(test_zero_pages),
	    cmocka_unit_test(test_shared_after_fork),
	    cmocka_unit_test(test_dead_process),
	    cmocka_unit_test(test_pmd_mapped_vma),
	    cmocka_unit_test(test_lazy_mix_no_probe),
	    cmocka_unit_test(test_lazy_mix_probe),
	    cmocka_unit_test(test_lazy_mix_probe_fails),
	    cmocka_unit_test(test_lazy_all_redirtied),
	    cmocka_unit_test(test_hostile_reservation),
	};
	int failed = cmocka_run_group_tests_name("pagemap_scan", tests, setup_scan, teardown);
	failed += cmocka_run_group_tests_name("pagemap_read", tests, setup_read, teardown);
	return failed;
}
