/* SPDX-License-Identifier: GPL-2.0-or-later */
/* metrics_schedule: which changes rewrite the metrics file at once (after
 * METRICS_MIN_GAP_S) and which wait for metrics_interval_s. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "metrics_schedule.h"
#include "units.h"

static struct engine_stats base(void)
{
	struct engine_stats e;

	memset(&e, 0, sizeof(e));
	e.passes = 10;
	e.total.collapsed_bytes = 4 * MIB_BYTES;
	return e;
}

static uint64_t digest_of(const struct engine_stats *e)
{
	struct metrics_reload r = {.last_ok = true};

	return metrics_digest(e, KHUGEPAGED_KEEP, &r);
}

/* What each pass moves by itself (passes, timings, samples, the sizes of
 * the table) leaves the digest alone: idle passes write nothing. */
static void test_pass_counters_do_not_count(void **state)
{
	struct engine_stats a = base(), b = base();

	(void)state;
	b.passes = 11;
	b.passes_idle = 7;
	b.stat_reads = 999;
	b.full_samples = 3;
	b.partial_samples = 4;
	b.doorbell_wakeups = 12;
	b.total.scan_s = 1.5;
	b.last.scan_s = 0.25;
	b.last.procs_total = 300;
	b.last.procs_active = 4;
	b.last.procs_sampled = 9;
	b.total.smaps_reads = 40;
	b.total.pagemap_ops = 50;
	b.last.idle = true;
	assert_true(digest_of(&a) == digest_of(&b));
}

/* What a reader acts on changes it. */
static void test_material_changes_count(void **state)
{
	struct engine_stats a = base(), b;
	uint64_t d = digest_of(&a);
	struct metrics_reload r = {.last_ok = true}, r2 = {.total = 1, .failures = 1, .last_ok = false};

	(void)state;
	b = a;
	b.total.collapsed_bytes += 2 * MIB_BYTES;
	assert_true(digest_of(&b) != d);
	b = a;
	b.total.outcomes[COLLAPSE_ENOMEM]++;
	assert_true(digest_of(&b) != d);
	b = a;
	b.total.results[SCAN_CANDIDATE]++;
	assert_true(digest_of(&b) != d);
	b = a;
	b.last.procs_backing_off = 1;
	assert_true(digest_of(&b) != d);
	b = a;
	b.pressure_paused = true;
	assert_true(digest_of(&b) != d);
	b = a;
	b.memcg_gate_error = -2;
	assert_true(digest_of(&b) != d);
	assert_true(metrics_digest(&a, KHUGEPAGED_OFF, &r) != d);
	assert_true(metrics_digest(&a, KHUGEPAGED_KEEP, &r2) != d);
}

static void test_due(void **state)
{
	struct metrics_schedule s = {0};

	(void)state;
	assert_true(metrics_due(&s, 1, 100.0, 10)); /* never written */
	metrics_written(&s, 1, 100.0);
	/* Nothing changed: only at the interval. */
	assert_false(metrics_due(&s, 1, 100.5, 10));
	assert_false(metrics_due(&s, 1, 109.9, 10));
	assert_true(metrics_due(&s, 1, 110.0, 10));
	/* A change: after the minimum gap, not before. */
	assert_false(metrics_due(&s, 2, 100.0 + METRICS_MIN_GAP_S / 2, 10));
	assert_true(metrics_due(&s, 2, 100.0 + METRICS_MIN_GAP_S, 10));
	metrics_written(&s, 2, 101.0);
	assert_false(metrics_due(&s, 2, 102.0, 10));
	/* An interval shorter than the gap still bounds staleness. */
	assert_true(metrics_due(&s, 2, 101.5, 0.5));
}

/* When the next write is due if no pass comes first. */
static void test_due_at(void **state)
{
	struct metrics_schedule s = {0};

	(void)state;
	assert_true(metrics_due_at(&s, 1, 10) == 0); /* never written: now */
	metrics_written(&s, 1, 100.0);
	assert_true(metrics_due_at(&s, 1, 10) == 110.0);
	assert_true(metrics_due_at(&s, 2, 10) == 100.0 + METRICS_MIN_GAP_S);
	assert_true(metrics_due_at(&s, 2, 0.5) == 100.5); /* the interval, if sooner */
	/* Each answer is the first time metrics_due() says yes. */
	assert_false(metrics_due(&s, 2, 100.0 + METRICS_MIN_GAP_S - 0.01, 10));
	assert_true(metrics_due(&s, 2, metrics_due_at(&s, 2, 10), 10));
	assert_false(metrics_due(&s, 1, 109.99, 10));
	assert_true(metrics_due(&s, 1, metrics_due_at(&s, 1, 10), 10));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pass_counters_do_not_count),
	    cmocka_unit_test(test_material_changes_count),
	    cmocka_unit_test(test_due),
	    cmocka_unit_test(test_due_at),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
