/* SPDX-License-Identifier: GPL-2.0-or-later */
/* block_classify and block_counts_from_regions on synthetic page tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "block_classify.h"
#include "range_scan.h"
#include "units.h"

#define KPF(bit) (UINT64_C(1) << (bit))
#define PFN_BASE UINT64_C(0x40000) /* 512-aligned */

static const struct collapse_limits lim = COLLAPSE_LIMITS_DEFAULT;
static uint64_t pm[HPAGE_PAGES], kpf[HPAGE_PAGES];

/* Page i present, exclusive, at a scattered (non-contiguous) PFN. */
static void present(unsigned i)
{
	pm[i] = PM_PRESENT | PM_MMAP_EXCLUSIVE | (PFN_BASE + 2 * i + 1);
	kpf[i] = KPF(KPF_ANON) | KPF(KPF_SWAPBACKED);
}

static void zero_page(unsigned i)
{
	pm[i] = PM_PRESENT | 0x1234; /* the zero page is never exclusive */
	kpf[i] = KPF(KPF_ZERO_PAGE);
}

static void swapped(unsigned i)
{
	pm[i] = PM_SWAP | (UINT64_C(77) << 5);
	kpf[i] = 0;
}

static int reset(void **state)
{
	(void)state;
	memset(pm, 0, sizeof(pm));
	memset(kpf, 0, sizeof(kpf));
	return 0;
}

static enum scan_result classify_pm(const uint64_t *k, bool anon, const struct collapse_limits *l,
				    struct block_counts *c)
{
	block_counts_from_pagemap(pm, k, c);
	return classify_block(c, anon, l);
}

static void test_pmd_mapped(void **state)
{
	(void)state;
	struct block_counts c;
	for (unsigned i = 0; i < HPAGE_PAGES; i++) {
		pm[i] = PM_PRESENT | PM_MMAP_EXCLUSIVE | (PFN_BASE + i);
		kpf[i] = KPF(KPF_ANON) | KPF(KPF_SWAPBACKED) | KPF(KPF_THP);
	}
	kpf[0] |= KPF(KPF_COMPOUND_HEAD);
	assert_int_equal(classify_pm(kpf, true, &lim, &c), SCAN_PMD_MAPPED);
	assert_int_equal(c.huge, HPAGE_PAGES);
	assert_int_equal(c.present, HPAGE_PAGES);

	/* Without kpageflags a THP cannot be told from 512 small pages. */
	assert_int_equal(classify_pm(NULL, true, &lim, &c), SCAN_CANDIDATE);
	assert_int_equal(c.huge, 0);

	/* Not starting at an aligned PFN: not one PMD-sized folio. */
	for (unsigned i = 0; i < HPAGE_PAGES; i++)
		pm[i] = PM_PRESENT | PM_MMAP_EXCLUSIVE | (PFN_BASE + 1 + i);
	assert_int_equal(classify_pm(kpf, true, &lim, &c), SCAN_CANDIDATE);

	/* Contiguous small folios (mTHPs): a second head inside the run. */
	kpf[64] |= KPF(KPF_COMPOUND_HEAD);
	assert_int_equal(classify_pm(kpf, true, &lim, &c), SCAN_CANDIDATE);
	kpf[64] &= ~KPF(KPF_COMPOUND_HEAD);

	/* A gap in the PFN run. */
	for (unsigned i = 0; i < HPAGE_PAGES; i++)
		pm[i] = PM_PRESENT | PM_MMAP_EXCLUSIVE | (PFN_BASE + i);
	pm[300] += 1;
	assert_int_equal(classify_pm(kpf, true, &lim, &c), SCAN_CANDIDATE);
}

static void test_huge_zero_page_is_pmd_mapped(void **state)
{
	(void)state;
	struct block_counts c;
	for (unsigned i = 0; i < HPAGE_PAGES; i++) {
		pm[i] = PM_PRESENT | (PFN_BASE + i);
		kpf[i] = KPF(KPF_ZERO_PAGE) | KPF(KPF_THP);
	}
	assert_int_equal(classify_pm(kpf, true, &lim, &c), SCAN_PMD_MAPPED);
	assert_int_equal(c.zero, HPAGE_PAGES);
	assert_int_equal(c.present, 0);
}

static void test_no_pte_table(void **state)
{
	(void)state;
	struct block_counts c;
	assert_int_equal(classify_pm(kpf, true, &lim, &c), SCAN_NO_PTE_TABLE);
	/* Only zero pages: also nothing worth collapsing. */
	for (unsigned i = 0; i < HPAGE_PAGES; i++)
		zero_page(i);
	assert_int_equal(classify_pm(kpf, true, &lim, &c), SCAN_NO_PTE_TABLE);
	assert_int_equal(c.zero, HPAGE_PAGES);
	/* One swapped page is a page table with content. */
	swapped(0);
	struct collapse_limits l = lim;
	l.max_ptes_none = 511;
	l.max_ptes_swap = 1;
	assert_int_equal(classify_pm(kpf, true, &l, &c), SCAN_CANDIDATE);
}

static void test_exceed_none_boundary(void **state)
{
	(void)state;
	struct block_counts c;
	/* 257 present: 255 none == max_ptes_none, allowed. */
	for (unsigned i = 0; i < 257; i++)
		present(i);
	assert_int_equal(classify_pm(kpf, true, &lim, &c), SCAN_CANDIDATE);
	pm[256] = 0; /* 256 none: one over */
	assert_int_equal(classify_pm(kpf, true, &lim, &c), SCAN_EXCEED_NONE_PTE);
}

static void test_exceed_none_counts_zero_pages(void **state)
{
	(void)state;
	struct block_counts c;
	for (unsigned i = 0; i < 257; i++)
		present(i);
	for (unsigned i = 257; i < HPAGE_PAGES; i++)
		zero_page(i);
	assert_int_equal(classify_pm(kpf, true, &lim, &c), SCAN_CANDIDATE);
	zero_page(256);
	assert_int_equal(classify_pm(kpf, true, &lim, &c), SCAN_EXCEED_NONE_PTE);
	assert_int_equal(c.zero, 256);
	assert_int_equal(c.present, 256);
	assert_int_equal(c.shared, 0); /* zero pages are not shared anon pages */
}

static void test_exceed_swap_boundary(void **state)
{
	(void)state;
	struct block_counts c;
	struct collapse_limits l = lim;
	for (unsigned i = 0; i < HPAGE_PAGES; i++)
		present(i);
	swapped(10);
	swapped(11);
	l.max_ptes_swap = 2;
	assert_int_equal(classify_pm(kpf, true, &l, &c), SCAN_CANDIDATE);
	assert_int_equal(c.swapped, 2);
	l.max_ptes_swap = 1;
	assert_int_equal(classify_pm(kpf, true, &l, &c), SCAN_EXCEED_SWAP_PTE);
}

static void test_exceed_shared_anon_only(void **state)
{
	(void)state;
	struct block_counts c;
	struct collapse_limits l = lim;
	for (unsigned i = 0; i < HPAGE_PAGES; i++)
		present(i);
	pm[5] &= ~PM_MMAP_EXCLUSIVE;
	pm[6] &= ~PM_MMAP_EXCLUSIVE;
	assert_int_equal(classify_pm(kpf, true, &l, &c), SCAN_EXCEED_SHARED_PTE);
	assert_int_equal(c.shared, 2);
	/* Shared page cache stays shared after a collapse. */
	assert_int_equal(classify_pm(kpf, false, &l, &c), SCAN_CANDIDATE);
	l.max_ptes_shared = 2;
	assert_int_equal(classify_pm(kpf, true, &l, &c), SCAN_CANDIDATE);
	l.max_ptes_shared = 1;
	assert_int_equal(classify_pm(kpf, true, &l, &c), SCAN_EXCEED_SHARED_PTE);
}

static void test_page_lazyfree(void **state)
{
	(void)state;
	struct block_counts c;
	for (unsigned i = 0; i < HPAGE_PAGES; i++)
		present(i);
	kpf[100] &= ~KPF(KPF_SWAPBACKED);
	assert_int_equal(classify_pm(kpf, true, &lim, &c), SCAN_PAGE_LAZYFREE);
	assert_int_equal(c.lazyfree, 1);
	/* Page cache is not swap-backed either, but not anonymous. */
	kpf[100] = 0;
	assert_int_equal(classify_pm(kpf, true, &lim, &c), SCAN_CANDIDATE);
	assert_int_equal(c.lazyfree, 0);
}

static void test_candidate(void **state)
{
	(void)state;
	struct block_counts c;
	for (unsigned i = 0; i < HPAGE_PAGES; i++)
		present(i);
	for (unsigned i = 1; i < 200; i += 2)
		zero_page(i);
	assert_int_equal(classify_pm(kpf, true, &lim, &c), SCAN_CANDIDATE);
	assert_int_equal(c.present, 412);
	assert_int_equal(c.zero, 100);
	assert_int_equal(c.huge, 0);
}

static void test_order(void **state)
{
	(void)state;
	/* Every limit exceeded at once: khugepaged's order decides. */
	struct block_counts c = {.present = 100, .swapped = 10, .shared = 10, .lazyfree = 10};
	assert_int_equal(classify_block(&c, true, &lim), SCAN_EXCEED_NONE_PTE);
	c.present = 500;
	assert_int_equal(classify_block(&c, true, &lim), SCAN_EXCEED_SWAP_PTE);
	c.swapped = 0;
	assert_int_equal(classify_block(&c, true, &lim), SCAN_EXCEED_SHARED_PTE);
	c.shared = 0;
	assert_int_equal(classify_block(&c, true, &lim), SCAN_PAGE_LAZYFREE);
	c.huge = 512;
	assert_int_equal(classify_block(&c, true, &lim), SCAN_PMD_MAPPED);
}

#define BASE    (UINT64_C(0x7f0000000000))
#define PRESENT HC_PAGE_IS_PRESENT

static void test_regions_span_blocks(void **state)
{
	(void)state;
	struct block_counts c[4] = {0};
	const struct hc_page_region r[] = {
	    /* 1 MIB_BYTES into block 0 up to 4 KiB into block 2 */
	    {BASE + 1 * MIB_BYTES, BASE + 4 * MIB_BYTES + 4096, PRESENT},
	    {BASE + 4 * MIB_BYTES + 4096, BASE + 4 * MIB_BYTES + 3 * 4096, PRESENT | HC_PAGE_IS_PFNZERO},
	    {BASE + 5 * MIB_BYTES, BASE + 6 * MIB_BYTES + 8192, HC_PAGE_IS_SWAPPED},
	    {BASE + 7 * MIB_BYTES, BASE + 8 * MIB_BYTES, HC_PAGE_IS_HUGE}, /* empty PMD: nothing */
	};
	block_counts_from_regions(r, 4, BASE, 4, c);
	assert_int_equal(c[0].present, 256);
	assert_int_equal(c[1].present, 512);
	assert_int_equal(c[2].present, 1);
	assert_int_equal(c[2].zero, 2);
	assert_int_equal(c[2].swapped, 256);
	assert_int_equal(c[3].swapped, 2);
	assert_int_equal(c[3].present + c[3].zero + c[3].huge, 0);
	assert_int_equal(classify_block(&c[0], true, &lim), SCAN_EXCEED_NONE_PTE);
	assert_int_equal(classify_block(&c[1], true, &lim), SCAN_CANDIDATE);
}

static void test_regions_clamped_and_added(void **state)
{
	(void)state;
	struct block_counts c[2] = {{.present = 3}, {0}};
	/* Runs reaching outside the range are cut at its edges. */
	const struct hc_page_region r[] = {
	    {BASE - 4 * MIB_BYTES, BASE + 4096, PRESENT},
	    {BASE + 4 * MIB_BYTES - 4096, BASE + 10 * MIB_BYTES, PRESENT},
	};
	block_counts_from_regions(r, 2, BASE, 2, c);
	assert_int_equal(c[0].present, 4);
	assert_int_equal(c[1].present, 1);
}

static void test_regions_huge_8g(void **state)
{
	(void)state;
	enum { N = 4096 }; /* 8 GiB in one run */
	static struct block_counts c[N + 1];
	const struct hc_page_region r = {BASE, BASE + N * 2 * MIB_BYTES, PRESENT | HC_PAGE_IS_HUGE};
	block_counts_from_regions(&r, 1, BASE, N + 1, c);
	for (unsigned i = 0; i < N; i++) {
		assert_int_equal(c[i].huge, HPAGE_PAGES);
		assert_int_equal(c[i].present, HPAGE_PAGES);
	}
	assert_int_equal(c[N].huge, 0);
	assert_int_equal(classify_block(&c[N - 1], true, &lim), SCAN_PMD_MAPPED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_pmd_mapped, reset),
	    cmocka_unit_test_setup(test_huge_zero_page_is_pmd_mapped, reset),
	    cmocka_unit_test_setup(test_no_pte_table, reset),
	    cmocka_unit_test_setup(test_exceed_none_boundary, reset),
	    cmocka_unit_test_setup(test_exceed_none_counts_zero_pages, reset),
	    cmocka_unit_test_setup(test_exceed_swap_boundary, reset),
	    cmocka_unit_test_setup(test_exceed_shared_anon_only, reset),
	    cmocka_unit_test_setup(test_page_lazyfree, reset),
	    cmocka_unit_test_setup(test_candidate, reset),
	    cmocka_unit_test(test_order),
	    cmocka_unit_test(test_regions_span_blocks),
	    cmocka_unit_test(test_regions_clamped_and_added),
	    cmocka_unit_test(test_regions_huge_8g),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
