/* SPDX-License-Identifier: GPL-2.0-or-later */
/* report_table: merge_block_ranges() merges touching 2 MiB blocks, in any
 * input order, duplicates once; and report_table() prints one row per
 * process with candidates and their ranges. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine_stats.h"
#include "report_table.h"
#include "units.h"

static void test_merge(void **state)
{
	uint64_t a[] = {5 * HPAGE_SIZE, 0,
			1 * HPAGE_SIZE, 9 * HPAGE_SIZE,
			2 * HPAGE_SIZE, 6 * HPAGE_SIZE,
			1 * HPAGE_SIZE, UINT64_MAX - HPAGE_SIZE + 1};
	struct block_range r[8];
	size_t n;

	(void)state;
	n = merge_block_ranges(a, 8, r);
	assert_int_equal(n, 4);
	assert_true(r[0].start == 0 && r[0].end == 3 * HPAGE_SIZE);
	assert_true(r[1].start == 5 * HPAGE_SIZE && r[1].end == 7 * HPAGE_SIZE);
	assert_true(r[2].start == 9 * HPAGE_SIZE && r[2].end == 10 * HPAGE_SIZE);
	assert_true(r[3].end == UINT64_MAX); /* no wrap at the top */
	assert_int_equal(merge_block_ranges(a, 0, r), 0);
}

static void test_table(void **state)
{
	static struct proc_state st[3];
	static struct candidate c[4];
	struct engine_view v = {.procs = st, .nprocs = 3, .cands = c, .ncands = 4};
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	memset(st, 0, sizeof(st));
	for (int i = 0; i < 3; i++) {
		st[i].pid = 10 + i;
		st[i].cgroup = "/c";
		snprintf(st[i].prev.comm, sizeof(st[i].prev.comm), "proc%d", i);
	}
	st[2].usage.anon = 8 * HPAGE_SIZE;
	st[1].results[SCAN_CANDIDATE] = 1;
	st[2].results[SCAN_CANDIDATE] = 3;
	/* Process 2 first in the order, process 0 has nothing to do. */
	c[0] = (struct candidate){.proc = 2, .addr = 4 * HPAGE_SIZE};
	c[1] = (struct candidate){.proc = 1, .addr = 100 * HPAGE_SIZE};
	c[2] = (struct candidate){.proc = 2, .addr = 5 * HPAGE_SIZE};
	c[3] = (struct candidate){.proc = 2, .addr = 7 * HPAGE_SIZE};
	f = open_memstream(&out, &len);
	report_table(f, &v, 1);
	fclose(f);
	assert_null(strstr(out, "proc0"));
	assert_true(strstr(out, "12       proc2") < strstr(out, "11       proc1"));
	assert_non_null(strstr(out, "   0.0%   37.5%  /c\n"));                      /* 3 blocks of 8 */
	assert_non_null(strstr(out, "2 of 2 processes looked at have candidates")); /* proc0: no results */
	assert_non_null(strstr(out, "12 (proc2): 2 ranges\n    0x000000800000-0x000000c00000     4.0 MiB\n"));
	assert_non_null(strstr(out, "… 1 more"));
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_merge),
	    cmocka_unit_test(test_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
