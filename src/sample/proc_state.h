/* SPDX-License-Identifier: GPL-2.0-or-later */
/* proc_state: the engine's table of known processes (struct proc_state),
 * kept sorted by pid, and how one sample of every process updates it.
 *
 * proc_states_update() is pure: given the new sample (sorted by pid, as
 * procs_sample() and any injected enumerator return it), it updates the
 * activity of the processes it knows, forgets the ones that exited or whose
 * PID was recycled (a different start time), and adds the new ones. The
 * identity of a process is (pid, start_ticks). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "block_memo.h"
#include "plan.h"
#include "procs.h"
#include "scan_result.h"
#include "thp_usage.h"

struct policy;

struct proc_state {
	pid_t pid;
	uint64_t start_ticks;
	uint64_t exec_id;        /* image fingerprint at the last scan: execve keeps pid and start */
	struct proc_sample prev; /* last sample, for deltas */
	double sample_time;      /* monotonic seconds of prev */
	struct activity activity;
	double last_active; /* monotonic seconds */
	bool seen;          /* mark for the sweep of exited processes */
	/* What the last full scan saw; a process whose counters still match
	 * is not scanned again (O(1): the stat read of the sample). */
	bool scanned;
	double last_scan;
	/* A scan that stopped midway (out of time, or the read path's bound:
	 * range_scan.h) goes on from here at its next visit; 0: none. The
	 * blocks below it are that scan's, those above the one before's. */
	uint64_t scan_cursor;
	double cursor_set; /* the pass (its sample time) that set it */
	uint64_t scan_minflt, scan_majflt, scan_rss, scan_vsize;
	char *cgroup;
	const struct policy *policy; /* into the engine's config */
	/* /proc/PID/cgroup could not be read or parsed (a path too long for
	 * the kernel to print whole, …): cgroup and policy are NULL and
	 * nothing of the process is collapsed (fail closed) until a read
	 * works again. */
	bool cgroup_unknown;
	bool thp_enabled;  /* /proc/PID/status THP_enabled */
	uint8_t thp_prctl; /* enum thp_prctl, inferred at the last scan */
	/* Its last scan found a block's worth of memory the THP policy refused
	 * (policy_refused) after a change: look once more POLICY_RECHECK_S
	 * later (policy_recheck), since a MADV_HUGEPAGE given after the faults
	 * changes no counter the sample sees. */
	bool policy_refused, policy_recheck;
	/* Whole blocks in VMAs that the flags and the THP policy allowed at the
	 * last scan (candidates, huge, sparse or cold alike; 0 while its policy
	 * is disabled), under the scanner's policy_gen of then (rescan.c: a
	 * process with none is not read again for faults alone). */
	uint64_t open_blocks;
	unsigned scan_policy_gen;
	uint64_t refused_kb;     /* Rss of whole blocks the THP policy refused, last scan */
	uint32_t unread_samples; /* doorbell samples naming it since its last stat read */
	bool denied;             /* no ptrace access to this process: skipped */
	/* No huge page for this process (ENOMEM, the allocation failure count
	 * moved): its blocks wait until backoff_until, alloc_backoff_ms doubled
	 * per ENOMEM in a row up to ENOMEM_BACKOFF_MAX_SHIFT (dispatch.c); the
	 * others go on. The kernel allocates on the nodes of the block's pages,
	 * so one process bound to a full node must not stop the rest. */
	double backoff_until;
	uint8_t enomem_streak;
	double last_clear;                 /* access_sampling: when clear_refs was last written */
	uint64_t results[SCAN_NR_RESULTS]; /* of the last scan */
	struct thp_usage usage;            /* anon/shmem and PMD-mapped, last scan */
	struct block_memo *blocks;         /* candidates from the last scan */
	size_t nblocks, capblocks;
	struct addr_set refused;  /* blocks the kernel answered EINVAL: while their VMA stays, up to full_rescan_s */
	struct addr_set given_up; /* blocks past eagain_retries; until the next full rescan */
};

/* Binary search in st[0..n), sorted by pid; NULL if absent. */
struct proc_state *proc_state_find(struct proc_state *st, size_t n, pid_t pid);
/* Frees what the state owns and zeroes it (pid 0: an empty slot). */
void proc_state_clear(struct proc_state *s);
/* held of its blocks wait for room in its memory cgroup this pass
 * (memcg_gate.h): they count as SCAN_MEMCG_LIMIT, not SCAN_CANDIDATE, in
 * its results, replacing the last pass's count (a process not scanned
 * again keeps its results from pass to pass). */
void proc_state_memcg_held(struct proc_state *s, uint64_t held);
/* The process's cgroup path, "?" while unknown (for messages and metrics). */
const char *proc_state_cgroup(const struct proc_state *s);

/* Merges a new sample into *st (n entries, cap allocated, sorted by pid):
 * dt is the time since the previous sample (0: the first one, which only
 * sets the baseline), hz sysconf(_SC_CLK_TCK), now monotonic seconds.
 * Returns 0 or -ENOMEM (then the table holds a consistent subset). */
int proc_states_update(struct proc_state **st, size_t *n, size_t *cap, const struct proc_table *sample, double dt,
		       long hz, double now);

/* Merges a partial sample (sorted by pid: the processes that faulted, the
 * new ones, a slice of the rest): known processes are updated with the
 * time since their own last sample, recycled PIDs start over, new ones are
 * added. Nobody is forgotten: that is proc_states_sweep()'s job. Returns 0
 * or -ENOMEM (then the table holds a consistent subset). */
int proc_states_merge(struct proc_state **st, size_t *n, size_t *cap, const struct proc_table *sample, long hz,
		      double now);

/* The sweep against a PID listing (sorted, procs_list_pids()): forgets
 * every process whose PID is not listed, and sets fresh[0..*nfresh) to the
 * listed PIDs the table does not hold (a sorted merge, no file read).
 * Returns 0 or -ENOMEM. */
int proc_states_sweep(struct proc_state *st, size_t *n, const pid_t *alive, size_t nalive, pid_t **fresh,
		      size_t *nfresh, size_t *capfresh);

/* Forgets the processes whose PIDs are in gone[0..ngone) (sorted: those
 * the task records say exited); a sorted merge, no file read. */
void proc_states_forget(struct proc_state *st, size_t *n, const pid_t *gone, size_t ngone);
