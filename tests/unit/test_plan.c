/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plan: the score formula of plan.h term by term, activity from counter
 * deltas, and plan_order()'s promise: tier first (aged, active, idle), then
 * score, hottest first; among aged blocks the oldest first; ties by process
 * then address, so any input order gives the same plan. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plan.h"
#include "units.h"

#define EPS 1e-9

static void assert_close(double got, double want)
{
	if (fabs(got - want) > EPS * (1 + fabs(want)))
		fail_msg("got %.12g, want %.12g", got, want);
}

static void test_activity_from_deltas(void **state)
{
	struct activity a;

	(void)state;
	/* 50 ticks at 100 Hz over 1 s: half a CPU; 25600 minor faults/s = 1.0. */
	a = activity_from_deltas(50, 25600, 0, 1.0, 100);
	assert_close(a.cpu, 0.5);
	assert_close(a.faults, 1.0);
	/* A major fault weighs 8 minor ones; rates are per second. */
	a = activity_from_deltas(0, 0, 3200, 2.0, 100);
	assert_close(a.faults, 3200.0 * 8 / 2 / 25600);
	/* No time or no clock rate: no activity, not a division by zero. */
	a = activity_from_deltas(100, 100, 100, 0, 100);
	assert_close(a.cpu + a.faults, 0);
	a = activity_from_deltas(100, 100, 100, -1, 100);
	assert_close(a.cpu + a.faults, 0);
	a = activity_from_deltas(100, 100, 100, 1, 0);
	assert_close(a.cpu + a.faults, 0);
}

static void test_activity_total_capped(void **state)
{
	struct activity a = {.cpu = 1.5, .faults = 0.25};

	(void)state;
	assert_close(activity_total(&a), 1.75);
	a = (struct activity){.cpu = 3, .faults = 3};
	assert_close(activity_total(&a), 4.0);
	a = (struct activity){.cpu = INFINITY, .faults = 0};
	assert_close(activity_total(&a), 4.0);
}

/* score = weight/100 × (0.05 + activity) × referenced × fill */
static void test_score_formula(void **state)
{
	struct activity idle = {0, 0}, busy = {.cpu = 1.0, .faults = 0.5}, wild = {.cpu = 100, .faults = 100};

	(void)state;
	assert_close(candidate_score(100, &idle, 100, 512), 0.05); /* the floor */
	assert_close(candidate_score(100, &busy, 100, 512), 1.55);
	assert_close(candidate_score(200, &busy, 100, 512), 3.10);  /* weight scales */
	assert_close(candidate_score(100, &busy, 50, 512), 0.775);  /* referenced */
	assert_close(candidate_score(100, &busy, 100, 256), 0.775); /* fill */
	assert_close(candidate_score(100, &wild, 100, 512), 4.05);  /* capped activity */
	assert_close(candidate_score(0, &busy, 100, 512), 0);       /* weight 0 */
	assert_close(candidate_score(100, &busy, 0, 512), 0);       /* nothing referenced */
	/* Out-of-range inputs clamp to 1, never above. */
	assert_close(candidate_score(100, &busy, 250, 512), 1.55);
	assert_close(candidate_score(100, &busy, 100, 4096), 1.55);
	/* Monotonic in each term. */
	assert_true(candidate_score(100, &busy, 90, 500) > candidate_score(100, &busy, 89, 500));
	assert_true(candidate_score(100, &busy, 90, 500) > candidate_score(100, &busy, 90, 499));
	assert_true(candidate_score(101, &busy, 90, 500) > candidate_score(100, &busy, 90, 500));
}

static struct candidate cand(uint8_t tier, double score, uint32_t proc, uint64_t addr)
{
	return (struct candidate){.tier = tier, .score = score, .proc = proc, .addr = addr, .present = 512};
}

static void assert_order(const struct candidate *c, size_t n, const uint64_t *addrs)
{
	for (size_t i = 0; i < n; i++)
		if (c[i].addr != addrs[i])
			fail_msg("position %zu: block 0x%llx, want 0x%llx", i, (unsigned long long)c[i].addr,
				 (unsigned long long)addrs[i]);
}

/* Tier beats score: an idle process's best block never passes an active
 * process's worst, and an aged block passes both. */
static void test_tiers_first(void **state)
{
	struct candidate c[] = {
	    cand(TIER_IDLE, 100.0, 0, 0x1000), cand(TIER_ACTIVE, 0.001, 1, 0x2000), cand(TIER_AGED, 5.0, 2, 0x3000),
	    cand(TIER_ACTIVE, 3.0, 3, 0x4000), cand(TIER_IDLE, 0.5, 4, 0x5000),
	};
	const uint64_t want[] = {0x3000, 0x4000, 0x2000, 0x1000, 0x5000};

	(void)state;
	plan_order(c, 5);
	assert_order(c, 5, want);
}

/* Aged blocks carry the seconds they waited as their score: the oldest
 * goes first, whatever its heat. */
static void test_aged_oldest_first(void **state)
{
	struct candidate c[] = {
	    cand(TIER_AGED, 61.0, 0, 0xa000),
	    cand(TIER_AGED, 3600.0, 1, 0xb000),
	    cand(TIER_AGED, 600.5, 2, 0xc000),
	    cand(TIER_ACTIVE, 1e9, 3, 0xd000),
	};
	const uint64_t want[] = {0xb000, 0xc000, 0xa000, 0xd000};

	(void)state;
	plan_order(c, 4);
	assert_order(c, 4, want);
}

/* Equal tier and score: lower process index first, then lower address. */
static void test_tie_order(void **state)
{
	struct candidate c[] = {
	    cand(TIER_ACTIVE, 1.0, 2, 0x1000), cand(TIER_ACTIVE, 1.0, 1, 0x3000), cand(TIER_ACTIVE, 1.0, 1, 0x2000),
	    cand(TIER_ACTIVE, 1.0, 0, 0x9000), cand(TIER_ACTIVE, 2.0, 9, 0xf000),
	};
	const uint64_t want[] = {0xf000, 0x9000, 0x2000, 0x3000, 0x1000};

	(void)state;
	plan_order(c, 5);
	assert_order(c, 5, want);
}

/* Every rotation and the reverse of an input give the same plan. */
static void test_deterministic(void **state)
{
	enum { N = 40 };
	struct candidate base[N], c[N], first[N];

	(void)state;
	for (unsigned i = 0; i < N; i++)
		base[i] = cand((uint8_t)(i % 3), (double)(i % 4), i % 5, (N - i) * HPAGE_SIZE);
	memcpy(first, base, sizeof(base));
	plan_order(first, N);
	for (unsigned r = 0; r <= N; r++) {
		for (unsigned i = 0; i < N; i++)
			c[i] = r == N ? base[N - 1 - i] : base[(i + r) % N];
		plan_order(c, N);
		for (unsigned i = 0; i < N; i++) {
			assert_int_equal(c[i].addr, first[i].addr);
			assert_int_equal(c[i].proc, first[i].proc);
		}
	}
	for (unsigned i = 1; i < N; i++) {
		assert_true(first[i - 1].tier >= first[i].tier);
		if (first[i - 1].tier == first[i].tier)
			assert_true(first[i - 1].score >= first[i].score);
	}
}

static void test_empty(void **state)
{
	struct candidate one = cand(TIER_IDLE, 1, 0, 0x1000);

	(void)state;
	plan_order(NULL, 0);
	plan_order(&one, 1);
	assert_int_equal(one.addr, 0x1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_activity_from_deltas), cmocka_unit_test(test_activity_total_capped),
	    cmocka_unit_test(test_score_formula),        cmocka_unit_test(test_tiers_first),
	    cmocka_unit_test(test_aged_oldest_first),    cmocka_unit_test(test_tie_order),
	    cmocka_unit_test(test_deterministic),        cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
