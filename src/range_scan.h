/* range_scan: classify every 2 MiB block of a VMA from the page tables.
 *
 * The fast path is the PAGEMAP_SCAN ioctl (Linux 6.7+) on /proc/PID/pagemap:
 * one call walks a whole VMA and returns runs of pages with equal categories,
 * so an 8 GiB VMA of PMD-mapped THPs comes back as one run and costs about as
 * much as khugepaged's check of one PMD per 2 MiB. Only blocks that may be
 * candidates are looked at page by page: a pread of their 512 pagemap entries
 * gives the exclusive bit (for max_ptes_shared) and PFNs, and kpageflags
 * gives lazy-free only where the VMA reports LazyFree > 0, with contiguous
 * PFNs merged into one pread. Older kernels fall back to pread of pagemap for
 * the whole VMA. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "block_classify.h"
#include "smaps_scan.h"

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
	uint64_t *pm;  /* HPAGE_PAGES pagemap entries */
	uint64_t *kpf; /* HPAGE_PAGES kpageflags */
};

/* Once per daemon: probes PAGEMAP_SCAN and PFN visibility, opens kpageflags.
 * Returns 0 or -errno. */
int range_scanner_init(struct range_scanner *s);
void range_scanner_free(struct range_scanner *s);

/* Per process: opens pagemap relative to the /proc/PID dirfd. */
int range_scanner_attach(struct range_scanner *s, int proc_pid_dirfd);
void range_scanner_detach(struct range_scanner *s);

/* Called for each CANDIDATE block. */
typedef void (*candidate_fn)(void *ctx, uint64_t addr, const struct block_counts *c);

/* Classifies each whole 2 MiB block inside v (the caller has already decided
 * that the VMA as a whole is eligible and not cold) and adds one to
 * results[r] per block. check_lazyfree: read kpageflags for candidate blocks
 * (the VMA has LazyFree > 0); if kpageflags is unreadable such blocks are
 * counted SCAN_PAGE_LAZYFREE, never collapsed blindly. Returns 0 or -errno
 * (-ESRCH when the process is gone). */
int range_scan_vma(struct range_scanner *s, const struct vma *v, bool check_lazyfree, const struct collapse_limits *lim,
		   uint64_t results[SCAN_NR_RESULTS], candidate_fn on_candidate, void *ctx);
