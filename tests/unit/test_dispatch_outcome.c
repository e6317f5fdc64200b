/* SPDX-License-Identifier: GPL-2.0-or-later */
/* dispatch_outcome: the decision for every collapse outcome (what happens
 * to the block's memo, the retry, the back-off, the stop), the EAGAIN
 * retry's bound, the ENOMEM streak and the pass's ENOMEM stop. Pure: no
 * process, no engine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dispatch_outcome.h"

#define BACKOFF_MS 60000

/* A block with its memo, never answered EAGAIN, in the pass's first
 * dispatch, of a process with no ENOMEM yet, the first one in this pass. */
static struct outcome_facts facts(enum collapse_outcome oc)
{
	return (struct outcome_facts){.outcome = oc,
				      .has_memo = true,
				      .eagain = 0,
				      .eagain_retries = 3,
				      .collect_retry = true,
				      .enomem_streak = 0,
				      .alloc_backoff_ms = BACKOFF_MS,
				      .enomem_procs = 0};
}

static struct outcome_decision decide(enum collapse_outcome oc)
{
	const struct outcome_facts f = facts(oc);

	return dispatch_outcome(&f);
}

/* Nothing but the fate: the others all unset. */
static void assert_only_fate(const struct outcome_decision *d, enum block_fate fate)
{
	assert_int_equal(d->fate, fate);
	assert_false(d->collapsed);
	assert_false(d->count_eagain);
	assert_false(d->retry);
	assert_false(d->back_off);
	assert_false(d->forget_process);
	assert_false(d->missing_privilege);
	assert_false(d->stop_pass);
}

static void test_collapsed(void **state)
{
	struct outcome_decision d = decide(COLLAPSE_OK);

	(void)state;
	assert_true(d.collapsed);
	d.collapsed = false;
	assert_only_fate(&d, BLOCK_DROP);
}

static void test_refused(void **state)
{
	struct outcome_decision d = decide(COLLAPSE_EINVAL);

	(void)state;
	assert_only_fate(&d, BLOCK_REFUSED);
}

/* Unmapped (ENOMEM, the allocation failure count did not move) and stale:
 * dropped, and nothing stops or backs off; unlike an ENOMEM whose count
 * moved (test_enomem). */
static void test_unmapped_and_stale(void **state)
{
	struct outcome_decision d = decide(COLLAPSE_UNMAPPED);

	(void)state;
	assert_only_fate(&d, BLOCK_DROP);
	d = decide(COLLAPSE_STALE);
	assert_only_fate(&d, BLOCK_DROP);
}

static void test_counted_only(void **state)
{
	struct outcome_decision d = decide(COLLAPSE_OTHER);

	(void)state;
	assert_only_fate(&d, BLOCK_KEEP);
	d = decide(COLLAPSE_NOT_TRIED);
	assert_only_fate(&d, BLOCK_KEEP);
}

static void test_eagain(void **state)
{
	struct outcome_facts f = facts(COLLAPSE_EAGAIN);
	struct outcome_decision d = dispatch_outcome(&f);

	(void)state;
	assert_int_equal(d.fate, BLOCK_KEEP);
	assert_true(d.count_eagain);
	assert_int_equal(d.eagain, 1);
	assert_true(d.retry);
	assert_false(d.back_off || d.stop_pass || d.forget_process || d.missing_privilege || d.collapsed);

	/* The retry is one of eagain_retries: the 3rd answer is retried,
	 * the 4th not (it is given up at the compaction, block_memo.h). */
	f.eagain = 2;
	d = dispatch_outcome(&f);
	assert_int_equal(d.eagain, 3);
	assert_true(d.retry);
	f.eagain = 3;
	d = dispatch_outcome(&f);
	assert_true(d.count_eagain);
	assert_int_equal(d.eagain, 4);
	assert_false(d.retry);
	f.eagain_retries = 0;
	f.eagain = 0;
	d = dispatch_outcome(&f);
	assert_true(d.count_eagain);
	assert_false(d.retry);

	/* The retry's own EAGAIN (not collecting): counted, not retried. */
	f = facts(COLLAPSE_EAGAIN);
	f.collect_retry = false;
	d = dispatch_outcome(&f);
	assert_true(d.count_eagain);
	assert_int_equal(d.eagain, 1);
	assert_false(d.retry);

	/* Its memo is gone: nothing to count, no retry. */
	f = facts(COLLAPSE_EAGAIN);
	f.has_memo = false;
	d = dispatch_outcome(&f);
	assert_only_fate(&d, BLOCK_KEEP);
}

/* EBUSY (the memcg charge failed) counts as an EAGAIN but is never
 * retried in the same pass. */
static void test_ebusy(void **state)
{
	struct outcome_facts f = facts(COLLAPSE_EBUSY);
	struct outcome_decision d = dispatch_outcome(&f);

	(void)state;
	assert_int_equal(d.fate, BLOCK_KEEP);
	assert_true(d.count_eagain);
	assert_int_equal(d.eagain, 1);
	assert_false(d.retry);
	assert_false(d.back_off || d.stop_pass);
	f.eagain = 6;
	d = dispatch_outcome(&f);
	assert_int_equal(d.eagain, 7);
	f.has_memo = false;
	d = dispatch_outcome(&f);
	assert_only_fate(&d, BLOCK_KEEP);
}

static void test_enomem(void **state)
{
	struct outcome_facts f = facts(COLLAPSE_ENOMEM);
	struct outcome_decision d = dispatch_outcome(&f);

	(void)state;
	assert_int_equal(d.fate, BLOCK_KEEP); /* the block stays */
	assert_true(d.back_off);
	assert_int_equal(d.enomem_streak, 1);
	assert_true(d.backoff_s == BACKOFF_MS / 1000.0);
	assert_false(d.stop_pass);
	assert_false(d.retry || d.count_eagain || d.forget_process || d.missing_privilege || d.collapsed);

	/* Doubled per ENOMEM in a row, up to 2^ENOMEM_BACKOFF_MAX_SHIFT. */
	f.enomem_streak = 1;
	d = dispatch_outcome(&f);
	assert_int_equal(d.enomem_streak, 2);
	assert_true(d.backoff_s == 2 * BACKOFF_MS / 1000.0);
	f.enomem_streak = 20;
	d = dispatch_outcome(&f);
	assert_int_equal(d.enomem_streak, 21);
	assert_true(d.backoff_s == (1u << ENOMEM_BACKOFF_MAX_SHIFT) * BACKOFF_MS / 1000.0);
	/* The streak saturates. */
	f.enomem_streak = UINT8_MAX;
	d = dispatch_outcome(&f);
	assert_int_equal(d.enomem_streak, UINT8_MAX);
	assert_true(d.backoff_s == enomem_backoff_s(BACKOFF_MS, UINT8_MAX));

	/* The ENOMEM_PROCS_PER_PASS-th process stops the pass. */
	f = facts(COLLAPSE_ENOMEM);
	f.enomem_procs = ENOMEM_PROCS_PER_PASS - 2;
	d = dispatch_outcome(&f);
	assert_false(d.stop_pass);
	f.enomem_procs = ENOMEM_PROCS_PER_PASS - 1;
	d = dispatch_outcome(&f);
	assert_true(d.back_off);
	assert_true(d.stop_pass);
}

static void test_enomem_backoff_s(void **state)
{
	(void)state;
	assert_true(enomem_backoff_s(1000, 0) == 1.0); /* as the first */
	assert_true(enomem_backoff_s(1000, 1) == 1.0);
	assert_true(enomem_backoff_s(1000, 2) == 2.0);
	assert_true(enomem_backoff_s(1000, ENOMEM_BACKOFF_MAX_SHIFT + 1) == (double)(1u << ENOMEM_BACKOFF_MAX_SHIFT));
	assert_true(enomem_backoff_s(1000, ENOMEM_BACKOFF_MAX_SHIFT + 2) == (double)(1u << ENOMEM_BACKOFF_MAX_SHIFT));
	assert_true(enomem_backoff_s(1000, 200) == (double)(1u << ENOMEM_BACKOFF_MAX_SHIFT));
	assert_true(enomem_backoff_s(250, 3) == 1.0);
	assert_true(enomem_backoff_s(0, 3) == 0.0);
}

static void test_esrch(void **state)
{
	struct outcome_decision d = decide(COLLAPSE_ESRCH);

	(void)state;
	assert_true(d.forget_process);
	d.forget_process = false;
	assert_only_fate(&d, BLOCK_KEEP); /* forget_process drops them all */
}

static void test_eperm(void **state)
{
	struct outcome_decision d = decide(COLLAPSE_EPERM);

	(void)state;
	assert_true(d.missing_privilege);
	assert_true(d.stop_pass);
	d.missing_privilege = d.stop_pass = false;
	assert_only_fate(&d, BLOCK_KEEP);
}

/* Only ENOMEM and EPERM stop the pass, only ENOMEM backs off, only ESRCH
 * forgets the process, only OK collapsed, whatever the other facts. */
static void test_every_outcome(void **state)
{
	(void)state;
	for (int oc = 0; oc < COLLAPSE_NR_OUTCOMES; oc++)
		for (unsigned v = 0; v < 16; v++) {
			struct outcome_facts f = facts((enum collapse_outcome)oc);
			struct outcome_decision d;

			f.has_memo = v & 1;
			f.collect_retry = v & 2;
			f.eagain = v & 4 ? 9 : 0;
			f.enomem_procs = v & 8 ? ENOMEM_PROCS_PER_PASS - 1 : 0;
			d = dispatch_outcome(&f);
			assert_int_equal(d.stop_pass,
					 oc == COLLAPSE_EPERM || (oc == COLLAPSE_ENOMEM && f.enomem_procs));
			assert_int_equal(d.back_off, oc == COLLAPSE_ENOMEM);
			assert_int_equal(d.forget_process, oc == COLLAPSE_ESRCH);
			assert_int_equal(d.collapsed, oc == COLLAPSE_OK);
			assert_int_equal(d.missing_privilege, oc == COLLAPSE_EPERM);
			assert_int_equal(d.count_eagain, (oc == COLLAPSE_EAGAIN || oc == COLLAPSE_EBUSY) && f.has_memo);
			assert_int_equal(d.retry, oc == COLLAPSE_EAGAIN && f.has_memo && f.collect_retry && !f.eagain);
			assert_int_equal(d.fate, oc == COLLAPSE_EINVAL ? BLOCK_REFUSED
						 : oc == COLLAPSE_OK || oc == COLLAPSE_UNMAPPED || oc == COLLAPSE_STALE
						     ? BLOCK_DROP
						     : BLOCK_KEEP);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_collapsed),
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_unmapped_and_stale),
	    cmocka_unit_test(test_counted_only),
	    cmocka_unit_test(test_eagain),
	    cmocka_unit_test(test_ebusy),
	    cmocka_unit_test(test_enomem),
	    cmocka_unit_test(test_enomem_backoff_s),
	    cmocka_unit_test(test_esrch),
	    cmocka_unit_test(test_eperm),
	    cmocka_unit_test(test_every_outcome),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
