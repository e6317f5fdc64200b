/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzzes block_counts_from_regions() + classify_block() on PAGEMAP_SCAN runs.
 *
 * The function's precondition (range_scan.h) is that runs are sorted and
 * inside the blocks, as the kernel returns them; this target builds only
 * such runs: each is (gap, length) in pages after the previous one, cut at
 * the end of the range. Input: flags (1 byte: bit 0 anon), limits
 * (4 x le16), first block (le64, masked to a 2 MiB-aligned user address),
 * block count (1 byte, 1..64), then runs of le16 gap, le16 length - 1,
 * 1 byte categories. Checks the per-block counts against per-run totals. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_common.h"
#include "range_scan.h"
#include "units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_BLOCKS  64
#define MAX_REGIONS 4096

static struct hc_page_region regions[MAX_REGIONS];
static struct block_counts counts[MAX_BLOCKS];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = {data, size, 0};
	struct collapse_limits lim;
	uint64_t want_swapped = 0, want_zero = 0, want_present = 0, want_huge = 0;
	uint64_t got_swapped = 0, got_zero = 0, got_present = 0, got_huge = 0;
	bool anon = fuzz_u8(&in) & 1;
	size_t nblocks, nr = 0;
	uint64_t first, limit, addr;

	fuzz_limits(&in, &lim.max_ptes_none, &lim.max_ptes_swap, &lim.max_ptes_shared, &lim.min_referenced_pct);
	first = fuzz_u64(&in) & ((UINT64_C(1) << 47) - 1) & ~(HPAGE_SIZE - 1);
	nblocks = fuzz_u8(&in) % MAX_BLOCKS + 1;
	limit = first + nblocks * HPAGE_SIZE;

	for (addr = first; in.pos < in.size && nr < MAX_REGIONS;) {
		uint64_t gap = fuzz_u16(&in), len = (uint64_t)fuzz_u16(&in) + 1, cat = fuzz_u8(&in);
		struct hc_page_region *r = &regions[nr];

		if (gap * PAGE_BYTES >= limit - addr)
			break;
		r->start = addr + gap * PAGE_BYTES;
		r->end = len * PAGE_BYTES > limit - r->start ? limit : r->start + len * PAGE_BYTES;
		r->categories = cat;
		addr = r->end;
		nr++;
		/* What add_run() should make of it, summed over the range. */
		len = (r->end - r->start) / PAGE_BYTES;
		if (cat & HC_PAGE_IS_SWAPPED)
			want_swapped += len;
		else if (!(cat & HC_PAGE_IS_PRESENT))
			continue;
		else if (cat & HC_PAGE_IS_PFNZERO)
			want_zero += len;
		else
			want_present += len;
		if (cat & HC_PAGE_IS_HUGE)
			want_huge += len;
		if (addr >= limit)
			break;
	}

	memset(counts, 0, nblocks * sizeof(*counts));
	block_counts_from_regions(regions, nr, first, nblocks, counts);
	for (size_t b = 0; b < nblocks; b++) {
		const struct block_counts *c = &counts[b];
		enum scan_result r;

		if ((unsigned)c->present + c->zero + c->swapped > HPAGE_PAGES || c->huge > HPAGE_PAGES)
			abort();
		got_swapped += c->swapped;
		got_zero += c->zero;
		got_present += c->present;
		got_huge += c->huge;
		r = classify_block(c, anon, &lim);
		if (r >= SCAN_COLD)
			abort();
	}
	if (got_swapped != want_swapped || got_zero != want_zero || got_present != want_present ||
	    got_huge != want_huge)
		abort();
	return 0;
}
