/* SPDX-License-Identifier: GPL-2.0-or-later */
/* pass_backoff: quiet timer passes double the wait up to PASS_BACKOFF_MAX
 * intervals, only with the doorbell; work or news brings it back to one;
 * a pass is quiet only when nothing is found, remembered or left over. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "pass_backoff.h"

static void test_quiet_passes_double_to_the_cap(void **state)
{
	struct pass_backoff b;
	unsigned seen[6];

	(void)state;
	pass_backoff_init(&b);
	for (int i = 0; i < 6; i++)
		seen[i] = pass_backoff_after(&b, true, true);
	assert_int_equal(seen[0], 2);
	assert_int_equal(seen[1], 4);
	for (int i = 2; i < 6; i++)
		assert_int_equal(seen[i], PASS_BACKOFF_MAX);
	/* One pass with work: the next is one interval away. */
	assert_int_equal(pass_backoff_after(&b, false, true), 1);
	assert_int_equal(pass_backoff_after(&b, true, true), 2);
}

static void test_no_backoff_without_doorbell(void **state)
{
	struct pass_backoff b;

	(void)state;
	pass_backoff_init(&b);
	for (int i = 0; i < 5; i++)
		assert_int_equal(pass_backoff_after(&b, true, false), 1);
	/* A doorbell lost while backed off: at once back to every interval. */
	pass_backoff_after(&b, true, true);
	assert_int_equal(pass_backoff_after(&b, true, false), 1);
}

static void test_reset_says_whether_it_was_backed_off(void **state)
{
	struct pass_backoff b;

	(void)state;
	pass_backoff_init(&b);
	assert_false(pass_backoff_reset(&b));
	pass_backoff_after(&b, true, true);
	pass_backoff_after(&b, true, true);
	assert_true(pass_backoff_reset(&b));
	assert_int_equal(b.intervals, 1);
	assert_false(pass_backoff_reset(&b));
}

static void test_delay_is_capped_for_long_intervals(void **state)
{
	(void)state;
	/* 1 s intervals: 1, 2, 4 s. */
	assert_int_equal(pass_backoff_usec(1, 1000000), 1000000);
	assert_int_equal(pass_backoff_usec(4, 1000000), 4000000);
	/* 100 ms: 0.4 s at most, the factor is the bound. */
	assert_int_equal(pass_backoff_usec(4, 100000), 400000);
	/* 3 s: 4 s at most; 60 s: never later than one interval. */
	assert_int_equal(pass_backoff_usec(2, 3000000), (uint64_t)(PASS_BACKOFF_MAX_S * 1e6));
	assert_int_equal(pass_backoff_usec(4, 60000000), 60000000);
	assert_int_equal(pass_backoff_usec(0, 1000000), 1000000);
}

static void test_what_counts_as_quiet(void **state)
{
	struct pass_stats p = {0};
	struct engine_stats e = {0};
	struct candidate c = {0};

	(void)state;
	assert_true(pass_quiet(&p, &e));
	p.idle = true;
	e.work_left = true; /* an idle pass had nothing to look at, whatever the engine holds */
	assert_true(pass_quiet(&p, &e));
	p.idle = false;
	assert_false(pass_quiet(&p, &e));
	e.work_left = false;

	p.collapsed_bytes = 1;
	assert_false(pass_quiet(&p, &e));
	p.collapsed_bytes = 0;
	p.would_collapse_bytes = 1;
	assert_false(pass_quiet(&p, &e));
	p.would_collapse_bytes = 0;
	p.full_sample = true;
	assert_false(pass_quiet(&p, &e));
	p.full_sample = false;
	p.backing_off = true;
	assert_false(pass_quiet(&p, &e));
	p.backing_off = false;
	p.pressure_paused = true;
	assert_false(pass_quiet(&p, &e));
	p.pressure_paused = false;
	e.view.cands = &c;
	e.view.ncands = 1;
	assert_false(pass_quiet(&p, &e));
	e.view.ncands = 0;
	assert_true(pass_quiet(&p, &e));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_quiet_passes_double_to_the_cap),
	    cmocka_unit_test(test_no_backoff_without_doorbell),
	    cmocka_unit_test(test_reset_says_whether_it_was_backed_off),
	    cmocka_unit_test(test_delay_is_capped_for_long_intervals),
	    cmocka_unit_test(test_what_counts_as_quiet),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
