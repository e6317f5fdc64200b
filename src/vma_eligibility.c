/* VMA-level eligibility: flags, kind, file alignment, coldness. */
#include "vma_eligibility.h"

void vma_blocks(const struct vma *v, struct vma_blocks *b)
{
	uint64_t first = (v->start + HPAGE_SIZE - 1) & ~(HPAGE_SIZE - 1);
	uint64_t last = v->end & ~(HPAGE_SIZE - 1); /* end of the last whole block */
	uint64_t lo = v->start & ~(HPAGE_SIZE - 1);
	uint64_t hi = (v->end + HPAGE_SIZE - 1) & ~(HPAGE_SIZE - 1);

	b->first = first;
	b->whole = last > first ? (last - first) / HPAGE_SIZE : 0;
	b->partial = (hi - lo) / HPAGE_SIZE - b->whole;
}

unsigned vma_referenced_pct(const struct vma *v)
{
	if (v->rss_kb == 0)
		return 100;
	return (unsigned)(v->referenced_kb * 100 / v->rss_kb);
}

enum scan_result vma_verdict(const struct vma *v, const struct collapse_limits *lim, bool thp_enabled, bool file_backed)
{
	if (!thp_enabled || (v->vmflags & VMF_INELIGIBLE_MASK) || v->kind == VMA_SPECIAL)
		return SCAN_INELIGIBLE;
	if (v->kind == VMA_FILE && !file_backed)
		return SCAN_INELIGIBLE;
	/* Page cache THPs must be naturally aligned in the file as well: the
	 * kernel refuses blocks where vm_start/4096 - pgoff is not a multiple
	 * of 512 (thp_vma_suitable_order()). All blocks of a VMA share that. */
	if (v->kind != VMA_ANON && ((v->start - v->offset) & (HPAGE_SIZE - 1)))
		return SCAN_INELIGIBLE;
	if (vma_referenced_pct(v) < lim->min_referenced_pct)
		return SCAN_COLD;
	return SCAN_CANDIDATE;
}
