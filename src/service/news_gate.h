/* SPDX-License-Identifier: GPL-2.0-or-later */
/* news_gate: when news may start a pass before the timer (scan_interval_ms
 * > 0): a process that faulted in enough new memory for a few blocks
 * (fault_doorbell_peek()), or one that changed its THP policy with
 * MADV_HUGEPAGE or PR_SET_THP_DISABLE (cold_watch.h). Pure: the caller gives the clock.
 *
 * News comes from every process, so a storm of it (a build faults without
 * end; a program may call madvise() in a loop) must cost a bounded share
 * of a CPU:
 * - after each look at the news sources (whether it found news or not),
 *   they are not listened to for NEWS_GAP_S: at most 1/NEWS_GAP_S looks
 *   and early passes a second;
 * - the scans of early passes (not their collapses, which the budget
 *   bounds) may take at most NEWS_SHARE of each NEWS_WINDOW_S; past that,
 *   news waits for the window's end, or the timer. */
#pragma once
#include <stdbool.h>

#define NEWS_GAP_S    0.1
#define NEWS_WINDOW_S 1.0
#define NEWS_SHARE    0.01
/* fault_doorbell_peek()'s counts: records of DOORBELL_PERIOD faults; 64 × 64 faults
 * is 16 MiB, 8 blocks: more than a shell's commands, cron or a health check
 * fault in a second, and a fill of new memory crosses it in milliseconds. */
#define NEWS_FAULT_SAMPLES 64

struct news_gate {
	double window_start; /* of the current NEWS_WINDOW_S; < 0: none yet */
	double spent;        /* scan seconds of early passes in it */
	double quiet_until;  /* no look at the sources before this */
};

void news_gate_init(struct news_gate *g);
/* 0 when the sources may be looked at now, else the seconds until they
 * may. */
double news_gate_wait(const struct news_gate *g, double now);
/* A look at now: the next not before NEWS_GAP_S. */
void news_gate_looked(struct news_gate *g, double now);
/* Whether an early pass may run at now (the share left in the window). */
bool news_gate_may_pass(struct news_gate *g, double now);
/* An early pass at now scanned for scan_s seconds: counts against the
 * share; if it is used up, the sources wait for the window's end. */
void news_gate_ran(struct news_gate *g, double now, double scan_s);
