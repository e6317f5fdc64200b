/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The result of looking at one 2 MiB block, named after khugepaged's
 * enum scan_result (mm/khugepaged.c), and the limits that decide it. */
#pragma once
#include <stdint.h>

#include "units.h"

enum scan_result {
	SCAN_CANDIDATE,         /* worth collapsing */
	SCAN_PMD_MAPPED,        /* already a PMD-mapped THP */
	SCAN_NO_PTE_TABLE,      /* no present or swapped entry: no table, or all none */
	SCAN_EXCEED_NONE_PTE,   /* none + zero-page entries > max_ptes_none */
	SCAN_EXCEED_SWAP_PTE,   /* swapped entries > max_ptes_swap */
	SCAN_EXCEED_SHARED_PTE, /* not-exclusive pages > max_ptes_shared */
	SCAN_PAGE_LAZYFREE,     /* holds a MADV_FREE page */
	SCAN_COLD,              /* VMA Referenced/Rss < min_referenced_pct */
	SCAN_INELIGIBLE,        /* the kernel cannot: VMA flags, kind, alignment, prctl */
	SCAN_THP_POLICY,        /* the THP policy (sysfs modes, hg, scope) says no; khugepaged's SCAN_VMA_CHECK */
	SCAN_MEMCG_LIMIT,       /* would not fit below its memory cgroup's limits now: waits */
	SCAN_PRCTL_UNKNOWN, /* allowed unless the process set PR_THP_DISABLE_EXCEPT_ADVISED, which nothing can tell */
	/* inside a range the process gave MADV_COLD/MADV_PAGEOUT, and its VMA's
	 * Referenced cannot prove a page of it referenced since (cold_ranges.h) */
	SCAN_LACK_REFERENCED_PAGE,
	SCAN_NR_RESULTS,
};

/* "candidate", "pmd_mapped", … : stable names used in output and metrics. */
const char *scan_result_name(enum scan_result r);

/* Per-block limits, like khugepaged's max_ptes_* but with safer defaults. */
struct collapse_limits {
	unsigned max_ptes_none;      /* default 255: at least half populated */
	unsigned max_ptes_swap;      /* default 0 */
	unsigned max_ptes_shared;    /* default 0 */
	unsigned min_referenced_pct; /* default 50 */
};

#define COLLAPSE_LIMITS_DEFAULT                                                                                        \
	{                                                                                                              \
		.max_ptes_none = 255, .max_ptes_swap = 0, .max_ptes_shared = 0, .min_referenced_pct = 50               \
	}
