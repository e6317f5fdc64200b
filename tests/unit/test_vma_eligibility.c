/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vma_eligibility: block counting at VMA edges, every verdict reason, and
 * the Referenced percentage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "vma_eligibility.h"
#include "units.h"

static struct vma_blocks blocks(uint64_t start, uint64_t end)
{
	struct vma v = {.start = start, .end = end};
	struct vma_blocks b;
	vma_blocks(&v, &b);
	return b;
}

static void expect_blocks(uint64_t start, uint64_t end, uint64_t first, size_t whole, size_t partial)
{
	struct vma_blocks b = blocks(start, end);
	if (b.whole != whole || b.partial != partial || (whole && b.first != first))
		fail_msg("[%#llx, %#llx): first %#llx whole %zu partial %zu, want %#llx %zu %zu",
			 (unsigned long long)start, (unsigned long long)end, (unsigned long long)b.first, b.whole,
			 b.partial, (unsigned long long)first, whole, partial);
}

static void test_blocks(void **state)
{
	(void)state;
	/* Exactly aligned. */
	expect_blocks(HPAGE_SIZE, 3 * HPAGE_SIZE, HPAGE_SIZE, 2, 0);
	expect_blocks(0x7f4cf2000000, 0x7f4cf2400000, 0x7f4cf2000000, 2, 0);
	/* Unaligned at both ends: one whole block, two partial ones. */
	expect_blocks(HPAGE_SIZE + 0x1000, 4 * HPAGE_SIZE - 0x1000, 2 * HPAGE_SIZE, 1, 2);
	expect_blocks(HPAGE_SIZE + 0x1000, 3 * HPAGE_SIZE - 0x1000, 0, 0, 2);
	/* Unaligned start only / end only. */
	expect_blocks(HPAGE_SIZE + 0x1000, 3 * HPAGE_SIZE, 2 * HPAGE_SIZE, 1, 1);
	expect_blocks(HPAGE_SIZE, 3 * HPAGE_SIZE + 0x1000, HPAGE_SIZE, 2, 1);
	/* Tiny VMA inside one block, and one straddling a block boundary. */
	expect_blocks(HPAGE_SIZE + 0x1000, HPAGE_SIZE + 0x2000, 0, 0, 1);
	expect_blocks(2 * HPAGE_SIZE - 0x1000, 2 * HPAGE_SIZE + 0x1000, 0, 0, 2);
	/* Exactly one block; one page short of a block. */
	expect_blocks(4 * HPAGE_SIZE, 5 * HPAGE_SIZE, 4 * HPAGE_SIZE, 1, 0);
	expect_blocks(4 * HPAGE_SIZE, 5 * HPAGE_SIZE - 0x1000, 0, 0, 1);
	/* [vsyscall] and the very top of the address space do not wrap. */
	expect_blocks(0xffffffffff600000, 0xffffffffff601000, 0, 0, 1);
	expect_blocks(UINT64_MAX - 2 * HPAGE_SIZE + 1, UINT64_MAX - 0xfff, UINT64_MAX - 2 * HPAGE_SIZE + 1, 1, 1);
	expect_blocks(UINT64_MAX - HPAGE_SIZE + 0x1001, UINT64_MAX, 0, 0, 1);
	/* An empty or inverted VMA has no blocks. */
	expect_blocks(HPAGE_SIZE, HPAGE_SIZE, 0, 0, 0);
	expect_blocks(3 * HPAGE_SIZE, HPAGE_SIZE, 0, 0, 0);
}

static const struct collapse_limits limits = COLLAPSE_LIMITS_DEFAULT;

/* A hot, aligned private anonymous VMA: the baseline candidate. */
static struct vma anon_vma(void)
{
	return (struct vma){
	    .start = 2 * HPAGE_SIZE,
	    .end = 6 * HPAGE_SIZE,
	    .perms = "rw-p",
	    .kind = VMA_ANON,
	    .vmflags = VMF(RD) | VMF(WR) | VMF(MR) | VMF(MW) | VMF(ME) | VMF(AC),
	    .has_vmflags = true,
	    .rss_kb = 4096,
	    .referenced_kb = 4096,
	};
}

static void test_verdict_baseline(void **state)
{
	(void)state;
	struct vma v = anon_vma();
	assert_int_equal(vma_verdict(&v, &limits, SCAN_CANDIDATE, false), SCAN_CANDIDATE);
	/* Flags that do not block collapse. */
	v.vmflags |= VMF(HG) | VMF(SD) | VMF(DD) | VMF(MG) | VMF(GD);
	assert_int_equal(vma_verdict(&v, &limits, SCAN_CANDIDATE, false), SCAN_CANDIDATE);
}

static void test_verdict_each_ineligible_flag(void **state)
{
	(void)state;
	static const int bits[] = {VMF_NH, VMF_HT, VMF_IO, VMF_DE, VMF_PF, VMF_MM, VMF_UM, VMF_UW};
	for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++) {
		struct vma v = anon_vma();
		v.vmflags |= UINT64_C(1) << bits[i];
		assert_int_equal(vma_verdict(&v, &limits, SCAN_CANDIDATE, true), SCAN_INELIGIBLE);
		v.kind = VMA_SHMEM;
		assert_int_equal(vma_verdict(&v, &limits, SCAN_CANDIDATE, true), SCAN_INELIGIBLE);
	}
}

static void test_verdict_kinds(void **state)
{
	(void)state;
	struct vma v = anon_vma();

	v.kind = VMA_SPECIAL;
	assert_int_equal(vma_verdict(&v, &limits, SCAN_CANDIDATE, true), SCAN_INELIGIBLE);

	v.kind = VMA_FILE;
	assert_int_equal(vma_verdict(&v, &limits, SCAN_CANDIDATE, false), SCAN_INELIGIBLE);
	assert_int_equal(vma_verdict(&v, &limits, SCAN_CANDIDATE, true), SCAN_CANDIDATE);

	/* shmem does not depend on the file-backed switch. */
	v.kind = VMA_SHMEM;
	assert_int_equal(vma_verdict(&v, &limits, SCAN_CANDIDATE, false), SCAN_CANDIDATE);
}

static void test_verdict_pgoff_alignment(void **state)
{
	(void)state;
	struct vma v = anon_vma();
	v.kind = VMA_SHMEM;

	/* vm_start/4096 - pgoff must be a multiple of 512. */
	v.offset = 0x1000;
	assert_int_equal(vma_verdict(&v, &limits, SCAN_CANDIDATE, false), SCAN_INELIGIBLE);
	v.offset = HPAGE_SIZE; /* start 4 MiB, file offset 2 MiB: aligned */
	assert_int_equal(vma_verdict(&v, &limits, SCAN_CANDIDATE, false), SCAN_CANDIDATE);
	v.offset = 3 * HPAGE_SIZE; /* offset beyond start is fine too */
	assert_int_equal(vma_verdict(&v, &limits, SCAN_CANDIDATE, false), SCAN_CANDIDATE);
	/* A VMA starting off a block boundary but congruent with its offset. */
	v.start = 2 * HPAGE_SIZE + 0x3000;
	v.offset = 0x3000;
	assert_int_equal(vma_verdict(&v, &limits, SCAN_CANDIDATE, false), SCAN_CANDIDATE);

	v = anon_vma();
	v.kind = VMA_FILE;
	v.offset = 0x26000; /* like libc's text segment */
	assert_int_equal(vma_verdict(&v, &limits, SCAN_CANDIDATE, true), SCAN_INELIGIBLE);

	/* Anonymous memory has no file alignment to respect. */
	v.kind = VMA_ANON;
	assert_int_equal(vma_verdict(&v, &limits, SCAN_CANDIDATE, false), SCAN_CANDIDATE);
}

static void test_verdict_cold(void **state)
{
	(void)state;
	struct vma v = anon_vma();
	v.rss_kb = 1000;
	v.referenced_kb = 499; /* 49% < 50% */
	assert_int_equal(vma_verdict(&v, &limits, SCAN_CANDIDATE, false), SCAN_COLD);
	v.referenced_kb = 500;
	assert_int_equal(vma_verdict(&v, &limits, SCAN_CANDIDATE, false), SCAN_CANDIDATE);

	struct collapse_limits strict = limits;
	strict.min_referenced_pct = 100;
	v.referenced_kb = 999;
	assert_int_equal(vma_verdict(&v, &strict, SCAN_CANDIDATE, false), SCAN_COLD);
	struct collapse_limits any = limits;
	any.min_referenced_pct = 0;
	v.referenced_kb = 0;
	assert_int_equal(vma_verdict(&v, &any, SCAN_CANDIDATE, false), SCAN_CANDIDATE);

	/* Nothing resident: nothing to judge as cold. */
	v.rss_kb = 0;
	assert_int_equal(vma_verdict(&v, &limits, SCAN_CANDIDATE, false), SCAN_CANDIDATE);

	/* Ineligibility wins over coldness. */
	v.rss_kb = 1000;
	v.vmflags |= VMF(NH);
	assert_int_equal(vma_verdict(&v, &limits, SCAN_CANDIDATE, false), SCAN_INELIGIBLE);
}

static void test_verdict_thp_disabled(void **state)
{
	(void)state;
	struct vma v = anon_vma();
	assert_int_equal(vma_verdict(&v, &limits, SCAN_INELIGIBLE, true), SCAN_INELIGIBLE);
	v.kind = VMA_SHMEM;
	assert_int_equal(vma_verdict(&v, &limits, SCAN_INELIGIBLE, true), SCAN_INELIGIBLE);
}

static void test_verdict_thp_policy(void **state)
{
	(void)state;
	struct vma v = anon_vma();
	/* The policy forbids it: a result of its own, not "ineligible"... */
	assert_int_equal(vma_verdict(&v, &limits, SCAN_THP_POLICY, true), SCAN_THP_POLICY);
	/* ...but what the kernel cannot do still comes first... */
	v.vmflags |= VMF(HT);
	assert_int_equal(vma_verdict(&v, &limits, SCAN_THP_POLICY, true), SCAN_INELIGIBLE);
	/* ...and the policy before coldness. */
	v = anon_vma();
	v.rss_kb = 1000;
	v.referenced_kb = 0;
	assert_int_equal(vma_verdict(&v, &limits, SCAN_THP_POLICY, true), SCAN_THP_POLICY);
	assert_int_equal(vma_verdict(&v, &limits, SCAN_CANDIDATE, true), SCAN_COLD);
	assert_string_equal(scan_result_name(SCAN_THP_POLICY), "thp_policy");
}

static void test_verdict_without_vmflags(void **state)
{
	(void)state;
	/* A truncated record whose VmFlags line never came may hide nh. */
	struct vma v = anon_vma();
	v.has_vmflags = false;
	v.vmflags = 0;
	assert_int_equal(vma_verdict(&v, &limits, SCAN_CANDIDATE, true), SCAN_INELIGIBLE);
}

static void test_referenced_pct(void **state)
{
	(void)state;
	struct vma v = {0};
	assert_int_equal(vma_referenced_pct(&v), 100);
	v.rss_kb = 1024;
	assert_int_equal(vma_referenced_pct(&v), 0);
	v.referenced_kb = 512;
	assert_int_equal(vma_referenced_pct(&v), 50);
	v.referenced_kb = 1023;
	assert_int_equal(vma_referenced_pct(&v), 99); /* rounds down */
	v.referenced_kb = 1024;
	assert_int_equal(vma_referenced_pct(&v), 100);
	/* Referenced can race ahead of Rss: clamp. */
	v.referenced_kb = 4096;
	assert_int_equal(vma_referenced_pct(&v), 100);
	/* Huge values (hostile input) do not overflow. */
	v.rss_kb = UINT64_MAX;
	v.referenced_kb = UINT64_MAX / 2;
	assert_int_equal(vma_referenced_pct(&v), 50);
	v.referenced_kb = UINT64_MAX - 1;
	assert_int_equal(vma_referenced_pct(&v), 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_blocks),
	    cmocka_unit_test(test_verdict_baseline),
	    cmocka_unit_test(test_verdict_each_ineligible_flag),
	    cmocka_unit_test(test_verdict_kinds),
	    cmocka_unit_test(test_verdict_pgoff_alignment),
	    cmocka_unit_test(test_verdict_cold),
	    cmocka_unit_test(test_verdict_thp_disabled),
	    cmocka_unit_test(test_verdict_thp_policy),
	    cmocka_unit_test(test_verdict_without_vmflags),
	    cmocka_unit_test(test_referenced_pct),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
