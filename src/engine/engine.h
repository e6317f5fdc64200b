/* SPDX-License-Identifier: GPL-2.0-or-later */
/* engine: one pass from /proc to process_madvise(MADV_COLLAPSE), and the
 * state kept between passes.
 *
 * A pass: sample the processes that changed (engine_sample_pass: those the
 * fault doorbell named, new ones, those holding candidates, a rolling
 * slice; every process through libproc2 when that cannot be known); rescan
 * only processes that are new, changed (faults, RSS or address-space size,
 * unless their faults cannot have made a candidate: rescan.c) or due for a
 * full rescan (full_rescan_s); score every remembered
 * candidate block of every enabled process; collapse from the top of that
 * single order until the pass's budget is spent, rescanning first a process
 * whose blocks were found in an earlier pass (MADV_COLD and MADV_FREE leave
 * no trace in the sample).
 *
 * The stages, in the order engine_pass() calls them; each owns its state
 * (it alone writes it), takes explicit inputs and calls only down:
 * - sampler (sampler.c, struct sampler: the fault doorbell, the listing's
 *   PID sets, the rolling cursor, the mapped-memory watch, the sample):
 *   merges the pass's sample into the process table (proc_state.c owns
 *   struct proc_state and its merge, sweep and update);
 * - scanner (rescan.c, struct scanner: the range scanner, its scratch
 *   (smaps_buf, vmas, old_blocks), the resume cursor, the THP policy and
 *   policy_gen, the prctl seams; struct scan_input: what it reads of the
 *   others, the cold ranges it settles): what changed, reading it again;
 *   range_scan.c and smaps_scan.c read, block_memo.c remembers per block;
 * - selector (selector.c, pure, struct selector: the candidates' order,
 *   the selection, the budget's buckets (budget.c does the arithmetic);
 *   struct selector_input: the config, the table, the filter, the clock),
 *   with the memory cgroup gate (memcg_gate.c, its own opaque state,
 *   struct memcg_gate_input) between the order and the budget: what fits
 *   is its own output, which the selection is made from;
 * - the recheck before collapse: dispatch_needs_rescan() names the
 *   selected processes to find again, engine.c asks the scanner;
 * - dispatcher (dispatch.c, struct dispatcher: batch buffers, its own
 *   range scanner and smaps scratch, madvise_fn, alloc_failed, bytes per
 *   cgroup; struct dispatch_env: what it uses of the others, the table
 *   read only, the checks before each call answered by engine.c): reads
 *   the selection; its outputs are what it submitted (struct
 *   dispatch_charge), which engine.c charges to the selector's budget, and
 *   what the outcomes make of the table (struct collapse_effects,
 *   collapse_effects.h, on the scanner's side), which engine.c applies
 *   after each round (the first and the EAGAIN retry);
 * - statistics (this file: total, last, passes), read by report.c,
 *   metrics.c, coverage.c and the service as a const struct engine_stats
 *   (engine_stats.h), never as the engine.
 * Seams for tests: now (the clock), sampler.enumerate, sampler.doorbell_rang
 * and doorbell_drain, dispatch.madvise_fn, pidfd_open and alloc_failed,
 * scanner.prctl_exact and scanner.prctl_infer, the range scanners'
 * (scanner.range, dispatch.range) ioctl and files, pressure_check and
 * paths (paths.h). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "budget.h"
#include "cold_watch.h"
#include "collapse.h"
#include "config.h"
#include "dispatch.h"
#include "engine_stats.h"
#include "histogram.h"
#include "mem_pressure.h"
#include "paths.h"
#include "plan.h"
#include "proc_state.h"
#include "procs.h"
#include "range_scan.h"
#include "rescan.h"
#include "sampler.h"
#include "selector.h"
#include "smaps_scan.h"
#include "thp_policy.h"
#include "vmstat.h"

struct memcg_gate;

#define ENGINE_NEWS_MAX 64

struct engine {
	const struct config *cfg;
	struct procs *procs;
	const struct hc_paths *paths; /* every fixed path (paths.h); injectable */
	pid_t self;                   /* never collapsed: getpid() */
	struct scanner scanner;       /* rescan.h: the page-table reader, its scratch, resume cursor, THP policy */
	struct sampler sampler;       /* sampler.h: the doorbell, PID sets, roll cursor, mapped-memory watch */
	struct selector selector;     /* selector.h: the pass's candidates, the budget's buckets */
	long hz;
	struct proc_state *st; /* sorted by pid */
	size_t nst, capst;
	struct dispatcher dispatch;  /* dispatch.h: batch buffers, its scratch, the call's seams, bytes per cgroup */
	uint64_t doorbell_wakeups;   /* back to back: passes the doorbell's poll woke (service) */
	uint64_t news_passes;        /* timer: passes run early for news (service) */
	pid_t news[ENGINE_NEWS_MAX]; /* engine_news()'s list */
	size_t nnews;
	bool news_overflow;      /* more than ENGINE_NEWS_MAX: scan every process */
	double last_full_pass;   /* monotonic seconds */
	size_t pending;          /* candidate blocks remembered after the last pass */
	size_t partial_scans;    /* processes left with a scan_cursor after the last pass */
	double pass_start;       /* this pass's start (e->now) */
	uint64_t passes_idle;    /* passes skipped by the doorbell */
	struct pass_stats total; /* since start */
	struct pass_stats last;  /* the last pass */
	uint64_t passes;
	/* For the scanner, set by the daemon after engine_init(). khp: what
	 * the daemon changed of the THP policy (NULL: nothing, as for
	 * --once). no_except_advised: a kernel before 6.18
	 * (kernel_features.h), where status THP_enabled is the exact prctl
	 * mode and scanner.prctl_infer is not used (false: infer). */
	const struct khugepaged_saved *khp;
	bool no_except_advised;
	struct vmstat_reader vmstat;
	struct memcg_gate *memcg;     /* memcg_gate.h: room per cgroup, per pass */
	struct mem_pressure pressure; /* host memory pressure: collapsing waits while it lasts */
	/* The check (mem_pressure_check() by default); injectable. */
	enum mem_pressure_sign (*pressure_check)(struct engine *e, double now);
	/* MADV_COLD/MADV_PAGEOUT ranges (cold_watch.h): drained before each
	 * pass and each call; a block inside one is not a candidate until its
	 * VMA shows it referenced again (SCAN_LACK_REFERENCED_PAGE). Without
	 * the events (not opened: --once, cold_watch = no, no tracefs or
	 * perf) the ranges stay empty and only the per-VMA rule judges. */
	struct cold_watch cold;
	struct histogram pass_hist; /* seconds per pass */
	double (*now)(void);        /* monotonic seconds; injectable */
};

/* Returns 0 or -errno. The config must outlive the engine, or be replaced
 * with engine_set_config(), during which the old one must still be valid
 * (the budgets of rules that stay carry over, by path). So must paths. */
int engine_init(struct engine *e, const struct config *cfg, const struct hc_paths *paths);

/* Loads the BPF prctl iterator (prctl_iter.h) and sets
 * e->scanner.prctl_exact to it (scanner_prctl_open()). 0, or -errno (the
 * engine keeps inferring; the caller says so). */
int engine_prctl_open(struct engine *e);
/* Opens the MADV_COLD/MADV_PAGEOUT observer (cold_watch.h). 0, or -errno
 * with why filled (the per-VMA rule alone then). */
int engine_cold_open(struct engine *e, char *why, size_t whylen);
/* Drains the observer into e->cold.ranges; after lost records every known
 * process counts as cold in its whole address space. (engine.c) */
void engine_cold_drain(struct engine *e);
void engine_free(struct engine *e);
void engine_set_config(struct engine *e, const struct config *cfg);

/* Takes a sample of every process (e->sampler.enumerate), updating activity.
 * The first one only sets the baseline. Returns 0 or -errno. */
int engine_sample(struct engine *e);

/* The sample of one pass: only what changed (sample_set.h) when the fault
 * doorbell says who faulted; every process (engine_sample) when it cannot,
 * when records were lost, when mapped memory moved without faults, or
 * for a --pid or --once pass. Sets ps->full_sample and ps->procs_sampled.
 * Returns 0 or -errno. (sampler.h) */
int engine_sample_pass(struct engine *e, const struct pass_options *o, struct pass_stats *ps);

/* One pass (samples again first). Returns 0 or -errno on a fatal error. */
int engine_pass(struct engine *e, const struct pass_options *o, struct pass_stats *ps);

const struct proc_state *engine_find(const struct engine *e, pid_t pid);

struct engine_view engine_view(const struct engine *e);
/* What readers see (engine_stats.h): views valid until the next pass. */
void engine_stats_get(const struct engine *e, struct engine_stats *out);
/* The service's doorbell poll woke a pass (back to back). */
void engine_count_wakeup(struct engine *e);
/* Which processes are news that warrant a pass before its time
 * (news_gate.h): those with min_samples doorbell records since the last
 * pass, and those that called madvise(MADV_HUGEPAGE) or
 * prctl(PR_SET_THP_DISABLE) (drains the MADV_COLD observer). Returns how many; *pids is their list (for
 * pass_options.scan_only, valid until the next call), or NULL when there
 * are more than ENGINE_NEWS_MAX (scan every process then). */
size_t engine_news(struct engine *e, uint32_t min_samples, const pid_t **pids);
/* The service ran a pass early for news. */
void engine_count_news(struct engine *e);
/* The doorbell, for the service to poll its fds; the MADV_COLD observer,
 * to say how it is watched. */
const struct fault_doorbell *engine_doorbell(const struct engine *e);
const struct cold_watch *engine_cold(const struct engine *e);
void engine_cold_close(struct engine *e);
/* Passes completed. */
uint64_t engine_passes(const struct engine *e);
/* Whether prctl modes are read exactly (engine_prctl_open() worked). */
bool engine_prctl_exact(const struct engine *e);
struct cgroup2_root;
/* Forgets the collapsed bytes of the cgroups that are gone (cgroup2.h). */
void engine_prune_cgroups(struct engine *e, const struct cgroup2_root *r);
double monotonic_seconds(void);
