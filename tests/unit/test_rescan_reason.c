/* SPDX-License-Identifier: GPL-2.0-or-later */
/* rescan_reason: each reason from the facts that make it, the "not read"
 * cases, the precedence between them, and, over every combination of the
 * facts, the same read-or-not answer as the condition rescan_visit() had
 * before it was a function. Pure: no /proc, no engine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rescan_reason.h"

/* A process scanned before, whose counters all match its last scan, under
 * a known policy, nothing due: the common case, not read. */
static struct rescan_facts quiet(void)
{
	return (struct rescan_facts){.scanned = true, .policy_known = true};
}

static void expect(const struct rescan_facts *f, enum rescan_reason want)
{
	enum rescan_reason got = rescan_reason(f);

	if (got != want)
		fail_msg("got %s, want %s", rescan_reason_name(got), rescan_reason_name(want));
}

static void test_not_read(void **state)
{
	struct rescan_facts f = quiet();

	(void)state;
	expect(&f, RESCAN_SKIP_UNCHANGED);
	assert_false(rescan_reason_reads(rescan_reason(&f)));

	/* Faults since, but none can make a candidate. */
	f.faults_changed = true;
	f.closed = true;
	expect(&f, RESCAN_SKIP_CLOSED);
	f = quiet();
	f.rss_changed = f.closed = true;
	expect(&f, RESCAN_SKIP_CLOSED);

	/* Closed means nothing while nothing changed. */
	f = quiet();
	f.closed = true;
	expect(&f, RESCAN_SKIP_UNCHANGED);
}

static void test_small(void **state)
{
	struct rescan_facts f = {.small = true, .policy_known = false}; /* new, no cgroup read yet */

	(void)state;
	expect(&f, RESCAN_SKIP_SMALL);
	/* New and small: a new address space does not count. */
	f.maps_changed = f.faults_changed = f.rss_changed = true;
	expect(&f, RESCAN_SKIP_SMALL);
	/* Scanned, small, faults and RSS moved, maps the same. */
	f = quiet();
	f.small = f.faults_changed = f.rss_changed = true;
	expect(&f, RESCAN_SKIP_SMALL);
	/* Small beats any timer. */
	f.full_due = f.policy_recheck_due = f.access_sample_due = f.cold_recheck_due = true;
	expect(&f, RESCAN_SKIP_SMALL);
	/* A scanned small process whose maps changed goes on to the rest. */
	f = quiet();
	f.small = f.maps_changed = true;
	expect(&f, RESCAN_MAPS);
	f.closed = true;
	expect(&f, RESCAN_SKIP_CLOSED);
	f.full_due = true;
	expect(&f, RESCAN_FULL_DUE);
}

/* Each reason for reading, alone on the quiet process. */
static void test_each_reason(void **state)
{
	static const struct {
		size_t off;
		enum rescan_reason want;
	} one[] = {
	    {offsetof(struct rescan_facts, force), RESCAN_FORCED},
	    {offsetof(struct rescan_facts, unlimited), RESCAN_UNLIMITED},
	    {offsetof(struct rescan_facts, resuming), RESCAN_RESUME},
	    {offsetof(struct rescan_facts, full_due), RESCAN_FULL_DUE},
	    {offsetof(struct rescan_facts, policy_recheck_due), RESCAN_POLICY_RECHECK},
	    {offsetof(struct rescan_facts, access_sample_due), RESCAN_ACCESS_SAMPLE},
	    {offsetof(struct rescan_facts, cold_recheck_due), RESCAN_COLD_RECHECK},
	    {offsetof(struct rescan_facts, advised), RESCAN_ADVISED},
	    {offsetof(struct rescan_facts, maps_changed), RESCAN_MAPS},
	    {offsetof(struct rescan_facts, faults_changed), RESCAN_FAULTS},
	    {offsetof(struct rescan_facts, rss_changed), RESCAN_RSS},
	};
	struct rescan_facts f;

	(void)state;
	for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++) {
		f = quiet();
		*(bool *)((char *)&f + one[i].off) = true;
		expect(&f, one[i].want);
		assert_true(rescan_reason_reads(one[i].want));
	}
	f = quiet();
	f.scanned = false;
	expect(&f, RESCAN_NEW);
	f = quiet();
	f.policy_known = false;
	expect(&f, RESCAN_NO_POLICY);
	/* A closed process whose cgroup was never read is read all the same. */
	f.faults_changed = f.closed = true;
	expect(&f, RESCAN_NO_POLICY);
}

/* The first that holds decides: each reason against every one after it. */
static void test_precedence(void **state)
{
	/* Facts that make each read reason, in precedence order, applied on
	 * a quiet process; the change reasons need closed unset. */
	static const size_t order[] = {
	    offsetof(struct rescan_facts, force),
	    offsetof(struct rescan_facts, unlimited),
	    offsetof(struct rescan_facts, resuming),
	    offsetof(struct rescan_facts, full_due),
	    offsetof(struct rescan_facts, policy_recheck_due),
	    offsetof(struct rescan_facts, access_sample_due),
	    offsetof(struct rescan_facts, cold_recheck_due),
	    offsetof(struct rescan_facts, advised),
	    SIZE_MAX, /* scanned = false: new */
	    offsetof(struct rescan_facts, maps_changed),
	    offsetof(struct rescan_facts, faults_changed),
	    offsetof(struct rescan_facts, rss_changed),
	};
	static const enum rescan_reason want[] = {
	    RESCAN_FORCED,        RESCAN_UNLIMITED,    RESCAN_RESUME,  RESCAN_FULL_DUE, RESCAN_POLICY_RECHECK,
	    RESCAN_ACCESS_SAMPLE, RESCAN_COLD_RECHECK, RESCAN_ADVISED, RESCAN_NEW,      RESCAN_MAPS,
	    RESCAN_FAULTS,        RESCAN_RSS,
	};
	const size_t n = sizeof(order) / sizeof(order[0]);

	(void)state;
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < n; i++) {
		struct rescan_facts f = quiet();

		/* i and everything after it: i wins; and no policy read yet,
		 * which every read reason beats. */
		f.policy_known = false;
		for (size_t j = i; j < n; j++) {
			if (order[j] == SIZE_MAX)
				f.scanned = false;
			else
				*(bool *)((char *)&f + order[j]) = true;
		}
		expect(&f, want[i]);
	}
	/* Forced, unlimited and resumed scans beat small; small beats the
	 * timers (test_small). */
	{
		struct rescan_facts f = {.small = true};

		f.resuming = true;
		expect(&f, RESCAN_RESUME);
		f.unlimited = true;
		expect(&f, RESCAN_UNLIMITED);
		f.force = true;
		expect(&f, RESCAN_FORCED);
	}
	/* Closed silences the changes, not the timers, nor an opt-in (it
	 * changed the policy that closed it). */
	{
		struct rescan_facts f = quiet();

		f.faults_changed = f.closed = f.advised = true;
		expect(&f, RESCAN_ADVISED);
	}
	{
		struct rescan_facts f = quiet();

		f.faults_changed = f.closed = f.cold_recheck_due = true;
		expect(&f, RESCAN_COLD_RECHECK);
		f.cold_recheck_due = false;
		f.scanned = false;
		expect(&f, RESCAN_SKIP_CLOSED);
	}
}

/* The condition of rescan_visit() before it was this function (commit
 * db7bf0d), as it was written: true when the process is not read; with
 * advised (a MADV_HUGEPAGE since the last pass), which came after, read
 * like a timer that fell due. */
static bool old_skip(const struct rescan_facts *f)
{
	bool changed = !f->scanned || f->maps_changed || f->faults_changed || f->rss_changed;
	bool closed = changed && f->closed;

	if (f->small && !f->force && !f->resuming && !f->unlimited && (!f->scanned || !f->maps_changed))
		return true;
	return (!changed || closed) && !f->full_due && !f->policy_recheck_due && !f->access_sample_due &&
	       !f->cold_recheck_due && !f->advised && !f->force && !f->resuming && !f->unlimited && f->policy_known;
}

static void test_same_as_before(void **state)
{
	static const size_t field[] = {
	    offsetof(struct rescan_facts, force),
	    offsetof(struct rescan_facts, unlimited),
	    offsetof(struct rescan_facts, resuming),
	    offsetof(struct rescan_facts, scanned),
	    offsetof(struct rescan_facts, maps_changed),
	    offsetof(struct rescan_facts, faults_changed),
	    offsetof(struct rescan_facts, rss_changed),
	    offsetof(struct rescan_facts, closed),
	    offsetof(struct rescan_facts, small),
	    offsetof(struct rescan_facts, full_due),
	    offsetof(struct rescan_facts, policy_recheck_due),
	    offsetof(struct rescan_facts, access_sample_due),
	    offsetof(struct rescan_facts, cold_recheck_due),
	    offsetof(struct rescan_facts, advised),
	    offsetof(struct rescan_facts, policy_known),
	};
	const size_t n = sizeof(field) / sizeof(field[0]);
	unsigned seen[RESCAN_NR_REASONS] = {0};

	(void)state;
	assert_int_equal(n * sizeof(bool), sizeof(struct rescan_facts)); /* every fact is varied */
	for (unsigned bits = 0; bits < 1u << n; bits++) {
		struct rescan_facts f;
		enum rescan_reason r;

		memset(&f, 0, sizeof(f));
		for (size_t k = 0; k < n; k++)
			*(bool *)((char *)&f + field[k]) = bits >> k & 1;
		r = rescan_reason(&f);
		assert_true((unsigned)r < RESCAN_NR_REASONS);
		if (rescan_reason_reads(r) == old_skip(&f))
			fail_msg("facts 0x%x: %s, but the old condition %s", bits, rescan_reason_name(r),
				 old_skip(&f) ? "skipped" : "read");
		seen[r]++;
	}
	for (unsigned r = 0; r < RESCAN_NR_REASONS; r++)
		if (!seen[r])
			fail_msg("%s never comes out", rescan_reason_name((enum rescan_reason)r));
}

static void test_names(void **state)
{
	(void)state;
	for (unsigned i = 0; i < RESCAN_NR_REASONS; i++) {
		const char *a = rescan_reason_name((enum rescan_reason)i);

		assert_string_not_equal(a, "?");
		for (unsigned j = 0; j < i; j++)
			assert_string_not_equal(a, rescan_reason_name((enum rescan_reason)j));
	}
	assert_string_equal(rescan_reason_name(RESCAN_FAULTS), "faults");
	assert_string_equal(rescan_reason_name(RESCAN_SKIP_SMALL), "skip_small");
	assert_string_equal(rescan_reason_name(RESCAN_NR_REASONS), "?");
	assert_string_equal(rescan_reason_name((enum rescan_reason) - 1), "?");
	assert_false(rescan_reason_reads(RESCAN_SKIP_SMALL));
	assert_false(rescan_reason_reads(RESCAN_SKIP_UNCHANGED));
	assert_false(rescan_reason_reads(RESCAN_SKIP_CLOSED));
	assert_true(rescan_reason_reads(RESCAN_FORCED));
	assert_true(rescan_reason_reads(RESCAN_NO_POLICY));
	assert_false(rescan_reason_reads(RESCAN_NR_REASONS));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_not_read),       cmocka_unit_test(test_small),
	    cmocka_unit_test(test_each_reason),    cmocka_unit_test(test_precedence),
	    cmocka_unit_test(test_same_as_before), cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
