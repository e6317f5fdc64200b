/* range_scan: page-table facts for each 2 MiB block of a VMA. */
#include "range_scan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "grow.h"
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

static int read_block_pagemap(struct range_scanner *s, uint64_t addr)
{
	s->stats.pagemap_preads++;
	return pread_all(s->pagemap_fd, s->pm, HPAGE_PAGES * sizeof(uint64_t), addr / PAGE_SZ * sizeof(uint64_t));
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
static bool read_one_thp_kpageflags(struct range_scanner *s)
{
	const uint64_t thp_head = (UINT64_C(1) << KPF_THP) | (UINT64_C(1) << KPF_COMPOUND_HEAD);
	uint64_t pfn = s->pm[0] & PM_PFN_MASK;

	if (!(s->pm[0] & PM_PRESENT) || pfn == 0 || pfn % HPAGE_PAGES)
		return false;
	for (unsigned i = 1; i < HPAGE_PAGES; i++)
		if (!(s->pm[i] & PM_PRESENT) || (s->pm[i] & PM_PFN_MASK) != pfn + i)
			return false;
	s->stats.kpageflags_preads++;
	if (pread(s->kpageflags_fd, &s->kpf[0], sizeof(uint64_t), (off_t)(pfn * sizeof(uint64_t))) !=
		sizeof(uint64_t) ||
	    (s->kpf[0] & thp_head) != thp_head)
		return false;
	for (unsigned i = 1; i < HPAGE_PAGES; i++)
		s->kpf[i] = s->kpf[0] & ~(UINT64_C(1) << KPF_COMPOUND_HEAD);
	return true;
}

/* Fills s->kpf for the present entries of s->pm, one pread per run of
 * contiguous PFNs. A lone PFN seen before (the zero page, mostly) is not
 * read twice. Returns false when flags cannot be had. */
static bool read_block_kpageflags(struct range_scanner *s)
{
	uint64_t cached_pfn = 0, cached_flags = 0;

	memset(s->kpf, 0, HPAGE_PAGES * sizeof(uint64_t));
	if (read_one_thp_kpageflags(s))
		return true;
	for (unsigned i = 0; i < HPAGE_PAGES;) {
		if (!(s->pm[i] & PM_PRESENT)) {
			i++;
			continue;
		}
		uint64_t pfn = s->pm[i] & PM_PFN_MASK;
		if (pfn == 0)
			return false; /* PFNs hidden after all */
		unsigned j = i + 1;
		while (j < HPAGE_PAGES && (s->pm[j] & PM_PRESENT) && (s->pm[j] & PM_PFN_MASK) == pfn + (j - i))
			j++;
		if (j - i == 1 && pfn == cached_pfn) {
			s->kpf[i] = cached_flags;
		} else {
			s->stats.kpageflags_preads++;
			ssize_t n;
			do {
				n = pread(s->kpageflags_fd, &s->kpf[i], (j - i) * sizeof(uint64_t),
					  (off_t)(pfn * sizeof(uint64_t)));
			} while (n < 0 && errno == EINTR);
			if (n < 0)
				return false;
			/* Past the last PFN reads short; the tail stays 0. */
			cached_pfn = pfn + (j - i) - 1;
			cached_flags = s->kpf[j - 1];
		}
		i = j;
	}
	return true;
}

/* The page-by-page look at a block that passed the cheap checks: the
 * exclusive bit for max_ptes_shared and, if asked, kpageflags for lazy-free.
 * Present, zero, swap and huge counts stay those of the scan. */
static int deep_check(struct range_scanner *s, uint64_t addr, bool anon, bool check_lazyfree,
		      const struct collapse_limits *lim, struct block_counts *c, enum scan_result *r)
{
	bool kpf_ok = false;
	struct block_counts d;

	if (!(anon && lim->max_ptes_shared < HPAGE_PAGES) && !kpf_usable(s)) {
		*r = SCAN_PAGE_LAZYFREE; /* only lazy-free asked, and unknowable */
		return 0;
	}
	int err = read_block_pagemap(s, addr);
	if (err)
		return err;
	if (check_lazyfree && kpf_usable(s))
		kpf_ok = read_block_kpageflags(s);
	block_counts_from_pagemap(s->pm, kpf_ok ? s->kpf : NULL, &d);
	/* Zero-page entries are present but never exclusive; without kpageflags
	 * they hide among the shared ones, and the scan told how many. */
	c->shared = kpf_ok ? d.shared : (d.shared > c->zero ? d.shared - c->zero : 0);
	c->lazyfree = d.lazyfree;
	*r = classify_block(c, anon, lim);
	if (*r == SCAN_CANDIDATE && check_lazyfree && !kpf_ok)
		*r = SCAN_PAGE_LAZYFREE; /* never collapse blindly */
	return 0;
}

/* Fallback: plain pagemap, plus kpageflags for zero pages, THPs and
 * lazy-free when PFNs are visible. Blocks already short of pages skip
 * kpageflags: telling zero pages apart only adds to their none count. */
static int pagemap_block(struct range_scanner *s, uint64_t addr, bool anon, bool check_lazyfree,
			 const struct collapse_limits *lim, struct block_counts *c, enum scan_result *r)
{
	int err = read_block_pagemap(s, addr);
	if (err)
		return err;
	block_counts_from_pagemap(s->pm, NULL, c);
	*r = classify_block(c, anon, lim);
	if (*r == SCAN_NO_PTE_TABLE || *r == SCAN_EXCEED_NONE_PTE)
		return 0;
	bool kpf_ok = kpf_usable(s) && read_block_kpageflags(s);
	if (kpf_ok) {
		block_counts_from_pagemap(s->pm, s->kpf, c);
		*r = classify_block(c, anon, lim);
	}
	if (*r == SCAN_CANDIDATE && check_lazyfree && !kpf_ok)
		*r = SCAN_PAGE_LAZYFREE;
	return 0;
}

/* What a VMA's scan needs while the walk hands it blocks. */
struct vma_scan {
	struct range_scanner *s;
	bool anon, deep, check_lazyfree;
	const struct collapse_limits *lim;
	uint64_t *results;
	candidate_fn on_candidate;
	void *ctx;
	int err;
};

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
		x->results[r]++;
		if (r == SCAN_CANDIDATE && x->on_candidate)
			x->on_candidate(x->ctx, addr, &c);
	}
}

/* Walks the blocks with PAGEMAP_SCAN; holes are never returned. */
static int scan_with_ioctl(struct range_scanner *s, uint64_t first, size_t nblocks, struct vma_scan *x)
{
	uint64_t start = first, end = first + nblocks * HPAGE_SIZE;
	struct region_walk w;

	region_walk_init(&w, first, nblocks, classify_blocks, x);
	while (start < end && !x->err) {
		struct hc_pm_scan_arg arg = {
		    .size = sizeof(arg),
		    .start = start,
		    .end = end,
		    .vec = (uintptr_t)s->regions,
		    .vec_len = s->regions_cap,
		    .category_anyof_mask = SCAN_CATEGORIES,
		    .return_mask = SCAN_CATEGORIES,
		};
		int n;

		do {
			s->stats.scan_ioctls++;
			n = ioctl(s->pagemap_fd, HC_PAGEMAP_SCAN, &arg);
		} while (n < 0 && errno == EINTR);
		if (n < 0)
			return -errno;
		region_walk_feed(&w, s->regions, (size_t)n);
		/* The walk stops early only when vec is full. */
		if (arg.walk_end <= start)
			return -EIO;
		start = arg.walk_end;
	}
	if (!x->err)
		region_walk_finish(&w);
	return x->err;
}

int range_scan_vma(struct range_scanner *s, const struct vma *v, bool check_lazyfree, const struct collapse_limits *lim,
		   uint64_t results[SCAN_NR_RESULTS], candidate_fn on_candidate, void *ctx)
{
	bool anon = v->kind == VMA_ANON;
	struct vma_scan x = {
	    .s = s,
	    .anon = anon,
	    .deep = (anon && lim->max_ptes_shared < HPAGE_PAGES) || check_lazyfree,
	    .check_lazyfree = check_lazyfree,
	    .lim = lim,
	    .results = results,
	    .on_candidate = on_candidate,
	    .ctx = ctx,
	};
	struct vma_blocks b;
	int err;

	if (s->pagemap_fd < 0)
		return -EBADF;
	vma_blocks(v, &b);
	if (b.whole == 0)
		return 0;
	if (s->use_scan_ioctl)
		return scan_with_ioctl(s, b.first, b.whole, &x);
	for (size_t i = 0; i < b.whole; i++) {
		uint64_t addr = b.first + i * HPAGE_SIZE;
		struct block_counts c;
		enum scan_result r;

		if ((err = pagemap_block(s, addr, anon, check_lazyfree, lim, &c, &r)))
			return err;
		results[r]++;
		if (r == SCAN_CANDIDATE && on_candidate)
			on_candidate(ctx, addr, &c);
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

int range_scanner_init(struct range_scanner *s)
{
	*s = (struct range_scanner){.pagemap_fd = -1, .kpageflags_fd = -1};
	s->regions = calloc(REGIONS_CAP, sizeof(*s->regions));
	s->pm = calloc(HPAGE_PAGES, sizeof(*s->pm));
	s->kpf = calloc(HPAGE_PAGES, sizeof(*s->kpf));
	if (!s->regions || !s->pm || !s->kpf) {
		range_scanner_free(s);
		return -ENOMEM;
	}
	s->regions_cap = REGIONS_CAP;

	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
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
	s->use_scan_ioctl = probe_scan_ioctl(fd, page, s->regions);
	munmap((void *)page, PAGE_SZ);
	close(fd);
	s->kpageflags_fd = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
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
	s->regions = NULL;
	s->pm = s->kpf = NULL;
	s->regions_cap = 0;
}

int range_scanner_attach(struct range_scanner *s, int proc_pid_dirfd)
{
	range_scanner_detach(s);
	s->pagemap_fd = openat(proc_pid_dirfd, "pagemap", O_RDONLY | O_CLOEXEC);
	return s->pagemap_fd < 0 ? -errno : 0;
}

void range_scanner_detach(struct range_scanner *s)
{
	if (s->pagemap_fd >= 0)
		close(s->pagemap_fd);
	s->pagemap_fd = -1;
}
