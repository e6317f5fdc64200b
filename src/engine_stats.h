/* SPDX-License-Identifier: GPL-2.0-or-later */
/* engine_stats: what the engine's readers see, never the engine itself.
 *
 * report.c, metrics.c, coverage.c and the service read a pass through a
 * const struct engine_stats: the counters of the last pass and since start,
 * and views of the process table, the last pass's order and the bytes
 * collapsed per cgroup, valid until the next pass. engine_stats() (engine.h)
 * fills one from the stages' states; tests fill one by hand. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "collapse.h"
#include "histogram.h"
#include "plan.h"
#include "proc_table.h"
#include "scan_result.h"

struct config;

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
	size_t npids; /* 0: every process */
	/* A news pass (news_gate.h): only these are scanned; the sample and
	 * the selection are those of any pass, so what changed elsewhere is
	 * still seen at the next. 0: every process. */
	const pid_t *scan_only;
	size_t nscan_only;
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

/* Bytes collapsed per cgroup, for metrics. */
struct cgroup_bytes {
	char *cgroup;
	uint64_t bytes;
};

/* A read-only view for readers (report.c, tests): the process table, sorted
 * by pid, and the last pass's candidates in collapse order (a candidate's
 * proc indexes procs). Valid until the next pass. */
struct engine_view {
	const struct proc_state *procs;
	size_t nprocs;
	const struct candidate *cands;
	size_t ncands;
};
/* Filled by engine_stats(); tests fill one by hand. */
struct engine_stats {
	const struct config *cfg; /* NULL: no policy names (tests) */
	struct engine_view view;
	const struct cgroup_bytes *cg_bytes;
	size_t ncg_bytes;
	struct pass_stats total; /* since start */
	struct pass_stats last;  /* the last pass */
	uint64_t passes, passes_idle;
	uint64_t full_samples, partial_samples, stat_reads; /* the sampler's */
	uint64_t doorbell_wakeups;                          /* back to back: passes the doorbell's poll woke */
	uint64_t news_passes;                               /* timer: passes news ran early (news_gate.h) */
	unsigned doorbell_opens;                            /* fault_doorbell.opens: each changed the fds */
	pid_t resume_pid;                                   /* a pass ran out of time: the next resumes here */
	struct histogram block_hist;                        /* seconds per block */
	struct histogram pass_hist;                         /* seconds per pass */
	bool pressure_paused;
	uint64_t pressure_pauses;
	double pressure_read_s;
	bool cold_watched;    /* MADV_COLD/MADV_PAGEOUT observed (cold_watch_active) */
	int memcg_gate_error; /* memcg_gate_error(): the mounts are unknown */
};
