/* SPDX-License-Identifier: GPL-2.0-or-later */
/* task_ring: fork and exit records parsed from synthetic ring bytes:
 * leaders only, a record that wraps around the end read whole, LOST means
 * "list /proc", hostile bytes refused; and the reduce: each PID's last
 * record by time decides, whatever the order of the rings. */
#include <errno.h>
#include <linux/perf_event.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "task_ring.h"

#define RING 256

struct ring {
	uint8_t data[RING];
	uint64_t head;
};

static void put_bytes(struct ring *r, const void *src, size_t len)
{
	for (size_t i = 0; i < len; i++)
		r->data[(r->head + i) % RING] = ((const uint8_t *)src)[i];
	r->head += len;
}

static void put_task(struct ring *r, uint32_t type, uint32_t pid, uint32_t tid, uint64_t time)
{
	struct {
		struct perf_event_header h;
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
	} rec = {.h = {.type = type, .size = 32}, .pid = pid, .ppid = 1, .tid = tid, .ptid = 1, .time = time};

	put_bytes(r, &rec, sizeof(rec));
}

static void test_leaders_only(void **state)
{
	struct ring r = {.head = RING - 8}; /* the first record wraps */
	struct task_events t = {0};
	uint64_t tail = r.head;

	(void)state;
	put_task(&r, PERF_RECORD_FORK, 100, 100, 5);
	put_task(&r, PERF_RECORD_FORK, 100, 101, 6); /* a thread: skipped */
	put_task(&r, PERF_RECORD_EXIT, 42, 42, 7);
	put_task(&r, PERF_RECORD_COMM, 7, 7, 8); /* another record: skipped */
	assert_int_equal(parse_task_ring_buf(r.data, RING, tail, r.head, &t), 0);
	assert_false(t.lost);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.ev[0].pid, 100);
	assert_false(t.ev[0].exit);
	assert_int_equal(t.ev[0].time, 5);
	assert_int_equal(t.ev[1].pid, 42);
	assert_true(t.ev[1].exit);
	task_events_free(&t);
}

static void test_lost(void **state)
{
	struct ring r = {0};
	struct task_events t = {0};
	struct perf_event_header lost = {.type = PERF_RECORD_LOST, .size = 24};
	uint8_t rest[16] = {0};

	(void)state;
	put_bytes(&r, &lost, sizeof(lost));
	put_bytes(&r, rest, sizeof(rest));
	assert_int_equal(parse_task_ring_buf(r.data, RING, 0, r.head, &t), 0);
	assert_true(t.lost);
	task_events_free(&t);
}

/* Sizes below a header, not a multiple of 8, past head; a fork record too
 * short to hold its fields; a span past the ring; a ring size that is not
 * a power of two; head before tail. */
static void test_hostile(void **state)
{
	struct ring r = {0};
	struct task_events t = {0};
	struct perf_event_header h = {.type = PERF_RECORD_FORK, .size = 16};
	uint8_t rest[8] = {0};

	(void)state;
	put_bytes(&r, &h, sizeof(h));
	put_bytes(&r, rest, sizeof(rest));
	assert_int_equal(parse_task_ring_buf(r.data, RING, 0, r.head, &t), -EINVAL);
	h.size = 12;
	memcpy(r.data, &h, sizeof(h));
	assert_int_equal(parse_task_ring_buf(r.data, RING, 0, 16, &t), -EINVAL);
	h.size = 4;
	memcpy(r.data, &h, sizeof(h));
	assert_int_equal(parse_task_ring_buf(r.data, RING, 0, 16, &t), -EINVAL);
	h.size = 64;
	memcpy(r.data, &h, sizeof(h));
	assert_int_equal(parse_task_ring_buf(r.data, RING, 0, 32, &t), -EINVAL);
	assert_int_equal(parse_task_ring_buf(r.data, RING, 0, RING + 8, &t), -EINVAL);
	assert_int_equal(parse_task_ring_buf(r.data, 200, 0, 32, &t), -EINVAL);
	assert_int_equal(parse_task_ring_buf(r.data, RING, 40, 32, &t), -EINVAL);
	assert_int_equal(t.n, 0);
	/* A leader's PID past INT32_MAX, or 0: garbage, not a process. */
	r.head = 0;
	put_task(&r, PERF_RECORD_FORK, 0x80000001u, 0x80000001u, 1);
	put_task(&r, PERF_RECORD_FORK, 0, 0, 2);
	assert_int_equal(parse_task_ring_buf(r.data, RING, 0, r.head, &t), 0);
	assert_int_equal(t.n, 0);
	task_events_free(&t);
}

/* Each PID's last record by time: a short command (fork, exit) is gone, a
 * reused PID (exit, fork) is born; order across rings does not matter. */
static void test_reduce(void **state)
{
	struct task_events t = {0};
	pid_t *born = NULL, *gone = NULL;
	size_t nborn, ngone, capborn = 0, capgone = 0;

	(void)state;
	assert_int_equal(task_events_add(&t, 300, 20, true), 0); /* ring of CPU 1 */
	assert_int_equal(task_events_add(&t, 200, 11, false), 0);
	assert_int_equal(task_events_add(&t, 300, 10, false), 0); /* ring of CPU 0 */
	assert_int_equal(task_events_add(&t, 200, 10, true), 0);
	assert_int_equal(task_events_add(&t, 400, 12, false), 0);
	assert_int_equal(task_events_add(&t, 50, 9, true), 0);
	assert_int_equal(task_events_reduce(&t, &born, &nborn, &capborn, &gone, &ngone, &capgone), 0);
	assert_int_equal(nborn, 2);
	assert_int_equal(born[0], 200); /* exited, then its PID was reused */
	assert_int_equal(born[1], 400);
	assert_int_equal(ngone, 2);
	assert_int_equal(gone[0], 50);
	assert_int_equal(gone[1], 300); /* born and gone between two drains */
	task_events_reset(&t);
	assert_int_equal(task_events_reduce(&t, &born, &nborn, &capborn, &gone, &ngone, &capgone), 0);
	assert_int_equal(nborn + ngone, 0);
	free(born);
	free(gone);
	task_events_free(&t);
}

/* Past TASK_EVENTS_MAX records in one drain: lost, not an endless array. */
static void test_bound(void **state)
{
	struct task_events t = {0};

	(void)state;
	for (uint64_t i = 0; i <= TASK_EVENTS_MAX; i++)
		assert_int_equal(task_events_add(&t, (pid_t)(i + 1), i, false), 0);
	assert_int_equal(t.n, TASK_EVENTS_MAX);
	assert_true(t.lost);
	task_events_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_leaders_only), cmocka_unit_test(test_lost),  cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_reduce),       cmocka_unit_test(test_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
