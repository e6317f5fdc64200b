/* SPDX-License-Identifier: GPL-2.0-or-later */
/* news_gate: a look at the news sources at most every NEWS_GAP_S; early
 * passes' scans at most NEWS_SHARE of each window, after which the sources
 * wait for the window's end; a new window starts afresh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "news_gate.h"

static void test_gap_between_looks(void **state)
{
	struct news_gate g;

	(void)state;
	news_gate_init(&g);
	assert_true(news_gate_wait(&g, 100.0) == 0);
	news_gate_looked(&g, 100.0);
	assert_true(news_gate_wait(&g, 100.0) > NEWS_GAP_S * 0.99);
	assert_true(news_gate_wait(&g, 100.0 + NEWS_GAP_S / 2) > 0);
	assert_true(news_gate_wait(&g, 100.0 + NEWS_GAP_S) == 0);
	/* Looks a second apart each find the sources open. */
	news_gate_looked(&g, 101.0);
	assert_true(news_gate_wait(&g, 102.0) == 0);
}

static void test_share_bounds_early_scans(void **state)
{
	struct news_gate g;
	double budget = NEWS_SHARE * NEWS_WINDOW_S, t = 50.0;
	int passes = 0;

	(void)state;
	news_gate_init(&g);
	/* Each early pass scans for a tenth of the share, as soon as the gap
	 * allows: ten fit a window, then the sources wait for its end. */
	while (t < 50.0 + NEWS_WINDOW_S && news_gate_wait(&g, t) == 0 && news_gate_may_pass(&g, t)) {
		news_gate_looked(&g, t);
		news_gate_ran(&g, t, budget / 10);
		passes++;
		t += NEWS_GAP_S * 1.001; /* the caller keeps the gap */
	}
	assert_int_equal(passes, 10);
	/* Used up: quiet until the window ends, then a fresh share. */
	assert_true(news_gate_wait(&g, 50.95) > 0.04);
	t = 50.0 + NEWS_WINDOW_S + NEWS_GAP_S;
	assert_true(news_gate_wait(&g, t) == 0);
	assert_true(news_gate_may_pass(&g, t));
}

static void test_one_long_scan(void **state)
{
	struct news_gate g;

	(void)state;
	news_gate_init(&g);
	assert_true(news_gate_may_pass(&g, 10.0));
	news_gate_looked(&g, 10.0);
	news_gate_ran(&g, 10.0, 0.5); /* far over the share */
	assert_false(news_gate_may_pass(&g, 10.5));
	assert_true(news_gate_wait(&g, 10.5) > 0.49);
	assert_true(news_gate_may_pass(&g, 11.0));
	/* A clock that went back starts a window there. */
	assert_true(news_gate_may_pass(&g, 5.0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gap_between_looks),
	    cmocka_unit_test(test_share_bounds_early_scans),
	    cmocka_unit_test(test_one_long_scan),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
