/* SPDX-License-Identifier: GPL-2.0-or-later */
/* series_keep_select(): the one cardinality rule of the per-group series.
 * Policy groups always; at most top_n others; with a memory, the same set
 * from one call to the next while nothing changes, no swap of groups of
 * about the same size, a free place to the largest, and "other" sticky. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "series_keep.h"

#define NITEMS 6

static struct series_item it[NITEMS];

static void fill(void)
{
	static const char *const names[NITEMS] = {"/pol", "/a", "/b", "/c", "/d", "/e"};
	static const uint64_t size[NITEMS] = {1, 100, 90, 80, 70, 60};

	for (int i = 0; i < NITEMS; i++)
		it[i] = (struct series_item){names[i], i == 0, size[i]};
}

/* The names with their own series, as "a b c". */
static const char *chosen(struct series_keep *k, unsigned top_n, size_t n)
{
	static char out[256];
	bool own[NITEMS];
	size_t l = 0;

	assert_int_equal(series_keep_select(k, top_n, it, n, own), 0);
	out[0] = 0;
	for (size_t i = 0; i < n; i++)
		if (own[i])
			l += (size_t)snprintf(out + l, sizeof(out) - l, "%s%s", l ? " " : "", it[i].name);
	return out;
}

static void test_without_memory(void **state)
{
	(void)state;
	fill();
	assert_string_equal(chosen(NULL, 2, NITEMS), "/pol /a /b");
	assert_string_equal(chosen(NULL, 0, NITEMS), "/pol");
	assert_string_equal(chosen(NULL, 10, NITEMS), "/pol /a /b /c /d /e");
	it[4].size = 95; /* /d now second */
	assert_string_equal(chosen(NULL, 2, NITEMS), "/pol /a /d");
	/* Ties by name: the same input, the same choice. */
	for (int i = 1; i < NITEMS; i++)
		it[i].size = 5;
	assert_string_equal(chosen(NULL, 2, NITEMS), "/pol /a /b");
}

/* However many groups users make, at most policy + top_n own series. */
static void test_bounded(void **state)
{
	struct series_item many[1000];
	bool own[1000];
	char names[1000][8];
	size_t n = 0;

	(void)state;
	for (int i = 0; i < 1000; i++) {
		snprintf(names[i], sizeof(names[i]), "/u%d", i);
		many[i] = (struct series_item){names[i], i < 3, (uint64_t)(i * 7919 % 1000)};
	}
	assert_int_equal(series_keep_select(NULL, 10, many, 1000, own), 0);
	for (int i = 0; i < 1000; i++)
		n += own[i];
	assert_int_equal(n, 3 + 10);
}

static void test_stable(void **state)
{
	struct series_keep k = {0};

	(void)state;
	fill();
	assert_string_equal(chosen(&k, 2, NITEMS), "/pol /a /b");
	assert_true(k.other); /* /c /d /e are in other */
	/* Nothing changed: the same set, every time. */
	for (int i = 0; i < 5; i++)
		assert_string_equal(chosen(&k, 2, NITEMS), "/pol /a /b");
	/* /c grows past /b, not twice its size: no swap (no flapping). */
	it[3].size = 150;
	assert_string_equal(chosen(&k, 2, NITEMS), "/pol /a /b");
	it[3].size = 85;
	assert_string_equal(chosen(&k, 2, NITEMS), "/pol /a /b");
	/* More than twice the smallest member: it takes that place. */
	it[3].size = 181;
	assert_string_equal(chosen(&k, 2, NITEMS), "/pol /a /c");
	/* ... and keeps it when /b grows again, to less than twice /a. */
	it[2].size = 170;
	assert_string_equal(chosen(&k, 2, NITEMS), "/pol /a /c");
	/* A member that is gone frees its place for the largest outsider. */
	assert_string_equal(chosen(&k, 2, 3), "/pol /a /b"); /* /c, /d, /e gone */
	fill();
	assert_string_equal(chosen(&k, 2, NITEMS), "/pol /a /b");
	/* top_n down (a reload): the largest members stay. */
	assert_string_equal(chosen(&k, 1, NITEMS), "/pol /a");
	series_keep_free(&k);
}

/* "other", once written, stays: the memory says so even when all fit. */
static void test_other_sticky(void **state)
{
	struct series_keep k = {0};

	(void)state;
	fill();
	assert_string_equal(chosen(&k, 10, NITEMS), "/pol /a /b /c /d /e");
	assert_false(k.other);
	assert_string_equal(chosen(&k, 4, NITEMS), "/pol /a /b /c /d");
	assert_true(k.other);
	assert_string_equal(chosen(&k, 10, NITEMS), "/pol /a /b /c /d /e");
	assert_true(k.other);
	series_keep_free(&k);
}

/* Sizes near UINT64_MAX do not overflow the factor. */
static void test_huge_sizes(void **state)
{
	struct series_keep k = {0};

	(void)state;
	fill();
	it[1].size = UINT64_MAX;
	it[2].size = UINT64_MAX - 1;
	it[3].size = UINT64_MAX / 2;
	assert_string_equal(chosen(&k, 2, NITEMS), "/pol /a /b");
	it[3].size = UINT64_MAX;
	assert_string_equal(chosen(&k, 2, NITEMS), "/pol /a /b");
	series_keep_free(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_without_memory), cmocka_unit_test(test_bounded),    cmocka_unit_test(test_stable),
	    cmocka_unit_test(test_other_sticky),   cmocka_unit_test(test_huge_sizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
