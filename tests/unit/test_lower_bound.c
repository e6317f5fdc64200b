/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lower_bound: the first index whose pid is not below the key, over plain
 * pid_t arrays and over structs (stride, offset): empty, first, last,
 * absent (before, between, after) and duplicates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cmocka.h>

#include "lower_bound.h"

static size_t lb(const pid_t *p, size_t n, pid_t pid)
{
	return lower_bound_pid(p, n, sizeof(*p), 0, pid);
}

static void test_empty(void **state)
{
	(void)state;
	assert_int_equal(lb(NULL, 0, 1), 0);
}

static void test_pids(void **state)
{
	static const pid_t p[] = {3, 5, 5, 5, 9};
	const size_t n = sizeof(p) / sizeof(*p);

	(void)state;
	assert_int_equal(lb(p, n, 3), 0); /* first */
	assert_int_equal(lb(p, n, 9), 4); /* last */
	assert_int_equal(lb(p, n, 5), 1); /* the first of the duplicates */
	assert_int_equal(lb(p, n, 1), 0); /* absent: before all */
	assert_int_equal(lb(p, n, 4), 1); /* absent: between, where it would go */
	assert_int_equal(lb(p, n, 6), 4);
	assert_int_equal(lb(p, n, 10), n); /* absent: after all */
	assert_int_equal(lb(p, 1, 3), 0);
	assert_int_equal(lb(p, 1, 4), 1);
}

struct rec {
	uint64_t before;
	pid_t pid;
	char after;
};

static void test_structs(void **state)
{
	static const struct rec r[] = {{.pid = 2}, {.pid = 4}, {.pid = 4}, {.pid = 8}};
	const size_t n = sizeof(r) / sizeof(*r);

	(void)state;
	assert_int_equal(lower_bound_pid(r, n, sizeof(*r), offsetof(struct rec, pid), 2), 0);
	assert_int_equal(lower_bound_pid(r, n, sizeof(*r), offsetof(struct rec, pid), 4), 1);
	assert_int_equal(lower_bound_pid(r, n, sizeof(*r), offsetof(struct rec, pid), 8), 3);
	assert_int_equal(lower_bound_pid(r, n, sizeof(*r), offsetof(struct rec, pid), 5), 3);
	assert_int_equal(lower_bound_pid(r, n, sizeof(*r), offsetof(struct rec, pid), 9), n);
	assert_int_equal(lower_bound_pid(r, n, sizeof(*r), offsetof(struct rec, pid), -1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_pids),
	    cmocka_unit_test(test_structs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
