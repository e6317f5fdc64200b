/* SPDX-License-Identifier: GPL-2.0-or-later */
/* When the metrics file is rewritten; see the header. */
#include "metrics_schedule.h"

/* FNV-1a, 64 bit: a changed value changes the hash but for a chance of
 * 2^-64, and a collision only delays a write to the next interval. */
static void mix(uint64_t *h, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		*h ^= (v >> (8 * i)) & 0xff;
		*h *= 0x100000001b3ULL;
	}
}

uint64_t metrics_digest(const struct engine_stats *e, enum khugepaged_mode mode, const struct metrics_reload *r)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	const struct pass_stats *t = &e->total, *l = &e->last;

	for (int i = 0; i < SCAN_NR_RESULTS; i++)
		mix(&h, t->results[i]);
	for (int i = 0; i < COLLAPSE_NR_OUTCOMES; i++)
		mix(&h, t->outcomes[i]);
	mix(&h, t->collapsed_bytes);
	mix(&h, t->stale_dropped);
	for (size_t i = 0; i < e->ncg_bytes; i++)
		mix(&h, e->cg_bytes[i].bytes);
	mix(&h, e->ncg_bytes);
	mix(&h, l->procs_disabled);
	mix(&h, l->procs_cgroup_unknown);
	mix(&h, l->procs_backing_off);
	mix(&h, l->missing_privilege);
	mix(&h, l->would_collapse_bytes);
	mix(&h, l->procs_would_collapse);
	mix(&h, e->pressure_paused);
	mix(&h, e->pressure_pauses);
	mix(&h, e->cold_watched);
	mix(&h, (uint64_t)(int64_t)e->memcg_gate_error);
	mix(&h, e->doorbell_opens);
	mix(&h, (uint64_t)mode);
	if (r) {
		mix(&h, r->total);
		mix(&h, r->failures);
		mix(&h, r->last_ok);
	}
	return h;
}

bool metrics_due(const struct metrics_schedule *s, uint64_t digest, double now, double interval)
{
	double since = now - s->last;

	if (!s->written || since >= interval)
		return true;
	return digest != s->digest && since >= METRICS_MIN_GAP_S;
}

double metrics_due_at(const struct metrics_schedule *s, uint64_t digest, double interval)
{
	double at = s->last + interval;

	if (!s->written)
		return 0;
	if (digest != s->digest && s->last + METRICS_MIN_GAP_S < at)
		at = s->last + METRICS_MIN_GAP_S;
	return at;
}

void metrics_written(struct metrics_schedule *s, uint64_t digest, double now)
{
	s->written = true;
	s->digest = digest;
	s->last = now;
}
