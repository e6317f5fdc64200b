/* SPDX-License-Identifier: GPL-2.0-or-later */
/* histogram: bucketing, and the Prometheus text it writes (cumulative
 * buckets in order, +Inf equal to _count, _sum). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "histogram.h"

static const double le[] = {0.001, 0.01, 0.1};

static char *format(const struct histogram *h)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	histogram_format(f, "x_seconds", "What it feels like.", h);
	assert_int_equal(fclose(f), 0);
	return text;
}

static void test_observe(void **state)
{
	struct histogram h;

	(void)state;
	histogram_init(&h, le, 3);
	histogram_observe(&h, 0.001, 1); /* on a bound: in that bucket (le is <=) */
	histogram_observe(&h, 0.005, 16);
	histogram_observe(&h, 5, 1);   /* above every bound */
	histogram_observe(&h, 0.5, 0); /* nothing */
	histogram_observe(&h, NAN, 1); /* a broken clock counts as 0 */
	histogram_observe(&h, -1, 1);
	assert_int_equal(h.counts[0], 3);
	assert_int_equal(h.counts[1], 16);
	assert_int_equal(h.counts[2], 0);
	assert_int_equal(h.counts[3], 1);
	assert_int_equal(h.count, 20);
	assert_true(fabs(h.sum - (0.001 + 0.08 + 5)) < 1e-12);
}

static void test_format(void **state)
{
	struct histogram h;
	char *t;

	(void)state;
	histogram_init(&h, le, 3);
	histogram_observe(&h, 0.0005, 2);
	histogram_observe(&h, 0.05, 1);
	histogram_observe(&h, 3, 1);
	t = format(&h);
	assert_string_equal(t, "# HELP x_seconds What it feels like.\n"
			       "# TYPE x_seconds histogram\n"
			       "x_seconds_bucket{le=\"0.001\"} 2\n"
			       "x_seconds_bucket{le=\"0.01\"} 2\n"
			       "x_seconds_bucket{le=\"0.1\"} 3\n"
			       "x_seconds_bucket{le=\"+Inf\"} 4\n"
			       "x_seconds_sum 3.051\n"
			       "x_seconds_count 4\n");
	free(t);
}

static void test_empty_and_bounds(void **state)
{
	struct histogram h;
	char *t;

	(void)state;
	histogram_init(&h, le, 0);
	t = format(&h);
	assert_non_null(strstr(t, "x_seconds_bucket{le=\"+Inf\"} 0\nx_seconds_sum 0\nx_seconds_count 0\n"));
	free(t);
	/* The daemon's bounds increase strictly and fit. */
	assert_true(histogram_block_nbounds <= HISTOGRAM_MAX_BOUNDS);
	assert_true(histogram_pass_nbounds <= HISTOGRAM_MAX_BOUNDS);
	for (size_t i = 1; i < histogram_block_nbounds; i++)
		assert_true(histogram_block_bounds[i] > histogram_block_bounds[i - 1]);
	for (size_t i = 1; i < histogram_pass_nbounds; i++)
		assert_true(histogram_pass_bounds[i] > histogram_pass_bounds[i - 1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_observe),
	    cmocka_unit_test(test_format),
	    cmocka_unit_test(test_empty_and_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
