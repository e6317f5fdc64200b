/* SPDX-License-Identifier: GPL-2.0-or-later */
/* budget: the pass's candidates, the collapse budget, and the selection of
 * what this pass collapses. Pure: no I/O, no clock (now is a parameter).
 *
 * budget_candidates() scores every remembered block of every selected,
 * enabled process whose last scan is complete (no scan_cursor) into one
 * order (plan.h: tiers, then score).
 * budget_select() keeps, in that order, the candidates the budget allows.
 *
 * The budget is a token bucket per policy (its budget_mb_per_s) and one
 * for everything (the defaults' budget_mb_per_s): tokens accrue with time,
 * whether passes ran or not, up to a burst of one interval's share plus one
 * 2 MiB block. Unspent budget carries over, so a budget below one
 * block per pass still collapses a block every few passes; and no pass
 * spends more than the burst, however long the daemon was idle. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "pid_filter.h"
#include "plan.h"
#include "proc_state.h"

struct config;
struct policy;

/* Fills *cands (n, cap: a reused array) with the blocks of the processes
 * in st[0..nst) that f selects and whose policy is enabled, in plan order;
 * a candidate's proc is the index in st. Adds the active processes to
 * *procs_active (if not NULL). Returns 0 or -ENOMEM. */
int budget_candidates(struct candidate **cands, size_t *ncands, size_t *capcands, const struct proc_state *st,
		      size_t nst, const struct pid_filter *f, double now, unsigned *procs_active);

/* A token bucket of collapse budget, in bytes. */
struct token_bucket {
	double tokens;
	double last; /* seconds of the last refill; < 0: never refilled */
};

/* The global bucket (the defaults' budget_mb_per_s, for everything) and one
 * bucket per policy of the config ([0] the defaults, [1 + i] rules[i]):
 * as many as the config has, no fixed bound. */
struct budget {
	struct token_bucket global;
	struct token_bucket *pol;
	double *spend; /* scratch of budget_select(), per policy */
	size_t npol;
};

void budget_init(struct budget *b);
void budget_free(struct budget *b);
/* Sizes the per-policy buckets for cfg. old is the config the buckets were
 * made for (NULL: none): its defaults' bucket, and the bucket of each of
 * its rules whose path cfg still has, keep their tokens; the others start
 * from one interval's share. 0 or -ENOMEM (then the buckets are as they
 * were, and policies past the old count get no budget). */
int budget_configure(struct budget *b, const struct config *old, const struct config *cfg);

/* The index of pol's bucket, SIZE_MAX if pol is not one of cfg's. */
size_t budget_policy_index(const struct config *cfg, const struct policy *pol);

/* The most a bucket of rate bytes/s holds: the rate times one scan
 * interval (counted as at least 1 s, at most 10 s), plus one block, so that
 * any budget collapses a block now and then and none of it is lost to
 * rounding while it waits for a whole block. */
double budget_burst(const struct config *cfg, double rate);

/* Adds what the time since the last refill earned, up to the burst. A new
 * bucket starts with one interval's share. Time, not passes: passes skipped
 * as idle or backing off earn nothing beyond the burst. */
void budget_refill(struct budget *b, const struct config *cfg, double now);

/* Moves the candidates that the global and their policy's tokens allow
 * (everything when unlimited) to the front of cands, in their order; returns
 * how many. Spends nothing: see budget_charge(). */
size_t budget_select(struct budget *b, const struct config *cfg, struct candidate *cands, size_t ncands,
		     const struct proc_state *st, bool unlimited);

/* Takes bytes submitted for collapse from the global and pol's buckets. */
void budget_charge(struct budget *b, const struct config *cfg, const struct policy *pol, double bytes);
