/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vma_eligibility: the VMA-level decisions, made before any page table is
 * read. Pure. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scan_result.h"
#include "smaps_scan.h"

/* Any of these VmFlags makes a VMA ineligible for MADV_COLLAPSE: nh
 * (MADV_NOHUGEPAGE), ht (hugetlb), io, de (VM_DONTEXPAND), pf (VM_PFNMAP),
 * mm (VM_MIXEDMAP), and userfaultfd in any mode (um, uw, ui). */
#define VMF_INELIGIBLE_MASK (VMF(NH) | VMF(HT) | VMF(IO) | VMF(DE) | VMF(PF) | VMF(MM) | VMF(UM) | VMF(UW) | VMF(UI))

struct vma_blocks {
	uint64_t first; /* first 2 MiB-aligned block wholly inside the VMA */
	size_t whole;   /* blocks wholly inside */
	size_t partial; /* aligned blocks that overlap the VMA only in part */
};

void vma_blocks(const struct vma *v, struct vma_blocks *b);

/* SCAN_INELIGIBLE, SCAN_THP_POLICY, SCAN_COLD, or SCAN_CANDIDATE meaning
 * "scan its blocks", in that order of precedence (what the kernel cannot do
 * before what the policy forbids).
 * policy: the THP policy's verdict on the VMA (thp_vma_check()):
 *   SCAN_CANDIDATE, SCAN_THP_POLICY or SCAN_INELIGIBLE.
 * file_backed: collapse of file-backed (non-shmem) mappings is allowed. */
enum scan_result vma_verdict(const struct vma *v, const struct collapse_limits *lim, enum scan_result policy,
			     bool file_backed);

/* Referenced/Rss in percent; 100 when Rss is 0 (nothing to judge). */
unsigned vma_referenced_pct(const struct vma *v);
