/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzzes block_counts_from_pagemap() + classify_block() on one block.
 *
 * Input: flags (1 byte: bit 0 anon, bit 1 kpageflags known), limits
 * (4 x le16), 512 le64 pagemap entries, 512 le64 kpageflags; missing bytes
 * read as zero. Seeds are real blocks captured by capture_seeds.c.
 * Checks the counts add up and the decision agrees with them. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "block_classify.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t pm[HPAGE_PAGES], kpf[HPAGE_PAGES];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = {data, size, 0};
	struct collapse_limits lim;
	struct block_counts c;
	uint8_t flags = fuzz_u8(&in);
	bool anon = flags & 1, have_kpf = flags & 2;
	enum scan_result r;

	fuzz_limits(&in, &lim.max_ptes_none, &lim.max_ptes_swap, &lim.max_ptes_shared, &lim.min_referenced_pct);
	fuzz_take(&in, pm, sizeof(pm));
	fuzz_take(&in, kpf, sizeof(kpf));

	block_counts_from_pagemap(pm, have_kpf ? kpf : NULL, &c);
	if ((unsigned)c.present + c.zero + c.swapped > HPAGE_PAGES || c.shared > c.present || c.lazyfree > c.present)
		abort();
	if (c.huge != 0 && c.huge != HPAGE_PAGES)
		abort();
	if (!have_kpf && (c.zero || c.huge || c.lazyfree))
		abort();

	r = classify_block(&c, anon, &lim);
	if (r >= SCAN_COLD)
		abort(); /* COLD and INELIGIBLE are VMA-level, never a block's */
	if (r == SCAN_CANDIDATE &&
	    (c.huge || c.lazyfree || c.swapped > lim.max_ptes_swap ||
	     HPAGE_PAGES - c.present - c.swapped > lim.max_ptes_none || (anon && c.shared > lim.max_ptes_shared)))
		abort();
	return 0;
}
