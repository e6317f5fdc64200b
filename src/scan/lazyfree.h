/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lazyfree: is a MADV_FREE'd page still clean lazy-free, or was it written
 * again?
 *
 * kpageflags cannot tell: a lazy-free page reads ANON && !SWAPBACKED, and a
 * write after MADV_FREE only sets the PTE dirty bit, which userspace cannot
 * see; the page reads the same until reclaim looks at it. Two signals can:
 *
 * 1. smaps LazyFree counts only clean lazy-free pages (it checks the PTE
 *    dirty bit). Compared with the VMA's kpageflags count it is exact when
 *    the VMA is all of one kind (lazyfree_vma_verdict()).
 * 2. On a machine with no swap, MADV_PAGEOUT through process_madvise (5.10+)
 *    is an exact probe. Reclaim discards clean lazy-free pages (which
 *    MADV_FREE allowed) and sets SWAPBACKED again on written ones, data
 *    intact; afterwards kpageflags tells them apart. Checked on 6.18: an
 *    ordinary dirty anonymous page finds no swap to go to and stays mapped
 *    with its data (only PG_active is set, and an mTHP may be split); and
 *    the PTE young bits are left alone (Referenced does not drop). With swap
 *    configured it would swap out hot data: never use it then.
 *    A page freed a moment ago may still wait in another CPU's per-CPU
 *    lazy-free batch (at most 31 pages), SWAPBACKED: no signal sees it
 *    yet, the probe keeps it, and it may be collapsed like a written one.
 *    Cost, measured here: about 0.4 ms per 2 MiB block (1.6 ms for 8 MiB),
 *    a fifth of what collapsing that block costs; it is spent only on blocks
 *    that are about to be collapsed but for their lazy-free pages. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

enum lazyfree_verdict {
	LAZYFREE_ALL_CLEAN,     /* every lazy-free page is clean: skip them */
	LAZYFREE_ALL_REDIRTIED, /* every one was written again: collapse */
	LAZYFREE_MIXED,         /* some of each; which ones, these counts cannot say */
};

/* Pure. smaps_pages: the VMA's smaps LazyFree in pages (clean only);
 * kpf_pages: its pages that kpageflags reads ANON && !SWAPBACKED (clean and
 * written again), counted over the whole VMA after smaps was read. A count
 * that moved in between errs towards ALL_CLEAN or MIXED, never towards
 * collapsing a clean page: more clean pages than kpageflags saw (pages
 * freed or reclaimed since) read ALL_CLEAN. */
enum lazyfree_verdict lazyfree_vma_verdict(uint64_t smaps_pages, uint64_t kpf_pages);

/* Pure: the number of swap areas listed in a /proc/swaps buffer (the lines
 * after the header), or -EINVAL if the header is missing. */
int parse_swaps_buf(const char *buf, size_t len);

/* Whether any swap area is active, from proc_root/swaps, read at each call
 * (about 10 us; asked only right before a probe, so swapon in between is
 * seen). An unreadable or malformed file counts as swap configured. */
bool swap_configured(const char *proc_root);
