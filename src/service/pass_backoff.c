/* SPDX-License-Identifier: GPL-2.0-or-later */
/* How long the timer waits after a pass; see the header. */
#include "pass_backoff.h"

void pass_backoff_init(struct pass_backoff *b)
{
	b->intervals = 1;
}

bool pass_quiet(const struct pass_stats *p, const struct engine_stats *e)
{
	if (p->idle)
		return true;
	return !p->collapsed_bytes && !p->would_collapse_bytes && !p->full_sample && !p->backing_off &&
	       !p->pressure_paused && !e->work_left && !e->view.ncands;
}

unsigned pass_backoff_after(struct pass_backoff *b, bool quiet, bool doorbell)
{
	if (!quiet || !doorbell)
		b->intervals = 1;
	else
		b->intervals = b->intervals * 2 > PASS_BACKOFF_MAX ? PASS_BACKOFF_MAX : b->intervals * 2;
	return b->intervals;
}

uint64_t pass_backoff_usec(unsigned intervals, uint64_t interval_usec)
{
	uint64_t cap = (uint64_t)(PASS_BACKOFF_MAX_S * 1e6);
	uint64_t d = interval_usec * (intervals ? intervals : 1);

	if (cap < interval_usec)
		cap = interval_usec;
	return d > cap ? cap : d;
}

bool pass_backoff_reset(struct pass_backoff *b)
{
	bool was = b->intervals > 1;

	b->intervals = 1;
	return was;
}
