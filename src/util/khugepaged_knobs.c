/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The knobs the daemon changes, and the record of their originals. Pure. */
#include "khugepaged_knobs.h"

#include <string.h>

/* The knobs each mode writes, in the order it writes them, and the value. */
/* off parks khugepaged too where shmem allows PMD pages: enabled=never
 * stops its thread only while no shmem knob does (hugepage_pmd_enabled()
 * counts shmem_enabled, 6.18), and the daemon never changes shmem knobs. */
const struct khugepaged_knob khugepaged_knobs[] = {
    {"khugepaged/scan_sleep_millisecs", "4294967295",
     KHUGEPAGED_MODE_BIT(KHUGEPAGED_IDLE) | KHUGEPAGED_MODE_BIT(KHUGEPAGED_OFF), false},
    {"khugepaged/pages_to_scan", "1", KHUGEPAGED_MODE_BIT(KHUGEPAGED_IDLE) | KHUGEPAGED_MODE_BIT(KHUGEPAGED_OFF),
     false},
    {"hugepages-2048kB/enabled", "never", KHUGEPAGED_MODE_BIT(KHUGEPAGED_OFF), true},
    {"enabled", "never", KHUGEPAGED_MODE_BIT(KHUGEPAGED_OFF), false},
};
const size_t khugepaged_nknobs = sizeof(khugepaged_knobs) / sizeof(khugepaged_knobs[0]);

const struct khugepaged_knob *khugepaged_knob_of(const char *file)
{
	for (size_t i = 0; i < khugepaged_nknobs; i++)
		if (!strcmp(khugepaged_knobs[i].file, file))
			return &khugepaged_knobs[i];
	return NULL;
}

const char *khugepaged_knob_target(const char *file)
{
	const struct khugepaged_knob *k = khugepaged_knob_of(file);

	return k ? k->ours : NULL;
}

const char *khugepaged_original(const struct khugepaged_saved *s, const char *file)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->saved[i].file, file))
			return s->saved[i].value;
	return NULL;
}
