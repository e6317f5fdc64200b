/* SPDX-License-Identifier: GPL-2.0-or-later */
/* block_memo: what the engine remembers about one process's blocks between
 * passes. Pure: no I/O, no clock.
 *
 * - struct block_memo: a candidate block from the last scan, sorted by
 *   address (block_memo_find is a binary search). block_memo_drop() marks
 *   one dropped in place, keeping the order; block_memo_compact() removes
 *   the marked ones after the pass.
 * - struct addr_set: a bounded, sorted set of block addresses (the blocks
 *   the kernel refused with EINVAL, and the blocks given up after
 *   eagain_retries). Adding is best effort: without memory, or past the
 *   bound, a block is merely tried again. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A set of block addresses, sorted (binary search), at most ADDR_SET_MAX
 * entries: when full, adding drops the oldest. Each entry keeps a tag (the
 * identity of the VMA it was about, 0 if none) and when it was added. */
#define ADDR_SET_MAX 4096

struct addr_entry {
	uint64_t addr;
	double added; /* monotonic seconds */
	uint32_t tag;
};

struct addr_set {
	struct addr_entry *v;
	size_t n, cap;
};

/* A block remembered from the last scan of its process. */
struct block_memo {
	uint64_t addr;
	double first_seen; /* monotonic seconds: ages the block */
	uint16_t present;
	uint8_t referenced_pct; /* of its VMA */
	uint8_t eagain;         /* EAGAIN answers so far */
	uint32_t vma_tag;       /* identity of its VMA at the scan (rescan.c) */
	uint8_t lazy_sampled;   /* block_counts.lazy_sampled at its scan */
	bool anon;              /* in an anonymous VMA */
	uint64_t cold_gen;      /* cold_ranges.gen at its scan: newer ranges are the re-check's */
};

const struct addr_entry *addr_set_find(const struct addr_set *set, uint64_t addr);
bool addr_set_has(const struct addr_set *set, uint64_t addr);
/* Adds addr (or renews it: new tag and time). */
void addr_set_add(struct addr_set *set, uint64_t addr, uint32_t tag, double now);
void addr_set_remove(struct addr_set *set, uint64_t addr);
/* Drops the entries added before the time before. */
void addr_set_expire(struct addr_set *set, double before);
void addr_set_clear(struct addr_set *set); /* empties it, keeps the storage */
void addr_set_free(struct addr_set *set);

/* Binary search in b[0..n), sorted by address; NULL if absent. */
struct block_memo *block_memo_find(struct block_memo *b, size_t n, uint64_t addr);

/* Marks the memo of addr dropped (a no-op if there is none):
 * block_memo_find() no longer finds it, the others still are. */
void block_memo_drop(struct block_memo *b, size_t n, uint64_t addr);

/* Removes the dropped memos from b[0..*n); memos past eagain_retries EAGAIN
 * answers go to given_up instead (until the next full rescan: a rescan for
 * any other reason must not revive them), added at now. */
void block_memo_compact(struct block_memo *b, size_t *n, struct addr_set *given_up, unsigned eagain_retries,
			double now);
