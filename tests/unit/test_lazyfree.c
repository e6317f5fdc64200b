/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lazyfree: the per-VMA verdict from smaps LazyFree against the kpageflags
 * count, and the /proc/swaps parser. Pure; fixture data only. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "block_classify.h"
#include "lazyfree.h"

/* Counts as the scanner makes them: kpageflags of a block's pages. */
static uint64_t kpf_lazyfree_pages(const uint64_t *pm, const uint64_t *kpf, size_t n)
{
	struct block_counts c;
	uint64_t pmb[HPAGE_PAGES] = {0}, kpfb[HPAGE_PAGES] = {0};

	memcpy(pmb, pm, n * sizeof(*pm));
	memcpy(kpfb, kpf, n * sizeof(*kpf));
	block_counts_from_pagemap(pmb, kpfb, &c);
	return c.lazyfree;
}

static void test_verdicts(void **state)
{
	(void)state;
	/* The case: 8 MiB freed, the first 2 MiB written again. */
	assert_int_equal(lazyfree_vma_verdict(6 * 256, 8 * 256), LAZYFREE_MIXED);
	/* Nothing written again: all clean. */
	assert_int_equal(lazyfree_vma_verdict(8 * 256, 8 * 256), LAZYFREE_ALL_CLEAN);
	/* All written again: smaps sees no clean page. */
	assert_int_equal(lazyfree_vma_verdict(0, 8 * 256), LAZYFREE_ALL_REDIRTIED);
	/* Freed or reclaimed since smaps: more clean than kpageflags sees
	 * errs towards skipping, never towards collapsing. */
	assert_int_equal(lazyfree_vma_verdict(10, 4), LAZYFREE_ALL_CLEAN);
	assert_int_equal(lazyfree_vma_verdict(0, 0), LAZYFREE_ALL_CLEAN);
	assert_int_equal(lazyfree_vma_verdict(5, 0), LAZYFREE_ALL_CLEAN);
	assert_int_equal(lazyfree_vma_verdict(1, 2), LAZYFREE_MIXED);
	assert_int_equal(lazyfree_vma_verdict(UINT64_MAX, UINT64_MAX), LAZYFREE_ALL_CLEAN);
}

/* Fake pagemap + kpageflags: lazy-free is ANON && !SWAPBACKED, whatever the
 * PTE dirty bit says (which is why the counts alone cannot tell). */
static void test_kpageflags_cannot_tell(void **state)
{
	(void)state;
	const uint64_t anon = UINT64_C(1) << KPF_ANON, sb = UINT64_C(1) << KPF_SWAPBACKED;
	uint64_t pm[8], kpf[8];

	for (int i = 0; i < 8; i++) {
		pm[i] = PM_PRESENT | PM_MMAP_EXCLUSIVE | (UINT64_C(1000) + (uint64_t)i * 7);
		kpf[i] = i < 6 ? anon : anon | sb; /* 6 freed (clean or written again), 2 ordinary */
	}
	assert_int_equal(kpf_lazyfree_pages(pm, kpf, 8), 6);
	/* smaps says 4 of those 6 are clean: mixed. */
	assert_int_equal(lazyfree_vma_verdict(4, kpf_lazyfree_pages(pm, kpf, 8)), LAZYFREE_MIXED);
	/* After the MADV_PAGEOUT probe: the 4 clean are gone, the 2 written
	 * again are SWAPBACKED: nothing lazy-free left. */
	for (int i = 0; i < 4; i++)
		pm[i] = 0;
	kpf[4] = kpf[5] = anon | sb;
	assert_int_equal(kpf_lazyfree_pages(pm, kpf, 8), 0);
	/* Not present, or the zero page, never counts. */
	uint64_t pm2[2] = {0, PM_PRESENT | 5}, kpf2[2] = {anon, UINT64_C(1) << KPF_ZERO_PAGE};
	assert_int_equal(kpf_lazyfree_pages(pm2, kpf2, 2), 0);
}

static void test_parse_swaps(void **state)
{
	(void)state;
	static const char none[] = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";
	static const char one[] = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
				  "/dev/vda2                               partition\t1048572\t\t0\t\t-2\n";
	static const char two_no_nl[] = "Filename\tType\tSize\tUsed\tPriority\n/swapfile file 1 0 -2\n/dev/zram0 "
					"partition 4 0 100";
	assert_int_equal(parse_swaps_buf(none, strlen(none)), 0);
	assert_int_equal(parse_swaps_buf(one, strlen(one)), 1);
	assert_int_equal(parse_swaps_buf(two_no_nl, strlen(two_no_nl)), 2);
	/* Hostile: no header, empty, header without newline, blank lines. */
	assert_int_equal(parse_swaps_buf("", 0), -EINVAL);
	assert_int_equal(parse_swaps_buf("garbage\n/dev/x\n", 15), -EINVAL);
	assert_int_equal(parse_swaps_buf("Filename", 8), 0);
	assert_int_equal(parse_swaps_buf("Filename\n\n\n", 11), 0);
	assert_int_equal(parse_swaps_buf("File", 4), -EINVAL);
}

/* The reader agrees with /proc/meminfo's SwapTotal on this machine. */
static void test_swap_configured_here(void **state)
{
	(void)state;
	char buf[8192];
	FILE *f = fopen("/proc/meminfo", "r");
	unsigned long long total_kb = 0;
	bool found = false;

	assert_non_null(f);
	while (fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "SwapTotal: %llu kB", &total_kb) == 1)
			found = true;
	fclose(f);
	assert_true(found);
	assert_int_equal(swap_configured("/proc"), total_kb > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_verdicts),
	    cmocka_unit_test(test_kpageflags_cannot_tell),
	    cmocka_unit_test(test_parse_swaps),
	    cmocka_unit_test(test_swap_configured_here),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
