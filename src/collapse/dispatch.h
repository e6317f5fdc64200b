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
 * blocks, through the dispatcher's own range scanner): the stale ones are
 * not submitted (COLLAPSE_STALE). What each outcome makes it do is
 * dispatch_outcome()'s decision.
 *
 * The dispatcher reads the process table and never writes it: what its
 * outcomes make of each process and block comes back in
 * collapse_run.fx (collapse_effects.h), which engine.c applies after each
 * round, so that the EAGAIN retry sees what the first round changed.
 * Within one process's call it carries its own copy of what the earlier
 * blocks changed (the ENOMEM streak, a forgotten process). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dispatch_outcome.h" /* what each outcome makes it do; ENOMEM_PROCS_PER_PASS */
#include "plan.h"

#include "cgroup2.h" /* struct cgroup_bytes */
#include "collapse.h"
#include "collapse_effects.h" /* the output of a round */
#include "histogram.h"
#include "pass.h"
#include "paths.h"
#include "range_scan.h"
#include "smaps_scan.h" /* struct vma_list */

struct cold_ranges;
struct config;
struct policy;
struct proc_state;

/* The dispatcher's state, written here alone: the batch buffers and the
 * effects' (collapse_effects.h), its own scratch (the recheck's range
 * scanner, the smaps text and VMAs read again after a collapse), the seams
 * of the call (madvise_fn, alloc_failed), the bytes collapsed per cgroup
 * and the seconds per block. */
struct dispatcher {
	uint64_t *batch_addrs;
	uint8_t *batch_out;
	struct candidate *retry;
	bool *taken; /* per selected block: in a call already */
	struct dispatch_charge *charges;
	size_t capbatch_addrs, capbatch_out, capretry, captaken, capcharges;
	struct proc_effect *proc_fx;
	struct block_effect *block_fx;
	size_t capproc_fx, capblock_fx;
	/* The re-check's page-table reads (range_scan_recheck()), attached to
	 * one process per call; its fds and probes are dispatcher_init()'s,
	 * and, like the scanner's, injectable (scan_ioctl, swap_configured,
	 * kpageflags_fd, have_pfns, use_scan_ioctl). It never probes
	 * (probe_fn NULL) and never stops midway (stop NULL): a re-check reads
	 * one call's blocks. */
	struct range_scanner range;
	char *smaps_buf; /* scratch: the smaps text, for the THP numbers after a collapse */
	size_t smaps_cap;
	struct vma_list vmas;          /* scratch: its VMAs */
	process_madvise_fn madvise_fn; /* injectable for tests */
	/* pidfd_open(2) of a process to collapse: pidfd_open_pid() by default,
	 * -1 with errno on failure; injectable, for a test whose processes
	 * exist only in a fixture /proc (its madvise_fn gets the fd). */
	int (*pidfd_open)(pid_t pid);
	/* thp_collapse_alloc_failed, read around each call to tell an
	 * unmapped block's ENOMEM from a real shortage (collapse.h);
	 * injectable. */
	alloc_failed_fn alloc_failed;
	void *alloc_failed_ctx;
	struct cgroup_bytes *cg_bytes; /* for metrics */
	size_t ncg_bytes;
	struct histogram block_hist; /* seconds per block: each call's time over its blocks */
	bool log_collapses;          /* one log line per process collapsed (daemon) */
};

/* What dispatch uses of the rest of the pass, given by the engine. The
 * checks before each call are the engine's to answer (it owns the
 * policies and the cold ranges): dispatch never calls back into the
 * scanner itself. */
struct dispatch_env {
	const struct proc_state *st; /* the table, read only: a candidate's proc indexes it */
	size_t nst;
	const struct config *cfg;
	const char *proc_root;
	double (*now)(void);
	void *ctx; /* of the four below */
	/* Reads st[proc]'s cgroup again and looks its policy up
	 * (rescan_refresh_policy(): the scanner writes them). */
	int (*refresh_policy)(void *ctx, uint32_t proc, int dirfd);
	/* Whether the policies s was scanned under still hold (rescan.h). */
	bool (*policy_holds)(void *ctx, const struct proc_state *s, int dirfd);
	struct collapse_limits (*limits)(void *ctx, const struct policy *pol);
	/* Drains the MADV_COLD observer; the ranges after it. */
	const struct cold_ranges *(*cold_drain)(void *ctx);
};

/* Bytes submitted for collapse under a policy: the budget's to charge
 * (selector_charge()), by the engine after each round. */
struct dispatch_charge {
	const struct policy *pol;
	double bytes;
};

struct collapse_run {
	uint64_t *addrs;
	uint8_t *out;
	struct candidate *retry; /* blocks that answered EAGAIN */
	size_t nretry;
	bool *taken;
	struct dispatch_charge *charges; /* one per call that spends budget; the engine resets ncharges */
	size_t ncharges;
	double deadline; /* monotonic seconds (e->now); 0: none */
	bool (*interrupted)(void);
	unsigned enomem_procs; /* processes that answered ENOMEM this pass */
	bool stop;             /* ENOMEM_PROCS_PER_PASS, EPERM or the deadline: no more this pass */
	/* Out: what the last collapse_selected() makes of the table, for the
	 * engine to apply (collapse_effects_apply()) before anything reads it
	 * again, the retry round included. */
	struct collapse_effects fx;
};

/* Opens the dispatcher's range scanner (paths->pagemap_read: the read
 * path; paths must outlive d) and readies its smaps scratch. The seams
 * (madvise_fn, pidfd_open, alloc_failed) are the caller's to set. 0 or
 * -errno. */
int dispatcher_init(struct dispatcher *d, const struct hc_paths *paths);

/* Sizes the batch and effect buffers for nsel blocks and points cr at
 * them. 0 or -ENOMEM. */
int dispatch_reserve(struct dispatcher *d, size_t nsel, struct collapse_run *cr);

/* Collapses sel[0..nsel), process by process in the order of each one's
 * best block, until cr->stop. collect_retry: EAGAIN blocks go to
 * cr->retry, and what is submitted spends budget (cr->charges; a retry was
 * paid for already). Each process's pidfd is proven to be the process that
 * was scanned (same start time and exec fingerprint, its cgroup read
 * again). env->st is only read: cr->fx says what the outcomes change (from
 * this call's start), for the caller to apply before the next round. */
void collapse_selected(struct dispatcher *d, const struct dispatch_env *env, const struct candidate *sel, size_t nsel,
		       struct collapse_run *cr, struct pass_stats *ps, bool collect_retry, double now);

void dispatcher_free(struct dispatcher *d);

/* Whether the selected blocks of s must be found again by a scan (engine.c
 * asks the scanner) before they are collapsed in the pass whose sample time
 * is now: s was not scanned in this pass, and no scan of it stopped midway
 * in this pass (that one had its share: collapse_selected() leaves its
 * blocks alone). A block not re-checked is never collapsed. Pure. */
bool dispatch_needs_rescan(const struct proc_state *s, double now);
