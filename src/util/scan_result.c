/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Names for scan results, as used in output and metrics labels. */
#include "scan_result.h"

const char *scan_result_name(enum scan_result r)
{
	static const char *const names[SCAN_NR_RESULTS] = {
	    [SCAN_CANDIDATE] = "candidate",
	    [SCAN_PMD_MAPPED] = "pmd_mapped",
	    [SCAN_NO_PTE_TABLE] = "no_pte_table",
	    [SCAN_EXCEED_NONE_PTE] = "exceed_none_pte",
	    [SCAN_EXCEED_SWAP_PTE] = "exceed_swap_pte",
	    [SCAN_EXCEED_SHARED_PTE] = "exceed_shared_pte",
	    [SCAN_PAGE_LAZYFREE] = "page_lazyfree",
	    [SCAN_COLD] = "cold",
	    [SCAN_INELIGIBLE] = "ineligible",
	    [SCAN_THP_POLICY] = "thp_policy",
	    [SCAN_MEMCG_LIMIT] = "memcg_limit",
	    [SCAN_PRCTL_UNKNOWN] = "prctl_unknown",
	    [SCAN_LACK_REFERENCED_PAGE] = "lack_referenced_page",
	};
	return (unsigned)r < SCAN_NR_RESULTS ? names[r] : "unknown";
}
