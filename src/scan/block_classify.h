/* SPDX-License-Identifier: GPL-2.0-or-later */
/* block_classify: decide one 2 MiB block from its page counts. Pure. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "scan_result.h"

/* What the page tables say about the 512 pages of one block. */
struct block_counts {
	uint16_t present;  /* present, not the zero page */
	uint16_t zero;     /* mapped to the shared zero page */
	uint16_t swapped;  /* swap (or migration) entries */
	uint16_t huge;     /* pages mapped by a PMD */
	uint16_t shared;   /* present but not exclusively mapped (pagemap bit 56) */
	uint16_t lazyfree; /* kpageflags ANON set, SWAPBACKED clear */
	/* Of LAZY_SAMPLE pages at fixed offsets, those kpageflags reads
	 * lazy-free (range_scan.c: for the re-check before collapse). */
	uint8_t lazy_sampled;
};

#define LAZY_SAMPLE 8u

/* The block-level decision, in khugepaged's order:
 * PMD_MAPPED, NO_PTE_TABLE, EXCEED_NONE_PTE, EXCEED_SWAP_PTE,
 * EXCEED_SHARED_PTE (anonymous memory only: sharing of page cache is not
 * broken by a collapse), PAGE_LAZYFREE, else CANDIDATE. */
enum scan_result classify_block(const struct block_counts *c, bool anon, const struct collapse_limits *lim);

/* Pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst). */
#define PM_PFN_MASK       ((UINT64_C(1) << 55) - 1)
#define PM_SOFT_DIRTY     (UINT64_C(1) << 55)
#define PM_MMAP_EXCLUSIVE (UINT64_C(1) << 56)
#define PM_FILE           (UINT64_C(1) << 61)
#define PM_SWAP           (UINT64_C(1) << 62)
#define PM_PRESENT        (UINT64_C(1) << 63)

/* kpageflags bits (include/uapi/linux/kernel-page-flags.h). */
#define KPF_ANON          12
#define KPF_SWAPBACKED    14
#define KPF_COMPOUND_HEAD 15
#define KPF_THP           22
#define KPF_ZERO_PAGE     24

/* Fills counts from 512 plain pagemap entries. kpf[i] are the kpageflags of
 * the page behind pm[i] (ignored where pm[i] is not present), or kpf is NULL
 * when PFNs are not available; then zero pages, huge and lazy-free pages
 * cannot be told and count as present / 0 / 0. */
void block_counts_from_pagemap(const uint64_t pm[HPAGE_PAGES], const uint64_t *kpf, struct block_counts *c);
