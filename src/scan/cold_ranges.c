/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The observed MADV_COLD/MADV_PAGEOUT ranges; see the header. */
#include "cold_ranges.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "lower_bound.h"
#include "units.h"

#define PAGE_MASK_4K UINT64_C(4095)

void cold_ranges_free(struct cold_ranges *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}

/* The first entry of pid (or where it would go) and one past its last. */
static size_t lower(const struct cold_ranges *t, pid_t pid)
{
	return lower_bound_pid(t->v, t->n, sizeof(*t->v), offsetof(struct cold_range, pid), pid);
}

static size_t upper(const struct cold_ranges *t, size_t lo, pid_t pid)
{
	while (lo < t->n && t->v[lo].pid == pid)
		lo++;
	return lo;
}

/* Replaces v[lo..hi) by the n entries of r. 0 or -ENOMEM (unchanged). */
static int splice(struct cold_ranges *t, size_t lo, size_t hi, const struct cold_range *r, size_t n)
{
	size_t old = hi - lo;

	if (n > old && GROW(t->v, t->cap, t->n + n - old) < 0)
		return -ENOMEM;
	if (!t->v) /* nothing held and nothing to add */
		return 0;
	if (t->n > hi)
		memmove(&t->v[lo + n], &t->v[hi], (t->n - hi) * sizeof(*t->v));
	if (n)
		memcpy(&t->v[lo], r, n * sizeof(*r));
	t->n = t->n - old + n;
	return 0;
}

static bool is_whole(const struct cold_range *r)
{
	return r->start == 0 && r->end == COLD_WHOLE;
}

int cold_ranges_whole(struct cold_ranges *t, pid_t pid)
{
	size_t lo = lower(t, pid), hi = upper(t, lo, pid);
	struct cold_range w = {.pid = pid, .gen = ++t->gen, .start = 0, .end = COLD_WHOLE};

	if (t->v && hi > lo)
		w.start_ticks = t->v[lo].start_ticks;
	t->wholes++;
	return splice(t, lo, hi, &w, 1);
}

int cold_ranges_add(struct cold_ranges *t, pid_t pid, uint64_t start, uint64_t len)
{
	struct cold_range r[COLD_PER_PID + 1] = {{0}};
	size_t lo, hi, n = 0;
	uint64_t s, e;

	if (len == 0)
		return 0;
	s = start & ~PAGE_MASK_4K;
	e = start + len < start || start + len > COLD_WHOLE - PAGE_MASK_4K
		? COLD_WHOLE
		: (start + len + PAGE_MASK_4K) & ~PAGE_MASK_4K;
	lo = lower(t, pid);
	hi = upper(t, lo, pid);
	if (t->v && hi > lo && is_whole(&t->v[lo])) {
		t->v[lo].gen = ++t->gen;
		return 0;
	}
	/* pid's entries with the new one merged in, still sorted and disjoint
	 * (adjacent ones merged too). */
	struct cold_range nr = {.pid = pid, .gen = ++t->gen, .start = s, .end = e};
	bool placed = false;

	for (size_t i = lo; i <= hi; i++) {
		const struct cold_range *c = i < hi ? &t->v[i] : NULL;

		if (c && c->end < nr.start) {
			r[n++] = *c;
			continue;
		}
		if (c && c->start <= nr.end) { /* overlaps or touches: widen */
			if (c->start < nr.start)
				nr.start = c->start;
			if (c->end > nr.end)
				nr.end = c->end;
			if (c->start_ticks)
				nr.start_ticks = c->start_ticks;
			continue;
		}
		if (!placed) {
			r[n++] = nr;
			placed = true;
		}
		if (c)
			r[n++] = *c;
	}
	/* Past the bound: merge the two closest neighbours, covering the gap. */
	while (n > COLD_PER_PID) {
		size_t best = 0;

		for (size_t i = 1; i + 1 < n; i++)
			if (r[i + 1].start - r[i].end < r[best + 1].start - r[best].end)
				best = i;
		r[best].end = r[best + 1].end;
		r[best].gen = t->gen;
		if (r[best + 1].start_ticks)
			r[best].start_ticks = r[best + 1].start_ticks;
		memmove(&r[best + 1], &r[best + 2], (n - best - 2) * sizeof(*r));
		n--;
		t->merges++;
	}
	if (n > hi - lo && t->n + n - (hi - lo) > COLD_MAX)
		return cold_ranges_whole(t, pid);
	if (splice(t, lo, hi, r, n) < 0) {
		if (hi == lo || !t->v)
			return -ENOMEM;
		/* In place: no memory needed. */
		struct cold_range w = {
		    .pid = pid, .gen = t->gen, .start = 0, .end = COLD_WHOLE, .start_ticks = t->v[lo].start_ticks};

		t->wholes++;
		return splice(t, lo, hi, &w, 1);
	}
	return 0;
}

int cold_ranges_whole_all(struct cold_ranges *t, pid_t (*get)(const void *ctx, size_t i), const void *ctx, size_t n)
{
	size_t cap = t->n + n, k = 0, i = 0, j = 0;
	struct cold_range *v;

	if (cap == 0)
		return 0;
	v = malloc(cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	t->gen++;
	while (i < t->n || j < n) {
		pid_t p = j < n ? get(ctx, j) : 0;

		if (j < n && p <= 0) { /* an empty slot */
			j++;
			continue;
		}
		if (j < n && (i >= t->n || p <= t->v[i].pid)) {
			struct cold_range w = {.pid = p, .gen = t->gen, .start = 0, .end = COLD_WHOLE};

			for (; i < t->n && t->v[i].pid == p; i++) /* replaced */
				w.start_ticks = t->v[i].start_ticks;
			if (!k || v[k - 1].pid != p) /* a repeated pid: one entry */
				v[k++] = w;
			j++;
			t->wholes++;
		} else {
			v[k++] = t->v[i++];
		}
	}
	free(t->v);
	t->v = v;
	t->n = k;
	t->cap = cap;
	return 0;
}

void cold_ranges_forget(struct cold_ranges *t, pid_t pid)
{
	size_t lo = lower(t, pid);

	splice(t, lo, upper(t, lo, pid), NULL, 0);
}

void cold_ranges_bind(struct cold_ranges *t, pid_t pid, uint64_t start_ticks)
{
	size_t lo = lower(t, pid), hi = upper(t, lo, pid);

	for (size_t i = lo; i < hi; i++)
		if (t->v[i].start_ticks && t->v[i].start_ticks != start_ticks) {
			/* Recycled: what the old process advised is not this one's. */
			size_t k = lo;

			for (size_t j = lo; j < hi; j++)
				if (!t->v[j].start_ticks)
					t->v[k++] = t->v[j];
			splice(t, k, hi, NULL, 0);
			hi = k;
			break;
		}
	for (size_t i = lo; i < hi; i++)
		t->v[i].start_ticks = start_ticks;
}

bool cold_ranges_has(const struct cold_ranges *t, pid_t pid)
{
	size_t lo = lower(t, pid);

	return lo < t->n && t->v[lo].pid == pid;
}

uint64_t cold_ranges_overlap(const struct cold_ranges *t, pid_t pid, uint64_t addr, uint64_t len, uint64_t after_gen)
{
	uint64_t end = addr + len < addr ? COLD_WHOLE : addr + len, pages = 0;

	for (size_t i = lower(t, pid); i < t->n && t->v[i].pid == pid; i++) {
		const struct cold_range *c = &t->v[i];
		uint64_t s = c->start > addr ? c->start : addr, e = c->end < end ? c->end : end;

		if (c->gen > after_gen && s < e)
			pages += (e - s) >> 12;
	}
	return pages;
}

void cold_ranges_settle(struct cold_ranges *t, pid_t pid, const uint64_t *vs, const uint64_t *ve, const bool *warm,
			size_t nvma)
{
	size_t lo = lower(t, pid), hi = upper(t, lo, pid), k = lo;

	for (size_t i = lo; i < hi; i++) {
		const struct cold_range *c = &t->v[i];
		bool keep = false;

		/* VMAs are sorted: skip those that end before the range. */
		size_t a = 0, b = nvma;
		while (a < b) {
			size_t mid = a + (b - a) / 2;

			if (ve[mid] <= c->start)
				a = mid + 1;
			else
				b = mid;
		}
		for (size_t j = a; j < nvma && vs[j] < c->end && !keep; j++)
			keep = !warm[j];
		if (keep)
			t->v[k++] = *c;
	}
	splice(t, k, hi, NULL, 0);
}

bool cold_block_warm(uint64_t unreferenced, unsigned present, uint64_t cold)
{
	uint64_t outside = cold >= HPAGE_PAGES ? 0 : HPAGE_PAGES - cold;
	uint64_t lower_bound = present > outside ? present - outside : 0;

	return unreferenced < lower_bound;
}
