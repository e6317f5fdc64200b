/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plan: score candidate blocks and put the whole system's candidates in one
 * order, hottest and most valuable first. Pure.
 *
 * The score of a candidate block (documented for users in
 * hugecollapsed.conf(5)):
 *
 *   score = weight/100 × (0.05 + activity) × referenced × fill
 *
 *   activity   = cpu + faults, capped at 4:
 *                cpu    = CPU seconds used per second since the last sample
 *                faults = (minor + 8 × major faults) per second / 25600
 *                         (25600 faults/s = 100 MiB/s of 4 KiB faults → 1.0)
 *   referenced = the VMA's Referenced/Rss (0..1)
 *   fill       = present pages / 512 (0..1): a fuller block gains the same
 *                TLB reach for less added memory
 *
 * The 0.05 floor keeps weight and fill meaningful for quiet processes.
 * Candidates are ordered by tier first, then score:
 *   tier 2 (aged):   waited max_wait_s or longer; among them the oldest first
 *                    (their score is the seconds waited), so a block waits at
 *                    most max_wait_s plus the time the budget needs for the
 *                    blocks that aged before it — never forever;
 *   tier 1 (active): the process was active within idle_after_s;
 *   tier 0 (idle):   everything else, ranked below every active process.
 */
#pragma once
#include <stddef.h>
#include <stdint.h>

enum plan_tier {
	TIER_IDLE = 0,
	TIER_ACTIVE = 1,
	TIER_AGED = 2,
};

struct activity {
	double cpu;    /* CPU seconds per second */
	double faults; /* normalized fault rate */
};

struct candidate {
	uint64_t addr;
	double score;
	uint32_t proc;    /* index of the owning process in the caller's table */
	uint16_t present; /* present pages in the block */
	uint8_t tier;     /* enum plan_tier */
};

/* Activity from counter deltas over dt_s seconds; hz is sysconf(_SC_CLK_TCK). */
struct activity activity_from_deltas(uint64_t cpu_ticks, uint64_t minflt, uint64_t majflt, double dt_s, long hz);
double activity_total(const struct activity *a);

double candidate_score(unsigned weight, const struct activity *a, unsigned referenced_pct, unsigned present);

/* Sorts by tier, then score, both descending; ties by process then address,
 * so the order is deterministic. */
void plan_order(struct candidate *c, size_t n);
