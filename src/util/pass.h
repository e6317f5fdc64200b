/* SPDX-License-Identifier: GPL-2.0-or-later */
/* pass: what one pass is asked (struct pass_options) and what it counts
 * (struct pass_stats), for every stage of it: the scanner, the memcg gate
 * and the dispatcher count into the pass's pass_stats, and the engine keeps
 * the last one and their sum for the readers (engine_stats.h). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "madvise_call.h" /* COLLAPSE_NR_OUTCOMES */
#include "scan_result.h"

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
