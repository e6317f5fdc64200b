/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cold_ranges (the table of MADV_COLD/MADV_PAGEOUT ranges, its bounds and
 * the warm-again rule) and cold_watch's pure parts: the tracepoint format
 * parser, the ring parser and what one observed call records. */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cold_ranges.h"
#include "cold_watch.h"
#include "procfs.h"
#include "units.h"

static void test_add_aligns_and_merges(void **state)
{
	struct cold_ranges t = {0};

	(void)state;
	assert_int_equal(cold_ranges_add(&t, 7, 0x1000, 1), 0); /* one page, rounded up */
	assert_int_equal(t.n, 1);
	assert_int_equal(t.v[0].start, 0x1000);
	assert_int_equal(t.v[0].end, 0x2000);
	assert_int_equal(cold_ranges_add(&t, 7, 0x2000, 0x1000), 0); /* adjacent: merged */
	assert_int_equal(t.n, 1);
	assert_int_equal(t.v[0].end, 0x3000);
	assert_int_equal(cold_ranges_add(&t, 7, 0x10000, 0x1000), 0);
	assert_int_equal(cold_ranges_add(&t, 5, 0x10000, 0x1000), 0); /* another process */
	assert_int_equal(t.n, 3);
	assert_int_equal(t.v[0].pid, 5);                           /* sorted by pid */
	assert_int_equal(cold_ranges_add(&t, 7, 0x0, 0x20000), 0); /* covers both of 7's */
	assert_int_equal(t.n, 2);
	assert_int_equal(t.v[1].start, 0);
	assert_int_equal(t.v[1].end, 0x20000);
	assert_int_equal(cold_ranges_add(&t, 7, 0x5000, 0), 0); /* len 0 is nothing */
	assert_int_equal(t.n, 2);
	cold_ranges_free(&t);
}

static void test_overlap_counts_pages_and_generations(void **state)
{
	struct cold_ranges t = {0};
	uint64_t g;

	(void)state;
	assert_int_equal(cold_ranges_add(&t, 1, 2 * MIB_BYTES, MIB_BYTES), 0);
	g = t.gen;
	assert_int_equal(cold_ranges_overlap(&t, 1, 2 * MIB_BYTES, 2 * MIB_BYTES, 0), 256);
	assert_int_equal(cold_ranges_overlap(&t, 1, 0, 2 * MIB_BYTES, 0), 0);
	assert_int_equal(cold_ranges_overlap(&t, 2, 2 * MIB_BYTES, 2 * MIB_BYTES, 0), 0);
	assert_int_equal(cold_ranges_overlap(&t, 1, 2 * MIB_BYTES, 2 * MIB_BYTES, g), 0); /* seen at gen g */
	assert_int_equal(cold_ranges_add(&t, 1, 3 * MIB_BYTES, 4096), 0);                 /* widened since */
	assert_int_equal(cold_ranges_overlap(&t, 1, 2 * MIB_BYTES, 2 * MIB_BYTES, g), 257);
	/* A range to the top of the address space does not wrap. */
	assert_int_equal(cold_ranges_add(&t, 3, UINT64_MAX - 4095, 8192), 0);
	assert_int_equal(t.v[t.n - 1].end, COLD_WHOLE);
	cold_ranges_free(&t);
}

/* A hostile process: a million separate ranges. Its entries stay at
 * COLD_PER_PID and still cover every range it gave. */
static void test_per_process_bound_merges(void **state)
{
	struct cold_ranges t = {0};

	(void)state;
	for (uint64_t i = 0; i < 1000000; i++)
		assert_int_equal(cold_ranges_add(&t, 9, i * 3 * 4096, 4096), 0);
	assert_true(t.n <= COLD_PER_PID);
	assert_true(t.merges > 0);
	for (uint64_t i = 0; i < 1000000; i += 997)
		assert_int_equal(cold_ranges_overlap(&t, 9, i * 3 * 4096, 4096, 0), 1);
	cold_ranges_free(&t);
}

/* Past COLD_MAX exact ranges in all, a process with a new range gets one
 * entry over its whole address space: bounded, and still cold. */
static void test_global_bound_makes_whole(void **state)
{
	struct cold_ranges t = {0};
	pid_t pid = 1;

	(void)state;
	while (t.n < COLD_MAX) {
		for (unsigned k = 0; k < COLD_PER_PID && t.n < COLD_MAX; k++)
			assert_int_equal(cold_ranges_add(&t, pid, (uint64_t)k * 4 * MIB_BYTES, 4096), 0);
		pid++;
	}
	assert_int_equal(cold_ranges_add(&t, pid, 0x40000000, 4096), 0);
	assert_int_equal(t.n, COLD_MAX + 1); /* one entry for the newcomer */
	assert_int_equal(t.wholes, 1);
	assert_int_equal(cold_ranges_overlap(&t, pid, 0x7f0000000000, 2 * MIB_BYTES, 0), 512);
	/* A process at its own bound merges instead: the table does not grow. */
	assert_int_equal(cold_ranges_add(&t, 1, 0x50000000, 4096), 0);
	assert_int_equal(t.n, COLD_MAX + 1);
	assert_int_equal(cold_ranges_overlap(&t, 1, 0x50000000, 4096, 0), 1);
	/* A process below its own bound would grow it: all it had becomes one. */
	cold_ranges_forget(&t, 2);
	for (unsigned k = 0; k < COLD_PER_PID && t.wholes == 1; k++)
		assert_int_equal(cold_ranges_add(&t, 2, (uint64_t)k * 4 * MIB_BYTES, 4096), 0);
	assert_int_equal(t.wholes, 2); /* COLD_MAX reached again on the way */
	assert_int_equal(cold_ranges_overlap(&t, 2, 0x7f0000000000, 2 * MIB_BYTES, 0), 512);
	assert_true(t.n <= COLD_MAX + 1);
	cold_ranges_free(&t);
}

static void test_whole_forget_bind(void **state)
{
	struct cold_ranges t = {0};

	(void)state;
	assert_int_equal(cold_ranges_add(&t, 4, 0, 4096), 0);
	assert_int_equal(cold_ranges_add(&t, 4, 8 * MIB_BYTES, 4096), 0);
	assert_int_equal(cold_ranges_whole(&t, 4), 0);
	assert_int_equal(t.n, 1);
	assert_int_equal(cold_ranges_overlap(&t, 4, 100 * MIB_BYTES, 2 * MIB_BYTES, 0), 512);
	assert_int_equal(cold_ranges_add(&t, 4, 8 * MIB_BYTES, 4096), 0); /* whole stays whole */
	assert_int_equal(t.n, 1);
	cold_ranges_bind(&t, 4, 1111);
	assert_int_equal(t.v[0].start_ticks, 1111);
	cold_ranges_bind(&t, 4, 1111);
	assert_true(cold_ranges_has(&t, 4));
	cold_ranges_bind(&t, 4, 2222); /* recycled PID: the old advice is gone */
	assert_false(cold_ranges_has(&t, 4));
	assert_int_equal(cold_ranges_add(&t, 4, 0, 4096), 0);
	cold_ranges_forget(&t, 4);
	assert_int_equal(t.n, 0);
	cold_ranges_free(&t);
}

static pid_t pid_at(const void *ctx, size_t i)
{
	return ((const pid_t *)ctx)[i];
}

/* After lost records: every known process whole, in one merge; others keep
 * their ranges. */
static void test_whole_all(void **state)
{
	struct cold_ranges t = {0};
	const pid_t pids[] = {3, 5, 5, 9};

	(void)state;
	assert_int_equal(cold_ranges_add(&t, 1, 0, 4096), 0);
	assert_int_equal(cold_ranges_add(&t, 5, 0, 4096), 0);
	assert_int_equal(cold_ranges_add(&t, 5, 8 * MIB_BYTES, 4096), 0);
	cold_ranges_bind(&t, 5, 77);
	assert_int_equal(cold_ranges_add(&t, 7, 0, 4096), 0);
	assert_int_equal(cold_ranges_whole_all(&t, pid_at, pids, 4), 0);
	assert_int_equal(t.n, 5); /* 1, 3, 5, 7, 9 */
	assert_int_equal(t.v[0].pid, 1);
	assert_int_equal(t.v[0].end, 0x1000);
	assert_int_equal(t.v[2].pid, 5);
	assert_int_equal(t.v[2].end, COLD_WHOLE);
	assert_int_equal(t.v[2].start_ticks, 77);
	assert_int_equal(t.v[3].pid, 7);
	assert_int_equal(t.v[3].end, 0x1000);
	assert_int_equal(cold_ranges_overlap(&t, 9, 0x7f0000000000, 2 * MIB_BYTES, 0), 512);
	assert_int_equal(cold_ranges_overlap(&t, 3, 0, 2 * MIB_BYTES, 0), 512);
	cold_ranges_free(&t);
}

/* Ranges over VMAs with unreferenced pages stay; those over none (warm or
 * unmapped memory) go. */
static void test_settle(void **state)
{
	struct cold_ranges t = {0};
	const uint64_t vs[] = {10 * MIB_BYTES}, ve[] = {20 * MIB_BYTES};
	const bool warm[] = {false};

	(void)state;
	assert_int_equal(cold_ranges_add(&t, 2, 12 * MIB_BYTES, MIB_BYTES), 0);     /* in the cold VMA */
	assert_int_equal(cold_ranges_add(&t, 2, 30 * MIB_BYTES, MIB_BYTES), 0);     /* elsewhere */
	assert_int_equal(cold_ranges_add(&t, 2, 19 * MIB_BYTES, 2 * MIB_BYTES), 0); /* across its end */
	cold_ranges_settle(&t, 2, vs, ve, warm, 1);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.v[0].start, 12 * MIB_BYTES);
	assert_int_equal(t.v[1].start, 19 * MIB_BYTES);
	cold_ranges_settle(&t, 2, vs, ve, warm, 0); /* no cold VMA left */
	assert_int_equal(t.n, 0);
	cold_ranges_free(&t);
}

/* khugepaged wants one referenced page per block; the VMA's count proves
 * one when it has fewer unreferenced pages than the block has resident
 * inside the ranges. */
static void test_block_warm(void **state)
{
	(void)state;
	assert_false(cold_block_warm(512, 512, 512)); /* the MADV_COLD block, untouched */
	assert_true(cold_block_warm(511, 512, 512));  /* one page read again */
	assert_true(cold_block_warm(0, 512, 512));
	assert_false(cold_block_warm(0, 512, 0) && false);
	/* One cold page in a block: 511 resident pages may lie outside the
	 * range, so only a VMA with no unreferenced page proves it. */
	assert_true(cold_block_warm(0, 512, 1));
	assert_false(cold_block_warm(1, 512, 1));
	assert_false(cold_block_warm(0, 300, 100)); /* 300 present may all be outside */
	assert_true(cold_block_warm(0, 450, 100));
	assert_false(cold_block_warm(UINT64_MAX, 512, 512));
}

static char *slurp(const char *path, size_t *len)
{
	static char buf[16384];
	ssize_t n = read_small_file_at(AT_FDCWD, path, buf, sizeof(buf));

	assert_true(n > 0);
	*len = (size_t)n;
	return buf;
}

static void test_parse_format(void **state)
{
	static const char *const names[] = {"start", "len_in", "behavior"};
	static const char *const missing[] = {"start", "nope"};
	struct trace_fields tf;
	size_t len;
	char *buf = slurp(HC_FIXTURES "/trace/sys_enter_madvise.format", &len);

	(void)state;
	assert_int_equal(parse_trace_format_buf(buf, len, names, 3, &tf), 0);
	assert_int_not_equal(tf.id, 0);
	assert_int_equal(tf.off[0], 16);
	assert_int_equal(tf.off[1], 24);
	assert_int_equal(tf.off[2], 32);
	assert_int_equal(tf.size[2], 8);
	assert_int_equal(parse_trace_format_buf(buf, len, missing, 2, &tf), -ENOENT);
	assert_int_equal(parse_trace_format_buf("garbage\n", 8, names, 3, &tf), -EINVAL);
	assert_int_equal(parse_trace_format_buf("", 0, names, 3, &tf), -EINVAL);
}

/* A ring holding one madvise sample, one of another event, a LOST record,
 * a process_madvise and a prctl sample, the first record wrapped around
 * the end. */
struct seen {
	struct cold_call c[8];
	int n;
};

static void on_call(void *ctx, const struct cold_call *c)
{
	struct seen *s = ctx;

	if (s->n < 8)
		s->c[s->n++] = *c;
}

static uint64_t put(uint8_t *ring, size_t size, uint64_t pos, const void *rec, size_t len)
{
	for (size_t i = 0; i < len; i++)
		ring[(pos + i) & (size - 1)] = ((const uint8_t *)rec)[i];
	return pos + len;
}

static size_t sample(uint8_t *rec, uint32_t pid, uint16_t type, const uint64_t *args, int nargs)
{
	/* header, pid, tid, raw size, raw (trace entry 8 + nr 8 + args), padded to 8 */
	uint32_t rawlen = 16 + 8 * (uint32_t)nargs + 4; /* the kernel pads raw to keep 8-byte records */
	size_t size = sizeof(struct perf_event_header) + 12 + rawlen;
	struct perf_event_header h = {.type = PERF_RECORD_SAMPLE, .size = (uint16_t)size};

	memset(rec, 0, size);
	memcpy(rec, &h, sizeof(h));
	memcpy(rec + 8, &pid, 4);
	memcpy(rec + 12, &pid, 4);
	memcpy(rec + 16, &rawlen, 4);
	memcpy(rec + 20, &type, 2);
	for (int i = 0; i < nargs; i++)
		memcpy(rec + 20 + 16 + 8 * i, &args[i], 8);
	return size;
}

static void test_parse_ring(void **state)
{
	static uint8_t ring[512];
	uint8_t rec[128];
	const struct trace_fields ev[COLD_NR_EVENTS] = {
	    [COLD_EV_MADVISE] = {.id = 640, .off = {16, 24, 32}, .size = {8, 8, 8}},
	    [COLD_EV_PROCESS_MADVISE] = {.id = 641, .off = {16, 40}, .size = {8, 8}},
	    [COLD_EV_PRCTL] = {.id = 642, .off = {16}, .size = {8}},
	};
	const uint64_t a1[] = {0x7f0000000000, 2 * MIB_BYTES, MADV_COLD};
	const uint64_t a2[] = {0x1000, 4096, 4};
	const uint64_t a3[] = {5, 0x7ffd0000, 1, MADV_PAGEOUT, 0};
	const uint64_t a4[] = {41, 0, 0, 0, 0};
	struct perf_event_header lost = {.type = PERF_RECORD_LOST, .size = 24};
	uint8_t lostrec[24] = {0};
	struct seen s = {0};
	bool was_lost = false;
	uint64_t tail = 480, pos = tail;
	size_t n;

	(void)state;
	n = sample(rec, 42, 640, a1, 3);
	assert_int_equal(n % 8, 0);
	pos = put(ring, sizeof(ring), pos, rec, n); /* wraps past 512 */
	n = sample(rec, 43, 999, a2, 3);            /* another event: skipped */
	pos = put(ring, sizeof(ring), pos, rec, n);
	memcpy(lostrec, &lost, sizeof(lost));
	pos = put(ring, sizeof(ring), pos, lostrec, sizeof(lostrec));
	n = sample(rec, 44, 641, a3, 5);
	pos = put(ring, sizeof(ring), pos, rec, n);
	n = sample(rec, 45, 642, a4, 5);
	pos = put(ring, sizeof(ring), pos, rec, n);
	assert_int_equal(parse_cold_ring_buf(ring, sizeof(ring), tail, pos, ev, on_call, &s, &was_lost), 0);
	assert_true(was_lost);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.c[0].pid, 42);
	assert_int_equal(s.c[0].event, COLD_EV_MADVISE);
	assert_int_equal(s.c[0].a[0], 0x7f0000000000);
	assert_int_equal(s.c[0].a[1], 2 * MIB_BYTES);
	assert_int_equal(s.c[0].a[2], MADV_COLD);
	assert_int_equal(s.c[1].pid, 44);
	assert_int_equal(s.c[1].event, COLD_EV_PROCESS_MADVISE);
	assert_int_equal(s.c[1].a[0], 5);
	assert_int_equal(s.c[1].a[1], MADV_PAGEOUT);
	assert_int_equal(s.c[2].pid, 45);
	assert_int_equal(s.c[2].event, COLD_EV_PRCTL);
	assert_int_equal(s.c[2].a[0], 41);
	/* Garbage: a size that is not a multiple of 8, a span past head. */
	struct perf_event_header bad = {.type = PERF_RECORD_SAMPLE, .size = 12};
	put(ring, sizeof(ring), 0, &bad, sizeof(bad));
	assert_int_equal(parse_cold_ring_buf(ring, sizeof(ring), 0, 16, ev, on_call, &s, &was_lost), -EINVAL);
	assert_int_equal(parse_cold_ring_buf(ring, sizeof(ring), 0, 512, ev, on_call, &s, &was_lost), -EINVAL);
	assert_int_equal(parse_cold_ring_buf(ring, 100, 0, 8, ev, on_call, &s, &was_lost), -EINVAL);
}

/* What a call records: its own range for madvise; for process_madvise the
 * target named by the caller's fdinfo, all of it; an unknown target is
 * lost; the daemon's own calls and other advice are not advice. */
static void test_apply(void **state)
{
	char dir[] = "/tmp/hc_cold_XXXXXX", path[256];
	struct cold_watch w = {.self = 100};
	FILE *fp;

	(void)state;
	assert_non_null(mkdtemp(dir));
	w.proc_root = dir;
	snprintf(path, sizeof(path), "%s/44", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/44/fdinfo", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/44/fdinfo/5", dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fprintf(fp, "pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1057\nPid:\t77\nNSpid:\t77\n");
	fclose(fp);

	assert_int_equal(
	    cold_watch_apply(&w, &(struct cold_call){.pid = 42, .a = {2 * MIB_BYTES, MIB_BYTES, MADV_COLD}}), 0);
	assert_int_equal(cold_ranges_overlap(&w.ranges, 42, 2 * MIB_BYTES, 2 * MIB_BYTES, 0), 256);
	assert_int_equal(
	    cold_watch_apply(&w, &(struct cold_call){.pid = 42, .a = {8 * MIB_BYTES, MIB_BYTES, 4 /* DONTNEED */}}), 0);
	assert_int_equal(cold_ranges_overlap(&w.ranges, 42, 8 * MIB_BYTES, 2 * MIB_BYTES, 0), 0);
	assert_int_equal(cold_watch_apply(&w, &(struct cold_call){.pid = 100, .a = {0, MIB_BYTES, MADV_PAGEOUT}}), 0);
	assert_false(cold_ranges_has(&w.ranges, 100));
	assert_int_equal(
	    cold_watch_apply(&w,
			     &(struct cold_call){.pid = 44, .event = COLD_EV_PROCESS_MADVISE, .a = {5, MADV_PAGEOUT}}),
	    0);
	assert_int_equal(cold_ranges_overlap(&w.ranges, 77, 0x7f0000000000, 2 * MIB_BYTES, 0), 512);
	assert_int_equal(
	    cold_watch_apply(&w, &(struct cold_call){.pid = 44, .event = COLD_EV_PROCESS_MADVISE, .a = {6, MADV_COLD}}),
	    1);
	assert_int_equal(w.unresolved, 1);
	assert_int_equal(w.calls, 3);
	/* An opt-in: news of its caller, neither cold nor counted as a cold
	 * call; process_madvise() cannot give it (the kernel refuses). */
	assert_int_equal(cold_watch_apply(&w, &(struct cold_call){.pid = 55, .a = {0, 4 * MIB_BYTES, MADV_HUGEPAGE}}),
			 0);
	assert_int_equal(
	    cold_watch_apply(&w,
			     &(struct cold_call){.pid = 44, .event = COLD_EV_PROCESS_MADVISE, .a = {5, MADV_HUGEPAGE}}),
	    0);
	assert_int_equal(
	    cold_watch_apply(&w, &(struct cold_call){.pid = 55, .a = {8 * MIB_BYTES, MIB_BYTES, MADV_HUGEPAGE}}), 0);
	/* A prctl(PR_SET_THP_DISABLE), either way, is news too; another
	 * prctl option is not. */
	assert_int_equal(cold_watch_apply(&w, &(struct cold_call){.pid = 66, .event = COLD_EV_PRCTL, .a = {41}}), 0);
	assert_int_equal(cold_watch_apply(&w, &(struct cold_call){.pid = 67, .event = COLD_EV_PRCTL, .a = {15}}), 0);
	assert_int_equal(cold_watch_apply(&w, &(struct cold_call){.pid = 100, .event = COLD_EV_PRCTL, .a = {41}}), 0);
	fault_pids_finish(&w.advised);
	assert_int_equal(w.advised.n, 2);
	assert_true(cold_watch_advised(&w, 55));
	assert_true(cold_watch_advised(&w, 66));
	assert_false(cold_watch_advised(&w, 67));
	assert_false(cold_watch_advised(&w, 100));
	assert_false(cold_watch_advised(&w, 44));
	assert_false(cold_watch_advised(&w, 77));
	assert_false(cold_ranges_has(&w.ranges, 55));
	assert_int_equal(w.calls, 3);
	fault_pids_free(&w.advised);
	cold_ranges_free(&w.ranges);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	assert_int_equal(system(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_add_aligns_and_merges),
	    cmocka_unit_test(test_overlap_counts_pages_and_generations),
	    cmocka_unit_test(test_per_process_bound_merges),
	    cmocka_unit_test(test_global_bound_makes_whole),
	    cmocka_unit_test(test_whole_forget_bind),
	    cmocka_unit_test(test_whole_all),
	    cmocka_unit_test(test_settle),
	    cmocka_unit_test(test_block_warm),
	    cmocka_unit_test(test_parse_format),
	    cmocka_unit_test(test_parse_ring),
	    cmocka_unit_test(test_apply),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
