/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cold_ranges: the address ranges processes gave MADV_COLD or MADV_PAGEOUT,
 * as observed by cold_watch.h, and whether a 2 MiB block inside one is
 * warm again. Pure: no I/O, no clock.
 *
 * khugepaged refuses a block with no referenced PTE
 * (SCAN_LACK_REFERENCED_PAGE, mm/khugepaged.c), and MADV_COLD clears the
 * referenced bits of the range it is given. Nothing in /proc shows them per
 * block on this kernel (no idle page tracking; kpageflags' REFERENCED and
 * ACTIVE read 0 for hot and cold pages alike), only smaps' Referenced per
 * VMA. So a block inside an observed range is cold unless the VMA's count
 * proves that some page of it was referenced since: fewer unreferenced
 * pages in the whole VMA (Rss - Referenced) than the block has resident
 * pages inside the range (cold_block_warm()).
 *
 * Bounds, each failing toward "cold" (not collapsing): at most
 * COLD_PER_PID ranges per process, past which its two closest ranges merge
 * (covering the gap between them); at most COLD_MAX exact ranges in all,
 * past which a process with a new range gets one entry covering its whole
 * address space instead of all it had. So the table holds at most
 * max(COLD_MAX, processes) entries of 40 bytes. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define COLD_PER_PID 32u
#define COLD_MAX     16384u
#define COLD_WHOLE   UINT64_MAX /* end of an entry that covers everything */

struct cold_range {
	pid_t pid;
	uint64_t gen;         /* cold_ranges.gen when added or last widened */
	uint64_t start, end;  /* page-aligned, [start, end) */
	uint64_t start_ticks; /* the process's start time, 0 until bound */
};

struct cold_ranges {
	struct cold_range *v; /* sorted by (pid, start), disjoint per pid */
	size_t n, cap;
	uint64_t gen;    /* bumped by every add: a scan remembers the one it saw */
	uint64_t merges; /* ranges merged past COLD_PER_PID */
	uint64_t wholes; /* processes made whole past COLD_MAX or after a loss */
};

void cold_ranges_free(struct cold_ranges *t);

/* Records [start, start + len) for pid (page-aligned outward; len 0 is
 * nothing, as for madvise). Returns 0, or -ENOMEM: then the process is made
 * whole in place if it had an entry, and the caller must treat it as
 * lost (cold_ranges_whole()) otherwise. */
int cold_ranges_add(struct cold_ranges *t, pid_t pid, uint64_t start, uint64_t len);

/* Replaces everything pid had by one entry covering its whole address space
 * (a process_madvise() whose ranges cannot be read, a lost record). 0 or
 * -ENOMEM. */
int cold_ranges_whole(struct cold_ranges *t, pid_t pid);

/* cold_ranges_whole() for every pid of get(ctx, 0..n), which must come in
 * increasing order, in one merge: O(entries + n). 0 or -ENOMEM (then
 * nothing changed). */
int cold_ranges_whole_all(struct cold_ranges *t, pid_t (*get)(const void *ctx, size_t i), const void *ctx, size_t n);

/* Forgets pid's ranges (exit, exec, a recycled PID). */
void cold_ranges_forget(struct cold_ranges *t, pid_t pid);

/* Binds pid's unbound entries to start_ticks and forgets those bound to
 * another start time (the PID was recycled). */
void cold_ranges_bind(struct cold_ranges *t, pid_t pid, uint64_t start_ticks);

/* Whether pid has any range. */
bool cold_ranges_has(const struct cold_ranges *t, pid_t pid);

/* Pages of [addr, addr + len) inside pid's ranges whose gen is above
 * after_gen (0: all of them). */
uint64_t cold_ranges_overlap(const struct cold_ranges *t, pid_t pid, uint64_t addr, uint64_t len, uint64_t after_gen);

/* Drops pid's ranges that every VMA [vs[i], ve[i]) overlapping them shows
 * fully referenced (warm[i]: Referenced >= Rss, nothing cold resident), or
 * that overlap no VMA at all (unmapped). VMAs sorted by start. */
void cold_ranges_settle(struct cold_ranges *t, pid_t pid, const uint64_t *vs, const uint64_t *ve, const bool *warm,
			size_t nvma);

/* A block with `present` resident pages, `cold` of its 512 pages inside
 * observed ranges, in a VMA with `unreferenced` resident pages not
 * referenced (Rss - Referenced, in pages): true when some page of it in the
 * ranges must have been referenced since, as khugepaged asks of a block. The
 * pages of the block inside the ranges that are resident number at least
 * present - (512 - cold), and the unreferenced ones among them at most
 * unreferenced. */
bool cold_block_warm(uint64_t unreferenced, unsigned present, uint64_t cold);
