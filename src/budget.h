/* budget: the pass's candidates, the collapse budget, and the selection of
 * what this pass collapses. Pure: no I/O, no clock (now is a parameter).
 *
 * budget_candidates() scores every remembered block of every selected,
 * enabled process into one order (plan.h: tiers, then score).
 * budget_select() keeps, in that order, the candidates the budget allows:
 * the global budget (the defaults' budget_mb_per_s) and each policy's own
 * budget_mb_per_s, both as rates over scale seconds. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "plan.h"
#include "proc_table.h"

/* Which processes take part in a pass: never self (the daemon), and only
 * pids[] when npids > 0 (--pid). */
struct pid_filter {
	const pid_t *pids;
	size_t npids;
	pid_t self;
};

bool pid_filter_match(const struct pid_filter *f, pid_t pid);

/* Fills *cands (n, cap: a reused array) with the blocks of the processes
 * in st[0..nst) that f selects and whose policy is enabled, in plan order;
 * a candidate's proc is the index in st. Adds the active processes to
 * *procs_active (if not NULL). Returns 0 or -ENOMEM. */
int budget_candidates(struct candidate **cands, size_t *ncands, size_t *capcands, const struct proc_state *st,
		      size_t nst, const struct pid_filter *f, double now, unsigned *procs_active);

/* Moves the candidates the budget allows this pass (scale seconds at
 * global_mb_per_s and each policy's budget_mb_per_s; everything when
 * unlimited) to the front of cands, in their order; returns how many. */
size_t budget_select(struct candidate *cands, size_t ncands, const struct proc_state *st, double global_mb_per_s,
		     double scale, bool unlimited);
