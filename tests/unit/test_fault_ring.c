/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fault_ring: the fault doorbell's ring records parsed from synthetic ring
 * bytes: samples name PIDs, a record that wraps around the end of the ring
 * is read whole, PERF_RECORD_LOST and THROTTLE mean "everyone may have
 * faulted", other records are skipped, and hostile bytes (bad sizes, a
 * span past the ring, pid 0) are refused without reading out of bounds. */
#include <errno.h>
#include <linux/perf_event.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "fault_doorbell.h"
#include "fault_ring.h"
#include "units.h"

#define RING 256

struct ring {
	uint8_t data[RING];
	uint64_t head; /* where the next record goes */
};

/* Writes len bytes at the ring position head, wrapping as the kernel does. */
static void put_bytes(struct ring *r, const void *src, size_t len)
{
	for (size_t i = 0; i < len; i++)
		r->data[(r->head + i) % RING] = ((const uint8_t *)src)[i];
	r->head += len;
}

static void put_sample(struct ring *r, uint32_t pid, uint32_t tid)
{
	struct {
		struct perf_event_header h;
		uint32_t pid, tid;
	} s = {.h = {.type = PERF_RECORD_SAMPLE, .size = 16}, .pid = pid, .tid = tid};

	put_bytes(r, &s, sizeof(s));
}

static void put_record(struct ring *r, uint32_t type, uint16_t size)
{
	struct perf_event_header h = {.type = type, .size = size};
	uint8_t zero[64] = {0};

	put_bytes(r, &h, sizeof(h));
	if (size > sizeof(h)) /* hostile sizes below a header write just the header */
		put_bytes(r, zero, size - sizeof(h));
}

static void test_samples_name_pids(void **state)
{
	struct ring r = {0};
	struct fault_pids p = {0};

	(void)state;
	put_sample(&r, 300, 301);
	put_sample(&r, 100, 100);
	put_sample(&r, 300, 302); /* another thread of 300 */
	put_record(&r, PERF_RECORD_UNTHROTTLE, 24);
	assert_int_equal(parse_fault_ring_buf(r.data, RING, 0, r.head, &p), 0);
	fault_pids_finish(&p);
	assert_int_equal(p.n, 2);
	assert_int_equal(p.pid[0], 100);
	assert_int_equal(p.pid[1], 300);
	assert_int_equal(p.samples, 3);
	assert_true(fault_pids_has(&p, 300));
	assert_false(fault_pids_has(&p, 200));
	fault_pids_free(&p);
}

/* A record split by the end of the ring, positions far past its size. */
static void test_wraps(void **state)
{
	struct ring r = {.head = 1000 * RING + RING - 8};
	struct fault_pids p = {0};
	uint64_t tail = r.head;

	(void)state;
	put_sample(&r, 4242, 4243);
	put_sample(&r, 7, 7);
	assert_int_equal(parse_fault_ring_buf(r.data, RING, tail, r.head, &p), 0);
	assert_int_equal(p.n, 2);
	assert_int_equal(p.pid[0], 4242);
	assert_int_equal(p.pid[1], 7);
	fault_pids_free(&p);
}

static void test_lost_and_throttle(void **state)
{
	struct ring r = {0};
	struct fault_pids p = {0};

	(void)state;
	put_sample(&r, 5, 5);
	put_record(&r, PERF_RECORD_LOST, 24);
	assert_int_equal(parse_fault_ring_buf(r.data, RING, 0, r.head, &p), 0);
	assert_true(p.lost);
	assert_int_equal(p.n, 1);
	fault_pids_reset(&p);
	r.head = 0;
	put_record(&r, PERF_RECORD_THROTTLE, 24);
	assert_int_equal(parse_fault_ring_buf(r.data, RING, 0, r.head, &p), 0);
	assert_true(p.lost);
	fault_pids_free(&p);
}

static void test_empty(void **state)
{
	struct ring r = {0};
	struct fault_pids p = {0};

	(void)state;
	assert_int_equal(parse_fault_ring_buf(r.data, RING, 77, 77, &p), 0);
	assert_int_equal(p.n, 0);
	fault_pids_free(&p);
}

/* Each of these is garbage: -EINVAL, and nothing read past the data. */
static void test_hostile(void **state)
{
	struct ring r = {0};
	struct fault_pids p = {0};

	(void)state;
	put_record(&r, PERF_RECORD_SAMPLE, 0); /* size 0 would loop for ever */
	assert_int_equal(parse_fault_ring_buf(r.data, RING, 0, 8, &p), -EINVAL);
	r.head = 0;
	put_record(&r, PERF_RECORD_SAMPLE, 12); /* not a multiple of 8 */
	assert_int_equal(parse_fault_ring_buf(r.data, RING, 0, 16, &p), -EINVAL);
	r.head = 0;
	put_record(&r, PERF_RECORD_SAMPLE, 24); /* a sample of the wrong size */
	assert_int_equal(parse_fault_ring_buf(r.data, RING, 0, r.head, &p), -EINVAL);
	r.head = 0;
	put_sample(&r, 9, 9);
	assert_int_equal(parse_fault_ring_buf(r.data, RING, 0, 8, &p), -EINVAL);         /* record past head */
	assert_int_equal(parse_fault_ring_buf(r.data, RING, 0, 4, &p), -EINVAL);         /* half a header */
	assert_int_equal(parse_fault_ring_buf(r.data, RING, 0, RING + 16, &p), -EINVAL); /* more than the ring */
	assert_int_equal(parse_fault_ring_buf(r.data, RING, 16, 0, &p), -EINVAL);        /* head before tail */
	assert_int_equal(parse_fault_ring_buf(r.data, 200, 0, 16, &p), -EINVAL);         /* not a power of 2 */
	r.head = 0;
	put_sample(&r, 0, 0); /* the idle task never owns a user fault */
	assert_int_equal(parse_fault_ring_buf(r.data, RING, 0, r.head, &p), -EINVAL);
	r.head = 0;
	put_sample(&r, 0x80000000u, 1);
	assert_int_equal(parse_fault_ring_buf(r.data, RING, 0, r.head, &p), -EINVAL);
	assert_int_equal(p.n, 0);
	fault_pids_free(&p);
}

/* Too many distinct PIDs at once: lost, not an ever-growing set. */
static void test_too_many(void **state)
{
	struct fault_pids p = {0};
	uint8_t data[64 * 1024];

	(void)state;
	for (uint32_t round = 0; round < FAULT_PIDS_MAX / (sizeof(data) / 16) + 2 && !p.lost; round++) {
		for (size_t i = 0; i < sizeof(data) / 16; i++) {
			struct perf_event_header h = {.type = PERF_RECORD_SAMPLE, .size = 16};
			uint32_t pid = (uint32_t)(round * (sizeof(data) / 16) + i + 1);

			memcpy(data + i * 16, &h, sizeof(h));
			memcpy(data + i * 16 + 8, &pid, 4);
			memcpy(data + i * 16 + 12, &pid, 4);
		}
		assert_int_equal(parse_fault_ring_buf(data, sizeof(data), 0, sizeof(data), &p), 0);
	}
	assert_true(p.lost);
	assert_true(p.n <= FAULT_PIDS_MAX);
	fault_pids_free(&p);
}

/* The real doorbell, end to end: 16 MiB faulted in 4 KiB pages by this
 * process (4096 faults: 64 samples) name this process. Without the
 * privilege for system-wide perf events, the contract is "no doorbell":
 * the drain says everyone may have faulted. */
static void test_real_doorbell_names_us(void **state)
{
	struct fault_doorbell d;
	struct fault_pids p = {0};
	size_t len = 16 * MIB_BYTES;
	char *buf;
	int r;

	(void)state;
	r = fault_doorbell_open(&d, DOORBELL_WAKEUP, false);
	if (r < 0) {
		assert_true(fault_doorbell_rang(&d));
		assert_int_equal(fault_doorbell_drain(&d, &p), -ENODEV);
		assert_true(p.lost);
		fault_pids_free(&p);
		return;
	}
	assert_int_equal(fault_doorbell_drain(&d, &p), 0); /* what came before */
	fault_pids_reset(&p);
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(buf != MAP_FAILED);
	assert_int_equal(madvise(buf, len, MADV_NOHUGEPAGE), 0); /* one fault per 4 KiB page */
	for (size_t off = 0; off < len; off += 4096)
		buf[off] = 1;
	assert_true(fault_doorbell_rang(&d));
	assert_int_equal(fault_doorbell_drain(&d, &p), 0);
	assert_true(fault_pids_has(&p, getpid()));
	assert_true(p.samples >= 1);
	munmap(buf, len);
	fault_pids_free(&p);
	fault_doorbell_close(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_samples_name_pids),
	    cmocka_unit_test(test_wraps),
	    cmocka_unit_test(test_lost_and_throttle),
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_too_many),
	    cmocka_unit_test(test_real_doorbell_names_us),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
