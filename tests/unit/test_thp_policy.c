/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thp_policy: every cell of enabled (madvise/always/never) × a plain, an hg
 * and an nh VMA × prctl none/completely/except-advised × scope, for
 * anonymous memory, shmem (shmem_enabled advise/never/deny and more) and
 * files; when THPeligible is trusted; how the prctl mode is inferred; the
 * sysfs reader on a fake tree with recorded originals; the start-up line. */
#include <errno.h>
#include <fcntl.h>
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

#include "khugepaged.h"
#include "thp_policy.h"
#include "units.h"
#include "vma_eligibility.h"

#define BASE UINT64_C(0x7f0000000000)

static const enum thp_prctl prctls[3] = {THP_PRCTL_NONE, THP_PRCTL_COMPLETELY, THP_PRCTL_EXCEPT_ADVISED};
static const uint64_t advice[3] = {0, VMF(HG), VMF(NH)}; /* plain, hg, nh */

static struct vma mkvma(enum vma_kind kind, uint64_t flags)
{
	struct vma v = {.start = BASE, .end = BASE + 4 * MIB_BYTES, .kind = (uint8_t)kind, .has_vmflags = true};

	v.vmflags = VMF(RD) | VMF(WR) | flags | (kind == VMA_SHMEM ? VMF(SH) : 0);
	return v;
}

static struct thp_policy pol(enum thp_mode en, enum shmem_mode sh)
{
	struct thp_policy p = {
	    .enabled = (uint8_t)en, .pmd = THP_INHERIT, .shmem = (uint8_t)sh, .pmd_shmem = SHMEM_INHERIT};
	return p;
}

/* want: 9 characters, prctl none/completely/except-advised, each for a
 * plain, an hg and an nh VMA; '1' = allowed. */
static void check_cells(const struct thp_policy *p, enum thp_scope scope, enum vma_kind kind, const char *want,
			const char *what)
{
	for (int m = 0; m < 3; m++) {
		for (int a = 0; a < 3; a++) {
			struct vma v = mkvma(kind, advice[a]);
			bool got = thp_policy_allows(p, scope, &v, prctls[m]);

			if (got != (want[m * 3 + a] == '1'))
				fail_msg("%s scope=%s prctl=%d advice=%d: got %d", what, thp_scope_name(scope), m, a,
					 got);
			/* Not knowing the prctl mode is treated as except-advised. */
			if (prctls[m] == THP_PRCTL_EXCEPT_ADVISED &&
			    thp_policy_allows(p, scope, &v, THP_PRCTL_UNKNOWN) != got)
				fail_msg("%s: unknown differs from except-advised", what);
		}
	}
}

static void test_anon_matrix(void **state)
{
	(void)state;
	static const struct {
		enum thp_mode en;
		const char *kernel, *madvise, *always;
	} rows[] = {
	    {THP_MADVISE, "010000010", "010000010", "110000010"},
	    {THP_ALWAYS, "110000010", "010000010", "110000010"},
	    {THP_NEVER, "000000000", "010000010", "110000010"},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct thp_policy p = pol(rows[i].en, SHMEM_NEVER);

		check_cells(&p, THP_SCOPE_KERNEL, VMA_ANON, rows[i].kernel, thp_mode_name(rows[i].en));
		check_cells(&p, THP_SCOPE_MADVISE, VMA_ANON, rows[i].madvise, thp_mode_name(rows[i].en));
		check_cells(&p, THP_SCOPE_ALWAYS, VMA_ANON, rows[i].always, thp_mode_name(rows[i].en));
	}
}

static void test_anon_per_size(void **state)
{
	(void)state;
	struct thp_policy p = pol(THP_NEVER, SHMEM_NEVER);

	p.pmd = THP_ALWAYS; /* the per-size file wins over the top level */
	check_cells(&p, THP_SCOPE_KERNEL, VMA_ANON, "110000010", "pmd=always");
	p.pmd = THP_MADVISE;
	check_cells(&p, THP_SCOPE_KERNEL, VMA_ANON, "010000010", "pmd=madvise");
	p = pol(THP_ALWAYS, SHMEM_NEVER);
	p.pmd = THP_NEVER;
	check_cells(&p, THP_SCOPE_KERNEL, VMA_ANON, "000000000", "pmd=never");
	check_cells(&p, THP_SCOPE_MADVISE, VMA_ANON, "010000010", "pmd=never");
}

static void test_shmem_matrix(void **state)
{
	(void)state;
	static const struct {
		enum shmem_mode sh;
		const char *kernel, *madvise, *always;
	} rows[] = {
	    {SHMEM_ADVISE, "010000010", "010000010", "010000010"},
	    {SHMEM_NEVER, "000000000", "000000000", "000000000"},
	    {SHMEM_DENY, "000000000", "000000000", "000000000"},
	    {SHMEM_ALWAYS, "110000010", "110000010", "110000010"},
	    {SHMEM_WITHIN_SIZE, "110000010", "110000010", "110000010"},
	    {SHMEM_FORCE, "110000010", "110000010", "110000010"},
	};
	/* shmem ignores enabled: the same answers under each; and the scopes,
	 * which stand in for enabled only (scope = madvise does not override
	 * shmem_enabled = never). */
	static const enum thp_mode ens[] = {THP_MADVISE, THP_ALWAYS, THP_NEVER};
	for (size_t e = 0; e < 3; e++) {
		for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
			struct thp_policy p = pol(ens[e], rows[i].sh);

			check_cells(&p, THP_SCOPE_KERNEL, VMA_SHMEM, rows[i].kernel, shmem_mode_name(rows[i].sh));
			check_cells(&p, THP_SCOPE_MADVISE, VMA_SHMEM, rows[i].madvise, shmem_mode_name(rows[i].sh));
			check_cells(&p, THP_SCOPE_ALWAYS, VMA_SHMEM, rows[i].always, shmem_mode_name(rows[i].sh));
		}
	}
}

static void test_shmem_per_size(void **state)
{
	(void)state;
	struct thp_policy p = pol(THP_MADVISE, SHMEM_NEVER);

	p.pmd_shmem = SHMEM_ALWAYS;
	check_cells(&p, THP_SCOPE_KERNEL, VMA_SHMEM, "110000010", "pmd_shmem=always");
	p.pmd_shmem = SHMEM_ADVISE;
	check_cells(&p, THP_SCOPE_KERNEL, VMA_SHMEM, "010000010", "pmd_shmem=advise");
	p = pol(THP_MADVISE, SHMEM_ALWAYS);
	p.pmd_shmem = SHMEM_NEVER;
	check_cells(&p, THP_SCOPE_KERNEL, VMA_SHMEM, "000000000", "pmd_shmem=never");
	/* force reaches only sizes left at inherit. */
	p = pol(THP_MADVISE, SHMEM_FORCE);
	p.pmd_shmem = SHMEM_NEVER;
	check_cells(&p, THP_SCOPE_KERNEL, VMA_SHMEM, "000000000", "force, pmd_shmem=never");
}

static struct vma mkshm(enum shmem_source src, uint8_t huge, uint64_t flags)
{
	struct vma v = mkvma(VMA_SHMEM, flags);

	v.shmem_src = (uint8_t)src;
	v.mount_huge = huge;
	return v;
}

static void check_shm(const struct thp_policy *p, enum shmem_source src, uint8_t huge, const char *want,
		      const char *what)
{
	static const enum thp_scope scopes[] = {THP_SCOPE_KERNEL, THP_SCOPE_MADVISE, THP_SCOPE_ALWAYS};

	for (size_t s = 0; s < 3; s++)
		for (int a = 0; a < 3; a++) {
			struct vma v = mkshm(src, huge, advice[a]);
			bool got = thp_policy_allows(p, scopes[s], &v, THP_PRCTL_NONE);

			if (got != (want[a] == '1'))
				fail_msg("%s scope=%s advice=%d: got %d", what, thp_scope_name(scopes[s]), a, got);
		}
}

/* A file on a tmpfs mount follows the mount's huge=, memfd and SysV shm
 * shmem_enabled; neither the per-size shmem files (shared anonymous memory
 * only), nor enabled, nor the scope. deny and force override all. */
static void test_shmem_sources(void **state)
{
	(void)state;
	struct thp_policy p = pol(THP_ALWAYS, SHMEM_ADVISE);

	p.pmd_shmem = SHMEM_ALWAYS;
	check_shm(&p, SHMEM_SRC_MOUNT, SHMEM_NEVER, "000", "huge=never");
	check_shm(&p, SHMEM_SRC_MOUNT, VMA_HUGE_UNKNOWN, "000", "huge unknown");
	check_shm(&p, SHMEM_SRC_MOUNT, SHMEM_ADVISE, "010", "huge=advise");
	check_shm(&p, SHMEM_SRC_MOUNT, SHMEM_WITHIN_SIZE, "110", "huge=within_size");
	check_shm(&p, SHMEM_SRC_MOUNT, SHMEM_ALWAYS, "110", "huge=always");
	check_shm(&p, SHMEM_SRC_INTERNAL, VMA_HUGE_UNKNOWN, "010", "memfd, shmem_enabled=advise");
	check_shm(&p, SHMEM_SRC_ANON, VMA_HUGE_UNKNOWN, "110", "shared anon, pmd shmem always");
	p.shmem = SHMEM_NEVER;
	check_shm(&p, SHMEM_SRC_INTERNAL, VMA_HUGE_UNKNOWN, "000", "memfd, shmem_enabled=never");
	check_shm(&p, SHMEM_SRC_MOUNT, SHMEM_ALWAYS, "110", "huge=always, shmem_enabled=never");
	p.shmem = SHMEM_FORCE;
	check_shm(&p, SHMEM_SRC_MOUNT, SHMEM_NEVER, "110", "force over huge=never");
	check_shm(&p, SHMEM_SRC_INTERNAL, VMA_HUGE_UNKNOWN, "110", "force, memfd");
	p.shmem = SHMEM_DENY;
	check_shm(&p, SHMEM_SRC_MOUNT, SHMEM_ALWAYS, "000", "deny over huge=always");
}

static void test_file_and_special(void **state)
{
	(void)state;
	struct thp_policy p = pol(THP_MADVISE, SHMEM_NEVER);

	check_cells(&p, THP_SCOPE_KERNEL, VMA_FILE, "010000010", "file madvise");
	p.enabled = THP_ALWAYS;
	p.pmd = THP_NEVER; /* the anon per-size file does not govern files */
	check_cells(&p, THP_SCOPE_KERNEL, VMA_FILE, "110000010", "file always");
	p.enabled = THP_NEVER;
	check_cells(&p, THP_SCOPE_KERNEL, VMA_FILE, "000000000", "file never");
	check_cells(&p, THP_SCOPE_MADVISE, VMA_FILE, "010000010", "file never, scope madvise");
	check_cells(&p, THP_SCOPE_ALWAYS, VMA_SPECIAL, "000000000", "special");

	struct vma v = mkvma(VMA_ANON, VMF(HG));
	v.has_vmflags = false; /* cannot tell nh apart */
	assert_false(thp_policy_allows(&p, THP_SCOPE_ALWAYS, &v, THP_PRCTL_NONE));
}

/* thp_vma_check: the kernel's THPeligible while the original policy is in
 * force, our own evaluation of the original after the daemon changed it. */
static void test_vma_check(void **state)
{
	(void)state;
	struct thp_state st = {.live = pol(THP_MADVISE, SHMEM_NEVER), .orig = pol(THP_MADVISE, SHMEM_NEVER)};
	struct vma plain = mkvma(VMA_ANON, 0), hg = mkvma(VMA_ANON, VMF(HG));

	plain.has_thpeligible = hg.has_thpeligible = true;
	hg.thp_eligible = true;
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_KERNEL, &plain, THP_PRCTL_UNKNOWN), SCAN_THP_POLICY);
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_KERNEL, &hg, THP_PRCTL_UNKNOWN), SCAN_CANDIDATE);
	/* THPeligible is "some order" since 6.8: with only an mTHP size
	 * enabled it reads 1 where PMD-size pages are not allowed. */
	plain.thp_eligible = true;
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_KERNEL, &plain, THP_PRCTL_UNKNOWN), SCAN_THP_POLICY);
	st.live.pmd = st.orig.pmd = THP_ALWAYS; /* hugepages-2048kB/enabled=always */
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_KERNEL, &plain, THP_PRCTL_UNKNOWN), SCAN_CANDIDATE);
	st.live.pmd = st.orig.pmd = THP_INHERIT;
	hg.thp_eligible = false; /* e.g. prctl completely, or a policy we do not model */
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_KERNEL, &hg, THP_PRCTL_NONE), SCAN_THP_POLICY);

	/* khugepaged = off: enabled and the per-size file now never, THPeligible
	 * 0 everywhere; the original madvise policy still applies. */
	st.live.enabled = THP_NEVER;
	st.live.pmd = THP_NEVER;
	plain.thp_eligible = hg.thp_eligible = false;
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_KERNEL, &plain, THP_PRCTL_NONE), SCAN_THP_POLICY);
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_KERNEL, &hg, THP_PRCTL_UNKNOWN), SCAN_CANDIDATE);
	st.orig.enabled = THP_ALWAYS;
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_KERNEL, &plain, THP_PRCTL_NONE), SCAN_CANDIDATE);
	/* Unknown: refused by the safe rule, under its own name. */
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_KERNEL, &plain, THP_PRCTL_UNKNOWN), SCAN_PRCTL_UNKNOWN);
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_KERNEL, &plain, THP_PRCTL_EXCEPT_ADVISED), SCAN_THP_POLICY);
	assert_true(thp_prctl_matters(&st, THP_SCOPE_KERNEL, &plain, 1));
	assert_false(thp_prctl_matters(&st, THP_SCOPE_KERNEL, &hg, 1)); /* advised: allowed either way */

	/* Shmem knobs are never the daemon's: its THPeligible still answers,
	 * in every scope. */
	struct vma shm = mkvma(VMA_SHMEM, 0);
	st.live.shmem = st.orig.shmem = SHMEM_ALWAYS;
	shm.has_thpeligible = shm.thp_eligible = true;
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_KERNEL, &shm, THP_PRCTL_UNKNOWN), SCAN_CANDIDATE);
	shm.thp_eligible = false; /* e.g. except-advised */
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_ALWAYS, &shm, THP_PRCTL_NONE), SCAN_THP_POLICY);

	/* Issue 16 defect 5: an hg file on a huge=never tmpfs at /tmp under
	 * khugepaged = off reads THPeligible 0, and stays out whatever the
	 * recorded enabled says; the same VMA taken for a file was collapsed. */
	struct vma tmpf = mkshm(SHMEM_SRC_MOUNT, SHMEM_NEVER, VMF(HG));
	tmpf.has_thpeligible = true;
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_KERNEL, &tmpf, THP_PRCTL_NONE), SCAN_THP_POLICY);
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_MADVISE, &tmpf, THP_PRCTL_NONE), SCAN_THP_POLICY);
	tmpf.mount_huge = SHMEM_ADVISE;
	tmpf.thp_eligible = true;
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_KERNEL, &tmpf, THP_PRCTL_NONE), SCAN_CANDIDATE);
	st.live.shmem = st.orig.shmem = SHMEM_NEVER;

	/* Scopes other than kernel do not use THPeligible. */
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_MADVISE, &hg, THP_PRCTL_UNKNOWN), SCAN_CANDIDATE);
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_MADVISE, &plain, THP_PRCTL_NONE), SCAN_THP_POLICY);
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_ALWAYS, &plain, THP_PRCTL_NONE), SCAN_CANDIDATE);

	/* What the kernel refuses even to MADV_COLLAPSE is ineligible. */
	struct vma nh = mkvma(VMA_ANON, VMF(NH));
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_ALWAYS, &nh, THP_PRCTL_NONE), SCAN_INELIGIBLE);
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_ALWAYS, &hg, THP_PRCTL_COMPLETELY), SCAN_INELIGIBLE);
	st.live.shmem = st.orig.shmem = SHMEM_DENY;
	shm.thp_eligible = false;
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_ALWAYS, &shm, THP_PRCTL_NONE), SCAN_INELIGIBLE);
}

static void test_prctl_infer(void **state)
{
	(void)state;
	struct thp_policy madv = pol(THP_MADVISE, SHMEM_NEVER), always = pol(THP_ALWAYS, SHMEM_NEVER);
	struct vma v[3] = {mkvma(VMA_ANON, VMF(HG)), mkvma(VMA_ANON, 0), mkvma(VMA_FILE, 0)};

	for (int i = 0; i < 3; i++)
		v[i].has_thpeligible = true;
	v[0].thp_eligible = true; /* hg: says nothing about except-advised */
	assert_int_equal(thp_prctl_infer(&madv, false, v, 3), THP_PRCTL_COMPLETELY);
	/* Before 6.18 status THP_enabled is exact. */
	assert_int_equal(thp_prctl_from_status(true), THP_PRCTL_NONE);
	assert_int_equal(thp_prctl_from_status(false), THP_PRCTL_COMPLETELY);
	/* enabled=madvise: a plain VMA reads 0 whatever the process did. */
	assert_int_equal(thp_prctl_infer(&madv, true, v, 3), THP_PRCTL_UNKNOWN);
	/* enabled=always: 0 on a plain anonymous VMA means except-advised... */
	assert_int_equal(thp_prctl_infer(&always, true, v, 3), THP_PRCTL_EXCEPT_ADVISED);
	/* ...unless it holds no whole 2 MiB block (0 for its size). */
	v[1].end = v[1].start + MIB_BYTES;
	assert_int_equal(thp_prctl_infer(&always, true, v, 3), THP_PRCTL_UNKNOWN);
	/* A file VMA's 0 proves nothing (a writer, the mount). */
	v[1] = mkvma(VMA_ANON, VMF(NH));
	v[1].has_thpeligible = true;
	assert_int_equal(thp_prctl_infer(&always, true, v, 3), THP_PRCTL_UNKNOWN);
	/* A 1 on any non-hg VMA proves the flag is not set. */
	v[2].thp_eligible = true;
	assert_int_equal(thp_prctl_infer(&madv, true, v, 3), THP_PRCTL_NONE);
	/* Contrary evidence: the safe answer wins. */
	struct vma w[2] = {mkvma(VMA_FILE, 0), mkvma(VMA_ANON, 0)};
	w[0].has_thpeligible = w[0].thp_eligible = true;
	w[1].has_thpeligible = true;
	assert_int_equal(thp_prctl_infer(&always, true, w, 2), THP_PRCTL_EXCEPT_ADVISED);
	/* Without THPeligible (before 4.19) nothing is known. */
	w[0].has_thpeligible = w[1].has_thpeligible = false;
	assert_int_equal(thp_prctl_infer(&always, true, w, 2), THP_PRCTL_UNKNOWN);
}

static void test_parse_modes(void **state)
{
	(void)state;
	enum thp_mode t;
	enum shmem_mode s;

	assert_int_equal(parse_thp_mode("madvise", false, &t), 0);
	assert_int_equal(t, THP_MADVISE);
	assert_int_equal(parse_thp_mode("inherit", false, &t), -EINVAL);
	assert_int_equal(parse_thp_mode("inherit", true, &t), 0);
	assert_int_equal(t, THP_INHERIT);
	assert_int_equal(parse_thp_mode("", false, &t), -EINVAL);
	assert_int_equal(parse_thp_mode("Always", false, &t), -EINVAL);
	assert_int_equal(parse_shmem_mode("deny", false, &s), 0);
	assert_int_equal(s, SHMEM_DENY);
	assert_int_equal(parse_shmem_mode("deny", true, &s), -EINVAL);
	assert_int_equal(parse_shmem_mode("force", true, &s), -EINVAL);
	assert_int_equal(parse_shmem_mode("within_size", true, &s), 0);
	assert_int_equal(parse_shmem_mode("inherit", false, &s), -EINVAL);
	assert_string_equal(shmem_mode_name(SHMEM_WITHIN_SIZE), "within_size");
	assert_string_equal(thp_mode_name((enum thp_mode)42), "?");
}

static char tmp[64];

static void put(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_state_read(void **state)
{
	(void)state;
	struct thp_state st;
	struct khugepaged_saved saved = {.mode = KHUGEPAGED_OFF, .n = 2};
	char path[256];

	snprintf(tmp, sizeof(tmp), "/tmp/hc-thp-policy-XXXXXX");
	assert_non_null(mkdtemp(tmp));
	assert_int_equal(thp_state_read(tmp, NULL, &st), -ENOENT);
	put("enabled", "always madvise [never]\n");
	put("shmem_enabled", "always within_size advise never [deny] force\n");
	/* No per-size files: inherit. */
	assert_int_equal(thp_state_read(tmp, NULL, &st), 0);
	assert_int_equal(st.live.enabled, THP_NEVER);
	assert_int_equal(st.live.pmd, THP_INHERIT);
	assert_int_equal(st.live.shmem, SHMEM_DENY);
	assert_int_equal(st.live.pmd_shmem, SHMEM_INHERIT);
	assert_memory_equal(&st.live, &st.orig, sizeof(st.live));

	snprintf(path, sizeof(path), "%s/hugepages-2048kB", tmp);
	assert_int_equal(mkdir(path, 0755), 0);
	put("hugepages-2048kB/enabled", "always inherit madvise [never]\n");
	put("hugepages-2048kB/shmem_enabled", "always [inherit] within_size advise never\n");
	/* What the daemon recorded before khugepaged = off. */
	snprintf(saved.saved[0].file, sizeof(saved.saved[0].file), "hugepages-2048kB/enabled");
	snprintf(saved.saved[0].value, sizeof(saved.saved[0].value), "inherit");
	snprintf(saved.saved[1].file, sizeof(saved.saved[1].file), "enabled");
	snprintf(saved.saved[1].value, sizeof(saved.saved[1].value), "madvise");
	assert_int_equal(thp_state_read(tmp, &saved, &st), 0);
	assert_int_equal(st.live.pmd, THP_NEVER);
	assert_int_equal(st.orig.pmd, THP_INHERIT);
	assert_int_equal(st.orig.enabled, THP_MADVISE);
	assert_int_equal(st.orig.shmem, SHMEM_DENY);

	/* A bad file fails whole and leaves the state as it was. */
	put("shmem_enabled", "[sometimes]\n");
	struct thp_state before = st;
	assert_int_equal(thp_state_read(tmp, &saved, &st), -EINVAL);
	assert_memory_equal(&st, &before, sizeof(st));
	put("shmem_enabled", "no brackets\n");
	assert_int_equal(thp_state_read(tmp, &saved, &st), -EINVAL);

	unlink(strcat(strcpy(path, tmp), "/hugepages-2048kB/enabled"));
	unlink(strcat(strcpy(path, tmp), "/hugepages-2048kB/shmem_enabled"));
	rmdir(strcat(strcpy(path, tmp), "/hugepages-2048kB"));
	unlink(strcat(strcpy(path, tmp), "/enabled"));
	unlink(strcat(strcpy(path, tmp), "/shmem_enabled"));
	assert_int_equal(rmdir(tmp), 0);
}

/* The refresh's kept fds: a knob changed in place is seen at the next read
 * through the same fd; a read that fails on a kept fd is tried again on a
 * fresh open; an absent per-size file stays absent until the files are
 * closed. */
static void test_state_read_kept(void **state)
{
	(void)state;
	struct thp_files f;
	struct thp_state st;
	char path[256], buf[32];
	int fd, dirfd;

	snprintf(tmp, sizeof(tmp), "/tmp/hc-thp-kept-XXXXXX");
	assert_non_null(mkdtemp(tmp));
	thp_files_init(&f);
	assert_int_equal(thp_state_read_kept(&f, tmp, NULL, &st), -ENOENT);
	put("enabled", "always madvise [never]\n");
	put("shmem_enabled", "always within_size advise [never] deny force\n");
	/* enabled is looked for again, and found. */
	assert_int_equal(thp_state_read_kept(&f, tmp, NULL, &st), 0);
	assert_int_equal(st.live.enabled, THP_NEVER);
	assert_int_equal(st.live.pmd, THP_INHERIT);
	fd = f.fd[THP_F_ENABLED];
	assert_true(fd >= 0);

	/* Changed in place, as a sysfs knob is: the same fd reads the new value. */
	put("enabled", "always [madvise] never\n");
	assert_int_equal(thp_state_read_kept(&f, tmp, NULL, &st), 0);
	assert_int_equal(st.live.enabled, THP_MADVISE);
	assert_int_equal(f.fd[THP_F_ENABLED], fd);
	/* No path walk: the kept fd reads the file even once it is unlinked. */
	assert_int_equal(unlink(strcat(strcpy(path, tmp), "/enabled")), 0);
	assert_int_equal(thp_state_read_kept(&f, tmp, NULL, &st), 0);
	assert_int_equal(st.live.enabled, THP_MADVISE);
	put("enabled", "[always] madvise never\n");

	/* A kept fd that fails (here: a directory in its place) is closed, and
	 * the file read once more on a fresh open. */
	dirfd = open(tmp, O_RDONLY | O_DIRECTORY);
	assert_true(dirfd >= 0);
	assert_int_equal(dup2(dirfd, fd), fd);
	close(dirfd);
	assert_int_equal(thp_state_read_kept(&f, tmp, NULL, &st), 0);
	assert_int_equal(st.live.enabled, THP_ALWAYS);
	assert_true(f.fd[THP_F_ENABLED] >= 0);

	/* The per-size files appear: absent they stay, until closed. */
	snprintf(path, sizeof(path), "%s/hugepages-2048kB", tmp);
	assert_int_equal(mkdir(path, 0755), 0);
	put("hugepages-2048kB/enabled", "always inherit [madvise] never\n");
	put("hugepages-2048kB/shmem_enabled", "always inherit within_size [advise] never\n");
	assert_int_equal(thp_state_read_kept(&f, tmp, NULL, &st), 0);
	assert_int_equal(st.live.pmd, THP_INHERIT);
	assert_int_equal(st.live.pmd_shmem, SHMEM_INHERIT);
	thp_files_close(&f);
	assert_int_equal(thp_state_read_kept(&f, tmp, NULL, &st), 0);
	assert_int_equal(st.live.pmd, THP_MADVISE);
	assert_int_equal(st.live.pmd_shmem, SHMEM_ADVISE);

	/* khugepaged/max_ptes_none, read the same way. */
	assert_int_equal(thp_files_read(&f, tmp, THP_F_MAX_PTES_NONE, buf, sizeof(buf)), -ENOENT);
	snprintf(path, sizeof(path), "%s/khugepaged", tmp);
	assert_int_equal(mkdir(path, 0755), 0);
	put("khugepaged/max_ptes_none", "511\n");
	assert_int_equal(thp_files_read(&f, tmp, THP_F_MAX_PTES_NONE, buf, sizeof(buf)), 4);
	assert_string_equal(buf, "511\n");
	put("khugepaged/max_ptes_none", "0\n");
	assert_int_equal(thp_files_read(&f, tmp, THP_F_MAX_PTES_NONE, buf, sizeof(buf)), 2);
	assert_string_equal(buf, "0\n");
	thp_files_close(&f);
	for (int i = 0; i < THP_NFILES; i++)
		assert_int_equal(f.fd[i], -1);

	unlink(strcat(strcpy(path, tmp), "/khugepaged/max_ptes_none"));
	rmdir(strcat(strcpy(path, tmp), "/khugepaged"));
	unlink(strcat(strcpy(path, tmp), "/hugepages-2048kB/enabled"));
	unlink(strcat(strcpy(path, tmp), "/hugepages-2048kB/shmem_enabled"));
	rmdir(strcat(strcpy(path, tmp), "/hugepages-2048kB"));
	unlink(strcat(strcpy(path, tmp), "/enabled"));
	unlink(strcat(strcpy(path, tmp), "/shmem_enabled"));
	assert_int_equal(rmdir(tmp), 0);
}

static void test_describe(void **state)
{
	(void)state;
	struct thp_state st = {.live = pol(THP_MADVISE, SHMEM_NEVER), .orig = pol(THP_MADVISE, SHMEM_NEVER)};
	char line[512];

	assert_true(thp_policy_describe(&st, THP_SCOPE_KERNEL, false, line, sizeof(line)));
	assert_string_equal(
	    line, "THP enabled=madvise, shmem_enabled=never, scope=kernel: collapsing MADV_HUGEPAGE memory only");
	st.live.enabled = THP_NEVER;
	st.orig.shmem = st.live.shmem = SHMEM_ADVISE;
	st.orig.enabled = THP_ALWAYS;
	assert_true(thp_policy_describe(&st, THP_SCOPE_KERNEL, false, line, sizeof(line)));
	assert_string_equal(line, "THP enabled=always, shmem_enabled=advise (as before the daemon changed them), "
				  "scope=kernel: collapsing anonymous: all memory but MADV_NOHUGEPAGE; shmem: "
				  "MADV_HUGEPAGE memory only (but without the BPF prctl iterator no process can "
				  "be shown not to have set PR_THP_DISABLE_EXCEPT_ADVISED: plain memory is not "
				  "collapsed, see prctl_unknown)");
	st.live = st.orig = pol(THP_NEVER, SHMEM_NEVER);
	assert_false(thp_policy_describe(&st, THP_SCOPE_KERNEL, false, line, sizeof(line)));
	assert_non_null(strstr(line, "collapsing nothing"));
	assert_true(thp_policy_describe(&st, THP_SCOPE_MADVISE, false, line, sizeof(line)));
	st.live.shmem = st.orig.shmem = SHMEM_DENY;
	assert_true(thp_policy_describe(&st, THP_SCOPE_ALWAYS, false, line, sizeof(line)));
	assert_non_null(
	    strstr(line, "shmem_enabled=deny, scope=always: collapsing all memory but MADV_NOHUGEPAGE (but without"));
	st.live.enabled = THP_ALWAYS; /* THPeligible tells: no caveat */
	assert_true(thp_policy_describe(&st, THP_SCOPE_ALWAYS, false, line, sizeof(line)));
	assert_null(strstr(line, "without"));
	/* khugepaged = off on an enabled=always host: THPeligible reads 0
	 * everywhere, so without the iterator no plain memory is collapsed,
	 * and the line says so; with it, no caveat. */
	st.orig.enabled = THP_ALWAYS;
	st.live.enabled = THP_NEVER;
	assert_true(thp_policy_describe(&st, THP_SCOPE_KERNEL, false, line, sizeof(line)));
	assert_non_null(strstr(line, "plain memory is not collapsed, see prctl_unknown"));
	assert_true(thp_policy_describe(&st, THP_SCOPE_KERNEL, true, line, sizeof(line)));
	assert_non_null(strstr(line, "collapsing all memory but MADV_NOHUGEPAGE"));
	assert_null(strstr(line, "without"));
	assert_null(strstr(line, "prctl"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_anon_matrix),     cmocka_unit_test(test_anon_per_size),
	    cmocka_unit_test(test_shmem_matrix),    cmocka_unit_test(test_shmem_per_size),
	    cmocka_unit_test(test_shmem_sources),   cmocka_unit_test(test_file_and_special),
	    cmocka_unit_test(test_vma_check),       cmocka_unit_test(test_prctl_infer),
	    cmocka_unit_test(test_parse_modes),     cmocka_unit_test(test_state_read),
	    cmocka_unit_test(test_state_read_kept), cmocka_unit_test(test_describe),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
