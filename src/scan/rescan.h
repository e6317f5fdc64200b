/* SPDX-License-Identifier: GPL-2.0-or-later */
/* rescan: the scanner stage: whether a process must be read again, and
 * reading it. Its state is struct scanner, written here alone; what it
 * reads of the other stages comes in a struct scan_input at each call.
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
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "madvise_call.h" /* process_madvise_fn */
#include "paths.h"
#include "range_scan.h"
#include "smaps_scan.h"
#include "thp_policy.h"
#include "tmpfs_mounts.h"

struct block_memo;
struct cold_ranges;
struct cold_watch;
struct config;
struct khugepaged_saved;
struct pass_options;
struct pass_stats;
struct pid_filter;
struct policy;
struct prctl_iter;
struct proc_state;

/* A process whose last scan held blocks back as lack_referenced_page is
 * read again this often (cold_ranges.h): touching them again faults
 * nothing. */
#define COLD_RECHECK_S 5.0

/* The scanner's state, written here alone (rescan.c): the page-table
 * reader, the scratch one process's scan reuses (the dispatcher has its
 * own, dispatch.h), where the last pass stopped, the THP policy its
 * verdicts are made under, and the prctl seams. */
struct scanner {
	struct range_scanner range; /* pagemap and kpageflags (range_scan.h) */
	char *smaps_buf;            /* scratch: the process's smaps text */
	size_t smaps_cap;
	struct vma_list vmas;          /* scratch: its VMAs */
	struct block_memo *old_blocks; /* scratch: its previous candidates */
	size_t nold_blocks, capold_blocks;
	struct tmpfs_mounts tmpfs; /* which file VMAs are tmpfs (tmpfs_mounts.h) */
	pid_t resume_pid;          /* a pass ran out of time: the next scans from here (its scan_cursor) */
	/* The THP policy (live and original), read from the THP sysfs
	 * directory at most once a second while processes are scanned or
	 * their faults weighed, and the admin's khugepaged/max_ptes_none with
	 * it (UINT_MAX: none), each a pread of a kept fd. */
	struct thp_state thp;
	double thp_read_at;
	unsigned admin_max_ptes_none;
	struct thp_files thp_files; /* the files they are read from, kept open */
	/* Counts changes of thp and of the config (scanner_policy_changed()):
	 * what a scan judged holds while the generation is the same (0: a
	 * process never scanned). */
	unsigned policy_gen;
	enum thp_prctl (*prctl_infer)(const struct thp_policy *, bool, const struct vma *, size_t); /* injectable */
	/* The exact prctl mode of one process, asked where the inference says
	 * UNKNOWN and the verdict depends on it: 0, or -errno. NULL: nothing
	 * exact (the safe rule, SCAN_PRCTL_UNKNOWN). Set by
	 * scanner_prctl_open() (prctl_iter.h); injectable. */
	int (*prctl_exact)(void *ctx, pid_t pid, enum thp_prctl *m);
	void *prctl_exact_ctx;
	struct prctl_iter *prctl_iter;
	uint64_t prctl_reads; /* answers of prctl_exact, for tests and the log */
};

/* What the scanner uses of the other stages, given by the engine at each
 * call: it reads them and never keeps them, except the cold ranges, which
 * a scan settles and forgets (the MADV_COLD observer's, cold_ranges.h). */
struct scan_input {
	const struct config *cfg; /* the policies, full_rescan_s */
	const char *proc_root;    /* the /proc/PID directories (paths->proc) */
	const char *sysfs_thp;    /* the THP policy (paths->thp) */
	/* What the daemon changed of the THP policy (thp_state_read());
	 * NULL: nothing, as for --once. */
	const struct khugepaged_saved *khp;
	struct cold_ranges *cold;
	/* Who called madvise(MADV_HUGEPAGE) since the last pass (cold_watch.h);
	 * NULL: not watched. */
	const struct cold_watch *advised;
	double (*now)(void); /* monotonic seconds (the engine's clock) */
	double pass_start;   /* now() at the pass's start: its max_seconds count from there */
	/* A kernel before 6.18 (kernel_features.h): status THP_enabled is the
	 * exact prctl mode, and prctl_infer is not used. */
	bool no_except_advised;
};

/* Opens the range scanner (paths->pagemap_read: the read path) and the
 * tmpfs mounts (without them files on tmpfs outside /dev/shm count as
 * files, logged). paths must outlive sc. Returns 0 or -errno. */
int scanner_init(struct scanner *sc, const struct hc_paths *paths);
void scanner_free(struct scanner *sc);
/* Sets sc->prctl_exact to the BPF prctl iterator (prctl_iter.h), loaded at
 * its first question. 0, or -errno (the scanner keeps inferring). */
int scanner_prctl_open(struct scanner *sc);
/* The config changed (a reload): what was judged under the old one may
 * not hold. */
void scanner_policy_changed(struct scanner *sc);
/* The page-table reads (PAGEMAP_SCAN ioctls and pagemap preads) of the
 * last scanner_pass() so far. */
uint64_t scanner_pagemap_ops(const struct scanner *sc);

/* Reads s's cgroup through its /proc/PID dirfd and looks its policy up
 * again. If the cgroup cannot be known, s->policy is NULL and
 * s->cgroup_unknown is set (logged once per process), so nothing of s is
 * collapsed: a policy must never be guessed. Returns 0 or -errno. */
int rescan_refresh_policy(const struct config *cfg, struct proc_state *s, int dirfd);

/* The limits a block of this policy is judged by, in the scan and in the
 * re-check before its call: the policy's, with the admin's
 * khugepaged/max_ptes_none where that is smaller. */
struct collapse_limits rescan_limits(const struct scanner *sc, const struct policy *pol);

/* Whether what s's last scan judged by still holds, right before a
 * collapse: the THP policy (sysfs, read again at most once a second) and
 * the config are those it was scanned under, and it has not switched THP
 * off with prctl(PR_SET_THP_DISABLE) since (/proc/PID/status through
 * dirfd). */
bool rescan_policy_holds(struct scanner *sc, const struct scan_input *in, const struct proc_state *s, int dirfd);

/* Rescans s if it needs one (always if force, or if an earlier scan of it
 * stopped midway: s->scan_cursor), counting in ps. Returns -ETIMEDOUT when
 * the pass's time ran out inside s (s->scan_cursor says where), else 0. A
 * scan that stopped midway leaves s->last_scan as it was. */
int rescan_visit(struct scanner *sc, const struct scan_input *in, struct proc_state *s, const struct pass_options *o,
		 struct pass_stats *ps, double now, bool force);

/* One pass's scans: rescan_visit() of every process of st[0..nst) that f
 * matches, in table order from sc->resume_pid round the table, so that a pass
 * that runs out of time (max_seconds from in->pass_start) or is
 * interrupted stops where it is and the next starts there (no process
 * waits behind the others for ever); sc->resume_pid is then where it
 * stopped (0: it got round). Counts in ps, pagemap_ops included. probe:
 * the lazy-free probe's call (NULL: none, as in a dry run). */
void scanner_pass(struct scanner *sc, const struct scan_input *in, struct proc_state *st, size_t nst,
		  const struct pid_filter *f, const struct pass_options *o, struct pass_stats *ps, double now,
		  process_madvise_fn probe);
