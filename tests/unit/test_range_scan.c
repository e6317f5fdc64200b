/* range_scan on the real kernel, against this test's own memory. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "range_scan.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define PAGE 4096u

static const struct collapse_limits lim = COLLAPSE_LIMITS_DEFAULT;

struct fixture {
	struct range_scanner s;
	int self_dirfd;
	char *mem; /* 4 blocks: PMD-mapped, 4K-full, untouched, 1 in 16 */
	char *lazy;
	char *mixed; /* 300 written pages, the rest read: zero page */
};

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
	for (size_t off = 0; off < len; off += PAGE)
		sum += (unsigned)p[off];
	return sum;
}

static int setup(void **state)
{
	static struct fixture f;
	if (range_scanner_init(&f.s) != 0)
		return -1;
	f.self_dirfd = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f.self_dirfd < 0 || range_scanner_attach(&f.s, f.self_dirfd) != 0)
		return -1;
	f.mem = map_blocks(4);
	f.lazy = map_blocks(1);
	f.mixed = map_blocks(1);
	if (!f.mem || !f.lazy || !f.mixed)
		return -1;
	touch(f.mem, 2 * HPAGE_SIZE, PAGE);
	touch(f.mem + 3 * HPAGE_SIZE, HPAGE_SIZE, 16 * PAGE);
	/* Only block 0 leaves NOHUGEPAGE, so khugepaged cannot touch the rest. */
	if (madvise(f.mem, HPAGE_SIZE, MADV_HUGEPAGE) || madvise(f.mem, HPAGE_SIZE, MADV_COLLAPSE))
		return -1;
	touch(f.lazy, HPAGE_SIZE, PAGE);
	if (madvise(f.lazy, HPAGE_SIZE, MADV_FREE))
		return -1;
	/* Reading keeps lazy-free pages lazy-free (only a write re-dirties),
	 * and they still hold their data until reclaim takes them. */
	if (read_pages(f.lazy, HPAGE_SIZE) != HPAGE_PAGES)
		return -1;
	touch(f.mixed, 300 * PAGE, PAGE);
	read_pages(f.mixed + 300 * PAGE, HPAGE_SIZE - 300 * PAGE);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	range_scanner_free(&f->s);
	close(f->self_dirfd);
	munmap(f->mem, 4 * HPAGE_SIZE);
	munmap(f->lazy, HPAGE_SIZE);
	munmap(f->mixed, HPAGE_SIZE);
	return 0;
}

static struct vma anon_vma(const char *start, size_t nblocks)
{
	return (struct vma){
	    .start = (uintptr_t)start, .end = (uintptr_t)start + nblocks * HPAGE_SIZE, .kind = VMA_ANON};
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

/* The result of the one block at p. */
static enum scan_result scan_one(struct range_scanner *s, const char *p, bool lazy, const struct collapse_limits *l)
{
	uint64_t res[SCAN_NR_RESULTS] = {0};
	struct vma v = anon_vma(p, 1);
	assert_int_equal(range_scan_vma(s, &v, lazy, l, res, NULL, NULL), 0);
	for (int r = 0; r < SCAN_NR_RESULTS; r++)
		if (res[r]) {
			assert_int_equal(res[r], 1);
			return (enum scan_result)r;
		}
	fail_msg("no result");
	return SCAN_NR_RESULTS;
}

static bool have_kpageflags(const struct range_scanner *s)
{
	return s->have_pfns && s->kpageflags_fd >= 0;
}

static void check_four_blocks(struct fixture *f)
{
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

static void test_scan_four_blocks(void **state)
{
	struct fixture *f = *state;
	if (!f->s.use_scan_ioctl)
		skip();
	struct range_scan_stats before = f->s.stats;
	check_four_blocks(f);
	assert_true(f->s.stats.scan_ioctls > before.scan_ioctls);
}

static void test_fallback_four_blocks(void **state)
{
	struct fixture *f = *state;
	if (!have_kpageflags(&f->s))
		skip(); /* a THP looks like 512 small pages without kpageflags */
	bool saved = f->s.use_scan_ioctl;
	uint64_t ioctls = f->s.stats.scan_ioctls;
	f->s.use_scan_ioctl = false;
	check_four_blocks(f);
	f->s.use_scan_ioctl = saved;
	assert_int_equal(f->s.stats.scan_ioctls, ioctls);
}

static void check_lazyfree(struct fixture *f)
{
	assert_int_equal(scan_one(&f->s, f->lazy, true, &lim), SCAN_PAGE_LAZYFREE);
	assert_int_equal(scan_one(&f->s, f->mem + HPAGE_SIZE, true, &lim), SCAN_CANDIDATE);
}

static void test_scan_lazyfree(void **state)
{
	struct fixture *f = *state;
	if (!f->s.use_scan_ioctl || !have_kpageflags(&f->s))
		skip();
	uint64_t kpf = f->s.stats.kpageflags_preads;
	check_lazyfree(f);
	assert_true(f->s.stats.kpageflags_preads > kpf);
	/* Without check_lazyfree, kpageflags is not read at all. */
	kpf = f->s.stats.kpageflags_preads;
	assert_int_equal(scan_one(&f->s, f->lazy, false, &lim), SCAN_CANDIDATE);
	assert_int_equal(f->s.stats.kpageflags_preads, kpf);
}

static void test_fallback_lazyfree(void **state)
{
	struct fixture *f = *state;
	if (!have_kpageflags(&f->s))
		skip();
	bool saved = f->s.use_scan_ioctl;
	f->s.use_scan_ioctl = false;
	check_lazyfree(f);
	f->s.use_scan_ioctl = saved;
}

/* Lazy-free asked but kpageflags unreadable: never collapse blindly. */
static void test_lazyfree_unknowable(void **state)
{
	struct fixture *f = *state;
	int fd = f->s.kpageflags_fd;
	f->s.kpageflags_fd = -1;
	for (int path = 0; path < 2; path++) {
		bool saved = f->s.use_scan_ioctl;
		f->s.use_scan_ioctl = path == 0 && saved;
		assert_int_equal(scan_one(&f->s, f->mem + HPAGE_SIZE, true, &lim), SCAN_PAGE_LAZYFREE);
		assert_int_equal(scan_one(&f->s, f->mem + HPAGE_SIZE, false, &lim), SCAN_CANDIDATE);
		f->s.use_scan_ioctl = saved;
	}
	f->s.kpageflags_fd = fd;
}

/* Whether a read fault mapped the shared zero page: it is never exclusive.
 * Some kernels never map it (e.g. booted with pvm_no_zero_page=1). */
static bool read_fault_maps_zero_page(const char *p)
{
	uint64_t e = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	bool ok = fd >= 0 && pread(fd, &e, sizeof(e), (off_t)((uintptr_t)p / PAGE * sizeof(e))) == sizeof(e);
	if (fd >= 0)
		close(fd);
	return ok && (e & PM_PRESENT) && !(e & PM_MMAP_EXCLUSIVE);
}

/* Zero-page entries count as none and are not mistaken for shared pages. */
static void test_zero_pages(void **state)
{
	struct fixture *f = *state;
	struct collapse_limits l = lim;
	if (!read_fault_maps_zero_page(f->mixed + 400 * PAGE))
		skip();
	l.max_ptes_none = 212;
	for (int path = 0; path < 2; path++) {
		bool saved = f->s.use_scan_ioctl;
		if (path == 1 && !have_kpageflags(&f->s))
			continue; /* plain pagemap cannot see the zero page */
		f->s.use_scan_ioctl = path == 0 && saved;
		struct seen seen = {0};
		uint64_t res[SCAN_NR_RESULTS] = {0};
		struct vma v = anon_vma(f->mixed, 1);
		assert_int_equal(range_scan_vma(&f->s, &v, false, &l, res, on_candidate, &seen), 0);
		assert_int_equal(res[SCAN_CANDIDATE], 1);
		assert_int_equal(seen.c[0].present, 300);
		assert_int_equal(seen.c[0].zero, 212);
		assert_int_equal(seen.c[0].shared, 0);
		l.max_ptes_none = 211;
		assert_int_equal(scan_one(&f->s, f->mixed, false, &l), SCAN_EXCEED_NONE_PTE);
		l.max_ptes_none = 212;
		f->s.use_scan_ioctl = saved;
	}
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
	enum scan_result r[2][3];
	for (int path = 0; path < 2; path++) {
		bool saved = f->s.use_scan_ioctl;
		f->s.use_scan_ioctl = path == 0 && saved;
		l.max_ptes_shared = 0;
		r[path][0] = scan_one(&f->s, f->mem + HPAGE_SIZE, false, &l);
		l.max_ptes_shared = 511;
		r[path][1] = scan_one(&f->s, f->mem + HPAGE_SIZE, false, &l);
		l.max_ptes_shared = 512; /* no page-by-page look at all */
		r[path][2] = scan_one(&f->s, f->mem + HPAGE_SIZE, false, &l);
		f->s.use_scan_ioctl = saved;
	}
	close(pipefd[1]);
	assert_int_equal(waitpid(child, NULL, 0), child);
	for (int path = 0; path < 2; path++) {
		assert_int_equal(r[path][0], SCAN_EXCEED_SHARED_PTE);
		assert_int_equal(r[path][1], SCAN_EXCEED_SHARED_PTE);
		assert_int_equal(r[path][2], SCAN_CANDIDATE);
	}
}

/* A process that is gone: -ESRCH, not an empty result. */
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
	struct range_scanner s = f->s; /* same buffers, own pagemap fd */
	s.pagemap_fd = -1;
	int att = range_scanner_attach(&s, dirfd);
	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, NULL, 0), child);
	assert_int_equal(att, 0);
	for (int p = 0; p < 2; p++) {
		uint64_t res[SCAN_NR_RESULTS] = {0};
		struct vma v = anon_vma(f->mem, 4); /* inherited by the child */
		s.use_scan_ioctl = p == 0 && f->s.use_scan_ioctl;
		assert_int_equal(range_scan_vma(&s, &v, false, &lim, res, NULL, NULL), -ESRCH);
	}
	range_scanner_detach(&s);
	f->s.regions = s.regions; /* buffers may have grown */
	f->s.regions_cap = s.regions_cap;
	close(dirfd);
}

/* A VMA of PMD-mapped THPs is one PAGEMAP_SCAN call and nothing else. */
static void test_pmd_mapped_vma_is_one_ioctl(void **state)
{
	struct fixture *f = *state;
	if (!f->s.use_scan_ioctl)
		skip();
	enum { N = 64 };
	char *p = map_blocks(N);
	assert_non_null(p);
	madvise(p, N * HPAGE_SIZE, MADV_HUGEPAGE);
	touch(p, N * HPAGE_SIZE, PAGE);
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
	assert_int_equal(f->s.stats.scan_ioctls - before.scan_ioctls, 1);
	assert_int_equal(f->s.stats.pagemap_preads, before.pagemap_preads);
	assert_int_equal(f->s.stats.kpageflags_preads, before.kpageflags_preads);
	print_message("%d PMD-mapped blocks in %ld ns\n", N,
		      (long)((t1.tv_sec - t0.tv_sec) * 1000000000L + t1.tv_nsec - t0.tv_nsec));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_scan_four_blocks),
	    cmocka_unit_test(test_fallback_four_blocks),
	    cmocka_unit_test(test_scan_lazyfree),
	    cmocka_unit_test(test_fallback_lazyfree),
	    cmocka_unit_test(test_lazyfree_unknowable),
	    cmocka_unit_test(test_zero_pages),
	    cmocka_unit_test(test_shared_after_fork),
	    cmocka_unit_test(test_dead_process),
	    cmocka_unit_test(test_pmd_mapped_vma_is_one_ioctl),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
