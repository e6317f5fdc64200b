/* SPDX-License-Identifier: GPL-2.0-or-later */
/* histogram: a Prometheus histogram (fixed upper bounds, counts, sum) and
 * its text exposition. Pure: no clock, no I/O but the FILE it is given.
 *
 * histogram_format() writes the series the text format asks for:
 * NAME_bucket{le="B"} with cumulative counts in increasing order of B, then
 * le="+Inf" (equal to NAME_count), NAME_sum and NAME_count, after one HELP
 * and one TYPE line. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define HISTOGRAM_MAX_BOUNDS 24

struct histogram {
	const double *le; /* upper bounds, strictly increasing, static storage */
	size_t nle;
	uint64_t counts[HISTOGRAM_MAX_BOUNDS + 1]; /* per bucket (not cumulative); [nle]: above the last bound */
	double sum;
	uint64_t count;
};

/* nle <= HISTOGRAM_MAX_BOUNDS (more are ignored). */
void histogram_init(struct histogram *h, const double *le, size_t nle);

/* Observes value v, times times (a call's time shared by its blocks). */
void histogram_observe(struct histogram *h, double v, uint64_t times);

void histogram_format(FILE *f, const char *name, const char *help, const struct histogram *h);

/* The bounds used by the daemon, in seconds. */
extern const double histogram_block_bounds[];
extern const size_t histogram_block_nbounds;
extern const double histogram_pass_bounds[];
extern const size_t histogram_pass_nbounds;
