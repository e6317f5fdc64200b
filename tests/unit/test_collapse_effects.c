/* SPDX-License-Identifier: GPL-2.0-or-later */
/* collapse_effects: what a round of collapses says of the table, applied by
 * the owner: memos dropped and counted, refused blocks remembered, the
 * ENOMEM streak, back-off and usage set, a process forgotten after its
 * blocks' effects. Pure: no process, no engine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "block_memo.h"
#include "collapse_effects.h"
#include "proc_state.h"

#define BLOCK (UINT64_C(2) << 20)

/* Two processes of three blocks each, at BLOCK, 2 BLOCK and 3 BLOCK. */
static void table(struct proc_state st[2])
{
	memset(st, 0, 2 * sizeof(*st));
	for (int p = 0; p < 2; p++) {
		st[p].pid = 10 + p;
		st[p].blocks = calloc(3, sizeof(*st[p].blocks));
		assert_non_null(st[p].blocks);
		st[p].nblocks = st[p].capblocks = 3;
		for (int i = 0; i < 3; i++)
			st[p].blocks[i] = (struct block_memo){.addr = (uint64_t)(i + 1) * BLOCK, .vma_tag = 7};
		st[p].enomem_streak = 2;
		st[p].backoff_until = 50;
	}
}

static void test_blocks_and_processes(void **state)
{
	struct proc_state st[2];
	struct block_effect blocks[] = {
	    {.proc = 0, .addr = BLOCK, .drop = true},
	    {.proc = 0, .addr = 2 * BLOCK, .drop = true, .refused = true, .vma_tag = 7, .refused_at = 100},
	    {.proc = 1, .addr = 3 * BLOCK, .set_eagain = true, .eagain = 2},
	    {.proc = 1, .addr = 9 * BLOCK, .set_eagain = true, .eagain = 1}, /* no memo: nothing */
	};
	struct proc_effect procs[] = {
	    {.proc = 0, .enomem_streak = 0, .backoff_until = 50, .usage_set = true, .usage = {.anon = 4 * BLOCK}},
	    {.proc = 1, .enomem_streak = 3, .backoff_until = 108},
	};
	const struct collapse_effects fx = {.procs = procs, .nprocs = 2, .blocks = blocks, .nblocks = 4};

	(void)state;
	table(st);
	collapse_effects_apply(st, 2, &fx);
	assert_null(block_memo_find(st[0].blocks, st[0].nblocks, BLOCK));
	assert_null(block_memo_find(st[0].blocks, st[0].nblocks, 2 * BLOCK));
	assert_non_null(block_memo_find(st[0].blocks, st[0].nblocks, 3 * BLOCK));
	const struct addr_entry *r = addr_set_find(&st[0].refused, 2 * BLOCK);
	assert_non_null(r);
	assert_int_equal(r->tag, 7);
	assert_true(r->added == 100);
	assert_int_equal(st[0].refused.n, 1);
	assert_int_equal(st[0].enomem_streak, 0);
	assert_int_equal(st[0].usage.anon, 4 * BLOCK);
	assert_int_equal(block_memo_find(st[1].blocks, st[1].nblocks, 3 * BLOCK)->eagain, 2);
	assert_int_equal(st[1].nblocks, 3);
	assert_int_equal(st[1].enomem_streak, 3);
	assert_true(st[1].backoff_until == 108);
	assert_int_equal(st[1].usage.anon, 0); /* not read again */
	for (int p = 0; p < 2; p++)
		proc_state_clear(&st[p]);
}

/* A process forgotten: its blocks are gone, after what its blocks said
 * (a refusal stays remembered). */
static void test_forget_after_blocks(void **state)
{
	struct proc_state st[2];
	struct block_effect blocks[] = {
	    {.proc = 1, .addr = BLOCK, .drop = true, .refused = true, .vma_tag = 7, .refused_at = 100},
	};
	struct proc_effect procs[] = {{.proc = 1, .forget = true, .enomem_streak = 2, .backoff_until = 50}};
	const struct collapse_effects fx = {.procs = procs, .nprocs = 1, .blocks = blocks, .nblocks = 1};

	(void)state;
	table(st);
	collapse_effects_apply(st, 2, &fx);
	assert_int_equal(st[1].nblocks, 0);
	assert_true(addr_set_has(&st[1].refused, BLOCK));
	assert_int_equal(st[0].nblocks, 3); /* the other untouched */
	assert_non_null(block_memo_find(st[0].blocks, st[0].nblocks, BLOCK));
	for (int p = 0; p < 2; p++)
		proc_state_clear(&st[p]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_blocks_and_processes),
	    cmocka_unit_test(test_forget_after_blocks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
