/* range_scan's zero-page paths on fixture page tables, on any kernel.
 *
 * Whether a read fault maps the shared zero page is a property of the
 * kernel's build (this one boots with pvm_no_zero_page=1 and maps a real
 * page), so the zero-page paths are driven here on fixtures: a pagemap file
 * and a kpageflags file in a temporary directory, and an injected
 * PAGEMAP_SCAN answered from the same entries. test_range_scan checks the
 * real kernel, with the zero page wherever the kernel maps it. Each test
 * runs twice: on the PAGEMAP_SCAN path and on the pre-6.7 pread path. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "range_scan.h"
#include "units.h"

#define KPF(bit) (UINT64_C(1) << (bit))
#define BASE     UINT64_C(0x40000000) /* the fixture's first block: 1 GiB */
#define NBLOCKS  4u
#define ZERO_PFN UINT64_C(0x1a2b)  /* the shared zero page */
#define PFN_BASE UINT64_C(0x40000) /* ordinary anonymous pages from here */

/* struct pm_scan_arg (include/uapi/linux/fs.h), absent from older headers. */
struct pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};

static const struct collapse_limits lim = COLLAPSE_LIMITS_DEFAULT;

/* The page tables of NBLOCKS blocks from BASE:
 *  0: 300 exclusive pages, then 212 zero-page entries;
 *  1: 300 exclusive pages, 200 zero-page entries, 12 pages shared (fork);
 *  2: 512 zero-page entries (a buffer only ever read);
 *  3: nothing. */
static uint64_t pm[NBLOCKS * HPAGE_PAGES];

struct fixture {
	char dir[32];
	int dirfd;
	enum pagemap_mode mode;
	struct range_scanner s;
};

static void set_exclusive(size_t i)
{
	pm[i] = PM_PRESENT | PM_MMAP_EXCLUSIVE | (PFN_BASE + 2 * i + 1); /* scattered PFNs */
}

/* The zero page is present and never exclusively mapped. */
static void set_zero(size_t i)
{
	pm[i] = PM_PRESENT | ZERO_PFN;
}

static void set_shared(size_t i)
{
	pm[i] = PM_PRESENT | (PFN_BASE + 2 * i + 1);
}

static void build_page_tables(void)
{
	memset(pm, 0, sizeof(pm));
	for (size_t i = 0; i < HPAGE_PAGES; i++) {
		if (i < 300)
			set_exclusive(i);
		else
			set_zero(i);
	}
	for (size_t i = 0; i < HPAGE_PAGES; i++) {
		size_t j = HPAGE_PAGES + i;

		if (i < 300)
			set_exclusive(j);
		else if (i < 500)
			set_zero(j);
		else
			set_shared(j);
	}
	for (size_t i = 0; i < HPAGE_PAGES; i++)
		set_zero(2 * HPAGE_PAGES + i);
}

static int write_at(int fd, const void *buf, size_t len, uint64_t off)
{
	return pwrite(fd, buf, len, (off_t)off) == (ssize_t)len ? 0 : -1;
}

/* pagemap at BASE's entries, kpageflags for every PFN the entries use. */
static int write_files(struct fixture *f, int *kpf_fd)
{
	int fd = openat(f->dirfd, "pagemap", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int r = fd >= 0 ? write_at(fd, pm, sizeof(pm), BASE / PAGE_BYTES * sizeof(uint64_t)) : -1;

	if (fd >= 0)
		close(fd);
	*kpf_fd = openat(f->dirfd, "kpageflags", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (r || *kpf_fd < 0)
		return -1;
	const uint64_t zero = KPF(KPF_ZERO_PAGE), anon = KPF(KPF_ANON) | KPF(KPF_SWAPBACKED);
	if (write_at(*kpf_fd, &zero, sizeof(zero), ZERO_PFN * sizeof(uint64_t)))
		return -1;
	for (size_t i = 0; i < NBLOCKS * HPAGE_PAGES; i++) {
		uint64_t pfn = pm[i] & PM_PFN_MASK;

		if ((pm[i] & PM_PRESENT) && pfn != ZERO_PFN &&
		    write_at(*kpf_fd, &anon, sizeof(anon), pfn * sizeof(anon)))
			return -1;
	}
	return 0;
}

/* PAGEMAP_SCAN as the kernel answers it (fs/proc/task_mmu.c): runs of pages
 * with equal categories, PAGE_IS_PFNZERO where the PTE maps the zero page,
 * holes left out; walk_end says how far it got when vec fills up. */
static unsigned fake_scans;
static int fake_pagemap_scan(int fd, void *arg)
{
	struct pm_scan_arg *a = arg;
	struct hc_page_region *vec = (struct hc_page_region *)(uintptr_t)a->vec;
	const uint64_t fixture_end = BASE + sizeof(pm) / sizeof(pm[0]) * PAGE_BYTES;
	int n = 0;

	(void)fd;
	fake_scans++;
	a->walk_end = a->end;
	for (uint64_t addr = a->start; addr < a->end; addr += PAGE_BYTES) {
		uint64_t e = addr >= BASE && addr < fixture_end ? pm[(addr - BASE) / PAGE_BYTES] : 0, cat = 0;

		if (e & PM_PRESENT)
			cat = HC_PAGE_IS_PRESENT | ((e & PM_PFN_MASK) == ZERO_PFN ? HC_PAGE_IS_PFNZERO : 0);
		else if (e & PM_SWAP)
			cat = HC_PAGE_IS_SWAPPED;
		if (!(cat & a->category_anyof_mask))
			continue;
		cat &= a->return_mask;
		if (n > 0 && vec[n - 1].end == addr && vec[n - 1].categories == cat) {
			vec[n - 1].end += PAGE_BYTES;
			continue;
		}
		if ((uint64_t)n == a->vec_len) {
			a->walk_end = addr;
			break;
		}
		vec[n++] = (struct hc_page_region){addr, addr + PAGE_BYTES, cat};
	}
	return n;
}

/* Removes the fixture's files and frees it; also after a failed setup. */
static void fixture_free(struct fixture *f)
{
	range_scanner_free(&f->s);
	if (f->dirfd >= 0) {
		unlinkat(f->dirfd, "pagemap", 0);
		unlinkat(f->dirfd, "kpageflags", 0);
		close(f->dirfd);
		rmdir(f->dir);
	}
	free(f);
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
	int kpf_fd = -1;

	if (!f)
		return -1;
	f->dirfd = -1;
	f->s.pagemap_fd = f->s.kpageflags_fd = -1;
	strcpy(f->dir, "/tmp/hc-zero.XXXXXX");
	build_page_tables();
	if (!mkdtemp(f->dir) || (f->dirfd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    write_files(f, &kpf_fd) || range_scanner_init(&f->s, mode, real_paths())) {
		if (kpf_fd >= 0)
			close(kpf_fd);
		fixture_free(f);
		return -1;
	}
	/* The fixture's, whatever this kernel and this process may see. */
	f->mode = mode;
	f->s.use_scan_ioctl = mode == PAGEMAP_AUTO;
	f->s.scan_ioctl = fake_pagemap_scan;
	f->s.have_pfns = true;
	if (f->s.kpageflags_fd >= 0)
		close(f->s.kpageflags_fd);
	f->s.kpageflags_fd = kpf_fd;
	if (range_scanner_attach(&f->s, f->dirfd, 0)) {
		fixture_free(f);
		return -1;
	}
	fake_scans = 0;
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
	/* The injected PAGEMAP_SCAN was what the scan path read. */
	int r = (f->mode == PAGEMAP_AUTO) == (fake_scans > 0) ? 0 : -1;

	fixture_free(f);
	return r;
}

/* Block b as smaps would show it: 2 MiB resident, nothing lazy-free. */
static struct vma vma_of(unsigned b, unsigned nblocks)
{
	return (struct vma){.start = BASE + b * HPAGE_SIZE,
			    .end = BASE + (b + nblocks) * HPAGE_SIZE,
			    .kind = VMA_ANON,
			    .rss_kb = nblocks * 2048};
}

struct seen {
	unsigned n;
	uint64_t addr;
	struct block_counts c;
};

static void on_candidate(void *ctx, uint64_t addr, const struct block_counts *c)
{
	struct seen *s = ctx;

	if (s->n++ == 0) {
		s->addr = addr;
		s->c = *c;
	}
}

/* The one result of block b, scanned as a VMA of its own; the candidate's
 * counts in *seen. */
static enum scan_result scan_block(struct fixture *f, unsigned b, bool lazy, const struct collapse_limits *l,
				   struct seen *seen)
{
	uint64_t res[SCAN_NR_RESULTS] = {0};
	struct vma v = vma_of(b, 1);
	struct seen dummy = {0};

	seen = seen ? seen : &dummy;
	*seen = (struct seen){0};
	assert_int_equal(range_scan_vma(&f->s, &v, lazy, l, res, on_candidate, seen), 0);
	for (int r = 0; r < SCAN_NR_RESULTS; r++)
		if (res[r]) {
			assert_int_equal(res[r], 1);
			assert_int_equal(seen->n, r == SCAN_CANDIDATE);
			return (enum scan_result)r;
		}
	fail_msg("no result");
	return SCAN_NR_RESULTS;
}

/* Zero-page entries count as none (khugepaged's is_zero_pfn), and are not
 * mistaken for shared pages although they are never exclusive: on both
 * paths, with kpageflags read for lazy-free or not. */
static void test_zero_counts_as_none(void **state)
{
	struct fixture *f = *state;
	struct collapse_limits l = lim;
	struct seen seen;

	for (int lazy = 0; lazy < 2; lazy++) {
		l.max_ptes_none = 212;
		assert_int_equal(scan_block(f, 0, lazy, &l, &seen), SCAN_CANDIDATE);
		assert_int_equal(seen.addr, BASE);
		assert_int_equal(seen.c.present, 300);
		assert_int_equal(seen.c.zero, 212);
		assert_int_equal(seen.c.shared, 0);
		assert_int_equal(seen.c.lazyfree, 0);
		l.max_ptes_none = 211;
		assert_int_equal(scan_block(f, 0, lazy, &l, NULL), SCAN_EXCEED_NONE_PTE);
	}
}

/* Shared pages among zero-page entries still count as shared, and only
 * they do. */
static void test_shared_beside_zero(void **state)
{
	struct fixture *f = *state;
	struct collapse_limits l = lim;
	struct seen seen;

	l.max_ptes_none = 200;
	l.max_ptes_shared = 12;
	assert_int_equal(scan_block(f, 1, false, &l, &seen), SCAN_CANDIDATE);
	assert_int_equal(seen.c.present, 312);
	assert_int_equal(seen.c.zero, 200);
	assert_int_equal(seen.c.shared, 12);
	l.max_ptes_shared = 11;
	assert_int_equal(scan_block(f, 1, false, &l, NULL), SCAN_EXCEED_SHARED_PTE);
	l.max_ptes_none = 199;
	l.max_ptes_shared = 12;
	assert_int_equal(scan_block(f, 1, false, &l, NULL), SCAN_EXCEED_NONE_PTE);
}

/* A block of nothing but zero-page entries holds no data: collapsing it
 * would only allocate 2 MiB of zeroes, whatever max_ptes_none allows. */
static void test_all_zero_block(void **state)
{
	struct fixture *f = *state;
	struct collapse_limits l = lim;

	l.max_ptes_none = HPAGE_PAGES - 1;
	l.max_ptes_shared = HPAGE_PAGES;
	assert_int_equal(scan_block(f, 2, false, &l, NULL), SCAN_NO_PTE_TABLE);
	assert_int_equal(scan_block(f, 2, true, &l, NULL), SCAN_NO_PTE_TABLE);
	l.max_ptes_shared = 0;
	assert_int_equal(scan_block(f, 2, false, &l, NULL), SCAN_NO_PTE_TABLE);
}

/* Without kpageflags (no CAP_SYS_ADMIN), PAGEMAP_SCAN still names the zero
 * page; plain pagemap cannot tell it from a shared page, so the read path
 * counts it present and shared: never a candidate under the default
 * max_ptes_shared = 0, never mistaken for data it could collapse. */
static void test_zero_without_kpageflags(void **state)
{
	struct fixture *f = *state;
	struct collapse_limits l = lim;
	struct seen seen;
	int fd = f->s.kpageflags_fd;

	f->s.kpageflags_fd = -1;
	f->s.have_pfns = false;
	l.max_ptes_none = 212;
	if (f->mode == PAGEMAP_AUTO) {
		assert_int_equal(scan_block(f, 0, false, &l, &seen), SCAN_CANDIDATE);
		assert_int_equal(seen.c.zero, 212);
		assert_int_equal(seen.c.shared, 0);
		assert_int_equal(scan_block(f, 2, false, &l, NULL), SCAN_NO_PTE_TABLE);
	} else {
		assert_int_equal(scan_block(f, 0, false, &l, NULL), SCAN_EXCEED_SHARED_PTE);
		assert_int_equal(scan_block(f, 2, false, &l, NULL), SCAN_EXCEED_SHARED_PTE);
	}
	/* Lazy-free asked and unknowable: never a candidate either. */
	assert_int_equal(scan_block(f, 0, true, &l, NULL),
			 f->mode == PAGEMAP_AUTO ? SCAN_PAGE_LAZYFREE : SCAN_EXCEED_SHARED_PTE);
	f->s.kpageflags_fd = fd;
	f->s.have_pfns = true;
}

/* The four blocks as one VMA: one result each, the candidate in place. */
static void test_whole_vma(void **state)
{
	struct fixture *f = *state;
	struct collapse_limits l = lim;
	uint64_t res[SCAN_NR_RESULTS] = {0};
	struct seen seen = {0};
	struct vma v = vma_of(0, NBLOCKS);

	l.max_ptes_none = 212;
	assert_int_equal(range_scan_vma(&f->s, &v, false, &l, res, on_candidate, &seen), 0);
	assert_int_equal(res[SCAN_CANDIDATE], 1);
	assert_int_equal(res[SCAN_EXCEED_SHARED_PTE], 1);
	assert_int_equal(res[SCAN_NO_PTE_TABLE], 2);
	assert_int_equal(seen.n, 1);
	assert_int_equal(seen.addr, BASE);
	assert_int_equal(seen.c.zero, 212);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_zero_counts_as_none), cmocka_unit_test(test_shared_beside_zero),
	    cmocka_unit_test(test_all_zero_block),      cmocka_unit_test(test_zero_without_kpageflags),
	    cmocka_unit_test(test_whole_vma),
	};
	int failed = cmocka_run_group_tests_name("pagemap_scan", tests, setup_scan, teardown);
	failed += cmocka_run_group_tests_name("pagemap_read", tests, setup_read, teardown);
	return failed;
}
