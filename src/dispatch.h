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
 * The engine first rescans the selected processes not scanned in this pass
 * (dispatch_needs_rescan()), since cold or freed memory leaves no trace in
 * the sample; a process whose scan did not complete in this pass is not
 * collapsed. Then
 * each call's blocks are checked again right before it (the process, the
 * policies it was scanned under, and range_scan_recheck() over just those
 * blocks): the stale ones are not submitted (COLLAPSE_STALE). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.h"

struct engine;
struct pass_stats;
struct proc_state;

/* ENOMEM from this many processes in one pass: huge pages are short for
 * everyone, not for one process's nodes; stop asking until the next pass. */
#define ENOMEM_PROCS_PER_PASS 4
/* A process's back-off doubles per ENOMEM in a row, up to 2^this times
 * alloc_backoff_ms (8 min at the default 60 s), then stays there: it is
 * always tried again. */
#define ENOMEM_BACKOFF_MAX_SHIFT 3

/* The back-off after the streak-th ENOMEM in a row: alloc_backoff_ms
 * doubled per ENOMEM, bounded. Pure. */
double enomem_backoff_s(unsigned alloc_backoff_ms, unsigned streak);

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

/* Whether the selected blocks of s must be found again by a scan (engine.c
 * asks the scanner) before they are collapsed in the pass whose sample time
 * is now: s was not scanned in this pass, and no scan of it stopped midway
 * in this pass (that one had its share: collapse_selected() leaves its
 * blocks alone). A block not re-checked is never collapsed. Pure. */
bool dispatch_needs_rescan(const struct proc_state *s, double now);
