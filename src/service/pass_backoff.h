/* SPDX-License-Identifier: GPL-2.0-or-later */
/* pass_backoff: how many scan intervals the timer waits after a pass
 * (scan_interval_ms > 0). Pure.
 *
 * With the page-fault doorbell, news (a process faulting in new memory, an
 * opt-in with MADV_HUGEPAGE) runs a pass at once (news_gate.h), so a timer
 * pass that finds nothing to do is mostly a wake-up, and a wake-up costs
 * 100-250 us in a guest however little it does (BENCHMARKS.md, section 10).
 * After each quiet pass the next comes twice as late, up to
 * PASS_BACKOFF_MAX intervals and never more than PASS_BACKOFF_MAX_S later
 * than one interval would (long intervals need no back-off); a pass with
 * work, or a news pass, brings it back to one. What only timer passes see
 * waits that much longer at most: memory mapped without faults (the
 * meminfo watch), a process faulting too little to be news, the rolling
 * rescan (whose slice grows with the gap, so full_rescan_s holds) and the
 * budget (it refills by elapsed time).
 * Without the doorbell every fault waits for the timer: no back-off. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "engine_stats.h"

#define PASS_BACKOFF_MAX   4
#define PASS_BACKOFF_MAX_S 4.0

struct pass_backoff {
	unsigned intervals; /* until the next timer pass: 1 .. PASS_BACKOFF_MAX */
};

void pass_backoff_init(struct pass_backoff *b);

/* Whether pass p found nothing to do now or soon: idle, or a sample that
 * found no candidate, nothing remembered, left over, waiting on ENOMEM or
 * paused by pressure, and no full sample. e: the engine after it. */
bool pass_quiet(const struct pass_stats *p, const struct engine_stats *e);

/* After a timer pass: the intervals until the next. doorbell: the fault
 * doorbell is open (news runs passes early). */
unsigned pass_backoff_after(struct pass_backoff *b, bool quiet, bool doorbell);

/* The timer's delay for that many intervals of interval_usec. */
uint64_t pass_backoff_usec(unsigned intervals, uint64_t interval_usec);

/* News ran a pass, or the configuration changed: one interval again.
 * Returns whether the timer was further out than that. */
bool pass_backoff_reset(struct pass_backoff *b);
