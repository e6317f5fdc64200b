/* SPDX-License-Identifier: GPL-2.0-or-later */
/* metrics_schedule: when the service rewrites the metrics file (and its
 * sd_notify STATUS= line).
 *
 * Writing the file costs more than an idle pass: on ext4 the create, the
 * rename and the old inode's eviction are ~300 us, against tens of us for
 * a pass with no news. So it is written when something a reader acts on
 * changed (a collapse, an outcome, a back-off, pressure, a reload: the
 * digest below), at most once per METRICS_MIN_GAP_S, and otherwise every
 * metrics_interval_s, which refreshes the counters every pass moves
 * (passes, timings, sample counts) and the gauges read at write time
 * (coverage). Scrapers read the file every 15-60 s; the staleness alert
 * allows 600 s. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "engine_stats.h"
#include "metrics.h"

#define METRICS_MIN_GAP_S 1.0

struct metrics_schedule {
	bool written;    /* at least once */
	uint64_t digest; /* metrics_digest() at the last write */
	double last;     /* monotonic seconds of the last write */
};

/* A hash of what a reader acts on: every counter and gauge except those
 * each pass moves by itself. Pure. */
uint64_t metrics_digest(const struct engine_stats *e, enum khugepaged_mode mode, const struct metrics_reload *r);

/* Whether a write is due now with this digest, interval seconds
 * (metrics_interval_s) bounding the staleness. Pure. */
bool metrics_due(const struct metrics_schedule *s, uint64_t digest, double now, double interval);

/* When a write becomes due with this digest, if none is now (monotonic
 * seconds; at once if never written): the gap's end after a change, else
 * the interval's. Pure. */
double metrics_due_at(const struct metrics_schedule *s, uint64_t digest, double interval);

/* After a write (successful or not: a failing one is retried at the next
 * due time, not every pass). */
void metrics_written(struct metrics_schedule *s, uint64_t digest, double now);
