/* SPDX-License-Identifier: GPL-2.0-or-later */
/* rescan_reason: why rescan_visit() reads a process again, or why not.
 * Pure: the caller gathers the facts (its counters against those of its
 * last scan, the timers that fell due, what the caller asks for) and this
 * says what they add up to.
 *
 * In order of precedence, the first that holds decides:
 * - the caller forces it, the pass is unlimited (--once), or its last scan
 *   stopped midway: always read;
 * - too small for a 2 MiB block, and never scanned or its maps as they
 *   were: skipped (its faults name it to the sample when it grows);
 * - a timer fell due: the full rescan (full_rescan_s), the policy recheck
 *   (POLICY_RECHECK_S after a scan that saw refused memory), access
 *   sampling (access_sample_s), the cold recheck (COLD_RECHECK_S);
 * - it called madvise(MADV_HUGEPAGE) since the last pass (cold_watch.h):
 *   its policy changed, which no counter shows;
 * - its counters moved and faults may have made a candidate (not closed):
 *   new, its maps changed (vsize), its faults moved, its RSS moved;
 * - its cgroup was never read (no policy, not unknown): read;
 * - else skipped: nothing moved, or only what cannot make a candidate. */
#pragma once
#include <stdbool.h>

enum rescan_reason {
	/* Not read: */
	RESCAN_SKIP_SMALL,     /* under 2 MiB, and new or its maps as at its last scan */
	RESCAN_SKIP_UNCHANGED, /* no counter moved since its last scan, nothing due */
	RESCAN_SKIP_CLOSED,    /* counters moved, but faults cannot make a candidate (rescan.c) */
	/* Read: */
	RESCAN_FORCED,         /* the caller asks (the re-check before a collapse) */
	RESCAN_UNLIMITED,      /* a pass that reads everything (--once) */
	RESCAN_RESUME,         /* its last scan stopped midway (scan_cursor) */
	RESCAN_FULL_DUE,       /* full_rescan_s since its last scan */
	RESCAN_POLICY_RECHECK, /* refused memory at its last scan: a MADV_HUGEPAGE since? */
	RESCAN_ACCESS_SAMPLE,  /* access_sampling: access_sample_s since the last clear */
	RESCAN_COLD_RECHECK,   /* blocks held back as cold: touched again since? */
	RESCAN_ADVISED,        /* it called madvise(MADV_HUGEPAGE) since the last pass */
	RESCAN_NEW,            /* never scanned */
	RESCAN_MAPS,           /* its address space changed size (vsize) */
	RESCAN_FAULTS,         /* its minor or major fault count moved */
	RESCAN_RSS,            /* its resident memory moved, with no fault of its own (reclaim, a free) */
	RESCAN_NO_POLICY,      /* its cgroup was never read: no policy to judge it by */
	RESCAN_NR_REASONS,
};

/* What rescan_visit() knows of a process at a visit. */
struct rescan_facts {
	/* The caller. */
	bool force;     /* rescan_visit(…, force) */
	bool unlimited; /* pass_options.unlimited */
	bool resuming;  /* its last scan stopped midway (scan_cursor != 0) */
	/* Its counters against those of its last scan. */
	bool scanned;        /* it was scanned once; if not, the others are moot */
	bool maps_changed;   /* vsize */
	bool faults_changed; /* minflt or majflt */
	bool rss_changed;    /* rss_pages */
	/* Only asked when something changed (rescan_facts_changed()): no
	 * fault can make a candidate of it (rescan.c: rescan_closed()). */
	bool closed;
	bool small; /* proc_state_small() */
	/* Timers that fell due since its last scan. */
	bool full_due;
	bool policy_recheck_due;
	bool access_sample_due;
	bool cold_recheck_due;
	/* A madvise(MADV_HUGEPAGE) since the last pass (cold_watch.h). */
	bool advised;
	/* It has a policy, or its cgroup is known to be unreadable
	 * (cgroup_unknown): either way nothing to learn from reading it. */
	bool policy_known;
};

/* New, or any counter moved since its last scan. */
bool rescan_facts_changed(const struct rescan_facts *f);

enum rescan_reason rescan_reason(const struct rescan_facts *f);

/* Whether the reason reads the process (RESCAN_FORCED and after). */
bool rescan_reason_reads(enum rescan_reason r);

/* "skip_small", "full_due", "faults", …; "?" for an unknown value. */
const char *rescan_reason_name(enum rescan_reason r);
