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
 * The steps live in their own files: proc_table (sampling, the table of
 * processes), rescan (what changed, reading it again), block_memo (what is
 * remembered per block), budget (candidates and selection, pure) and
 * dispatch (collapsing). Seams for tests: now (the clock), enumerate (the
 * process list), madvise_fn, pidfd_open, doorbell_rang and paths (paths.h). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "budget.h"
#include "cold_watch.h"
#include "collapse.h"
#include "config.h"
#include "fault_doorbell.h"
#include "histogram.h"
#include "mapped_memory.h"
#include "mem_pressure.h"
#include "paths.h"
#include "plan.h"
#include "proc_table.h"
#include "procs.h"
#include "range_scan.h"
#include "smaps_scan.h"
#include "thp_policy.h"
#include "tmpfs_mounts.h"
#include "vmstat.h"

struct pass_stats {
	uint64_t results[SCAN_NR_RESULTS];       /* blocks classified by this pass's scans */
	uint64_t outcomes[COLLAPSE_NR_OUTCOMES]; /* collapse attempts */
	uint64_t collapsed_bytes;
	double scan_s, collapse_s;
	unsigned procs_total;          /* processes sampled (after --pid filter) */
	unsigned procs_scanned;        /* smaps + pagemap read */
	unsigned procs_unchanged;      /* skipped at O(1) */
	unsigned procs_disabled;       /* policy enable = no */
	unsigned procs_cgroup_unknown; /* cgroup unreadable: not collapsed */
	unsigned procs_active;         /* active within idle_after_s */
	unsigned procs_sampled;        /* /proc/PID/stat read to take this pass's sample */
	bool full_sample;              /* every process sampled (libproc2): first pass,
					* lost fault records, memory mapped without faults */
	uint64_t smaps_reads, pagemap_ops;
	uint64_t stale_dropped;     /* remembered blocks a rescan no longer found
				     * candidates (cold, freed, unmapped...) */
	bool backing_off;           /* some process's blocks wait: after its ENOMEM */
	unsigned procs_backing_off; /* processes whose blocks wait after ENOMEM (proc_state.backoff_until) */
	bool pressure_paused;       /* no collapse this pass: host memory pressure (mem_pressure.h) */
	bool idle;                  /* skipped: no fault anywhere, nothing pending */
	bool missing_privilege;     /* EPERM/EACCES from the kernel */
	/* A dry run (mode = observe, --dry-run): the candidates this pass
	 * would have collapsed, given the budget's time, and their processes. */
	uint64_t would_collapse_bytes;
	unsigned procs_would_collapse;
};

struct pass_options {
	bool dry_run;
	bool unlimited; /* --once: collapse every candidate, no budget */
	const pid_t *pids;
	size_t npids;    /* 0: every process */
	bool allow_idle; /* daemon: skip the pass when no fault happened
			  * anywhere and nothing is pending (fault_doorbell) */
	/* Asked between processes and between the VMAs of one process; true
	 * abandons the rest of the pass (the daemon: SIGTERM is pending).
	 * NULL: never. */
	bool (*interrupted)(void);
	double max_seconds; /* stop scanning and collapsing this long after the
			     * pass began (0: no limit), checked between VMAs
			     * (and between pagemap chunks on the read path),
			     * so one VMA's scan at most overruns it; the rest
			     * waits for the next pass, which resumes there */
};

struct memcg_gate;

/* Bytes collapsed per cgroup, for metrics. */
struct cgroup_bytes {
	char *cgroup;
	uint64_t bytes;
};

/* Fills out with every user-space process, sorted by pid, as
 * procs_sample() does. Returns 0 or -errno. */
typedef int (*proc_enumerate_fn)(void *ctx, struct proc_table *out);

struct engine {
	const struct config *cfg;
	struct procs *procs;
	proc_enumerate_fn enumerate; /* procs_sample() on procs by default; injectable */
	void *enumerate_ctx;
	const struct hc_paths *paths; /* every fixed path (paths.h); injectable */
	int proc_fd;                  /* paths->proc, opened at the first partial sample; 0: not yet */
	pid_t self;                   /* never collapsed: getpid() */
	struct range_scanner scanner;
	struct proc_table sample;
	double sample_time;   /* monotonic seconds of the last sample */
	struct budget budget; /* token buckets: global and per policy */
	long hz;
	struct proc_state *st; /* sorted by pid */
	size_t nst, capst;
	char *smaps_buf;
	size_t smaps_cap;
	struct block_memo *old_blocks; /* scratch: a process's previous candidates */
	size_t nold_blocks, capold_blocks;
	struct vma_list vmas;
	struct candidate *cands; /* the last pass's order */
	size_t ncands, capcands;
	/* Scratch for collapsing, reused across passes. */
	uint64_t *batch_addrs;
	uint8_t *batch_out;
	struct candidate *retry;
	size_t capbatch_addrs, capbatch_out, capretry;
	bool log_collapses;  /* one log line per process collapsed (daemon) */
	unsigned policy_gen; /* counts changes of thp (below) and of the config (engine_set_config) */
	struct cgroup_bytes *cg_bytes;
	size_t ncg_bytes;
	struct fault_doorbell doorbell;
	double doorbell_opened;                               /* monotonic seconds (e->now) of its last (re)open */
	double doorbell_checked;                              /* … and of its last look at the online CPUs */
	char doorbell_logged[DOORBELL_ONLINE_MAX];            /* the online list last logged */
	bool (*doorbell_rang)(const struct fault_doorbell *); /* injectable for tests */
	/* Who faulted: fault_doorbell_drain() by default; injectable. */
	int (*doorbell_drain)(struct fault_doorbell *, struct fault_pids *);
	struct fault_pids faulted;            /* scratch: this pass's faulting PIDs */
	pid_t *listing, *fresh, *nomm, *want; /* scratch PID sets (sample_set.h) */
	size_t nlisting, caplisting, nfresh, capfresh, nnomm, capnomm, nwant, capwant;
	pid_t *newcomers; /* new PIDs named by fewer than SAMPLES_PER_BLOCK samples, since the last listing */
	size_t nnewcomers, capnewcomers;
	double last_listing;  /* monotonic seconds of the last /proc readdir */
	pid_t roll_pid;       /* the rolling rescan's cursor */
	double roll_credit;   /* processes the slice owes (fractions carry over) */
	bool mapped_moved;    /* seen by pass_can_idle(), for the sample */
	bool mapped_unlisted; /* ... and /proc not listed since */
	double last_full_sample;
	uint64_t full_samples, partial_samples, stat_reads;
	uint64_t doorbell_wakeups;  /* back to back: passes the doorbell's poll woke (service) */
	struct mapped_watch mapped; /* memory populated without faults */
	double last_full_pass;      /* monotonic seconds */
	size_t pending;             /* candidate blocks remembered after the last pass */
	pid_t resume_pid;           /* a pass ran out of time: the next scans from here (its scan_cursor) */
	size_t partial_scans;       /* processes left with a scan_cursor after the last pass */
	double pass_start;          /* this pass's start (e->now) */
	uint64_t passes_idle;       /* passes skipped by the doorbell */
	struct pass_stats total;    /* since start */
	struct pass_stats last;     /* the last pass */
	uint64_t passes;
	/* The THP policy (live and original), read from paths->thp at most once a
	 * second while processes are scanned or their faults weighed
	 * (rescan.c); khp: what the daemon changed (NULL: nothing, as for
	 * --once). */
	struct thp_state thp;
	double thp_read_at;
	const struct khugepaged_saved *khp;
	enum thp_prctl (*prctl_infer)(const struct thp_policy *, bool, const struct vma *, size_t); /* injectable */
	struct tmpfs_mounts tmpfs;    /* which file VMAs are tmpfs (tmpfs_mounts.h) */
	unsigned admin_max_ptes_none; /* khugepaged/max_ptes_none, read with thp; UINT_MAX: none */
	/* A kernel before 6.18 (kernel_features.h): status THP_enabled is the
	 * exact prctl mode and prctl_infer is not used. false: infer. */
	bool no_except_advised;
	/* The exact prctl mode of one process, asked where the inference says
	 * UNKNOWN and the verdict depends on it (rescan.c): 0, or -errno.
	 * NULL: nothing exact (the safe rule, SCAN_PRCTL_UNKNOWN). Set by
	 * engine_prctl_open() (prctl_iter.h); injectable. */
	int (*prctl_exact)(void *ctx, pid_t pid, enum thp_prctl *m);
	void *prctl_exact_ctx;
	struct prctl_iter *prctl_iter;
	uint64_t prctl_reads;          /* answers of prctl_exact, for tests and the log */
	process_madvise_fn madvise_fn; /* injectable for tests */
	/* pidfd_open(2) of a process to collapse: pidfd_open_pid() by default,
	 * -1 with errno on failure; injectable, for a test whose processes
	 * exist only in a fixture /proc (its madvise_fn gets the fd). */
	int (*pidfd_open)(pid_t pid);
	/* thp_collapse_alloc_failed, read around each call to tell an unmapped
	 * block's ENOMEM from a real shortage (collapse.h); reads e->vmstat by
	 * default; injectable. */
	alloc_failed_fn alloc_failed;
	void *alloc_failed_ctx;
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
	struct histogram block_hist; /* seconds per block: each call's time over its blocks */
	struct histogram pass_hist;  /* seconds per pass */
	double (*now)(void);         /* monotonic seconds; injectable */
};

/* Returns 0 or -errno. The config must outlive the engine, or be replaced
 * with engine_set_config(), during which the old one must still be valid
 * (the budgets of rules that stay carry over, by path). So must paths. */
int engine_init(struct engine *e, const struct config *cfg, const struct hc_paths *paths);

struct prctl_iter;
/* Loads the BPF prctl iterator (prctl_iter.h) and sets e->prctl_exact to
 * it. 0, or -errno (the engine keeps inferring; the caller says so). */
int engine_prctl_open(struct engine *e);
/* Opens the MADV_COLD/MADV_PAGEOUT observer (cold_watch.h). 0, or -errno
 * with why filled (the per-VMA rule alone then). */
int engine_cold_open(struct engine *e, char *why, size_t whylen);
/* Drains the observer into e->cold.ranges; after lost records every known
 * process counts as cold in its whole address space. (engine.c) */
void engine_cold_drain(struct engine *e);
void engine_free(struct engine *e);
void engine_set_config(struct engine *e, const struct config *cfg);

/* Takes a sample of every process (e->enumerate), updating activity. The
 * first one only sets the baseline. Returns 0 or -errno. (proc_table.c) */
int engine_sample(struct engine *e);

/* The sample of one pass: only what changed (sample_set.h) when the fault
 * doorbell says who faulted; every process (engine_sample) when it cannot,
 * when records were lost, when mapped memory moved without faults, or
 * for a --pid or --once pass. Sets ps->full_sample and ps->procs_sampled.
 * Returns 0 or -errno. (proc_table.c) */
int engine_sample_pass(struct engine *e, const struct pass_options *o, struct pass_stats *ps);

/* One pass (samples again first). Returns 0 or -errno on a fatal error. */
int engine_pass(struct engine *e, const struct pass_options *o, struct pass_stats *ps);

const struct proc_state *engine_find(const struct engine *e, pid_t pid);

/* A read-only view for readers (report.c, tests): the process table, sorted
 * by pid, and the last pass's candidates in collapse order (a candidate's
 * proc indexes procs). Valid until the next pass. */
struct engine_view {
	const struct proc_state *procs;
	size_t nprocs;
	const struct candidate *cands;
	size_t ncands;
};
struct engine_view engine_view(const struct engine *e);
/* The default enumerator: procs_sample() on ctx (a struct procs). */
int engine_enumerate_procs(void *ctx, struct proc_table *out);
double monotonic_seconds(void);
