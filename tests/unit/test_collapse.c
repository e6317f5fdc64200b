/* SPDX-License-Identifier: GPL-2.0-or-later */
/* collapse_blocks() against a scripted fake process_madvise that follows the
 * kernel's contract, plus one collapse on the real kernel. */
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

#include "collapse.h"
#include "units.h"

#define BASE       ((uint64_t)0x7f0000000000)
#define MAX_BLOCKS 4096

/* Per-block script: err 0 = collapses; otherwise fails with err, forever if
 * fail_times is 0, else only that many times. */
struct block_script {
	int err;
	int fail_times;
};

static struct fake {
	struct block_script blocks[MAX_BLOCKS];
	int attempts[MAX_BLOCKS]; /* how often the fake reached each block */
	size_t calls, max_vlen;
	uint64_t max_bytes;
	int eintr_calls;     /* the first eintr_calls calls fail with EINTR; -1 = all */
	int whole_errno;     /* every call fails at once with this (process gone…) */
	ssize_t bogus;       /* if nonzero, calls return this… */
	int bogus_zero;      /* …or 0, */
	size_t honest_calls; /* …after this many honest calls */
} fk;

static void fake_reset(void)
{
	memset(&fk, 0, sizeof(fk));
}

static size_t block_index(const void *base)
{
	return (size_t)(((uint64_t)(uintptr_t)base - BASE) / HPAGE_SIZE);
}

/* Like vector_madvise(): in order, stop at the first failure, return bytes
 * done if any, else -1 with that failure's errno. */
static ssize_t fake_madvise(int pidfd, const struct iovec *iov, size_t vlen, int advice, unsigned int flags)
{
	uint64_t total = 0, done = 0;

	assert_int_equal(pidfd, 42);
	assert_int_equal(advice, MADV_COLLAPSE);
	assert_int_equal(flags, 0);
	fk.calls++;
	if (vlen > fk.max_vlen)
		fk.max_vlen = vlen;
	for (size_t k = 0; k < vlen; k++)
		total += iov[k].iov_len;
	if (total > fk.max_bytes)
		fk.max_bytes = total;

	if (fk.eintr_calls < 0 || (size_t)fk.eintr_calls >= fk.calls) {
		errno = EINTR;
		return -1;
	}
	if (fk.whole_errno) {
		errno = fk.whole_errno;
		return -1;
	}
	if (fk.bogus_zero && fk.calls > fk.honest_calls)
		return 0;
	if (fk.bogus && fk.calls > fk.honest_calls)
		return fk.bogus;

	for (size_t k = 0; k < vlen; k++) {
		size_t b = block_index(iov[k].iov_base);
		struct block_script *s = &fk.blocks[b];

		assert_int_equal(iov[k].iov_len, HPAGE_SIZE);
		assert_true(b < MAX_BLOCKS);
		fk.attempts[b]++;
		if (s->err && (s->fail_times == 0 || fk.attempts[b] <= s->fail_times)) {
			if (done)
				return (ssize_t)done;
			errno = s->err;
			return -1;
		}
		done += iov[k].iov_len;
	}
	return (ssize_t)done;
}

static uint64_t addrs[MAX_BLOCKS];
static uint8_t out[MAX_BLOCKS];

static int setup(void **state)
{
	(void)state;
	fake_reset();
	for (size_t i = 0; i < MAX_BLOCKS; i++)
		addrs[i] = BASE + i * HPAGE_SIZE;
	memset(out, 0xff, sizeof(out));
	return 0;
}

static size_t run(size_t n)
{
	return collapse_blocks(42, addrs, n, fake_madvise, out);
}

static void assert_outcomes(size_t from, size_t to, enum collapse_outcome o)
{
	for (size_t i = from; i < to; i++) {
		if (out[i] != o)
			fail_msg("block %zu: %s, expected %s", i, collapse_outcome_name(out[i]),
				 collapse_outcome_name(o));
	}
}

static void test_all_succeed(void **state)
{
	(void)state;
	assert_int_equal(run(10), 10);
	assert_outcomes(0, 10, COLLAPSE_OK);
	assert_int_equal(fk.calls, 1);
	assert_int_equal(fk.max_vlen, 10);
}

static void test_empty(void **state)
{
	(void)state;
	assert_int_equal(run(0), 0);
	assert_int_equal(fk.calls, 0);
}

static void test_split_into_batches(void **state)
{
	(void)state;
	assert_int_equal(run(2500), 2500); /* 1023 + 1023 + 454 */
	assert_outcomes(0, 2500, COLLAPSE_OK);
	assert_int_equal(fk.calls, 3);
	assert_int_equal(fk.max_vlen, COLLAPSE_MAX_IOV);
	assert_true(fk.max_bytes < ((uint64_t)2 << 30));
	for (size_t i = 0; i < 2500; i++)
		assert_int_equal(fk.attempts[i], 1);
}

static void test_exactly_one_batch(void **state)
{
	(void)state;
	assert_int_equal(run(COLLAPSE_MAX_IOV), COLLAPSE_MAX_IOV);
	assert_int_equal(fk.calls, 1);
	setup(NULL);
	assert_int_equal(run(COLLAPSE_MAX_IOV + 1), COLLAPSE_MAX_IOV + 1);
	assert_int_equal(fk.calls, 2);
}

static void test_failure_in_middle(void **state)
{
	(void)state;
	fk.blocks[4].err = EINVAL;
	assert_int_equal(run(10), 9);
	assert_outcomes(0, 4, COLLAPSE_OK);
	assert_int_equal(out[4], COLLAPSE_EINVAL);
	assert_outcomes(5, 10, COLLAPSE_OK);
	/* short count, resubmit from 4 (learns EINVAL), then 5..9 */
	assert_int_equal(fk.calls, 3);
	assert_int_equal(fk.attempts[4], 2);
	assert_int_equal(fk.attempts[5], 1);
}

static void test_failure_in_second_batch(void **state)
{
	(void)state;
	fk.blocks[1500].err = EBUSY;
	assert_int_equal(run(2000), 1999);
	assert_int_equal(out[1500], COLLAPSE_EBUSY);
	assert_outcomes(0, 1500, COLLAPSE_OK);
	assert_outcomes(1501, 2000, COLLAPSE_OK);
	assert_int_equal(fk.max_vlen, COLLAPSE_MAX_IOV);
	assert_true(fk.max_bytes < ((uint64_t)2 << 30));
}

static void test_eagain_per_block(void **state)
{
	(void)state;
	fk.blocks[1].err = EAGAIN;
	fk.blocks[3].err = EAGAIN;
	fk.blocks[7].err = EAGAIN; /* the last one */
	assert_int_equal(run(8), 5);
	for (size_t i = 0; i < 8; i++)
		assert_int_equal(out[i], (i == 1 || i == 3 || i == 7) ? COLLAPSE_EAGAIN : COLLAPSE_OK);
}

static void test_enomem_stops(void **state)
{
	(void)state;
	fk.blocks[3].err = ENOMEM;
	assert_int_equal(run(8), 3);
	assert_outcomes(0, 3, COLLAPSE_OK);
	assert_int_equal(out[3], COLLAPSE_ENOMEM);
	assert_outcomes(4, 8, COLLAPSE_NOT_TRIED);
	assert_int_equal(fk.attempts[4], 0);
	assert_int_equal(fk.calls, 2);
}

/* The injected thp_collapse_alloc_failed count: moves by fail_move on each
 * call of the fake that fails with ENOMEM (a real allocation failure). */
static struct counter {
	uint64_t value;
	uint64_t move_per_enomem;
	int reads, broken;
} ctr;

static int fake_alloc_failed(void *ctx, uint64_t *count)
{
	assert_ptr_equal(ctx, &ctr);
	ctr.reads++;
	if (ctr.broken)
		return -EIO;
	*count = ctr.value;
	return 0;
}

static ssize_t fake_madvise_counting(int pidfd, const struct iovec *iov, size_t vlen, int advice, unsigned int flags)
{
	ssize_t r = fake_madvise(pidfd, iov, vlen, advice, flags);

	if (r < 0 && errno == ENOMEM)
		ctr.value += ctr.move_per_enomem;
	return r;
}

static size_t run_io(size_t n)
{
	const struct collapse_io io = {
	    .madvise = fake_madvise_counting, .alloc_failed = fake_alloc_failed, .ctx = &ctr};

	return collapse_blocks_io(42, addrs, n, &io, out);
}

/* ENOMEM while the count stays put: an unmapped block, that block only. */
static void test_enomem_unmapped_is_per_block(void **state)
{
	(void)state;
	memset(&ctr, 0, sizeof(ctr));
	ctr.value = 7;
	fk.blocks[3].err = ENOMEM;
	fk.blocks[5].err = ENOMEM;
	assert_int_equal(run_io(8), 6);
	assert_outcomes(0, 3, COLLAPSE_OK);
	assert_int_equal(out[3], COLLAPSE_UNMAPPED);
	assert_int_equal(out[4], COLLAPSE_OK);
	assert_int_equal(out[5], COLLAPSE_UNMAPPED);
	assert_outcomes(6, 8, COLLAPSE_OK);
	assert_int_equal(ctr.reads, 1 + 2); /* once per batch, then after each ENOMEM */
}

/* ENOMEM while the count moved: no huge page, stop everything. */
static void test_enomem_alloc_failure_stops(void **state)
{
	(void)state;
	memset(&ctr, 0, sizeof(ctr));
	ctr.move_per_enomem = 1;
	fk.blocks[3].err = ENOMEM;
	assert_int_equal(run_io(8), 3);
	assert_outcomes(0, 3, COLLAPSE_OK);
	assert_int_equal(out[3], COLLAPSE_ENOMEM);
	assert_outcomes(4, 8, COLLAPSE_NOT_TRIED);
}

/* A count that cannot be read: ENOMEM is taken as a real shortage. */
static void test_enomem_unreadable_count_stops(void **state)
{
	(void)state;
	memset(&ctr, 0, sizeof(ctr));
	ctr.broken = 1;
	fk.blocks[0].err = ENOMEM;
	assert_int_equal(run_io(4), 0);
	assert_int_equal(out[0], COLLAPSE_ENOMEM);
	assert_outcomes(1, 4, COLLAPSE_NOT_TRIED);
}

/* A count moved by someone else (khugepaged) during a call that succeeded
 * changes nothing: only an ENOMEM is looked at. */
static void test_count_moves_without_enomem(void **state)
{
	(void)state;
	memset(&ctr, 0, sizeof(ctr));
	ctr.move_per_enomem = 5;
	assert_int_equal(run_io(4), 4);
	assert_outcomes(0, 4, COLLAPSE_OK);
	assert_int_equal(fk.calls, 1);
}

static void test_esrch_stops(void **state)
{
	(void)state;
	fk.whole_errno = ESRCH;
	assert_int_equal(run(2000), 0);
	assert_int_equal(out[0], COLLAPSE_ESRCH);
	assert_outcomes(1, 2000, COLLAPSE_NOT_TRIED);
	assert_int_equal(fk.calls, 1);
}

static void test_esrch_midway_stops(void **state)
{
	(void)state;
	fk.blocks[2].err = ESRCH;
	assert_int_equal(run(6), 2);
	assert_int_equal(out[2], COLLAPSE_ESRCH);
	assert_outcomes(3, 6, COLLAPSE_NOT_TRIED);
}

static void test_eperm_stops(void **state)
{
	(void)state;
	fk.whole_errno = EPERM;
	assert_int_equal(run(5), 0);
	assert_int_equal(out[0], COLLAPSE_EPERM);
	assert_outcomes(1, 5, COLLAPSE_NOT_TRIED);

	setup(NULL);
	fk.whole_errno = EACCES;
	assert_int_equal(run(5), 0);
	assert_int_equal(out[0], COLLAPSE_EPERM);
	assert_outcomes(1, 5, COLLAPSE_NOT_TRIED);
	assert_int_equal(fk.calls, 1);
}

static void test_first_block_fails(void **state)
{
	(void)state;
	fk.blocks[0].err = EINVAL;
	assert_int_equal(run(5), 4);
	assert_int_equal(out[0], COLLAPSE_EINVAL);
	assert_outcomes(1, 5, COLLAPSE_OK);
	assert_int_equal(fk.calls, 2);
	assert_int_equal(fk.attempts[0], 1);
}

static void test_other_errno(void **state)
{
	(void)state;
	fk.blocks[1].err = EFAULT;
	assert_int_equal(run(3), 2);
	assert_int_equal(out[1], COLLAPSE_OTHER);
}

static void test_transient_succeeds_on_resubmission(void **state)
{
	(void)state;
	fk.blocks[2].err = EAGAIN;
	fk.blocks[2].fail_times = 1;
	assert_int_equal(run(5), 5);
	assert_outcomes(0, 5, COLLAPSE_OK);
	assert_int_equal(fk.attempts[2], 2);
	assert_int_equal(fk.calls, 2);
}

static void test_eintr_retried(void **state)
{
	(void)state;
	fk.eintr_calls = 2;
	assert_int_equal(run(4), 4);
	assert_outcomes(0, 4, COLLAPSE_OK);
	assert_int_equal(fk.calls, 3);
}

static void test_eintr_forever_terminates(void **state)
{
	(void)state;
	fk.eintr_calls = -1;
	assert_int_equal(run(3), 0);
	assert_outcomes(0, 3, COLLAPSE_OTHER);
	assert_true(fk.calls >= 3 && fk.calls <= 3 * 20);
}

static void test_bogus_returns(void **state)
{
	(void)state;
	static const ssize_t bogus[] = {
	    (ssize_t)(3 * MIB_BYTES),               /* not a whole iovec */
	    (ssize_t)(4 * HPAGE_SIZE),              /* more than submitted */
	    (ssize_t)(3 * HPAGE_SIZE + PAGE_BYTES), /* both */
	};
	for (size_t b = 0; b < sizeof(bogus) / sizeof(bogus[0]); b++) {
		setup(NULL);
		fk.bogus = bogus[b];
		assert_int_equal(run(3), 0);
		assert_outcomes(0, 3, COLLAPSE_OTHER);
		assert_int_equal(fk.calls, 1);
	}

	/* 0 would otherwise mean "block i failed, resubmit it" forever. */
	setup(NULL);
	fk.bogus_zero = 1;
	assert_int_equal(run(3), 0);
	assert_outcomes(0, 3, COLLAPSE_OTHER);
	assert_int_equal(fk.calls, 1);

	/* A bogus answer in the second batch keeps what the first achieved. */
	setup(NULL);
	fk.bogus = (ssize_t)(3 * MIB_BYTES);
	fk.honest_calls = 1;
	assert_int_equal(run(COLLAPSE_MAX_IOV + 2), COLLAPSE_MAX_IOV);
	assert_outcomes(0, COLLAPSE_MAX_IOV, COLLAPSE_OK);
	assert_outcomes(COLLAPSE_MAX_IOV, COLLAPSE_MAX_IOV + 2, COLLAPSE_OTHER);
	assert_int_equal(fk.calls, 2);
}

/* --- Pacing: blocks per call, pauses, timing, deadline (fake clock). --- */

static struct {
	double t;          /* the fake clock, seconds */
	double call_s;     /* each call advances it by this much */
	unsigned pauses;   /* sleep_ms calls */
	unsigned slept_ms; /* their total */
	size_t observed_calls, observed_blocks;
	double observed_s;
} pc;

static double pace_now(void)
{
	return pc.t;
}

static void pace_sleep(unsigned ms)
{
	pc.pauses++;
	pc.slept_ms += ms;
	pc.t += ms / 1000.0;
}

static void pace_on_call(void *ctx, double seconds, size_t nblocks)
{
	assert_ptr_equal(ctx, &pc);
	pc.observed_calls++;
	pc.observed_blocks += nblocks;
	pc.observed_s += seconds;
}

/* The fake process_madvise, plus the time a call takes. */
static ssize_t timed_madvise(int pidfd, const struct iovec *iov, size_t vlen, int advice, unsigned int flags)
{
	pc.t += pc.call_s;
	return fake_madvise(pidfd, iov, vlen, advice, flags);
}

static struct collapse_pacing pacing(unsigned per_call, unsigned pause_ms, double deadline)
{
	memset(&pc, 0, sizeof(pc));
	pc.t = 100;
	pc.call_s = 0.004;
	return (struct collapse_pacing){.per_call = per_call,
					.pause_ms = pause_ms,
					.deadline = deadline,
					.now = pace_now,
					.sleep_ms = pace_sleep,
					.on_call = pace_on_call,
					.ctx = &pc};
}

static void test_paced_blocks_per_call(void **state)
{
	struct collapse_pacing p = pacing(16, 0, 0);

	(void)state;
	assert_int_equal(collapse_blocks_paced(42, addrs, 128, timed_madvise, out, &p), 128);
	assert_outcomes(0, 128, COLLAPSE_OK);
	assert_int_equal(fk.calls, 8);
	assert_int_equal(fk.max_vlen, 16);
	assert_int_equal(pc.pauses, 0);
	assert_int_equal(pc.observed_calls, 8);
	assert_int_equal(pc.observed_blocks, 128);
	assert_true(pc.observed_s > 0.0319 && pc.observed_s < 0.0321); /* 8 × 4 ms */
}

static void test_paced_pause_between_calls(void **state)
{
	struct collapse_pacing p = pacing(1, 5, 0);

	(void)state;
	assert_int_equal(collapse_blocks_paced(42, addrs, 10, timed_madvise, out, &p), 10);
	assert_int_equal(fk.calls, 10);
	assert_int_equal(pc.pauses, 9); /* between calls, not before the first or after the last */
	assert_int_equal(pc.slept_ms, 45);
	/* Pauses are not part of a call's time. */
	assert_true(pc.observed_s > 0.0399 && pc.observed_s < 0.0401);
}

/* A resubmission after a failed block is a call of its own: paced too. */
static void test_paced_failure_resubmits(void **state)
{
	struct collapse_pacing p = pacing(4, 1, 0);

	(void)state;
	fk.blocks[1].err = EAGAIN;
	assert_int_equal(collapse_blocks_paced(42, addrs, 8, timed_madvise, out, &p), 7);
	assert_int_equal(out[1], COLLAPSE_EAGAIN);
	assert_int_equal(fk.max_vlen, 4);
	assert_int_equal(pc.pauses, fk.calls - 1);
	assert_int_equal(pc.observed_calls, fk.calls);
}

static void test_paced_deadline(void **state)
{
	/* Calls of 4 ms and pauses of 10 ms: by 100.02 s two calls have run. */
	struct collapse_pacing p = pacing(2, 10, 100.02);

	(void)state;
	assert_int_equal(collapse_blocks_paced(42, addrs, 10, timed_madvise, out, &p), 4);
	assert_outcomes(0, 4, COLLAPSE_OK);
	assert_outcomes(4, 10, COLLAPSE_NOT_TRIED);
	assert_int_equal(fk.calls, 2);
}

/* Pacing and the ENOMEM tell in one collapse_blocks_io(): an unmapped block
 * in the second call costs that block only; a real shortage stops the rest (not tried), and every call is paced and
 * timed. */
static void test_paced_io_enomem(void **state)
{
	struct collapse_pacing p = pacing(4, 2, 0);
	const struct collapse_io io = {
	    .madvise = fake_madvise_counting, .alloc_failed = fake_alloc_failed, .ctx = &ctr, .pace = &p};

	(void)state;
	memset(&ctr, 0, sizeof(ctr));
	ctr.value = 3;
	fk.blocks[5].err = ENOMEM; /* unmapped: the count stays */
	assert_int_equal(collapse_blocks_io(42, addrs, 12, &io, out), 11);
	assert_outcomes(0, 5, COLLAPSE_OK);
	assert_int_equal(out[5], COLLAPSE_UNMAPPED);
	assert_outcomes(6, 12, COLLAPSE_OK);
	assert_int_equal(fk.max_vlen, 4);
	assert_int_equal(pc.pauses, fk.calls - 1);
	assert_int_equal(pc.observed_calls, fk.calls);

	fake_reset();
	p = pacing(4, 2, 0);
	memset(&ctr, 0, sizeof(ctr));
	ctr.move_per_enomem = 1;
	fk.blocks[9].err = ENOMEM; /* a real failure: the count moves */
	assert_int_equal(collapse_blocks_io(42, addrs, 12, &io, out), 9);
	assert_int_equal(out[9], COLLAPSE_ENOMEM);
	assert_outcomes(10, 12, COLLAPSE_NOT_TRIED);
	assert_int_equal(fk.max_vlen, 4);
	assert_int_equal(pc.pauses, fk.calls - 1);
}

static bool stop_now(void)
{
	return pc.t >= 100.01; /* after the first call and one 10 ms pause */
}

/* SIGTERM between two calls: the rest is not tried. */
static void test_paced_interrupted(void **state)
{
	struct collapse_pacing p = pacing(2, 10, 0);

	(void)state;
	p.interrupted = stop_now;
	assert_int_equal(collapse_blocks_paced(42, addrs, 10, timed_madvise, out, &p), 2);
	assert_outcomes(2, 10, COLLAPSE_NOT_TRIED);
	assert_int_equal(fk.calls, 1);
}

/* NULL pacing and per_call 0 are today's behaviour: as few calls as can be. */
static void test_paced_defaults(void **state)
{
	struct collapse_pacing p = pacing(0, 0, 0);

	(void)state;
	assert_int_equal(collapse_blocks_paced(42, addrs, 1500, timed_madvise, out, &p), 1500);
	assert_int_equal(fk.calls, 2);
	assert_int_equal(fk.max_vlen, COLLAPSE_MAX_IOV);
	fake_reset();
	assert_int_equal(collapse_blocks_paced(42, addrs, 100, fake_madvise, out, NULL), 100);
	assert_int_equal(fk.calls, 1);
}

static void test_outcome_names(void **state)
{
	(void)state;
	assert_string_equal(collapse_outcome_name(COLLAPSE_OK), "collapsed");
	assert_string_equal(collapse_outcome_name(COLLAPSE_EAGAIN), "eagain");
	assert_string_equal(collapse_outcome_name(COLLAPSE_NOT_TRIED), "not_tried");
	assert_string_equal(collapse_outcome_name(COLLAPSE_UNMAPPED), "unmapped");
	assert_string_equal(collapse_outcome_name(COLLAPSE_NR_OUTCOMES), "unknown");
	for (int o = 0; o < COLLAPSE_NR_OUTCOMES; o++)
		assert_non_null(collapse_outcome_name((enum collapse_outcome)o));

	assert_int_equal(collapse_outcome_from_errno(0), COLLAPSE_OK);
	assert_int_equal(collapse_outcome_from_errno(EAGAIN), COLLAPSE_EAGAIN);
	assert_int_equal(collapse_outcome_from_errno(ENOMEM), COLLAPSE_ENOMEM);
	assert_int_equal(collapse_outcome_from_errno(EBUSY), COLLAPSE_EBUSY);
	assert_int_equal(collapse_outcome_from_errno(EINVAL), COLLAPSE_EINVAL);
	assert_int_equal(collapse_outcome_from_errno(ESRCH), COLLAPSE_ESRCH);
	assert_int_equal(collapse_outcome_from_errno(EPERM), COLLAPSE_EPERM);
	assert_int_equal(collapse_outcome_from_errno(EACCES), COLLAPSE_EPERM);
	assert_int_equal(collapse_outcome_from_errno(EFAULT), COLLAPSE_OTHER);
}

/* Sum of AnonHugePages (kB) over the VMAs of /proc/self/smaps that overlap
 * [start, end). */
static long anon_huge_kb(uint64_t start, uint64_t end)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	int overlaps = 0;
	long total = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, kb;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
			overlaps = lo < end && hi > start;
		else if (overlaps && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
			total += (long)kb;
	}
	fclose(f);
	return total;
}

static void test_real_kernel_collapse(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();

	const size_t len = 4 * MIB_BYTES;
	char *raw = mmap(NULL, len + HPAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(raw != MAP_FAILED);
	char *p = (char *)(((uintptr_t)raw + HPAGE_SIZE - 1) & ~(uintptr_t)(HPAGE_SIZE - 1));
	uint64_t start = (uint64_t)(uintptr_t)p;

	/* Fault it in as 4 KiB pages. No MADV_HUGEPAGE: MADV_COLLAPSE does not
	 * need it, and registering the mm would wake khugepaged, which then
	 * collapses the range itself before we do (when its list was empty).
	 * With THP enabled=always the faults are huge already: nothing to test. */
	for (size_t off = 0; off < len; off += 4096)
		p[off] = (char)(off / 4096 + 1);
	if (anon_huge_kb(start, start + len) != 0) {
		munmap(raw, len + HPAGE_SIZE);
		skip();
	}

	int pidfd = pidfd_open_pid(getpid());
	assert_true(pidfd >= 0);
	uint64_t blocks[2] = {start, start + HPAGE_SIZE};
	uint8_t res[2];
	size_t n = collapse_blocks(pidfd, blocks, 2, sys_process_madvise, res);

	/* EAGAIN is the kernel's "transient, try again" (a page locked or
	 * still in a per-CPU batch, as on a loaded machine): resubmitted, as
	 * the daemon does (eagain_retries), a bounded number of times. */
	for (int tries = 0; tries < 20 && (res[0] == COLLAPSE_EAGAIN || res[1] == COLLAPSE_EAGAIN); tries++) {
		uint64_t again[2];
		uint8_t r2[2];
		size_t idx[2] = {0, 0};
		size_t k = 0;

		for (size_t i = 0; i < 2; i++) {
			if (res[i] != COLLAPSE_EAGAIN)
				continue;
			idx[k] = i;
			again[k++] = blocks[i];
		}
		usleep(10000);
		n += collapse_blocks(pidfd, again, k, sys_process_madvise, r2);
		for (size_t i = 0; i < k; i++)
			res[idx[i]] = r2[i];
	}
	close(pidfd);

	assert_int_equal(res[0], COLLAPSE_OK);
	assert_int_equal(res[1], COLLAPSE_OK);
	assert_int_equal(n, 2);
	assert_int_equal(anon_huge_kb(start, start + len), 4096);
	for (size_t off = 0; off < len; off += 4096)
		assert_int_equal(p[off], (char)(off / 4096 + 1));
	munmap(raw, len + HPAGE_SIZE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_all_succeed, setup),
	    cmocka_unit_test_setup(test_empty, setup),
	    cmocka_unit_test_setup(test_split_into_batches, setup),
	    cmocka_unit_test_setup(test_exactly_one_batch, setup),
	    cmocka_unit_test_setup(test_failure_in_middle, setup),
	    cmocka_unit_test_setup(test_failure_in_second_batch, setup),
	    cmocka_unit_test_setup(test_eagain_per_block, setup),
	    cmocka_unit_test_setup(test_enomem_stops, setup),
	    cmocka_unit_test_setup(test_enomem_unmapped_is_per_block, setup),
	    cmocka_unit_test_setup(test_enomem_alloc_failure_stops, setup),
	    cmocka_unit_test_setup(test_enomem_unreadable_count_stops, setup),
	    cmocka_unit_test_setup(test_count_moves_without_enomem, setup),
	    cmocka_unit_test_setup(test_esrch_stops, setup),
	    cmocka_unit_test_setup(test_esrch_midway_stops, setup),
	    cmocka_unit_test_setup(test_eperm_stops, setup),
	    cmocka_unit_test_setup(test_first_block_fails, setup),
	    cmocka_unit_test_setup(test_other_errno, setup),
	    cmocka_unit_test_setup(test_transient_succeeds_on_resubmission, setup),
	    cmocka_unit_test_setup(test_eintr_retried, setup),
	    cmocka_unit_test_setup(test_eintr_forever_terminates, setup),
	    cmocka_unit_test_setup(test_bogus_returns, setup),
	    cmocka_unit_test_setup(test_paced_blocks_per_call, setup),
	    cmocka_unit_test_setup(test_paced_pause_between_calls, setup),
	    cmocka_unit_test_setup(test_paced_failure_resubmits, setup),
	    cmocka_unit_test_setup(test_paced_deadline, setup),
	    cmocka_unit_test_setup(test_paced_interrupted, setup),
	    cmocka_unit_test_setup(test_paced_io_enomem, setup),
	    cmocka_unit_test_setup(test_paced_defaults, setup),
	    cmocka_unit_test(test_outcome_names),
	    cmocka_unit_test(test_real_kernel_collapse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
