/* SPDX-License-Identifier: GPL-2.0-or-later */
/* rescan: whether a process must be read again, and reading it.
 *
 * A process is rescanned when it is new, its counters (faults, RSS,
 * address-space size) moved since its last scan, a full rescan is due
 * (full_rescan_s), access sampling is due, or the caller forces it
 * (rescan_reason.h: every reason, and which comes first). A
 * rescan refreshes its cgroup and policy (when unknown or due), reads its
 * THP switch, smaps and page tables (range_scan), and replaces its block
 * memos with the candidates found, keeping each block's age and EAGAIN
 * count. Every read goes through one /proc/PID dirfd whose start time
 * matches the sample, so a recycled PID is never read by mistake. Errors
 * are per process and never fatal to the pass: a process that vanished or
 * denies access simply holds no candidates. */
#pragma once
#include <stdbool.h>

#include "collapse.h"

struct engine;
struct proc_state;
struct pass_options;
struct pass_stats;
struct policy;

/* A process whose last scan held blocks back as lack_referenced_page is
 * read again this often (cold_ranges.h): touching them again faults
 * nothing. */
#define COLD_RECHECK_S 5.0

/* Reads s's cgroup through its /proc/PID dirfd and looks its policy up
 * again. If the cgroup cannot be known, s->policy is NULL and
 * s->cgroup_unknown is set (logged once per process), so nothing of s is
 * collapsed: a policy must never be guessed. Returns 0 or -errno. */
int rescan_refresh_policy(struct engine *e, struct proc_state *s, int dirfd);

/* The limits a block of this policy is judged by, in the scan and in the
 * re-check before its call: the policy's, with the admin's
 * khugepaged/max_ptes_none where that is smaller. */
struct collapse_limits rescan_limits(const struct engine *e, const struct policy *pol);

/* Whether what s's last scan judged by still holds, right before a
 * collapse: the THP policy (sysfs, read again at most once a second) and
 * the config are those it was scanned under, and it has not switched THP
 * off with prctl(PR_SET_THP_DISABLE) since (/proc/PID/status through
 * dirfd). */
bool rescan_policy_holds(struct engine *e, const struct proc_state *s, int dirfd);

/* Rescans s if it needs one (always if force, or if an earlier scan of it
 * stopped midway: s->scan_cursor), counting in ps. Returns -ETIMEDOUT when
 * the pass's time ran out inside s (s->scan_cursor says where), else 0. A
 * scan that stopped midway leaves s->last_scan as it was. */
int rescan_visit(struct engine *e, struct proc_state *s, const struct pass_options *o, struct pass_stats *ps,
		 double now, bool force);
