/* SPDX-License-Identifier: GPL-2.0-or-later */
/* smaps_scan: exact values from smaps captured on the real kernel
 * (tests/fixtures/smaps/capture.c), hand-made and hostile fixtures, every
 * prefix of a real file, pseudo-random input, and read_smaps() on live
 * processes. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "smaps_scan.h"

#define FIXTURE(name) HC_FIXTURES "/smaps/" name

/* Loads a fixture into a buffer of exactly its size, so a sanitizer build
 * catches any read past len. */
static char *load(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	long n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	char *buf = malloc(n ? (size_t)n : 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static int parse_fixture(const char *path, struct vma_list *l)
{
	size_t len;
	char *buf = load(path, &len);
	int ret = parse_smaps_buf(buf, len, l);
	free(buf);
	return ret;
}

static const struct vma *find(const struct vma_list *l, uint64_t start)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].start == start)
			return &l->v[i];
	fail_msg("no VMA at %#llx", (unsigned long long)start);
	return NULL;
}

static const struct vma *find_name(const struct vma_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(vma_name(l, &l->v[i]), name))
			return &l->v[i];
	return NULL;
}

#define ANON_FLAGS (VMF(RD) | VMF(WR) | VMF(MR) | VMF(MW) | VMF(ME) | VMF(AC))
#define SHM_FLAGS  (VMF(RD) | VMF(WR) | VMF(SH) | VMF(MR) | VMF(MW) | VMF(ME) | VMF(MS))

static void test_capture_anon(void **state)
{
	(void)state;
	struct vma_list l;
	vma_list_init(&l);
	assert_int_equal(parse_fixture(FIXTURE("capture.smaps"), &l), 0);
	assert_int_equal(l.n, 40);

	/* MADV_HUGEPAGE, fully touched: two PMD-mapped THPs. */
	const struct vma *v = find(&l, 0x7f4cf2000000);
	assert_int_equal(v->end, 0x7f4cf2400000);
	assert_string_equal(v->perms, "rw-p");
	assert_int_equal(v->offset, 0);
	assert_int_equal(v->inode, 0);
	assert_int_equal(v->dev_major, 0);
	assert_int_equal(v->dev_minor, 0);
	assert_int_equal(v->name_off, 0);
	assert_string_equal(vma_name(&l, v), "");
	assert_int_equal(v->kind, VMA_ANON);
	assert_true(v->has_vmflags);
	assert_int_equal(v->vmflags, ANON_FLAGS | VMF(HG));
	assert_true(v->has_thpeligible);
	assert_true(v->thp_eligible); /* MADV_HUGEPAGE under enabled=madvise */
	assert_int_equal(v->rss_kb, 4096);
	assert_int_equal(v->anon_kb, 4096);
	assert_int_equal(v->referenced_kb, 4096);
	assert_int_equal(v->anon_huge_kb, 4096);
	assert_int_equal(v->lazyfree_kb, 0);
	assert_int_equal(v->shmem_pmd_kb, 0);
	assert_int_equal(v->file_pmd_kb, 0);
	assert_int_equal(v->swap_kb, 0);

	/* MADV_NOHUGEPAGE, 1 MiB of 3 touched. */
	v = find(&l, 0x7f4cf1c00000);
	assert_int_equal(v->end, 0x7f4cf1f00000);
	assert_int_equal(v->vmflags, ANON_FLAGS | VMF(NH));
	assert_true(v->has_thpeligible);
	assert_false(v->thp_eligible);
	assert_int_equal(v->rss_kb, 1024);
	assert_int_equal(v->anon_huge_kb, 0);

	/* MADV_FREE: lazy-free and not referenced. */
	v = find(&l, 0x7f4cf0e00000);
	assert_int_equal(v->lazyfree_kb, 512);
	assert_int_equal(v->anon_kb, 512);
	assert_int_equal(v->referenced_kb, 0);
	assert_int_equal(v->kind, VMA_ANON);

	/* mlock. */
	v = find(&l, 0x7f4cf0600000);
	assert_int_equal(v->vmflags, ANON_FLAGS | VMF(LO));
	assert_int_equal(v->rss_kb, 7168);

	/* Private /dev/zero is anonymous memory with a file name. */
	v = find(&l, 0x7f4cf0200000);
	assert_string_equal(vma_name(&l, v), "/dev/zero");
	assert_int_equal(v->kind, VMA_ANON);
	assert_int_equal(v->dev_minor, 6);
	assert_int_equal(v->inode, 4);

	v = find(&l, 0x55b50a0ba000);
	assert_string_equal(vma_name(&l, v), "[heap]");
	assert_int_equal(v->kind, VMA_ANON);
	v = find(&l, 0x7ffd51753000);
	assert_string_equal(vma_name(&l, v), "[stack]");
	assert_int_equal(v->kind, VMA_ANON);
	assert_int_equal(v->vmflags, ANON_FLAGS | VMF(GD));
	assert_int_equal(v->rss_kb, 52);
	vma_list_free(&l);
}

static void test_capture_shmem(void **state)
{
	(void)state;
	struct vma_list l;
	vma_list_init(&l);
	assert_int_equal(parse_fixture(FIXTURE("capture.smaps"), &l), 0);

	/* memfd collapsed with MADV_COLLAPSE. */
	const struct vma *v = find(&l, 0x7f4cf1400000);
	assert_int_equal(v->end, 0x7f4cf1600000);
	assert_string_equal(v->perms, "rw-s");
	assert_string_equal(vma_name(&l, v), "/memfd:hc_memfd (deleted)");
	assert_int_equal(v->kind, VMA_SHMEM);
	assert_int_equal(v->dev_major, 0);
	assert_int_equal(v->dev_minor, 1);
	assert_int_equal(v->inode, 1031);
	assert_int_equal(v->vmflags, SHM_FLAGS);
	assert_int_equal(v->rss_kb, 2048);
	assert_int_equal(v->shmem_pmd_kb, 2048);
	assert_int_equal(v->anon_kb, 0);

	/* SysV shm prints inode 0 here: classified by name. */
	v = find(&l, 0x7f4cf1f00000);
	assert_string_equal(vma_name(&l, v), "/SYSV00000000 (deleted)");
	assert_int_equal(v->kind, VMA_SHMEM);
	assert_int_equal(v->inode, 2);

	/* MAP_SHARED|MAP_ANONYMOUS. */
	v = find(&l, 0x7f4cf2640000);
	assert_int_equal(v->end, 0x7f4cf2740000);
	assert_string_equal(vma_name(&l, v), "/dev/zero (deleted)");
	assert_int_equal(v->kind, VMA_SHMEM);
	assert_int_equal(v->rss_kb, 1024);
	assert_int_equal(v->inode, 1029);

	v = find(&l, 0x7f4cf2490000);
	assert_string_equal(vma_name(&l, v), "/dev/shm/hc-capture-8181");
	assert_int_equal(v->kind, VMA_SHMEM);
	assert_int_equal(v->dev_major, 0);
	assert_int_equal(v->dev_minor, 0x1a);
	v = find(&l, 0x7f4cf24b0000);
	assert_string_equal(vma_name(&l, v), "/dev/shm/hc-capture-8181 (deleted)");
	assert_int_equal(v->kind, VMA_SHMEM);
	vma_list_free(&l);
}

static void test_capture_files_and_special(void **state)
{
	(void)state;
	struct vma_list l;
	vma_list_init(&l);
	assert_int_equal(parse_fixture(FIXTURE("capture.smaps"), &l), 0);

	const struct vma *v = find(&l, 0x7f4cf2926000);
	assert_string_equal(vma_name(&l, v), "/tmp/hc-smaps-fixture/hc file with spaces.bin");
	assert_int_equal(v->kind, VMA_FILE);
	assert_int_equal(v->end, 0x7f4cf2930000);
	assert_int_equal(v->anon_kb, 4); /* one COW page */
	assert_int_equal(v->dev_major, 0xfe);
	assert_int_equal(v->inode, 10953324);

	/* The kernel escapes '\n' in paths as "\012": stored as printed. */
	v = find(&l, 0x7f4cf248e000);
	assert_string_equal(vma_name(&l, v), "/tmp/hc-smaps-fixture/hc\\012newline.bin");
	assert_int_equal(v->kind, VMA_FILE);

	v = find(&l, 0x7f4cf248b000);
	assert_string_equal(vma_name(&l, v), "/tmp/hc-smaps-fixture/hc-deleted.bin (deleted)");
	assert_int_equal(v->kind, VMA_FILE);
	assert_string_equal(v->perms, "rw-s");

	v = find(&l, 0x7f4cf2769000);
	assert_string_equal(vma_name(&l, v), "/usr/lib/x86_64-linux-gnu/libc.so.6");
	assert_string_equal(v->perms, "r-xp");
	assert_int_equal(v->offset, 0x26000);
	assert_int_equal(v->inode, 332835);
	assert_int_equal(v->kind, VMA_FILE);
	assert_int_equal(v->vmflags, VMF(RD) | VMF(EX) | VMF(MR) | VMF(MW) | VMF(ME));
	assert_int_equal(v->rss_kb, 984);

	v = find(&l, 0x7f4cefc00000);
	assert_string_equal(vma_name(&l, v), "/tmp/hc-smaps-fixture/hc-rothp.bin");
	assert_int_equal(v->vmflags, VMF(RD) | VMF(EX) | VMF(MR) | VMF(MW) | VMF(ME) | VMF(HG));

	v = find(&l, 0x7f4cf2932000);
	assert_string_equal(vma_name(&l, v), "[vvar]");
	assert_int_equal(v->kind, VMA_SPECIAL);
	assert_int_equal(v->vmflags, VMF(RD) | VMF(MR) | VMF(PF) | VMF(IO) | VMF(DE) | VMF(DD));
	assert_int_equal(v->rss_kb, 0);
	v = find(&l, 0x7f4cf2936000);
	assert_string_equal(vma_name(&l, v), "[vvar_vclock]");
	assert_int_equal(v->kind, VMA_SPECIAL);
	v = find(&l, 0x7f4cf2938000);
	assert_string_equal(vma_name(&l, v), "[vdso]");
	assert_int_equal(v->kind, VMA_SPECIAL);
	v = find(&l, 0xffffffffff600000);
	assert_int_equal(v->end, 0xffffffffff601000);
	assert_string_equal(vma_name(&l, v), "[vsyscall]");
	assert_string_equal(v->perms, "--xp");
	assert_int_equal(v->kind, VMA_SPECIAL);
	assert_int_equal(v->vmflags, VMF(EX));

	/* Every record was complete and in address order. */
	for (size_t i = 0; i < l.n; i++) {
		assert_true(l.v[i].has_vmflags);
		assert_true(l.v[i].start < l.v[i].end);
		if (i)
			assert_true(l.v[i - 1].end <= l.v[i].start);
	}
	vma_list_free(&l);
}

static void test_cat_process(void **state)
{
	(void)state;
	struct vma_list l;
	vma_list_init(&l);
	assert_int_equal(parse_fixture(FIXTURE("cat.smaps"), &l), 0);
	assert_int_equal(l.n, 38);
	const char *special[] = {"[vvar]", "[vvar_vclock]", "[vdso]", "[vsyscall]"};
	for (size_t i = 0; i < 4; i++) {
		const struct vma *v = find_name(&l, special[i]);
		assert_non_null(v);
		assert_int_equal(v->kind, VMA_SPECIAL);
	}
	assert_int_equal(find_name(&l, "[heap]")->kind, VMA_ANON);
	assert_int_equal(find_name(&l, "[stack]")->kind, VMA_ANON);
	assert_int_equal(find_name(&l, "/usr/bin/cat")->kind, VMA_FILE);
	vma_list_free(&l);
}

static void test_synthetic(void **state)
{
	(void)state;
	struct vma_list l;
	vma_list_init(&l);
	assert_int_equal(parse_fixture(FIXTURE("synthetic.smaps"), &l), 0);
	assert_int_equal(l.n, 8);

	const struct vma *v = &l.v[0];
	assert_string_equal(vma_name(&l, v), "[anon:hc arena]");
	assert_int_equal(v->kind, VMA_ANON);
	assert_int_equal(v->rss_kb, 3072);
	assert_int_equal(v->referenced_kb, 1024);
	assert_int_equal(v->anon_kb, 3072);
	assert_int_equal(v->swap_kb, 1024);
	assert_int_equal(v->anon_huge_kb, 2048);
	assert_int_equal(v->lazyfree_kb, 12);

	v = &l.v[1];
	assert_string_equal(vma_name(&l, v), "[anon_shmem:hc shm]");
	assert_int_equal(v->kind, VMA_SHMEM);
	assert_int_equal(v->shmem_pmd_kb, 2048);

	v = &l.v[2];
	assert_string_equal(vma_name(&l, v), "/opt/app/lib with space.so");
	assert_int_equal(v->kind, VMA_FILE);
	assert_int_equal(v->offset, 0x200000);
	assert_int_equal(v->dev_major, 0xfe);
	assert_int_equal(v->dev_minor, 1);
	assert_int_equal(v->inode, 123456);
	assert_int_equal(v->file_pmd_kb, 4096);
	assert_int_equal(v->vmflags, VMF(RD) | VMF(EX) | VMF(MR) | VMF(MW) | VMF(ME) | VMF(UI));

	v = &l.v[3];
	assert_string_equal(vma_name(&l, v), "[uprobes]");
	assert_int_equal(v->kind, VMA_SPECIAL);
	assert_int_equal(v->vmflags,
			 VMF(RD) | VMF(EX) | VMF(MR) | VMF(ME) | VMF(IO) | VMF(PF) | VMF(DE) | VMF(DD) | VMF(MM));

	v = &l.v[4];
	assert_string_equal(vma_name(&l, v), "anon_inode:[perf_event]");
	assert_int_equal(v->kind, VMA_SPECIAL);
	assert_int_equal(v->vmflags, VMF(RD) | VMF(WR) | VMF(SH) | VMF(MR) | VMF(MW) | VMF(ME) | VMF(MS) | VMF(DC) |
					 VMF(DE) | VMF(UM) | VMF(UW) | VMF(NH) | VMF(HT) | VMF(GD) | VMF(LO) | VMF(NR) |
					 VMF(MG) | VMF(SD));

	assert_string_equal(vma_name(&l, &l.v[5]), "[stack:4242]");
	assert_int_equal(l.v[5].kind, VMA_ANON);

	/* Unknown and malformed mnemonics are ignored, tabs separate too. */
	v = &l.v[6];
	assert_int_equal(v->kind, VMA_ANON);
	assert_int_equal(v->vmflags, VMF(RD) | VMF(WR) | VMF(MR) | VMF(MW));

	/* No padding after the inode, tab before the value, unknown keys with
	 * and without a unit, trailing blanks after kB. */
	v = &l.v[7];
	assert_int_equal(v->name_off, 0);
	assert_int_equal(v->rss_kb, 8);
	assert_int_equal(v->referenced_kb, 4);
	assert_int_equal(v->vmflags, VMF(RD) | VMF(WR));
	vma_list_free(&l);
}

struct bad_case {
	const char *file;
	int ret;
	size_t n;
};

static void test_hostile(void **state)
{
	(void)state;
	static const struct bad_case cases[] = {
	    {"empty.smaps", 0, 0},
	    {"header_only.smaps", 0, 1},
	    {"truncated_midline.smaps", -EINVAL, 2},
	    {"truncated_header.smaps", -EINVAL, 3},
	    {"garbage.smaps", -EINVAL, 2},
	    {"binary.smaps", -EINVAL, 0},
	    {"start_gt_end.smaps", -EINVAL, 1},
	    {"start_eq_end.smaps", -EINVAL, 1},
	    {"overflow_start.smaps", -EINVAL, 1},
	    {"overflow_inode.smaps", -EINVAL, 1},
	    {"overflow_dev.smaps", -EINVAL, 1},
	    {"overflow_kb.smaps", -EINVAL, 1},
	    {"missing_unit.smaps", -EINVAL, 1},
	    {"field_first.smaps", -EINVAL, 0},
	    {"max_values.smaps", 0, 1},
	    {"overlong_name.smaps", 0, 2},
	    {"thpeligible_bad.smaps", -EINVAL, 0},
	    {"thpeligible_trailing.smaps", -EINVAL, 1},
	    {"thpeligible_empty.smaps", -EINVAL, 0},
	};
	char path[512];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vma_list l;
		vma_list_init(&l);
		snprintf(path, sizeof(path), HC_FIXTURES "/smaps/%s", cases[i].file);
		int ret = parse_fixture(path, &l);
		if (ret != cases[i].ret || l.n != cases[i].n)
			fail_msg("%s: ret %d n %zu, want %d %zu", cases[i].file, ret, l.n, cases[i].ret, cases[i].n);
		vma_list_free(&l);
	}
}

static void test_hostile_values(void **state)
{
	(void)state;
	struct vma_list l;
	vma_list_init(&l);

	assert_int_equal(parse_fixture(FIXTURE("header_only.smaps"), &l), 0);
	assert_int_equal(l.v[0].start, 0x7f0000000000);
	assert_int_equal(l.v[0].end, 0x7f0000200000);
	assert_false(l.v[0].has_vmflags);
	assert_false(l.v[0].has_thpeligible); /* absent: not "0" */
	assert_int_equal(l.v[0].kind, VMA_ANON);
	vma_list_clear(&l);

	/* The good VMA before a bad THPeligible keeps its own answer. */
	assert_int_equal(parse_fixture(FIXTURE("thpeligible_trailing.smaps"), &l), -EINVAL);
	assert_true(l.v[0].has_thpeligible && l.v[0].thp_eligible);
	vma_list_clear(&l);

	assert_int_equal(parse_fixture(FIXTURE("max_values.smaps"), &l), 0);
	assert_int_equal(l.v[0].start, 0);
	assert_int_equal(l.v[0].end, UINT64_MAX);
	assert_int_equal(l.v[0].offset, UINT64_MAX);
	assert_int_equal(l.v[0].dev_major, UINT32_MAX);
	assert_int_equal(l.v[0].dev_minor, UINT32_MAX);
	assert_int_equal(l.v[0].inode, UINT64_MAX);
	assert_int_equal(l.v[0].rss_kb, UINT64_MAX);
	assert_string_equal(vma_name(&l, &l.v[0]), "/max");
	vma_list_clear(&l);

	assert_int_equal(parse_fixture(FIXTURE("overlong_name.smaps"), &l), 0);
	const char *name = vma_name(&l, &l.v[0]);
	assert_int_equal(strlen(name), 100000);
	assert_int_equal(name[0], '/');
	assert_int_equal(name[99999], 'a' + 99998 % 26);
	assert_int_equal(l.v[0].rss_kb, 8);
	assert_int_equal(l.v[0].kind, VMA_FILE);
	assert_int_equal(l.v[1].name_off, 0);
	assert_int_equal(l.v[1].rss_kb, 4);
	vma_list_clear(&l);

	/* A truncated record is dropped, with its name. */
	assert_int_equal(parse_fixture(FIXTURE("truncated_midline.smaps"), &l), -EINVAL);
	assert_int_equal(l.v[1].start, 0x55b4ea3fe000);
	assert_int_equal(l.names_len, 1 + 2 * sizeof("/tmp/hc-smaps-fixture/capture"));
	vma_list_free(&l);
}

/* Every prefix of a real file parses without crashing to a prefix of the
 * full result; prefixes ending at a record boundary parse cleanly. */
static void test_every_prefix(void **state)
{
	(void)state;
	size_t len;
	char *full = load(FIXTURE("capture.smaps"), &len);
	struct vma_list all, l;
	vma_list_init(&all);
	vma_list_init(&l);
	assert_int_equal(parse_smaps_buf(full, len, &all), 0);

	for (size_t cut = 0; cut <= len; cut++) {
		char *buf = malloc(cut ? cut : 1);
		assert_non_null(buf);
		memcpy(buf, full, cut);
		vma_list_clear(&l);
		int ret = parse_smaps_buf(buf, cut, &l);
		assert_true(ret == 0 || ret == -EINVAL);
		assert_true(l.n <= all.n);
		for (size_t i = 0; i < l.n; i++) {
			assert_int_equal(l.v[i].start, all.v[i].start);
			assert_int_equal(l.v[i].end, all.v[i].end);
		}
		free(buf);
	}
	/* Cutting right after each VmFlags line yields exactly the VMAs so far. */
	size_t seen = 0;
	for (const char *p = full; (p = memmem(p, (size_t)(full + len - p), "VmFlags:", 8)); p++) {
		const char *nl = memchr(p, '\n', (size_t)(full + len - p));
		assert_non_null(nl);
		vma_list_clear(&l);
		assert_int_equal(parse_smaps_buf(full, (size_t)(nl + 1 - full), &l), 0);
		assert_int_equal(l.n, ++seen);
		assert_int_equal(l.v[seen - 1].vmflags, all.v[seen - 1].vmflags);
	}
	assert_int_equal(seen, all.n);
	vma_list_free(&all);
	vma_list_free(&l);
	free(full);
}

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static void check_list_sane(const struct vma_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		assert_true(l->v[i].start < l->v[i].end);
		assert_true(l->v[i].name_off < l->names_len || l->v[i].name_off == 0);
		assert_true(l->v[i].kind <= VMA_SPECIAL);
		assert_int_equal(strlen(l->v[i].perms), 4);
		(void)strlen(vma_name(l, &l->v[i]));
	}
}

/* Random bytes, and real smaps with random bytes overwritten, must never
 * crash or read out of bounds (run with HC_SANITIZE=address,undefined). */
static void test_random_input(void **state)
{
	(void)state;
	size_t len;
	char *real = load(FIXTURE("capture.smaps"), &len);
	uint64_t seed = 0x9e3779b97f4a7c15u;
	struct vma_list l;
	vma_list_init(&l);
	size_t errors = 0, parsed = 0;
	static const char alphabet[] = "0123456789abcdef- :\nkBRssVmFlags[]/";

	for (int i = 0; i < 4000; i++) {
		size_t n;
		char *buf;
		if (i % 2) {
			n = (size_t)(xorshift(&seed) % len) + 1;
			buf = malloc(n);
			memcpy(buf, real, n);
			int flips = (int)(xorshift(&seed) % 8) + 1;
			for (int f = 0; f < flips; f++)
				buf[xorshift(&seed) % n] = (char)xorshift(&seed);
		} else {
			n = (size_t)(xorshift(&seed) % 2048);
			buf = malloc(n ? n : 1);
			for (size_t j = 0; j < n; j++) {
				uint64_t r = xorshift(&seed);
				buf[j] = i % 4 ? alphabet[r % (sizeof(alphabet) - 1)] : (char)r;
			}
		}
		vma_list_clear(&l);
		int ret = parse_smaps_buf(buf, n, &l);
		assert_true(ret == 0 || ret == -EINVAL);
		errors += ret != 0;
		parsed += l.n;
		check_list_sane(&l);
		free(buf);
	}
	/* The mutated real files must exercise both outcomes. */
	assert_true(errors > 0 && errors < 4000);
	assert_true(parsed > 1000);
	vma_list_free(&l);
	free(real);
}

#define VMFLAGS(lit) parse_vmflags(lit, sizeof(lit) - 1)

static void test_vmflags(void **state)
{
	(void)state;
	assert_int_equal(VMFLAGS(""), 0);
	assert_int_equal(VMFLAGS("rd wr mr mw me ac sd "),
			 VMF(RD) | VMF(WR) | VMF(MR) | VMF(MW) | VMF(ME) | VMF(AC) | VMF(SD));
	assert_int_equal(VMFLAGS("hg"), VMF(HG));
	assert_int_equal(VMFLAGS("nh ht io de pf mm um uw ui"),
			 VMF(NH) | VMF(HT) | VMF(IO) | VMF(DE) | VMF(PF) | VMF(MM) | VMF(UM) | VMF(UW) | VMF(UI));
	/* len is honoured: "rd w" has one flag. */
	assert_int_equal(parse_vmflags("rd wr", 4), VMF(RD));
	/* Unknown two-letter codes, odd tokens and non-ASCII are ignored. */
	assert_int_equal(VMFLAGS("sr rr ?? bt mt x rdd \xff\xfe ex"), VMF(EX));
	assert_int_equal(VMFLAGS("   "), 0);
}

static void test_list_reuse_and_append(void **state)
{
	(void)state;
	size_t len;
	char *buf = load(FIXTURE("capture.smaps"), &len);
	struct vma_list l;
	vma_list_init(&l);
	assert_string_equal(vma_name(&l, &(struct vma){.name_off = 0}), "");

	assert_int_equal(parse_smaps_buf(buf, len, &l), 0);
	size_t names_len = l.names_len;
	struct vma *v = l.v;
	char *names = l.names;
	vma_list_clear(&l);
	assert_int_equal(l.n, 0);
	assert_int_equal(l.names_len, 1);
	assert_int_equal(parse_smaps_buf(buf, len, &l), 0);
	/* Same data, same allocations: steady state does not reallocate. */
	assert_ptr_equal(l.v, v);
	assert_ptr_equal(l.names, names);
	assert_int_equal(l.names_len, names_len);

	/* Appending keeps earlier names valid. */
	assert_int_equal(parse_smaps_buf(buf, len, &l), 0);
	assert_int_equal(l.n, 80);
	assert_string_equal(vma_name(&l, &l.v[0]), vma_name(&l, &l.v[40]));
	assert_string_equal(vma_name(&l, &l.v[0]), "/tmp/hc-smaps-fixture/capture");
	vma_list_free(&l);
	assert_null(l.v);
	free(buf);
}

static void test_read_smaps_self(void **state)
{
	(void)state;
	/* Many small VMAs make smaps far larger than the first read buffer. */
	enum { N = 3000 };
	const long page = sysconf(_SC_PAGESIZE);
	char *area = mmap(NULL, (size_t)(2 * N * page), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(area != MAP_FAILED);
	for (int i = 0; i < N; i++)
		assert_int_equal(mprotect(area + 2 * i * page, (size_t)page, PROT_READ | PROT_WRITE), 0);
	assert_int_equal(madvise(area, (size_t)page, MADV_NOHUGEPAGE), 0);

	int dirfd = open("/proc/self", O_RDONLY | O_DIRECTORY);
	assert_true(dirfd >= 0);
	char *buf = NULL;
	size_t cap = 0;
	struct vma_list l;
	vma_list_init(&l);
	assert_int_equal(read_smaps(dirfd, &buf, &cap, &l), 0);
	assert_true(cap > 2 * N * 200); /* grew past its first size */
	assert_true(l.n >= 2 * N);

	const struct vma *v = find(&l, (uint64_t)(uintptr_t)area);
	assert_int_equal(v->end, (uint64_t)(uintptr_t)area + (uint64_t)page);
	assert_string_equal(v->perms, "rw-p");
	assert_true(v->vmflags & VMF(NH));
	assert_int_equal(v->kind, VMA_ANON);
	v = find(&l, (uint64_t)(uintptr_t)area + 2 * (N - 1) * (uint64_t)page);
	assert_string_equal(v->perms, "rw-p");
	assert_int_equal(v->vmflags & VMF(NH), 0);

	/* A second pass reuses the buffer. */
	char *old = buf;
	vma_list_clear(&l);
	assert_int_equal(read_smaps(dirfd, &buf, &cap, &l), 0);
	assert_ptr_equal(buf, old);
	close(dirfd);
	munmap(area, (size_t)(2 * N * page));
	vma_list_free(&l);
	free(buf);
}

/* After a process with many VMAs, the reader's memory goes back down. */
static void test_trim_after_large_read(void **state)
{
	enum { N = 8000 }; /* ~10 MiB of smaps: past SMAPS_KEEP_BYTES */
	const long page = sysconf(_SC_PAGESIZE);
	char *area = mmap(NULL, (size_t)(2 * N * page), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *buf = NULL;
	size_t cap = 0;
	struct vma_list l;
	int dirfd;

	(void)state;
	assert_true(area != MAP_FAILED);
	for (int i = 0; i < N; i++)
		assert_int_equal(mprotect(area + 2 * i * page, (size_t)page, PROT_READ | PROT_WRITE), 0);
	dirfd = open("/proc/self", O_RDONLY | O_DIRECTORY);
	assert_true(dirfd >= 0);
	vma_list_init(&l);
	assert_int_equal(read_smaps(dirfd, &buf, &cap, &l), 0);
	assert_true(cap > SMAPS_KEEP_BYTES);
	assert_true(l.n >= 2 * N);
	vma_list_clear(&l);
	assert_true(smaps_trim(&buf, &cap, &l, SMAPS_KEEP_BYTES) > SMAPS_KEEP_BYTES);
	assert_null(buf);
	assert_int_equal(cap, 0);
	munmap(area, (size_t)(2 * N * page));

	/* A small process afterwards: read works again, and nothing is trimmed. */
	assert_int_equal(read_smaps(dirfd, &buf, &cap, &l), 0);
	assert_true(l.n > 0);
	assert_true(cap <= SMAPS_KEEP_BYTES);
	char *kept = buf;
	vma_list_clear(&l);
	assert_int_equal(smaps_trim(&buf, &cap, &l, SMAPS_KEEP_BYTES), 0);
	assert_ptr_equal(buf, kept);
	/* keep = 0 frees everything that is allocated. */
	assert_true(smaps_trim(&buf, &cap, &l, 0) > 0);
	assert_null(buf);
	assert_null(l.v);
	close(dirfd);
	vma_list_free(&l);
}

static void test_read_smaps_gone(void **state)
{
	(void)state;
	char *buf = NULL;
	size_t cap = 0;
	struct vma_list l;
	vma_list_init(&l);

	/* No smaps in this directory. */
	int tmp = open("/", O_RDONLY | O_DIRECTORY);
	assert_true(tmp >= 0);
	assert_int_equal(read_smaps(tmp, &buf, &cap, &l), -ENOENT);
	close(tmp);

	/* A process that exited and was reaped while we held its directory. */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	int dirfd = open(path, O_RDONLY | O_DIRECTORY);
	assert_true(dirfd >= 0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	int ret = read_smaps(dirfd, &buf, &cap, &l);
	assert_true(ret == -ESRCH || ret == -ENOENT);
	assert_int_equal(l.n, 0);
	close(dirfd);
	vma_list_free(&l);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_capture_anon),
	    cmocka_unit_test(test_capture_shmem),
	    cmocka_unit_test(test_capture_files_and_special),
	    cmocka_unit_test(test_cat_process),
	    cmocka_unit_test(test_synthetic),
	    cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_hostile_values),
	    cmocka_unit_test(test_every_prefix),
	    cmocka_unit_test(test_random_input),
	    cmocka_unit_test(test_vmflags),
	    cmocka_unit_test(test_list_reuse_and_append),
	    cmocka_unit_test(test_read_smaps_self),
	    cmocka_unit_test(test_read_smaps_gone),
	    cmocka_unit_test(test_trim_after_large_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
