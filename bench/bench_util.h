/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench_util.h: the small helpers every benchmark needs, header-only so each
 * bench_* program stays one source file.
 *
 * now_s(): CLOCK_MONOTONIC in seconds, for timing intervals.
 * cmp_double(): qsort() comparator for doubles, ascending (medians, ranges). */
#ifndef HC_BENCH_UTIL_H
#define HC_BENCH_UTIL_H

#include <time.h>

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#endif
