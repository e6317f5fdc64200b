/* SPDX-License-Identifier: GPL-2.0-or-later */
/* dispatch_outcome: what the dispatcher does with the outcome of one
 * block's call (dispatch.c applies it). Pure: no memo, no clock, no log.
 *
 * - collapsed: counted, its memo dropped;
 * - EINVAL: its memo dropped, the block remembered as refused (while its
 *   VMA stays, rescan.c);
 * - unmapped (ENOMEM while the kernel's allocation failure count did not
 *   move: collapse.h), stale (the re-check before the call): its memo
 *   dropped, its process's next scan decides;
 * - EAGAIN, EBUSY: its memo counts one more; EAGAIN, in the pass's first
 *   dispatch, is tried again at the end of the pass while that count is
 *   within the policy's eagain_retries;
 * - ENOMEM (the count moved): no huge page for this process: it backs off,
 *   alloc_backoff_ms doubled per ENOMEM in a row (enomem_backoff_s), the
 *   block stays; the ENOMEM_PROCS_PER_PASS-th such process stops the pass;
 * - ESRCH: the process is gone: all its blocks go, and its later outcomes
 *   are neither applied nor counted;
 * - EPERM: the daemon lacks a privilege: the pass stops;
 * - any other errno, not tried: nothing but the count. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "collapse.h"

/* ENOMEM from this many processes in one pass: huge pages are short for
 * everyone, not for one process's nodes; stop asking until the next pass. */
#define ENOMEM_PROCS_PER_PASS 4
/* A process's back-off doubles per ENOMEM in a row, up to 2^this times
 * alloc_backoff_ms (8 min at the default 60 s), then stays there: it is
 * always tried again. */
#define ENOMEM_BACKOFF_MAX_SHIFT 3

/* The back-off after the streak-th ENOMEM in a row: alloc_backoff_ms
 * doubled per ENOMEM, bounded. Pure. */
double enomem_backoff_s(unsigned alloc_backoff_ms, unsigned streak);

enum block_fate {
	BLOCK_KEEP,    /* its memo stays for the next pass */
	BLOCK_DROP,    /* its memo goes */
	BLOCK_REFUSED, /* its memo goes, and the block is remembered as refused */
};

/* One block's outcome and what it is judged with. */
struct outcome_facts {
	enum collapse_outcome outcome;
	bool has_memo;           /* its memo is still there (an EAGAIN retry's may be gone) */
	uint8_t eagain;          /* its memo's EAGAIN/EBUSY answers before this one */
	unsigned eagain_retries; /* its policy's */
	bool collect_retry;      /* the pass's first dispatch: EAGAIN blocks may be tried again */
	uint8_t enomem_streak;   /* its process's ENOMEM answers in a row before this one */
	unsigned alloc_backoff_ms;
	unsigned enomem_procs; /* processes that answered ENOMEM in this pass before this one */
};

struct outcome_decision {
	enum block_fate fate;
	bool collapsed;    /* one more block (HPAGE_SIZE) collapsed */
	bool count_eagain; /* its memo's EAGAIN count becomes eagain */
	uint8_t eagain;
	bool retry;            /* tried again at the end of the pass */
	bool back_off;         /* its process waits backoff_s, with enomem_streak in a row; */
	uint8_t enomem_streak; /* and it is one more process that answered ENOMEM */
	double backoff_s;
	bool forget_process;    /* all its blocks go; its later outcomes are not looked at */
	bool missing_privilege; /* EPERM: process_madvise needs CAP_SYS_NICE */
	bool stop_pass;         /* no more calls in this pass */
};

struct outcome_decision dispatch_outcome(const struct outcome_facts *f);
