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

#include "cgroup2.h" /* struct cgroup_bytes */
#include "histogram.h"
#include "pass.h"
#include "plan.h"
#include "proc_state.h"
#include "scan_result.h"

struct config;

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
	uint64_t listings, task_births;                     /* /proc readdirs; births from task records */
	uint64_t doorbell_wakeups;                          /* back to back: passes the doorbell's poll woke */
	uint64_t news_passes;                               /* timer: passes news ran early (news_gate.h) */
	unsigned doorbell_opens;                            /* fault_doorbell.opens: each changed the fds */
	pid_t resume_pid;                                   /* a pass ran out of time: the next resumes here */
	bool work_left;                                     /* blocks remembered, a scan stopped midway: more to do */
	struct histogram block_hist;                        /* seconds per block */
	struct histogram pass_hist;                         /* seconds per pass */
	bool pressure_paused;
	uint64_t pressure_pauses;
	double pressure_read_s;
	bool cold_watched;    /* MADV_COLD/MADV_PAGEOUT observed (cold_watch_active) */
	int memcg_gate_error; /* memcg_gate_error(): the mounts are unknown */
};
