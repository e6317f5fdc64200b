/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memcg_gate: holds back, for one pass, the candidate blocks whose memory
 * cgroup has no room for them, so that a collapse never makes the kernel
 * reclaim a container's own memory (or fail the charge) to pay for it.
 *
 * It runs on the pass's order of candidates (e->cands), before the budget
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
#include <stdint.h>

#include "memcg.h"

struct engine;
struct pass_stats;

/* Removes from e->cands the blocks that do not fit, keeping the order.
 * With ps (the first time in a pass), counts them in ps->results and in
 * each process's results as SCAN_MEMCG_LIMIT instead of SCAN_CANDIDATE.
 * A cgroup whose limits cannot be read holds its blocks back (fail
 * closed); a process whose cgroup cannot be read is left to dispatch.
 * Returns how many blocks were held back, or -ENOMEM. */
int memcg_gate_hold_back(struct engine *e, struct pass_stats *ps);

/* The memory cgroup mounts come from /proc/self/mountinfo, read whole
 * (however long, up to MOUNTINFO_MAX_BYTES). If they cannot be found (the
 * file unreadable, malformed or past that bound), every block is held back
 * (fail closed, with one error in the log, SCAN_MEMCG_LIMIT results and
 * hugecollapsed_memcg_gate_failed 1), and the file is read again every
 * 10 s until it works. */

/* Reads path instead of /proc/self/mountinfo (tests), at the next pass. */
int memcg_gate_set_mountinfo(struct engine *e, const char *path);
/* 0, or the -errno that keeps the mounts unknown (everything held back). */
int memcg_gate_error(const struct engine *e);

/* Uses roots instead of the ones /proc/self/mountinfo names (tests). */
int memcg_gate_set_roots(struct engine *e, const struct memcg_roots *roots);

void memcg_gate_free(struct engine *e);
