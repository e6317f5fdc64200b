/* SPDX-License-Identifier: GPL-2.0-or-later */
/* VMA-level eligibility: flags, kind, file alignment, coldness. */
#include "vma_eligibility.h"

void vma_blocks(const struct vma *v, struct vma_blocks *b)
{
	/* Work in block indexes so that VMAs near the top of the address space
	 * (parsed from hostile input) cannot wrap around. */
	const unsigned shift = 21;
	uint64_t lo = v->start >> shift;                               /* first block touched */
	uint64_t first = lo + ((v->start & (HPAGE_SIZE - 1)) ? 1 : 0); /* first whole block */
	uint64_t end_whole = v->end >> shift;                          /* one past the last whole */

	b->first = first << shift;
	b->whole = 0;
	b->partial = 0;
	if (v->end <= v->start)
		return;
	uint64_t hi = (v->end - 1) >> shift; /* last block touched */
	b->whole = end_whole > first ? (size_t)(end_whole - first) : 0;
	b->partial = (size_t)(hi - lo + 1) - b->whole;
}

unsigned vma_referenced_pct(const struct vma *v)
{
	/* Referenced can exceed Rss when pages are faulted in between the two
	 * counts, and huge values must not overflow: clamp to 100. */
	if (v->rss_kb == 0 || v->referenced_kb >= v->rss_kb)
		return 100;
	if (v->referenced_kb > UINT64_MAX / 100)
		return (unsigned)(v->referenced_kb / (v->rss_kb / 100));
	return (unsigned)(v->referenced_kb * 100 / v->rss_kb);
}

enum scan_result vma_verdict(const struct vma *v, const struct collapse_limits *lim, enum scan_result policy,
			     bool file_backed)
{
	/* Without a VmFlags line an nh or hugetlb VMA cannot be told apart. */
	if (policy == SCAN_INELIGIBLE || !v->has_vmflags || (v->vmflags & VMF_INELIGIBLE_MASK) ||
	    v->kind == VMA_SPECIAL)
		return SCAN_INELIGIBLE;
	if (v->kind == VMA_FILE && !file_backed)
		return SCAN_INELIGIBLE;
	/* Page cache THPs must be naturally aligned in the file as well: the
	 * kernel refuses blocks where vm_start/4096 - pgoff is not a multiple
	 * of 512 (thp_vma_suitable_order()). All blocks of a VMA share that. */
	if (v->kind != VMA_ANON && ((v->start - v->offset) & (HPAGE_SIZE - 1)))
		return SCAN_INELIGIBLE;
	if (policy == SCAN_PRCTL_UNKNOWN)
		return policy; /* its own reason: the policy allows it, the process may not */
	if (policy != SCAN_CANDIDATE)
		return SCAN_THP_POLICY;
	if (vma_referenced_pct(v) < lim->min_referenced_pct)
		return SCAN_COLD;
	return SCAN_CANDIDATE;
}
