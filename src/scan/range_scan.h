/* SPDX-License-Identifier: GPL-2.0-or-later */
/* range_scan: classify every 2 MiB block of a VMA from the page tables.
 *
 * The fast path is the PAGEMAP_SCAN ioctl (Linux 6.7+) on /proc/PID/pagemap:
 * one call walks a whole VMA and returns runs of pages with equal categories,
 * so an 8 GiB VMA of PMD-mapped THPs comes back as one run and costs about as
 * much as khugepaged's check of one PMD per 2 MiB. Only blocks that may be
 * candidates are looked at page by page: a pread of their 512 pagemap entries
 * gives the exclusive bit (for max_ptes_shared) and PFNs, and kpageflags
 * gives lazy-free only where the VMA reports LazyFree > 0, with contiguous
 * PFNs merged into one pread.
 *
 * Older kernels (and --pagemap-read) read pagemap instead, in
 * chunks of PM_CHUNK_BLOCKS blocks per pread into a buffer the scanner owns,
 * at most PM_PAGES_PER_ATTACH entries per process and pass: a longer walk
 * stops and is resumed by the caller in a later pass.
 * On both paths a VMA whose smaps shows neither Rss nor Swap is not read at
 * all (a 1 TiB PROT_NONE reservation costs nothing), nor is an anonymous
 * one whose Rss is all AnonHugePages (PMD-mapped: nothing to collapse).
 *
 * A process that dies during the scan is reported as -ESRCH, never as an
 * empty scan: some kernels' PAGEMAP_SCAN on a dead mm reports no regions
 * rather than an error (6.18 here answers ESRCH), so a walk that found
 * nothing in a VMA that smaps said holds memory asks pagemap, whose read of
 * a dead mm returns 0 bytes.
 *
 * Lazy-free (see lazyfree.h): a block that would be a candidate but for
 * lazy-free pages is decided per VMA, from smaps LazyFree against the VMA's
 * kpageflags count, and in a VMA holding both kinds, on a machine with no
 * swap and when the caller allows it, by the MADV_PAGEOUT probe. With
 * PAGEMAP_SCAN the VMA's count reads only its present runs. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/types.h>

#include "block_classify.h"
#include "madvise_call.h" /* process_madvise_fn */
#include "paths.h"
#include "smaps_scan.h"

/* Blocks per pagemap pread on the read path: 32 x 4 KiB = 128 KiB. */
#define PM_CHUNK_BLOCKS 32u

/* Pagemap entries the read path may read for one process per attach (one
 * scan of it in one pass): 64 GiB of address range, 128 MiB of pagemap,
 * about 40 ms here. Pagemap costs 8 bytes per page, mapped or not, so a
 * 64 TiB MAP_NORESERVE reservation would otherwise cost a minute. */
#define PM_PAGES_PER_ATTACH (UINT64_C(1) << 24)

/* PAGEMAP_SCAN uapi (include/uapi/linux/fs.h), absent from older headers. */
struct hc_page_region {
	uint64_t start, end, categories;
};
#define HC_PAGE_IS_WPALLOWED (1 << 0)
#define HC_PAGE_IS_WRITTEN   (1 << 1)
#define HC_PAGE_IS_FILE      (1 << 2)
#define HC_PAGE_IS_PRESENT   (1 << 3)
#define HC_PAGE_IS_SWAPPED   (1 << 4)
#define HC_PAGE_IS_PFNZERO   (1 << 5)
#define HC_PAGE_IS_HUGE      (1 << 6)

/* Turns PAGEMAP_SCAN runs into per-block counts, incrementally and in
 * O(runs + blocks touched): blocks no run touches reach the sink in bulk as
 * all-zero counts, and a run that covers whole blocks with one category
 * reaches it once for all of them. So an 8 GiB VMA of THPs, or a huge mostly
 * empty reservation, costs a handful of steps. Pure.
 *
 * The sink is called with n consecutive blocks starting at addr that all
 * have the counts c, in address order. Runs must come in address order
 * (as PAGEMAP_SCAN returns them, across several calls if need be) and are
 * clipped to [first, first + nblocks * HPAGE_SIZE). */
typedef void (*block_sink_fn)(void *ctx, uint64_t addr, size_t n, const struct block_counts *c);

struct region_walk {
	uint64_t first, end;
	uint64_t next;      /* first block not yet sent to the sink */
	uint64_t cur_block; /* block being accumulated; UINT64_MAX: none */
	struct block_counts cur;
	block_sink_fn sink;
	void *ctx;
};

void region_walk_init(struct region_walk *w, uint64_t first, size_t nblocks, block_sink_fn sink, void *ctx);
void region_walk_feed(struct region_walk *w, const struct hc_page_region *r, size_t nr);
void region_walk_finish(struct region_walk *w);

/* The same walk into an array: counts[] has nblocks entries and is added to. */
void block_counts_from_regions(const struct hc_page_region *r, size_t nr, uint64_t first_block, size_t nblocks,
			       struct block_counts *counts);

struct range_scan_stats {
	uint64_t scan_ioctls; /* PAGEMAP_SCAN calls */
	uint64_t pagemap_preads;
	uint64_t kpageflags_preads;
	uint64_t vmas_skipped;    /* no Rss and no Swap, or all PMD-mapped: not read */
	uint64_t lazyfree_counts; /* whole-VMA kpageflags counts */
	uint64_t probe_calls;     /* process_madvise(MADV_PAGEOUT) calls */
	uint64_t probed_blocks;
};

/* Which page-table reader to use. */
enum pagemap_mode {
	PAGEMAP_AUTO, /* PAGEMAP_SCAN where the kernel has it */
	PAGEMAP_READ, /* always the pre-6.7 pread path (tests, bench: --pagemap-read) */
};

/* ioctl(fd, PAGEMAP_SCAN, arg), injectable for tests. */
typedef int (*pagemap_scan_fn)(int fd, void *arg);
int sys_pagemap_scan(int fd, void *arg);

/* A candidate (or a block that would be one but for lazy-free pages) held
 * back until its VMA's lazy-free verdict is known, so that the caller still
 * sees candidates in address order. */
struct held_block {
	uint64_t addr;
	struct block_counts c;
	uint8_t result; /* enum scan_result */
};

struct range_scanner {
	int pagemap_fd;    /* of the current process; -1 when closed */
	int kpageflags_fd; /* -1 when unreadable (no CAP_SYS_ADMIN) */
	bool use_scan_ioctl;
	bool have_pfns; /* pagemap shows PFNs (CAP_SYS_ADMIN) */
	struct range_scan_stats stats;
	/* Buffers reused across VMAs and processes. */
	struct hc_page_region *regions;
	size_t regions_cap;
	uint64_t *pm;  /* PM_CHUNK_BLOCKS * HPAGE_PAGES pagemap entries */
	uint64_t *kpf; /* HPAGE_PAGES kpageflags */
	struct held_block *held;
	size_t nheld, capheld;
	/* Injectable: the ioctl, and whether swap is configured. */
	pagemap_scan_fn scan_ioctl;
	bool (*swap_configured)(const char *proc_root);
	const char *proc_root; /* for swap_configured(): paths->proc */
	/* The lazy-free probe: the attached process and process_madvise(2);
	 * probe_fn NULL (the default, and --dry-run) never probes. */
	pid_t pid;
	process_madvise_fn probe_fn;
	/* The read path's bound: pagemap entries left for the attached
	 * process (pages_per_attach at each attach), and stop(stop_ctx), asked
	 * between chunks: true when the caller's time is up. */
	uint64_t budget_pages, pages_per_attach;
	bool (*stop)(void *ctx);
	void *stop_ctx;
	uint64_t stopped_at; /* out: the first block a stopped walk did not read */
};

/* Once per daemon: probes PAGEMAP_SCAN (unless mode is PAGEMAP_READ) and PFN
 * visibility on paths->self_pagemap, opens paths->kpageflags; keeps
 * paths->proc (its string must outlive s). Returns 0 or -errno. */
int range_scanner_init(struct range_scanner *s, enum pagemap_mode mode, const struct hc_paths *paths);
void range_scanner_free(struct range_scanner *s);

/* Per process: opens pagemap relative to the /proc/PID dirfd; pid is that
 * process's PID, used only by the lazy-free probe (0: no probe). */
int range_scanner_attach(struct range_scanner *s, int proc_pid_dirfd, pid_t pid);
void range_scanner_detach(struct range_scanner *s);

/* Allows the MADV_PAGEOUT probe through fn (NULL forbids it: a dry run must
 * change nothing). It runs only where no swap is configured. Kept across
 * attach/detach. */
void range_scanner_set_probe(struct range_scanner *s, process_madvise_fn fn);

/* Called for each CANDIDATE block, in address order. */
typedef void (*candidate_fn)(void *ctx, uint64_t addr, const struct block_counts *c);

/* Classifies each whole 2 MiB block inside v (the caller has already decided
 * that the VMA as a whole is eligible and not cold) and adds one to
 * results[r] per block. check_lazyfree: read kpageflags for candidate blocks
 * (the VMA has LazyFree > 0; v->lazyfree_kb is the smaps count); blocks with
 * lazy-free pages are then decided as lazyfree.h describes, and where that
 * cannot be known they are counted SCAN_PAGE_LAZYFREE, never collapsed
 * blindly (also when kpageflags is unreadable). Unread, from smaps alone: a
 * VMA with rss_kb and swap_kb both 0 counts all its blocks
 * SCAN_NO_PTE_TABLE; an anonymous one with no swap and anon_huge_kb ==
 * rss_kb counts anon_huge_kb / 2 MiB blocks SCAN_PMD_MAPPED and the rest
 * SCAN_NO_PTE_TABLE. Returns 0
 * or -errno (-ESRCH when the process is gone, on both paths).
 *
 * On the read path the walk may stop midway: -EINPROGRESS when the
 * attached process's budget (budget_pages) is spent, -ETIMEDOUT when
 * s->stop said so; the blocks below s->stopped_at were classified and
 * counted, and range_scan_vma_from() goes on from there. A VMA that was not
 * walked whole in one call has no lazy-free verdict: its blocks with
 * lazy-free pages count SCAN_PAGE_LAZYFREE. */
int range_scan_vma(struct range_scanner *s, const struct vma *v, bool check_lazyfree, const struct collapse_limits *lim,
		   uint64_t results[SCAN_NR_RESULTS], candidate_fn on_candidate, void *ctx);
/* The same for the whole blocks of v at or above from. */
int range_scan_vma_from(struct range_scanner *s, const struct vma *v, uint64_t from, bool check_lazyfree,
			const struct collapse_limits *lim, uint64_t results[SCAN_NR_RESULTS], candidate_fn on_candidate,
			void *ctx);

/* A remembered candidate to look at again right before it is collapsed. */
struct recheck_block {
	uint64_t addr;
	uint8_t lazy_sampled; /* block_counts.lazy_sampled at its scan */
	bool anon;
};

#define RECHECK_MAX 1023u /* COLLAPSE_MAX_IOV: one call's blocks */

/* The page-table checks of the scan, for just these blocks of the attached
 * process: one pagemap pread per run of them that fits in the buffer (so
 * one per call when they are adjacent), and kpageflags where readable, for
 * zero pages and THPs as the read path does, and for the lazy-free sample
 * (LAZY_SAMPLE pages per anonymous block): more of it lazy-free than at the
 * scan keeps the block out (SCAN_PAGE_LAZYFREE). result[k] is the scan
 * result of b[k] now: SCAN_CANDIDATE if it may still be collapsed. Returns
 * 0 or -errno (-ESRCH: gone). */
int range_scan_recheck(struct range_scanner *s, const struct recheck_block *b, size_t n,
		       const struct collapse_limits *lim, uint8_t *result);
