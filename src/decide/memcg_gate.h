/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memcg_gate: holds back, for one pass, the candidate blocks whose memory
 * cgroup has no room for them, so that a collapse never makes the kernel
 * reclaim a container's own memory (or fail the charge) to pay for it.
 *
 * It runs on the pass's order of candidates, before the budget
 * selection: a block that does not fit neither spends budget nor shows up
 * as "would be collapsed" in --dry-run. Walking that order, each block
 * spends its cgroup's room (memcg.h: the 2 MiB peak must fit above the
 * headroom, then (512 - present) pages stay), so the best blocks get the
 * room first. Held-back blocks stay remembered: they become
 * SCAN_MEMCG_LIMIT in this pass's results and are tried again next pass.
 *
 * Cost: /proc/PID/cgroup of each process with candidates and the limit
 * files of each of their cgroups, read once per pass (a per-pass cache
 * keyed by cgroup path); nothing at all without a memory controller. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memcg.h"

struct candidate;
struct pass_stats;
struct proc_state;

/* The gate's state (owned here alone): the memory cgroup mounts, and the
 * room of each cgroup read once per pass. */
struct memcg_gate;

/* What one call looks at. */
struct memcg_gate_input {
	const struct proc_state *st; /* the table: a candidate's proc indexes it */
	size_t nst;
	const char *proc_root; /* where /proc/PID/cgroup is read */
	uint64_t pass;         /* the pass: rooms are read once per pass */
	double sample_time;    /* the pass's sample: who was scanned in it */
	double now;            /* monotonic seconds: the retry of mountinfo */
};

/* Finds the memory cgroup mounts in mountinfo (paths->mountinfo). NULL: no
 * memory. */
struct memcg_gate *memcg_gate_new(const char *mountinfo);
void memcg_gate_free(struct memcg_gate *g);

/* Lets through from cands[0..ncands) the blocks that fit, in order, into
 * its own output (memcg_gate_passed()). With ps (the first time in a pass), counts them in ps->results
 * as SCAN_MEMCG_LIMIT instead of SCAN_CANDIDATE, and memcg_gate_counted()
 * says so: each process's own results are then its owner's to set
 * (proc_state_memcg_held(), with memcg_gate_held()). A cgroup whose limits
 * cannot be read holds its blocks back (fail closed); a process whose
 * cgroup cannot be read is left to dispatch. Returns how many blocks were
 * held back, or -ENOMEM. */
int memcg_gate_hold_back(struct memcg_gate *g, const struct memcg_gate_input *in, const struct candidate *cands,
			 size_t ncands, struct pass_stats *ps);
/* What the last memcg_gate_hold_back() let through (*n of them), in the
 * order it was given; valid until the next call. */
const struct candidate *memcg_gate_passed(const struct memcg_gate *g, size_t *n);
/* Whether the last memcg_gate_hold_back() counted in its pass_stats. */
bool memcg_gate_counted(const struct memcg_gate *g);
/* The blocks of in->st[p] that the last memcg_gate_hold_back() held back. */
uint32_t memcg_gate_held(const struct memcg_gate *g, size_t p);

/* The memory cgroup mounts come from /proc/self/mountinfo, read whole
 * (however long, up to MOUNTINFO_MAX_BYTES). If they cannot be found (the
 * file unreadable, malformed or past that bound), every block is held back
 * (fail closed, with one error in the log, SCAN_MEMCG_LIMIT results and
 * hugecollapsed_memcg_gate_failed 1), and the file is read again every
 * 10 s until it works. */

/* Reads path instead of /proc/self/mountinfo (tests), at the next pass. */
int memcg_gate_set_mountinfo(struct memcg_gate *g, const char *path);
/* 0, or the -errno that keeps the mounts unknown (everything held back);
 * 0 for a NULL gate. */
int memcg_gate_error(const struct memcg_gate *g);

/* Uses roots instead of the ones /proc/self/mountinfo names (tests). */
int memcg_gate_set_roots(struct memcg_gate *g, const struct memcg_roots *roots);
