/* SPDX-License-Identifier: GPL-2.0-or-later */
/* dispatch: collapsing the selected blocks with process_madvise.
 *
 * Each process's blocks go in one batched call through a pidfd proven to be
 * the process that was scanned (same start time and exec fingerprint), in
 * the order of its best block, after its cgroup was read again (a process
 * moved under a policy that disables collapsing, or whose cgroup cannot be
 * read, is skipped). The outcomes update its memos: collapsed and
 * refused (EINVAL) blocks are dropped, EINVAL ones remembered as refused,
 * EAGAIN/EBUSY counted (EAGAIN retried once at the end of the pass), ENOMEM
 * backs that process off (proc_state.backoff_until, bounded) while the others
 * go on, ENOMEM from ENOMEM_PROCS_PER_PASS processes ends the pass (a real
 * shortage: each of them waits, the rest keep their place), and EPERM stops
 * the pass. An
 * ENOMEM while the kernel's allocation failure count did not move is an
 * unmapped block (COLLAPSE_UNMAPPED): dropped, and nothing stops.
 * recheck_selected() first rescans the selected processes not scanned in
 * this pass, since cold or freed memory leaves no trace in the sample; a
 * process whose scan did not complete in this pass is not collapsed. Then
 * each call's blocks are checked again right before it (the process, the
 * policies it was scanned under, and range_scan_recheck() over just those
 * blocks): the stale ones are not submitted (COLLAPSE_STALE). What each
 * outcome makes it do is dispatch_outcome()'s decision. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dispatch_outcome.h" /* what each outcome makes it do; ENOMEM_PROCS_PER_PASS */
#include "plan.h"

struct engine;
struct pass_options;
struct pass_stats;
struct proc_state;

struct collapse_run {
	uint64_t *addrs;
	uint8_t *out;
	struct candidate *retry; /* blocks that answered EAGAIN */
	size_t nretry;
	double deadline; /* monotonic seconds (e->now); 0: none */
	bool (*interrupted)(void);
	unsigned enomem_procs; /* processes that answered ENOMEM this pass */
	bool stop;             /* ENOMEM_PROCS_PER_PASS, EPERM or the deadline: no more this pass */
};

/* A pidfd for s, or -errno (-ESRCH: not the process that was scanned;
 * -ECANCELED: its cgroup, read again, is unknown or under a policy that
 * disables collapsing; s->cgroup and s->policy are updated). */
int open_verified_pidfd(struct engine *e, struct proc_state *s);

/* Collapses sel[0..nsel) (consumed: marked used), process by process,
 * until cr->stop. collect_retry: EAGAIN blocks go to cr->retry. */
void collapse_selected(struct engine *e, struct candidate *sel, size_t nsel, struct collapse_run *cr,
		       struct pass_stats *ps, bool collect_retry, double now);

/* Rescans each process of e->cands[0..nsel) not scanned in this pass;
 * returns how many of those blocks are no longer candidates. */
size_t recheck_selected(struct engine *e, const struct pass_options *o, size_t nsel, struct pass_stats *ps, double now);
