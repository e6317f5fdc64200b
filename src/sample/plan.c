/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Candidate scoring and ordering; the formula is documented in plan.h. */
#include "plan.h"

#include <stdlib.h>

#include "scan_result.h"

#define ACTIVITY_FAULTS_UNIT 25600.0 /* faults/s that count as 1.0 */
#define ACTIVITY_MAX         4.0
#define ACTIVITY_FLOOR       0.05

struct activity activity_from_deltas(uint64_t cpu_ticks, uint64_t minflt, uint64_t majflt, double dt_s, long hz)
{
	struct activity a = {0, 0};

	if (dt_s <= 0 || hz <= 0)
		return a;
	a.cpu = (double)cpu_ticks / (double)hz / dt_s;
	a.faults = ((double)minflt + 8.0 * (double)majflt) / dt_s / ACTIVITY_FAULTS_UNIT;
	return a;
}

double activity_total(const struct activity *a)
{
	double t = a->cpu + a->faults;

	return t > ACTIVITY_MAX ? ACTIVITY_MAX : t;
}

double candidate_score(unsigned weight, const struct activity *a, unsigned referenced_pct, unsigned present)
{
	double ref = referenced_pct > 100 ? 1.0 : referenced_pct / 100.0;
	double fill = present > HPAGE_PAGES ? 1.0 : (double)present / HPAGE_PAGES;

	return weight / 100.0 * (ACTIVITY_FLOOR + activity_total(a)) * ref * fill;
}

static int cmp_candidate(const void *pa, const void *pb)
{
	const struct candidate *a = pa, *b = pb;

	if (a->tier != b->tier)
		return a->tier > b->tier ? -1 : 1;
	if (a->score != b->score)
		return a->score > b->score ? -1 : 1;
	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return 0;
}

void plan_order(struct candidate *c, size_t n)
{
	if (n) /* c may be NULL when there is nothing: qsort(NULL, 0, …) is undefined */
		qsort(c, n, sizeof(*c), cmp_candidate);
}
