/* SPDX-License-Identifier: GPL-2.0-or-later */
/* range_scan: page-table facts for each 2 MiB block of a VMA. */
#include "range_scan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "grow.h"
#include "lazyfree.h"
#include "vma_eligibility.h"

/* struct pm_scan_arg from include/uapi/linux/fs.h, for older headers. */
struct hc_pm_scan_arg {
	uint64_t size;
	uint64_t flags;
	uint64_t start;
	uint64_t end;
	uint64_t walk_end;
	uint64_t vec;
	uint64_t vec_len;
	uint64_t max_pages;
	uint64_t category_inverted;
	uint64_t category_mask;
	uint64_t category_anyof_mask;
	uint64_t return_mask;
};
#define HC_PAGEMAP_SCAN _IOWR('f', 16, struct hc_pm_scan_arg)

/* Holes are never returned: only these categories say anything. */
#define SCAN_CATEGORIES (HC_PAGE_IS_PRESENT | HC_PAGE_IS_SWAPPED | HC_PAGE_IS_PFNZERO | HC_PAGE_IS_HUGE)
#define REGIONS_CAP     1024
#define PAGE_SZ         4096u

static void add_run(struct block_counts *c, uint64_t categories, unsigned n)
{
	/* HUGE alone (no present or swap entry) is an empty PMD: nothing. */
	if (categories & HC_PAGE_IS_SWAPPED)
		c->swapped += n;
	else if (!(categories & HC_PAGE_IS_PRESENT))
		return;
	else if (categories & HC_PAGE_IS_PFNZERO)
		c->zero += n;
	else
		c->present += n;
	if (categories & HC_PAGE_IS_HUGE)
		c->huge += n;
}

void region_walk_init(struct region_walk *w, uint64_t first, size_t nblocks, block_sink_fn sink, void *ctx)
{
	*w = (struct region_walk){.first = first,
				  .end = first + nblocks * HPAGE_SIZE,
				  .next = first,
				  .cur_block = UINT64_MAX,
				  .sink = sink,
				  .ctx = ctx};
}

/* Sends the block being accumulated, after the untouched ones before it. */
static void walk_flush(struct region_walk *w)
{
	static const struct block_counts none;

	if (w->cur_block == UINT64_MAX)
		return;
	if (w->cur_block > w->next)
		w->sink(w->ctx, w->next, (w->cur_block - w->next) / HPAGE_SIZE, &none);
	w->sink(w->ctx, w->cur_block, 1, &w->cur);
	w->next = w->cur_block + HPAGE_SIZE;
	w->cur_block = UINT64_MAX;
}

void region_walk_feed(struct region_walk *w, const struct hc_page_region *r, size_t nr)
{
	static const struct block_counts none;

	for (size_t i = 0; i < nr; i++) {
		uint64_t addr = r[i].start < w->first ? w->first : r[i].start;
		uint64_t end = r[i].end > w->end ? w->end : r[i].end;

		while (addr < end) {
			uint64_t block = addr & ~(HPAGE_SIZE - 1);

			if (block != w->cur_block) {
				walk_flush(w);
				if (block < w->next) /* out of order: ignore what was sent */
					break;
				/* A run covering whole blocks: one step for all. */
				if (addr == block && end - block >= HPAGE_SIZE) {
					size_t n = (end - block) / HPAGE_SIZE;
					struct block_counts c = {0};

					add_run(&c, r[i].categories, HPAGE_PAGES);
					if (block > w->next)
						w->sink(w->ctx, w->next, (block - w->next) / HPAGE_SIZE, &none);
					w->sink(w->ctx, block, n, &c);
					w->next = block + n * HPAGE_SIZE;
					addr = w->next;
					continue;
				}
				w->cur_block = block;
				memset(&w->cur, 0, sizeof(w->cur));
			}
			uint64_t e = end < block + HPAGE_SIZE ? end : block + HPAGE_SIZE;
			add_run(&w->cur, r[i].categories, (unsigned)((e - addr) / PAGE_SZ));
			addr = e;
		}
	}
}

void region_walk_finish(struct region_walk *w)
{
	static const struct block_counts none;

	walk_flush(w);
	if (w->end > w->next)
		w->sink(w->ctx, w->next, (w->end - w->next) / HPAGE_SIZE, &none);
	w->next = w->end;
}

static void add_to_array(void *ctx, uint64_t addr, size_t n, const struct block_counts *c)
{
	struct {
		struct block_counts *counts;
		uint64_t first;
	} *a = ctx;
	size_t b = (addr - a->first) / HPAGE_SIZE;

	for (size_t i = 0; i < n; i++) {
		a->counts[b + i].present += c->present;
		a->counts[b + i].zero += c->zero;
		a->counts[b + i].swapped += c->swapped;
		a->counts[b + i].huge += c->huge;
	}
}

void block_counts_from_regions(const struct hc_page_region *r, size_t nr, uint64_t first_block, size_t nblocks,
			       struct block_counts *counts)
{
	struct {
		struct block_counts *counts;
		uint64_t first;
	} a = {counts, first_block};
	struct region_walk w;

	region_walk_init(&w, first_block, nblocks, add_to_array, &a);
	region_walk_feed(&w, r, nr);
	region_walk_finish(&w);
}

/* Reads exactly len bytes or fails. A dead process's pagemap reads as 0
 * bytes; a short read at the end of the address space is padded with
 * zeros (nothing mapped there). */
static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	do {
		n = pread(fd, buf, len, (off_t)off);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ESRCH;
	if ((size_t)n < len)
		memset((char *)buf + n, 0, len - (size_t)n);
	return 0;
}

/* npages pagemap entries from addr into buf. */
static int read_pagemap(struct range_scanner *s, uint64_t *buf, uint64_t addr, size_t npages)
{
	s->stats.pagemap_preads++;
	return pread_all(s->pagemap_fd, buf, npages * sizeof(uint64_t), addr / PAGE_SZ * sizeof(uint64_t));
}

/* 0 while the attached mm lives, -ESRCH once it is gone: pagemap's read of
 * a dead mm returns 0 bytes on every kernel (measured on 6.18: ~1.5 us). */
static int mm_alive(struct range_scanner *s, uint64_t addr)
{
	uint64_t e;

	return read_pagemap(s, &e, addr, 1);
}

static bool kpf_usable(const struct range_scanner *s)
{
	return s->have_pfns && s->kpageflags_fd >= 0;
}

/* A block mapping 512 PFNs in a row from an aligned one, the first a THP
 * head, is taken to be one PMD-order folio (as block_counts_from_pagemap
 * does): the flags that matter here are per folio, so one 8-byte read
 * stands for all 512. Reading them all costs ~23 us per block on 6.18 (a
 * plain pagemap read ~3.5 us). Returns false if this is not such a block. */
static bool read_one_thp_kpageflags(struct range_scanner *s, const uint64_t *pm, uint64_t *kpf)
{
	const uint64_t thp_head = (UINT64_C(1) << KPF_THP) | (UINT64_C(1) << KPF_COMPOUND_HEAD);
	uint64_t pfn = pm[0] & PM_PFN_MASK;

	if (!(pm[0] & PM_PRESENT) || pfn == 0 || pfn % HPAGE_PAGES)
		return false;
	for (unsigned i = 1; i < HPAGE_PAGES; i++)
		if (!(pm[i] & PM_PRESENT) || (pm[i] & PM_PFN_MASK) != pfn + i)
			return false;
	s->stats.kpageflags_preads++;
	if (pread(s->kpageflags_fd, &kpf[0], sizeof(uint64_t), (off_t)(pfn * sizeof(uint64_t))) != sizeof(uint64_t) ||
	    (kpf[0] & thp_head) != thp_head)
		return false;
	for (unsigned i = 1; i < HPAGE_PAGES; i++)
		kpf[i] = kpf[0] & ~(UINT64_C(1) << KPF_COMPOUND_HEAD);
	return true;
}

/* Fills kpf[0..n) for the present entries of pm[0..n) (n <= HPAGE_PAGES),
 * one pread per run of contiguous PFNs. A lone PFN seen before (the zero
 * page, mostly) is not read twice. Returns false when flags cannot be had. */
static bool read_kpageflags(struct range_scanner *s, const uint64_t *pm, uint64_t *kpf, size_t n)
{
	uint64_t cached_pfn = 0, cached_flags = 0;

	memset(kpf, 0, n * sizeof(uint64_t));
	if (n == HPAGE_PAGES && read_one_thp_kpageflags(s, pm, kpf))
		return true;
	for (size_t i = 0; i < n;) {
		if (!(pm[i] & PM_PRESENT)) {
			i++;
			continue;
		}
		uint64_t pfn = pm[i] & PM_PFN_MASK;
		if (pfn == 0)
			return false; /* PFNs hidden after all */
		size_t j = i + 1;
		while (j < n && (pm[j] & PM_PRESENT) && (pm[j] & PM_PFN_MASK) == pfn + (j - i))
			j++;
		if (j - i == 1 && pfn == cached_pfn) {
			kpf[i] = cached_flags;
		} else {
			s->stats.kpageflags_preads++;
			ssize_t got;
			do {
				got = pread(s->kpageflags_fd, &kpf[i], (j - i) * sizeof(uint64_t),
					    (off_t)(pfn * sizeof(uint64_t)));
			} while (got < 0 && errno == EINTR);
			if (got < 0)
				return false;
			/* Past the last PFN reads short; the tail stays 0. */
			cached_pfn = pfn + (j - i) - 1;
			cached_flags = kpf[j - 1];
		}
		i = j;
	}
	return true;
}

/* Lazy-free pages show only in kpageflags, and reading the flags of 512
 * scattered pages costs hundreds of preads (2.3 ms per block, measured
 * here). So a candidate keeps, besides the scan's verdict, how many of
 * LAZY_SAMPLE pages at fixed offsets read lazy-free (clean or written
 * again: kpageflags cannot tell); the re-check before collapse reads the
 * same pages again, and more of them lazy-free means freed since. */
static uint8_t sample_lazyfree(struct range_scanner *s, const uint64_t *pm)
{
	const uint64_t lazy = UINT64_C(1) << KPF_ANON, mask = lazy | (UINT64_C(1) << KPF_SWAPBACKED);
	uint8_t n = 0;

	for (unsigned i = 0; i < LAZY_SAMPLE && kpf_usable(s); i++) {
		uint64_t e = pm[i * (HPAGE_PAGES / LAZY_SAMPLE)], f;
		uint64_t pfn = e & PM_PFN_MASK;

		if (!(e & PM_PRESENT) || pfn == 0)
			continue;
		s->stats.kpageflags_preads++;
		if (pread(s->kpageflags_fd, &f, sizeof(f), (off_t)(pfn * sizeof(f))) == sizeof(f) && (f & mask) == lazy)
			n++;
	}
	return n;
}

/* The page-by-page look at a block that passed the cheap checks: the
 * exclusive bit for max_ptes_shared and, if asked, kpageflags for lazy-free
 * (and the lazy-free sample of an anonymous candidate). Present, zero, swap
 * and huge counts stay those of the scan. */
static int deep_check(struct range_scanner *s, uint64_t addr, bool anon, bool check_lazyfree,
		      const struct collapse_limits *lim, struct block_counts *c, enum scan_result *r)
{
	bool kpf_ok = false;
	struct block_counts d;

	if (!(anon && lim->max_ptes_shared < HPAGE_PAGES) && !kpf_usable(s)) {
		*r = SCAN_PAGE_LAZYFREE; /* only lazy-free asked, and unknowable */
		return 0;
	}
	int err = read_pagemap(s, s->pm, addr, HPAGE_PAGES);
	if (err)
		return err;
	if (check_lazyfree && kpf_usable(s))
		kpf_ok = read_kpageflags(s, s->pm, s->kpf, HPAGE_PAGES);
	block_counts_from_pagemap(s->pm, kpf_ok ? s->kpf : NULL, &d);
	/* Zero-page entries are present but never exclusive; without kpageflags
	 * they hide among the shared ones, and the scan told how many. */
	c->shared = kpf_ok ? d.shared : (d.shared > c->zero ? d.shared - c->zero : 0);
	c->lazyfree = d.lazyfree;
	*r = classify_block(c, anon, lim);
	if (anon && (*r == SCAN_CANDIDATE || *r == SCAN_PAGE_LAZYFREE))
		c->lazy_sampled = sample_lazyfree(s, s->pm);
	if (*r == SCAN_CANDIDATE && check_lazyfree && !kpf_ok)
		*r = SCAN_PAGE_LAZYFREE; /* never collapse blindly */
	return 0;
}

/* Whether some present entry is not exclusively mapped: the zero page (and
 * shared pages) look like that, and only kpageflags tells which. */
static bool any_present_shared(const uint64_t *pm)
{
	for (unsigned i = 0; i < HPAGE_PAGES; i++)
		if ((pm[i] & (PM_PRESENT | PM_MMAP_EXCLUSIVE)) == PM_PRESENT)
			return true;
	return false;
}

/* The read path's decision for one block from its 512 entries, plus
 * kpageflags for zero pages, THPs and lazy-free when PFNs are visible.
 * Blocks already short of pages skip kpageflags: telling zero pages apart
 * only adds to their none count. So does a block of exclusive pages where
 * lazy-free is not asked: no zero page can hide there, and a THP shows by
 * its PFNs, so one 8-byte read (or none) settles it; reading the flags of
 * 512 scattered pages would cost ~90 preads. */
static void pagemap_block(struct range_scanner *s, const uint64_t *pm, bool anon, bool check_lazyfree,
			  const struct collapse_limits *lim, struct block_counts *c, enum scan_result *r)
{
	bool kpf_ok = false;

	block_counts_from_pagemap(pm, NULL, c);
	*r = classify_block(c, anon, lim);
	if (*r == SCAN_NO_PTE_TABLE || *r == SCAN_EXCEED_NONE_PTE || !kpf_usable(s))
		goto out;
	if (!check_lazyfree && !any_present_shared(pm)) {
		memset(s->kpf, 0, HPAGE_PAGES * sizeof(uint64_t));
		kpf_ok = read_one_thp_kpageflags(s, pm, s->kpf);
		if (!kpf_ok)
			goto out; /* exclusive small pages: the counts are exact */
	} else {
		kpf_ok = read_kpageflags(s, pm, s->kpf, HPAGE_PAGES);
	}
	if (kpf_ok) {
		block_counts_from_pagemap(pm, s->kpf, c);
		/* As on the PAGEMAP_SCAN path: lazy-free counts only where smaps
		 * says some page is clean lazy-free. Elsewhere kpageflags'
		 * lazy-free pages were all written again. */
		if (!check_lazyfree)
			c->lazyfree = 0;
		*r = classify_block(c, anon, lim);
	}
out:
	if (*r == SCAN_CANDIDATE && check_lazyfree && !kpf_ok)
		*r = SCAN_PAGE_LAZYFREE;
	if (anon && (*r == SCAN_CANDIDATE || *r == SCAN_PAGE_LAZYFREE))
		c->lazy_sampled = sample_lazyfree(s, pm);
}

/* What a VMA's scan needs while the walk hands it blocks. */
struct vma_scan {
	struct range_scanner *s;
	bool anon, deep, check_lazyfree;
	bool hold; /* hold candidates until the lazy-free verdict */
	const struct collapse_limits *lim;
	uint64_t *results;
	candidate_fn on_candidate;
	void *ctx;
	size_t pending; /* held blocks that are candidates but for lazy-free pages */
	int err;
};

static void count_result(struct vma_scan *x, uint64_t addr, const struct block_counts *c, enum scan_result r)
{
	x->results[r]++;
	if (r == SCAN_CANDIDATE && x->on_candidate)
		x->on_candidate(x->ctx, addr, c);
}

/* One decided block: counted now, or held (candidates, and blocks kept out
 * only by lazy-free pages, which classify_block checks last) until the
 * VMA's lazy-free verdict is known. */
static void emit(struct vma_scan *x, uint64_t addr, const struct block_counts *c, enum scan_result r)
{
	struct range_scanner *s = x->s;
	bool pending = r == SCAN_PAGE_LAZYFREE && c->lazyfree > 0;

	if (!x->hold || (r != SCAN_CANDIDATE && !pending)) {
		count_result(x, addr, c, r);
		return;
	}
	if (GROW(s->held, s->capheld, s->nheld + 1) < 0) {
		x->err = -ENOMEM;
		return;
	}
	s->held[s->nheld++] = (struct held_block){.addr = addr, .c = *c, .result = (uint8_t)r};
	x->pending += pending;
}

/* Classifies n blocks with equal counts; only candidates are looked at one
 * by one (the deep check, and the callback). */
static void classify_blocks(void *opaque, uint64_t addr, size_t n, const struct block_counts *counts)
{
	struct vma_scan *x = opaque;
	enum scan_result r = classify_block(counts, x->anon, x->lim);

	if (r != SCAN_CANDIDATE) {
		x->results[r] += n;
		return;
	}
	for (size_t i = 0; i < n && !x->err; i++, addr += HPAGE_SIZE) {
		struct block_counts c = *counts;

		r = SCAN_CANDIDATE;
		if (x->deep && (x->err = deep_check(x->s, addr, x->anon, x->check_lazyfree, x->lim, &c, &r)))
			return;
		emit(x, addr, &c, r);
	}
}

int sys_pagemap_scan(int fd, void *arg)
{
	return ioctl(fd, HC_PAGEMAP_SCAN, arg);
}

/* One PAGEMAP_SCAN call over [start, end) into s->regions, returning the
 * categories cats: pages that have all of mask, or (mask 0) any of cats.
 * Returns the number of regions, or -errno; *walk_end is where the
 * walk stopped (early only when the vector is full: -EIO if it did not
 * move). */
static int scan_regions(struct range_scanner *s, uint64_t start, uint64_t end, uint64_t mask, uint64_t cats,
			uint64_t *walk_end)
{
	struct hc_pm_scan_arg arg = {
	    .size = sizeof(arg),
	    .start = start,
	    .end = end,
	    .vec = (uintptr_t)s->regions,
	    .vec_len = s->regions_cap,
	    .category_mask = mask,
	    .category_anyof_mask = mask ? 0 : cats,
	    .return_mask = cats,
	};
	int n;

	do {
		s->stats.scan_ioctls++;
		n = s->scan_ioctl(s->pagemap_fd, &arg);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (arg.walk_end <= start)
		return -EIO;
	*walk_end = arg.walk_end;
	return n;
}

/* Walks the blocks with PAGEMAP_SCAN; holes are never returned. */
static int scan_with_ioctl(struct range_scanner *s, uint64_t first, size_t nblocks, struct vma_scan *x)
{
	uint64_t start = first, end = first + nblocks * HPAGE_SIZE;
	size_t found = 0;
	struct region_walk w;

	region_walk_init(&w, first, nblocks, classify_blocks, x);
	while (start < end && !x->err) {
		uint64_t walk_end = end;
		int n = scan_regions(s, start, end, 0, SCAN_CATEGORIES, &walk_end);

		if (n < 0)
			return n;
		found += (size_t)n;
		region_walk_feed(&w, s->regions, (size_t)n);
		start = walk_end;
	}
	/* The caller skips VMAs without Rss or Swap, so nothing at all here
	 * is either a VMA emptied since smaps, or a dead mm on a kernel whose
	 * PAGEMAP_SCAN walks it as empty. Telling them apart costs one read. */
	if (!x->err && found == 0)
		x->err = mm_alive(s, first);
	if (!x->err)
		region_walk_finish(&w);
	return x->err;
}

/* Whether the read path may read npages more pagemap entries for this
 * process in this pass, and if so charges them. */
static bool take_budget(struct range_scanner *s, size_t npages)
{
	if (s->budget_pages < npages)
		return false;
	s->budget_pages -= npages;
	return true;
}

/* The pre-6.7 path: pagemap in chunks of PM_CHUNK_BLOCKS blocks, one pread
 * each, into the scanner's buffer. Pagemap costs 8 bytes per page whether
 * anything is mapped there or not, so the walk stops where the process's
 * budget runs out (-EINPROGRESS) or the caller's time is up (-ETIMEDOUT,
 * asked between chunks, after the first), with s->stopped_at the first
 * block not read. */
static int scan_with_pread(struct range_scanner *s, uint64_t first, size_t nblocks, struct vma_scan *x)
{
	for (size_t i = 0; i < nblocks && !x->err;) {
		size_t n = nblocks - i < PM_CHUNK_BLOCKS ? nblocks - i : PM_CHUNK_BLOCKS;
		uint64_t addr = first + i * HPAGE_SIZE;
		int err;

		if (i > 0 && s->stop && s->stop(s->stop_ctx))
			err = -ETIMEDOUT;
		else if (!take_budget(s, n * HPAGE_PAGES))
			err = -EINPROGRESS;
		else
			err = read_pagemap(s, s->pm, addr, n * HPAGE_PAGES);
		if (err == -ETIMEDOUT || err == -EINPROGRESS)
			s->stopped_at = addr;
		if (err)
			return err;
		for (size_t j = 0; j < n && !x->err; j++) {
			struct block_counts c;
			enum scan_result r;

			pagemap_block(s, s->pm + j * HPAGE_PAGES, x->anon, x->check_lazyfree, x->lim, &c, &r);
			emit(x, addr + j * HPAGE_SIZE, &c, r);
		}
		i += n;
	}
	return x->err;
}

/* Adds to *out the pages of [start, end) that kpageflags reads lazy-free.
 * -ENODATA when kpageflags fails. Costs a pagemap read of the range in
 * chunks, plus the kpageflags of its present pages. */
static int count_lazyfree_range(struct range_scanner *s, uint64_t start, uint64_t end, uint64_t *out)
{
	const uint64_t lazy = UINT64_C(1) << KPF_ANON, mask = lazy | (UINT64_C(1) << KPF_SWAPBACKED);

	for (uint64_t a = start; a < end;) {
		size_t npages = (end - a) / PAGE_SZ;

		if (npages > PM_CHUNK_BLOCKS * HPAGE_PAGES)
			npages = PM_CHUNK_BLOCKS * HPAGE_PAGES;
		int err = read_pagemap(s, s->pm, a, npages);
		if (err)
			return err;
		for (size_t i = 0; i < npages; i += HPAGE_PAGES) {
			size_t k = npages - i < HPAGE_PAGES ? npages - i : HPAGE_PAGES;

			if (!read_kpageflags(s, s->pm + i, s->kpf, k))
				return -ENODATA;
			for (size_t j = 0; j < k; j++)
				if ((s->pm[i + j] & PM_PRESENT) && (s->kpf[j] & mask) == lazy)
					(*out)++;
		}
		a += npages * PAGE_SZ;
	}
	return 0;
}

/* Present runs closer than this are read as one: a pread of the pagemap
 * between them costs less than another system call. */
#define LAZY_GAP_PAGES 512u

/* The PAGEMAP_SCAN path's count: the ioctl names the present runs (its
 * walk skips what has no page table), and only those are read, so a huge
 * sparse VMA costs what it holds, not what it spans. */
static int count_lazyfree_present(struct range_scanner *s, uint64_t start, uint64_t end, uint64_t *out)
{
	uint64_t span_start = 0, span_end = 0; /* present runs not yet counted */
	int err = 0;

	while (start < end && !err) {
		uint64_t walk_end = end;
		int n = scan_regions(s, start, end, HC_PAGE_IS_PRESENT, HC_PAGE_IS_PRESENT, &walk_end);

		if (n < 0)
			return n;
		for (int i = 0; i < n && !err; i++) {
			if (span_end && s->regions[i].start - span_end <= LAZY_GAP_PAGES * PAGE_SZ) {
				span_end = s->regions[i].end;
				continue;
			}
			if (span_end)
				err = count_lazyfree_range(s, span_start, span_end, out);
			span_start = s->regions[i].start;
			span_end = s->regions[i].end;
		}
		start = walk_end;
	}
	if (!err && span_end)
		err = count_lazyfree_range(s, span_start, span_end, out);
	return err;
}

/* Pages of [start, end) that kpageflags reads lazy-free. -ENODATA when
 * that cannot be known: kpageflags fails, or on the read path the range
 * does not fit in what is left of the process's budget (8 bytes of
 * pagemap per page, mapped or not). */
static int count_lazyfree_pages(struct range_scanner *s, uint64_t start, uint64_t end, uint64_t *out)
{
	*out = 0;
	s->stats.lazyfree_counts++;
	if (s->use_scan_ioctl)
		return count_lazyfree_present(s, start, end, out);
	if (!take_budget(s, (end - start) / PAGE_SZ))
		return -ENODATA;
	return count_lazyfree_range(s, start, end, out);
}

/* The MADV_PAGEOUT probe of the pending held blocks (lazyfree.h), then a
 * fresh look at each: only pages still lazy-free afterwards keep a block
 * out, so whatever the probe did or could not do, the decision stays on the
 * safe side. */
static int probe_pending(struct range_scanner *s, struct vma_scan *x)
{
	enum { BATCH = 64 };
	struct iovec iov[BATCH];
	size_t n = 0;
	int pidfd = pidfd_open_pid(s->pid);

	if (pidfd < 0)
		return errno == ESRCH ? -ESRCH : 0;
	/* The pidfd is of the process we scanned only if that one still lives
	 * now: a PID is not reused while its owner lives. */
	int err = mm_alive(s, s->held[0].addr);
	for (size_t i = 0; i < s->nheld && !err; i++) {
		if (s->held[i].result != SCAN_PAGE_LAZYFREE)
			continue;
		iov[n++] = (struct iovec){.iov_base = (void *)(uintptr_t)s->held[i].addr, .iov_len = HPAGE_SIZE};
		if (n == BATCH) {
			s->stats.probe_calls++;
			(void)s->probe_fn(pidfd, iov, n, MADV_PAGEOUT, 0); /* what it did is read back below */
			n = 0;
		}
	}
	if (n) {
		s->stats.probe_calls++;
		(void)s->probe_fn(pidfd, iov, n, MADV_PAGEOUT, 0);
	}
	close(pidfd);
	for (size_t i = 0; i < s->nheld && !err; i++) {
		struct held_block *h = &s->held[i];

		if (h->result != SCAN_PAGE_LAZYFREE)
			continue;
		s->stats.probed_blocks++;
		err = read_pagemap(s, s->pm, h->addr, HPAGE_PAGES);
		if (!err && read_kpageflags(s, s->pm, s->kpf, HPAGE_PAGES)) {
			block_counts_from_pagemap(s->pm, s->kpf, &h->c);
			h->result = (uint8_t)classify_block(&h->c, x->anon, x->lim);
		}
	}
	return err;
}

/* Decides the held blocks' lazy-free pages for the whole VMA, then hands
 * every held block over in address order. whole: the walk saw all of the
 * VMA; otherwise the VMA's count means nothing against smaps', and blocks
 * with lazy-free pages stay out. */
static int resolve_held(struct range_scanner *s, const struct vma *v, struct vma_scan *x, bool whole)
{
	enum lazyfree_verdict verdict = LAZYFREE_ALL_CLEAN;
	int err = 0;

	if (x->pending && whole) {
		uint64_t kpf_pages;

		err = count_lazyfree_pages(s, v->start, v->end, &kpf_pages);
		if (err == -ENODATA)
			err = 0; /* unknowable: stays ALL_CLEAN, so skipped */
		else if (!err)
			verdict = lazyfree_vma_verdict(v->lazyfree_kb / (PAGE_SZ / 1024), kpf_pages);
		/* MADV_PAGEOUT of a file VMA would drop page cache: anonymous only
		 * (MADV_FREE works nowhere else anyway). */
		if (!err && verdict == LAZYFREE_MIXED && x->anon && s->probe_fn && s->pid > 0 &&
		    !s->swap_configured(s->proc_root))
			err = probe_pending(s, x);
		else if (!err && verdict == LAZYFREE_ALL_REDIRTIED)
			for (size_t i = 0; i < s->nheld; i++)
				s->held[i].result = SCAN_CANDIDATE; /* lazy-free pages were all that kept them out */
	}
	for (size_t i = 0; i < s->nheld && !err; i++)
		count_result(x, s->held[i].addr, &s->held[i].c, (enum scan_result)s->held[i].result);
	return err;
}

int range_scan_vma(struct range_scanner *s, const struct vma *v, bool check_lazyfree, const struct collapse_limits *lim,
		   uint64_t results[SCAN_NR_RESULTS], candidate_fn on_candidate, void *ctx)
{
	return range_scan_vma_from(s, v, 0, check_lazyfree, lim, results, on_candidate, ctx);
}

int range_scan_vma_from(struct range_scanner *s, const struct vma *v, uint64_t from, bool check_lazyfree,
			const struct collapse_limits *lim, uint64_t results[SCAN_NR_RESULTS], candidate_fn on_candidate,
			void *ctx)
{
	bool anon = v->kind == VMA_ANON;
	struct vma_scan x = {
	    .s = s,
	    .anon = anon,
	    /* Anonymous candidates are sampled for lazy-free pages wherever
	     * kpageflags can be read (sample_lazyfree). */
	    .deep = (anon && (lim->max_ptes_shared < HPAGE_PAGES || kpf_usable(s))) || check_lazyfree,
	    .check_lazyfree = check_lazyfree,
	    .hold = check_lazyfree && kpf_usable(s),
	    .lim = lim,
	    .results = results,
	    .on_candidate = on_candidate,
	    .ctx = ctx,
	};
	struct vma_blocks b;
	uint64_t first;
	size_t nblocks;
	int err;

	if (s->pagemap_fd < 0)
		return -EBADF;
	s->stopped_at = 0;
	vma_blocks(v, &b);
	/* Resuming: the blocks below from were read by an earlier call. */
	first = from > b.first ? (from + HPAGE_SIZE - 1) & ~(uint64_t)(HPAGE_SIZE - 1) : b.first;
	if (first >= b.first + b.whole * HPAGE_SIZE)
		return 0;
	nblocks = b.whole - (first - b.first) / HPAGE_SIZE;
	/* Nothing resident or swapped: no page table can say otherwise. This
	 * is what keeps a 1 TiB PROT_NONE reservation free on the read path. */
	if (v->rss_kb == 0 && v->swap_kb == 0) {
		s->stats.vmas_skipped++;
		results[SCAN_NO_PTE_TABLE] += nblocks;
		return 0;
	}
	/* All resident memory PMD-mapped (AnonHugePages counts PMD mappings
	 * only, and they are always whole aligned blocks): nothing to collapse,
	 * and nothing to read. An 8 GiB heap of THPs costs no syscall. */
	if (anon && v->swap_kb == 0 && v->anon_huge_kb == v->rss_kb && first == b.first) {
		uint64_t pmds = v->anon_huge_kb / (HPAGE_SIZE / 1024);

		if (pmds > b.whole)
			pmds = b.whole;
		s->stats.vmas_skipped++;
		results[SCAN_PMD_MAPPED] += pmds;
		results[SCAN_NO_PTE_TABLE] += b.whole - pmds;
		return 0;
	}
	s->nheld = 0;
	if (s->use_scan_ioctl)
		err = scan_with_ioctl(s, first, nblocks, &x);
	else
		err = scan_with_pread(s, first, nblocks, &x);
	/* Stopped midway: what was read still counts, up to stopped_at. */
	bool stopped = err == -EINPROGRESS || err == -ETIMEDOUT;
	if ((!err || stopped) && x.hold) {
		int r = resolve_held(s, v, &x, !stopped && first == b.first);
		if (r)
			err = r;
	}
	s->nheld = 0;
	return err;
}

static int cmp_addr_index(const void *a, const void *b, void *arg)
{
	const uint64_t *addrs = arg;
	uint64_t x = addrs[*(const uint32_t *)a], y = addrs[*(const uint32_t *)b];

	return x < y ? -1 : x > y;
}

int range_scan_recheck(struct range_scanner *s, const struct recheck_block *b, size_t n,
		       const struct collapse_limits *lim, uint8_t *result)
{
	uint64_t addrs[RECHECK_MAX];
	uint32_t order[RECHECK_MAX];

	if (s->pagemap_fd < 0)
		return -EBADF;
	if (n > RECHECK_MAX)
		return -E2BIG;
	for (size_t k = 0; k < n; k++) {
		addrs[k] = b[k].addr;
		order[k] = (uint32_t)k;
	}
	qsort_r(order, n, sizeof(order[0]), cmp_addr_index, addrs);
	/* One pread per run of blocks that fits in the buffer, gaps included. */
	for (size_t k = 0; k < n;) {
		uint64_t start = addrs[order[k]];
		size_t end = k + 1;

		while (end < n && addrs[order[end]] + HPAGE_SIZE - start <= PM_CHUNK_BLOCKS * HPAGE_SIZE)
			end++;
		int err = read_pagemap(s, s->pm, start, (addrs[order[end - 1]] + HPAGE_SIZE - start) / PAGE_SZ);
		if (err)
			return err;
		for (; k < end; k++) {
			const struct recheck_block *rb = &b[order[k]];
			struct block_counts c;
			enum scan_result r;

			/* The scan's lazy-free verdict stands for the pages it
			 * saw; more of the sample lazy-free: freed since. */
			pagemap_block(s, s->pm + (rb->addr - start) / PAGE_SZ, rb->anon, false, lim, &c, &r);
			if (r == SCAN_CANDIDATE && c.lazy_sampled > rb->lazy_sampled)
				r = SCAN_PAGE_LAZYFREE;
			result[order[k]] = (uint8_t)r;
		}
	}
	return 0;
}

/* PFNs show only with CAP_SYS_ADMIN: look at one touched page of our own. */
static bool probe_pfns(int pagemap_fd, const volatile char *page)
{
	uint64_t e;

	if (pread_all(pagemap_fd, &e, sizeof(e), (uintptr_t)page / PAGE_SZ * sizeof(e)))
		return false;
	return (e & PM_PRESENT) && (e & PM_PFN_MASK) != 0;
}

static bool probe_scan_ioctl(int pagemap_fd, const volatile char *page, struct hc_page_region *vec)
{
	struct hc_pm_scan_arg arg = {
	    .size = sizeof(arg),
	    .start = (uintptr_t)page,
	    .end = (uintptr_t)page + PAGE_SZ,
	    .vec = (uintptr_t)vec,
	    .vec_len = 1,
	    .category_anyof_mask = SCAN_CATEGORIES,
	    .return_mask = SCAN_CATEGORIES,
	};
	int n = ioctl(pagemap_fd, HC_PAGEMAP_SCAN, &arg);
	return n == 1 && (vec[0].categories & HC_PAGE_IS_PRESENT);
}

int range_scanner_init(struct range_scanner *s, enum pagemap_mode mode, const struct hc_paths *paths)
{
	*s = (struct range_scanner){.pagemap_fd = -1,
				    .kpageflags_fd = -1,
				    .scan_ioctl = sys_pagemap_scan,
				    .swap_configured = swap_configured,
				    .proc_root = paths->proc,
				    .pages_per_attach = PM_PAGES_PER_ATTACH};
	s->regions = calloc(REGIONS_CAP, sizeof(*s->regions));
	s->pm = calloc((size_t)PM_CHUNK_BLOCKS * HPAGE_PAGES, sizeof(*s->pm));
	s->kpf = calloc(HPAGE_PAGES, sizeof(*s->kpf));
	if (!s->regions || !s->pm || !s->kpf) {
		range_scanner_free(s);
		return -ENOMEM;
	}
	s->regions_cap = REGIONS_CAP;

	int fd = open(paths->self_pagemap, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int err = -errno;
		range_scanner_free(s);
		return err;
	}
	volatile char *page = mmap(NULL, PAGE_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED) {
		int err = -errno;
		close(fd);
		range_scanner_free(s);
		return err;
	}
	page[0] = 1;
	s->have_pfns = probe_pfns(fd, page);
	s->use_scan_ioctl = mode == PAGEMAP_AUTO && probe_scan_ioctl(fd, page, s->regions);
	munmap((void *)page, PAGE_SZ);
	close(fd);
	s->kpageflags_fd = open(paths->kpageflags, O_RDONLY | O_CLOEXEC);
	return 0;
}

void range_scanner_free(struct range_scanner *s)
{
	range_scanner_detach(s);
	if (s->kpageflags_fd >= 0)
		close(s->kpageflags_fd);
	s->kpageflags_fd = -1;
	free(s->regions);
	free(s->pm);
	free(s->kpf);
	free(s->held);
	s->regions = NULL;
	s->pm = s->kpf = NULL;
	s->held = NULL;
	s->regions_cap = s->nheld = s->capheld = 0;
}

int range_scanner_attach(struct range_scanner *s, int proc_pid_dirfd, pid_t pid)
{
	range_scanner_detach(s);
	s->pagemap_fd = openat(proc_pid_dirfd, "pagemap", O_RDONLY | O_CLOEXEC);
	if (s->pagemap_fd < 0)
		return -errno;
	s->pid = pid;
	s->budget_pages = s->pages_per_attach;
	return 0;
}

void range_scanner_detach(struct range_scanner *s)
{
	if (s->pagemap_fd >= 0)
		close(s->pagemap_fd);
	s->pagemap_fd = -1;
	s->pid = 0;
}

void range_scanner_set_probe(struct range_scanner *s, process_madvise_fn fn)
{
	s->probe_fn = fn;
}
