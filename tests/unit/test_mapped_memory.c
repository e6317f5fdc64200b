/* SPDX-License-Identifier: GPL-2.0-or-later */
/* mapped_memory: parse_meminfo_buf() on a real capture and hostile inputs;
 * read_mapped_memory_kb() through a fixture proc root and on the live
 * system, where memory populated without faults must move the total. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "mapped_memory.h"
#include "units.h"

#define FIXTURES HC_FIXTURES "/meminfo"

static int parse(const char *s, uint64_t *kb)
{
	return parse_meminfo_buf(s, strlen(s), kb);
}

static void test_real_capture(void **state)
{
	uint64_t kb = 0;

	(void)state;
	assert_int_equal(read_mapped_memory_kb(FIXTURES "/real", &kb), 0);
	assert_int_equal(kb, 5844 + 12392);
}

static void test_fields_anywhere_in_order(void **state)
{
	uint64_t kb = 0;

	(void)state;
	assert_int_equal(parse("Mapped: 7 kB\nAnonPages: 5 kB\n", &kb), 0);
	assert_int_equal(kb, 12);
	/* No trailing newline, no unit, tabs are not spaces (refused). */
	assert_int_equal(parse("AnonPages: 1 kB\nMapped: 2", &kb), 0);
	assert_int_equal(kb, 3);
	assert_int_equal(parse("AnonPages:\t1 kB\nMapped: 2 kB\n", &kb), -EINVAL);
}

/* Lines whose names merely contain the field's name do not count. */
static void test_lookalike_names(void **state)
{
	uint64_t kb = 0;

	(void)state;
	assert_int_equal(parse("AnonHugePages: 100 kB\nShmemPmdMapped: 200 kB\nFilePmdMapped: 300 kB\n"
			       "AnonPages: 1 kB\nMapped: 2 kB\n",
			       &kb),
			 0);
	assert_int_equal(kb, 3);
	assert_int_equal(parse("XAnonPages: 1 kB\nMapped: 2 kB\n", &kb), -EINVAL);
	assert_int_equal(parse("AnonPagesX: 1 kB\nMapped: 2 kB\n", &kb), -EINVAL);
}

static void test_hostile(void **state)
{
	static const char *const bad[] = {
	    "",
	    "\n\n\n",
	    "AnonPages: 1 kB\n",                                 /* no Mapped */
	    "Mapped: 1 kB\n",                                    /* no AnonPages */
	    "AnonPages: kB\nMapped: 1 kB\n",                     /* no digits */
	    "AnonPages: -1 kB\nMapped: 1 kB\n",                  /* negative */
	    "AnonPages: 1x kB\nMapped: 1 kB\n",                  /* junk after the number */
	    "AnonPages: 1234567890123456789 kB\nMapped: 1 kB\n", /* 19 digits: refused, not wrapped */
	    "AnonPages 1 kB\nMapped: 1 kB\n",                    /* no colon */
	};
	uint64_t kb = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i], &kb), -EINVAL);
		assert_int_equal(kb, 42); /* untouched on failure */
	}
	/* The largest accepted values add up without overflow. */
	assert_int_equal(parse("AnonPages: 999999999999999999 kB\nMapped: 999999999999999999 kB\n", &kb), 0);
	assert_int_equal(kb, UINT64_C(1999999999999999998));
	/* A NUL inside the buffer is just a byte that matches nothing. */
	assert_int_equal(parse_meminfo_buf("AnonPages: 1 kB\n\0\nMapped: 2 kB\n", 31, &kb), 0);
	assert_int_equal(kb, 3);
}

static void test_missing_proc_root(void **state)
{
	uint64_t kb;

	(void)state;
	assert_int_equal(read_mapped_memory_kb(FIXTURES "/does-not-exist", &kb), -ENOENT);
}

/* The reason the module exists: MADV_POPULATE_WRITE fills page tables
 * without a page fault, and the total still moves. The total is the whole
 * machine's, so other processes move it too (a parallel build frees and
 * maps hundreds of MiB a second): the median of several trials must show
 * at least half of what we populated. Noise would have to go the same way
 * in most trials to fake it or to hide it. */
static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static void test_live_populate_moves_total(void **state)
{
	enum { TRIALS = 7 };
	const size_t len = 64 * MIB_BYTES;
	int64_t delta[TRIALS];
	uint64_t before, after;

	(void)state;
	for (int t = 0; t < TRIALS; t++) {
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		assert_true(p != MAP_FAILED);
		assert_int_equal(read_mapped_memory_kb("/proc", &before), 0);
		assert_int_equal(madvise(p, len, MADV_POPULATE_WRITE), 0);
		assert_int_equal(read_mapped_memory_kb("/proc", &after), 0);
		munmap(p, len);
		delta[t] = (int64_t)after - (int64_t)before;
	}
	qsort(delta, TRIALS, sizeof(delta[0]), cmp_i64);
	if (delta[TRIALS / 2] < (int64_t)(len >> 10) / 2)
		fail_msg("median move %lld kB for %zu kB populated (trials %lld .. %lld kB)",
			 (long long)delta[TRIALS / 2], len >> 10, (long long)delta[0], (long long)delta[TRIALS - 1]);
}

static void write_meminfo(const char *dir, unsigned anon_kb)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/meminfo", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "MemTotal: 1000000 kB\nAnonPages: %u kB\nMapped: 1000 kB\n", anon_kb);
	fclose(f);
}

/* The watch: growth that the faults seen explain does not count, growth
 * beyond it (plus the slack) does, shrinking never does, and meminfo is
 * read at most every MAPPED_CHECK_S, each read starting a new window. */
static void test_watch_faults_explain_growth(void **state)
{
	char dir[] = "/tmp/hc-meminfo-XXXXXX", path[128];
	struct mapped_watch w = {.proc_root = dir};

	(void)state;
	assert_non_null(mkdtemp(dir));
	write_meminfo(dir, 100000);
	mapped_watch_note(&w, 10.0);
	assert_true(w.known);
	write_meminfo(dir, 103000);
	mapped_watch_faulted(&w, 2000);
	assert_false(mapped_watch_moved(&w, 10.2)); /* too soon: not read */
	assert_false(mapped_watch_moved(&w, 10.5)); /* 3000 <= 2000 + slack */
	write_meminfo(dir, 103000 + MAPPED_SLACK_KB + 1);
	assert_true(mapped_watch_moved(&w, 11.0)); /* no faults this window */
	write_meminfo(dir, 50000);
	assert_false(mapped_watch_moved(&w, 11.5)); /* shrinking */
	mapped_watch_faulted(&w, UINT64_MAX);
	mapped_watch_faulted(&w, 5); /* saturates */
	write_meminfo(dir, 900000);
	assert_false(mapped_watch_moved(&w, 12.0));
	mapped_watch_close(&w);
	snprintf(path, sizeof(path), "%s/meminfo", dir);
	unlink(path);
	rmdir(dir);
}

static uint64_t fake_free;
static unsigned free_reads;

static int fake_free_kb(uint64_t *kb)
{
	free_reads++;
	*kb = fake_free;
	return 0;
}

/* The prefilter: while free memory does not fall by more than the slack,
 * meminfo is not read (a move there goes unseen, and the window and the
 * faults it explains go on), until MAPPED_FORCE_S after the last read; a
 * fall beyond the slack reads it at the next check. */
static void test_watch_free_prefilter(void **state)
{
	char dir[] = "/tmp/hc-meminfo-XXXXXX", path[128];
	struct mapped_watch w = {.proc_root = dir, .read_free_kb = fake_free_kb};

	(void)state;
	assert_non_null(mkdtemp(dir));
	fake_free = 500000;
	write_meminfo(dir, 100000);
	mapped_watch_note(&w, 10.0);
	assert_true(w.known && w.free_known);
	/* Page cache mapped: the total grows, free memory does not fall. */
	write_meminfo(dir, 100000 + 4 * MAPPED_SLACK_KB);
	fake_free = 500000 - MAPPED_SLACK_KB;
	assert_false(mapped_watch_moved(&w, 10.5));
	assert_false(mapped_watch_moved(&w, 14.9));
	assert_int_equal(w.kb, 100000 + 1000);     /* not read */
	assert_true(mapped_watch_moved(&w, 15.4)); /* forced: 5 s after the read at 10 */
	assert_int_equal(w.kb, 100000 + 4 * MAPPED_SLACK_KB + 1000);
	/* A populate: free memory falls, meminfo is read at once. */
	write_meminfo(dir, 100000 + 8 * MAPPED_SLACK_KB);
	fake_free -= 3 * MAPPED_SLACK_KB;
	assert_true(mapped_watch_moved(&w, 15.9));
	/* Faults seen while meminfo is not read still explain growth. */
	write_meminfo(dir, 100000 + 12 * MAPPED_SLACK_KB);
	mapped_watch_faulted(&w, 4 * MAPPED_SLACK_KB);
	assert_false(mapped_watch_moved(&w, 16.4)); /* free steady: not read */
	fake_free -= 4 * MAPPED_SLACK_KB;
	assert_false(mapped_watch_moved(&w, 16.9)); /* read: the faults explain it */
	assert_int_equal(w.kb, 100000 + 12 * MAPPED_SLACK_KB + 1000);
	assert_true(free_reads >= 7);
	mapped_watch_close(&w);
	snprintf(path, sizeof(path), "%s/meminfo", dir);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_real_capture),
	    cmocka_unit_test(test_fields_anywhere_in_order),
	    cmocka_unit_test(test_lookalike_names),
	    cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_missing_proc_root),
	    cmocka_unit_test(test_live_populate_moves_total),
	    cmocka_unit_test(test_watch_faults_explain_growth),
	    cmocka_unit_test(test_watch_free_prefilter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
