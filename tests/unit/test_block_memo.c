/* SPDX-License-Identifier: GPL-2.0-or-later */
/* block_memo: memos (find, drop, compact) and the bounded, sorted address
 * sets of refused and given-up blocks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "block_memo.h"
#include "units.h"

static void assert_sorted(const struct addr_set *s)
{
	for (size_t i = 1; i < s->n; i++)
		assert_true(s->v[i - 1].addr < s->v[i].addr);
}

/* Any insertion order gives a sorted set that finds every member and
 * nothing else. */
static void test_set_sorted_lookup(void **state)
{
	struct addr_set s = {0};
	const uint64_t order[] = {7, 3, 9, 1, 5, 2, 8, 4, 6, 0};

	(void)state;
	for (size_t i = 0; i < 10; i++)
		addr_set_add(&s, order[i] * HPAGE_SIZE, (uint32_t)order[i], 1.0);
	assert_int_equal(s.n, 10);
	assert_sorted(&s);
	for (uint64_t a = 0; a < 10; a++) {
		const struct addr_entry *e = addr_set_find(&s, a * HPAGE_SIZE);

		assert_non_null(e);
		assert_int_equal(e->tag, a);
	}
	assert_false(addr_set_has(&s, 10 * HPAGE_SIZE));
	assert_false(addr_set_has(&s, HPAGE_SIZE + 1));
	/* Adding again renews: no duplicate, new tag and time. */
	addr_set_add(&s, 3 * HPAGE_SIZE, 99, 2.0);
	assert_int_equal(s.n, 10);
	assert_int_equal(addr_set_find(&s, 3 * HPAGE_SIZE)->tag, 99);
	assert_true(addr_set_find(&s, 3 * HPAGE_SIZE)->added == 2.0);
	addr_set_remove(&s, 3 * HPAGE_SIZE);
	addr_set_remove(&s, 42 * HPAGE_SIZE); /* absent: nothing */
	assert_int_equal(s.n, 9);
	assert_false(addr_set_has(&s, 3 * HPAGE_SIZE));
	assert_sorted(&s);
	addr_set_clear(&s);
	assert_int_equal(s.n, 0);
	assert_false(addr_set_has(&s, 0));
	addr_set_free(&s);
}

/* At most ADDR_SET_MAX entries: past that, the oldest goes. */
static void test_set_bounded_drops_oldest(void **state)
{
	struct addr_set s = {0};

	(void)state;
	/* Added in descending address order, each later than the last. */
	for (uint64_t i = 0; i < ADDR_SET_MAX + 100; i++)
		addr_set_add(&s, (ADDR_SET_MAX + 100 - i) * HPAGE_SIZE, 0, (double)i);
	assert_int_equal(s.n, ADDR_SET_MAX);
	assert_sorted(&s);
	/* The first 100 added (the highest addresses) are gone. */
	for (uint64_t i = 0; i < 100; i++)
		assert_false(addr_set_has(&s, (ADDR_SET_MAX + 100 - i) * HPAGE_SIZE));
	for (uint64_t i = 100; i < ADDR_SET_MAX + 100; i++)
		assert_true(addr_set_has(&s, (ADDR_SET_MAX + 100 - i) * HPAGE_SIZE));
	/* Renewing a member does not drop anything. */
	addr_set_add(&s, 1 * HPAGE_SIZE, 0, 1e6);
	assert_int_equal(s.n, ADDR_SET_MAX);
	addr_set_free(&s);
}

/* Entries expire by the time they were added. */
static void test_set_expire(void **state)
{
	struct addr_set s = {0};

	(void)state;
	for (uint64_t i = 0; i < 10; i++)
		addr_set_add(&s, i * HPAGE_SIZE, 0, (double)(i % 2 ? 100 : 10));
	addr_set_expire(&s, 50);
	assert_int_equal(s.n, 5);
	for (uint64_t i = 0; i < 10; i++)
		assert_int_equal(addr_set_has(&s, i * HPAGE_SIZE), i % 2 == 1);
	assert_sorted(&s);
	addr_set_expire(&s, 1000);
	assert_int_equal(s.n, 0);
	addr_set_free(&s);
}

/* block_memo_drop keeps the order (later finds still work); block_memo_compact removes
 * the dropped and moves blocks past eagain_retries to given_up. */
static void test_memos(void **state)
{
	struct block_memo b[6];
	struct addr_set given_up = {0};
	size_t n = 6;

	(void)state;
	for (size_t i = 0; i < n; i++)
		b[i] = (struct block_memo){.addr = (i + 1) * HPAGE_SIZE, .vma_tag = 7};
	b[4].eagain = 3;
	assert_ptr_equal(block_memo_find(b, n, 3 * HPAGE_SIZE), &b[2]);
	assert_null(block_memo_find(b, n, 9 * HPAGE_SIZE));
	block_memo_drop(b, n, 2 * HPAGE_SIZE);
	block_memo_drop(b, n, 9 * HPAGE_SIZE); /* absent: nothing */
	assert_null(block_memo_find(b, n, 2 * HPAGE_SIZE));
	for (uint64_t a = 3; a <= 6; a++)
		assert_non_null(block_memo_find(b, n, a * HPAGE_SIZE));
	block_memo_compact(b, &n, &given_up, 2, 5.0);
	assert_int_equal(n, 4);
	assert_int_equal(b[0].addr, 1 * HPAGE_SIZE);
	assert_int_equal(b[1].addr, 3 * HPAGE_SIZE);
	assert_int_equal(b[2].addr, 4 * HPAGE_SIZE);
	assert_int_equal(b[3].addr, 6 * HPAGE_SIZE);
	assert_int_equal(given_up.n, 1);
	assert_int_equal(given_up.v[0].addr, 5 * HPAGE_SIZE);
	assert_int_equal(given_up.v[0].tag, 7);
	assert_true(given_up.v[0].added == 5.0);
	addr_set_free(&given_up);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_set_sorted_lookup),
	    cmocka_unit_test(test_set_bounded_drops_oldest),
	    cmocka_unit_test(test_set_expire),
	    cmocka_unit_test(test_memos),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
