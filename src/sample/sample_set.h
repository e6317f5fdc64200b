/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sample_set: which processes a pass reads /proc/PID/stat of (pure), when
 * the fault doorbell can say who faulted.
 *
 * A pass reads the stat of:
 * - every process the doorbell named (it faulted), except where those
 *   faults cannot have made a candidate yet: a process under 2 MiB, or one
 *   whose VMAs the policy refused at its last scan (closed), until the
 *   samples naming it since its last stat read add up to SAMPLES_PER_BLOCK,
 *   and never one whose cgroup policy is disabled (until a reload);
 *   a PID the table does not hold (a new process) with fewer samples in
 *   this drain is left to the /proc listing (a shell's /bin/true is gone
 *   by then);
 * - the new PIDs of the last /proc listing (procs_list_pids, swept against
 *   the table), unless known to have no memory (kernel threads, zombies);
 * - every process that holds candidate blocks or is due for its first
 *   look: its activity feeds the score;
 * - a slice of the table, from a rolling cursor, so that every process is
 *   read at least once per full_rescan_s: one that grew by fewer faults
 *   than the doorbell samples is seen then. A process too small to hold a
 *   2 MiB block costs just that stat read (rescan.h: no smaps).
 * Everything else costs nothing. PID sets are sorted arrays of pid_t. */
#pragma once
#include <stddef.h>
#include <sys/types.h>

#include "fault_ring.h"
#include "proc_state.h"

/* New and exited processes are found by a readdir of /proc at most this
 * often: it costs about 1 us per process in the kernel (3 ms at 3000
 * processes). A new process that faults is found sooner, by the doorbell,
 * and one whose memory was filled without faults by the meminfo watch. */
#define LISTING_PERIOD_S 5.0

/* A process with less resident memory than this cannot fill a block. */
#define SMALL_RSS_PAGES 512

/* A new candidate block takes 257 present pages under the default
 * max_ptes_none = 255: about 4 samples of DOORBELL_PERIOD faults. */
#define SAMPLES_PER_BLOCK 4

struct sample_request {
	const struct fault_pids *faulted; /* finished: sorted, unique */
	const pid_t *fresh;               /* sorted */
	size_t nfresh;
	pid_t self;          /* never sampled here (its own faults mean nothing) */
	size_t roll;         /* table positions the rolling slice covers */
	unsigned policy_gen; /* the scanner's (rescan.h), for proc_state_closed() */
};

/* True if s is too small for a candidate: RSS (file pages included) under
 * 2 MiB at its last sample. */
bool proc_state_small(const struct proc_state *s);
/* True if s's last scan, under policy generation policy_gen, found no
 * whole block in a VMA the flags and the THP policy allow. */
bool proc_state_closed(const struct proc_state *s, unsigned policy_gen);
/* True if s's cgroup policy was disabled (enable = no) at its last look,
 * under policy generation policy_gen: nothing of it is collapsed. */
bool proc_state_disabled(const struct proc_state *s, unsigned policy_gen);
/* Whether the doorbell's samples naming s (NULL: a PID the table does not
 * hold, named by samples in this drain) are worth a stat read now; for a
 * known process, s->unread_samples already counts them. */
bool sample_faulted_now(const struct proc_state *s, uint32_t samples, unsigned policy_gen);

/* Sets *out (sorted, unique) to the PIDs to read this pass, and moves the
 * cursor *roll_pid (the first PID of the next slice). Returns 0 or
 * -ENOMEM. */
int sample_set_build(const struct proc_state *st, size_t n, const struct sample_request *rq, pid_t *roll_pid,
		     pid_t **out, size_t *nout, size_t *capout);

/* a \ b into out (which may be a itself); returns the count. */
size_t pids_diff(const pid_t *a, size_t na, const pid_t *b, size_t nb, pid_t *out);
/* a ∩ b into out (which may be a itself); returns the count. */
size_t pids_intersect(const pid_t *a, size_t na, const pid_t *b, size_t nb, pid_t *out);
/* Adds add[0..nadd) to the set *set. Returns 0 or -ENOMEM. */
int pids_add(pid_t **set, size_t *n, size_t *cap, const pid_t *add, size_t nadd);
