/* SPDX-License-Identifier: GPL-2.0-or-later */
/* block_classify: khugepaged's per-PMD checks, on counts instead of PTEs. */
#include "block_classify.h"

enum scan_result classify_block(const struct block_counts *c, bool anon, const struct collapse_limits *lim)
{
	/* An aligned block is either wholly PMD-mapped or not at all, so any
	 * huge page means the PMD is a leaf. */
	if (c->huge > 0)
		return SCAN_PMD_MAPPED;
	/* Nothing but none and zero-page entries: nothing worth collapsing,
	 * and the kernel would only make a zero-filled THP. */
	if (c->present == 0 && c->swapped == 0)
		return SCAN_NO_PTE_TABLE;
	/* Like khugepaged (is_zero_pfn), zero-page entries count as none. */
	unsigned used = (unsigned)c->present + c->swapped;
	unsigned none_or_zero = used >= HPAGE_PAGES ? 0 : HPAGE_PAGES - used;
	if (none_or_zero > lim->max_ptes_none)
		return SCAN_EXCEED_NONE_PTE;
	if (c->swapped > lim->max_ptes_swap)
		return SCAN_EXCEED_SWAP_PTE;
	/* Page cache stays shared after a collapse; only anonymous pages
	 * would be copied and so unshared. */
	if (anon && c->shared > lim->max_ptes_shared)
		return SCAN_EXCEED_SHARED_PTE;
	if (c->lazyfree > 0)
		return SCAN_PAGE_LAZYFREE;
	return SCAN_CANDIDATE;
}

/* A PMD-mapped THP shows 512 present entries with PFNs running up from a
 * 512-aligned PFN, THP on the first and no other compound head (which would
 * mean several mTHPs). A wholly mapped PTE-mapped THP looks exactly the same
 * here, so it is reported PMD_MAPPED and left alone, although MADV_COLLAPSE
 * could remap it with a PMD without copying. Calling such blocks candidates
 * instead would cost one wasted collapse call per real PMD-mapped THP per
 * pass, which the kernel answers quickly (SCAN_PMD_MAPPED) but for every THP
 * every time. PAGEMAP_SCAN tells the two apart (PAGE_IS_HUGE only for PMD
 * leaves), so only the plain-pagemap fallback pays this. */
static bool looks_pmd_mapped(const uint64_t pm[HPAGE_PAGES], const uint64_t *kpf)
{
	if (!kpf || !(pm[0] & PM_PRESENT) || !(kpf[0] & (UINT64_C(1) << KPF_THP)))
		return false;
	uint64_t pfn0 = pm[0] & PM_PFN_MASK;
	if (pfn0 == 0 || pfn0 % HPAGE_PAGES != 0)
		return false;
	/* A second head inside the run: several smaller (mTHP) folios. */
	for (unsigned i = 1; i < HPAGE_PAGES; i++)
		if (!(pm[i] & PM_PRESENT) || (pm[i] & PM_PFN_MASK) != pfn0 + i ||
		    (kpf[i] & (UINT64_C(1) << KPF_COMPOUND_HEAD)))
			return false;
	return true;
}

void block_counts_from_pagemap(const uint64_t pm[HPAGE_PAGES], const uint64_t *kpf, struct block_counts *c)
{
	*c = (struct block_counts){0};
	for (unsigned i = 0; i < HPAGE_PAGES; i++) {
		uint64_t e = pm[i];
		if (e & PM_PRESENT) {
			uint64_t f = kpf ? kpf[i] : 0;
			if (f & (UINT64_C(1) << KPF_ZERO_PAGE)) {
				c->zero++;
				continue;
			}
			c->present++;
			if (!(e & PM_MMAP_EXCLUSIVE))
				c->shared++;
			if ((f & (UINT64_C(1) << KPF_ANON)) && !(f & (UINT64_C(1) << KPF_SWAPBACKED)))
				c->lazyfree++;
		} else if (e & PM_SWAP) {
			c->swapped++;
		}
	}
	if (looks_pmd_mapped(pm, kpf))
		c->huge = HPAGE_PAGES;
}
