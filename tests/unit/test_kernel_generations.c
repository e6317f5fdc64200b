/* The kernels fleets run, from fixtures written from each version's own
 * source (tests/fixtures/kernels/README.md): what the start line says, and
 * the policy verdict on each generation's smaps under its sysfs, with its
 * THPeligible semantics (PMD only in 6.1; any order from 6.8) and its prctl
 * (status THP_enabled exact before 6.18; inferred from 6.18). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernel_features.h"
#include "procs.h"
#include "smaps_scan.h"
#include "thp_policy.h"

static char buf[1 << 16];

static size_t load(const char *ver, const char *name)
{
	char path[512];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/kernels/%s/%s", HC_FIXTURES, ver, name);
	f = fopen(path, "r");
	if (!f)
		fail_msg("no fixture %s", path);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return n;
}

/* The probe answers of a generation, from its "probes" file. */
struct probes {
	int v[4];
};

static int fake_probe(enum kernel_probe_what what, void *arg)
{
	const struct probes *p = arg;

	return p->v[what];
}

static void load_probes(const char *ver, struct probes *p)
{
	static const char *const names[] = {"process_madvise", "madv_collapse", "pagemap_scan", "except_advised"};

	load(ver, "probes");
	for (int i = 0; i < 4; i++) {
		const char *at = strstr(buf, names[i]);

		assert_non_null(at);
		p->v[i] = at[strlen(names[i]) + 1] - '0';
	}
}

/* sysfs_name: the generation's "sysfs" or one of its variants. */
static void detect_in(const char *ver, const char *sysfs_name, struct kernel_features *f)
{
	static struct probes p;
	char sysfs[512], release[128];
	struct kernel_probe kp = {.sysfs_thp = sysfs, .release = release, .probe = fake_probe, .arg = &p};

	load_probes(ver, &p);
	load(ver, "release");
	snprintf(release, sizeof(release), "%.*s", (int)strcspn(buf, "\n"), buf);
	snprintf(sysfs, sizeof(sysfs), "%s/kernels/%s/%s", HC_FIXTURES, ver, sysfs_name);
	assert_int_equal(kernel_features_detect(&kp, f), 0);
}

static void detect(const char *ver, struct kernel_features *f)
{
	detect_in(ver, "sysfs", f);
}

/* What each generation's scope=kernel verdict is on its four VMAs: plain
 * anonymous (8 MiB), MADV_HUGEPAGE anonymous (8 MiB), an hg memfd (4 MiB)
 * and a plain 1 MiB anonymous VMA; prctl mode as the daemon finds it. */
static void verdicts(const char *ver, const struct kernel_features *f, const enum scan_result want[4],
		     enum thp_prctl want_prctl)
{
	struct thp_state st;
	struct vma_list l;
	char sysfs[512];
	enum thp_prctl m;
	size_t n;
	int thp_enabled;

	snprintf(sysfs, sizeof(sysfs), "%s/kernels/%s/sysfs", HC_FIXTURES, ver);
	assert_int_equal(thp_state_read(sysfs, NULL, &st), 0);
	n = load(ver, "status");
	thp_enabled = parse_status_thp_enabled(buf, n);
	n = load(ver, "smaps");
	vma_list_init(&l);
	assert_int_equal(parse_smaps_buf(buf, n, &l), 0);
	assert_int_equal(l.n, 4);
	m = f->except_advised ? thp_prctl_infer(&st.live, thp_enabled, l.v, l.n) : thp_prctl_from_status(thp_enabled);
	assert_int_equal(m, want_prctl);
	for (size_t i = 0; i < 4; i++) {
		enum scan_result r = thp_vma_check(&st, THP_SCOPE_KERNEL, &l.v[i], m);

		if (r != want[i])
			fail_msg("%s VMA %zu: %s, want %s", ver, i, scan_result_name(r), scan_result_name(want[i]));
	}
	vma_list_free(&l);
}

static void test_6_1(void **state)
{
	(void)state;
	static const enum scan_result want[4] = {SCAN_THP_POLICY, SCAN_CANDIDATE, SCAN_THP_POLICY, SCAN_THP_POLICY};
	struct kernel_features f;
	char line[512];

	detect("6.1", &f);
	kernel_features_describe(&f, line, sizeof(line));
	assert_string_equal(line, "kernel 6.1.0-28-amd64: process_madvise yes, MADV_COLLAPSE yes, PAGEMAP_SCAN no "
				  "(pagemap reads), per-size THP knobs no, except-advised prctl no (status "
				  "THP_enabled is exact), khugepaged mTHP collapse no; THP sizes enabled: anonymous -, "
				  "shmem -");
	assert_true(kernel_features_usable(&f, line, sizeof(line)));
	assert_int_equal(f.anon_orders, 0);
	/* THPeligible is hugepage_vma_check(smaps=true): the PMD answer. */
	verdicts("6.1", &f, want, THP_PRCTL_NONE);
}

/* 6.1 kernel/sys.c: PR_SET_THP_DISABLE sets MMF_DISABLE_THP, fs/proc/array.c
 * task_thp_status() prints THP_enabled 0 for it, and hugepage_vma_check()
 * then answers 0 everywhere: the status line alone decides, exactly. */
static void test_6_1_prctl_disabled(void **state)
{
	(void)state;
	static const char status[] = "Name:\tworker\nTHP_enabled:\t0\nThreads:\t1\n";
	struct thp_state st;
	struct vma_list l;
	char sysfs[512];
	enum thp_prctl m;
	size_t n;

	m = thp_prctl_from_status(parse_status_thp_enabled(status, sizeof(status) - 1));
	assert_int_equal(m, THP_PRCTL_COMPLETELY);
	snprintf(sysfs, sizeof(sysfs), "%s/kernels/6.1/sysfs", HC_FIXTURES);
	assert_int_equal(thp_state_read(sysfs, NULL, &st), 0);
	n = load("6.1", "smaps");
	vma_list_init(&l);
	assert_int_equal(parse_smaps_buf(buf, n, &l), 0);
	for (size_t i = 0; i < l.n; i++) {
		l.v[i].thp_eligible = false; /* what 6.1 prints for such a process */
		assert_int_equal(thp_vma_check(&st, THP_SCOPE_KERNEL, &l.v[i], m), SCAN_INELIGIBLE);
		assert_int_equal(thp_vma_check(&st, THP_SCOPE_ALWAYS, &l.v[i], m), SCAN_INELIGIBLE);
	}
	vma_list_free(&l);
}

static void test_6_8(void **state)
{
	(void)state;
	/* The plain VMAs read THPeligible 1 for the 64kB size alone: not a
	 * PMD candidate under enabled=madvise. */
	static const enum scan_result want[4] = {SCAN_THP_POLICY, SCAN_CANDIDATE, SCAN_THP_POLICY, SCAN_THP_POLICY};
	struct kernel_features f;
	char line[512];

	detect("6.8", &f);
	kernel_features_describe(&f, line, sizeof(line));
	assert_string_equal(line, "kernel 6.8.0-51-generic: process_madvise yes, MADV_COLLAPSE yes, PAGEMAP_SCAN yes, "
				  "per-size THP knobs yes, except-advised prctl no (status THP_enabled is exact), "
				  "khugepaged mTHP collapse no; THP sizes enabled: anonymous 64kB 2048kB, shmem none");
	assert_int_equal(f.anon_orders, (1u << 4) | (1u << 9));
	assert_int_equal(kernel_mthp_lost(&f, KHUGEPAGED_OFF), 0); /* khugepaged makes PMD pages only */
	verdicts("6.8", &f, want, THP_PRCTL_NONE);
}

/* 6.8 has per-size knobs for anonymous memory only (thpsize_attrs: enabled);
 * shmem makes PMD-size pages as the top-level shmem_enabled says (6.8
 * mm/shmem.c shmem_is_huge()). The start line said "shmem none" whatever
 * shmem_enabled was. Under advise the hg memfd reads THPeligible 1 (what
 * 6.8 prints: shmem_is_huge() is true for VM_HUGEPAGE under advise) and is
 * a candidate. */
static void test_6_8_shmem_top_level(void **state)
{
	(void)state;
	struct kernel_features f;
	struct thp_state st;
	struct vma_list l;
	char line[512], sysfs[512];
	size_t n;

	detect_in("6.8", "sysfs-shmem-advise", &f);
	kernel_features_describe(&f, line, sizeof(line));
	assert_string_equal(line,
			    "kernel 6.8.0-51-generic: process_madvise yes, MADV_COLLAPSE yes, PAGEMAP_SCAN yes, "
			    "per-size THP knobs yes, except-advised prctl no (status THP_enabled is exact), "
			    "khugepaged mTHP collapse no; THP sizes enabled: anonymous 64kB 2048kB, shmem 2048kB");
	assert_int_equal(f.shmem_orders, 1u << 9);
	snprintf(sysfs, sizeof(sysfs), "%s/kernels/6.8/sysfs-shmem-advise", HC_FIXTURES);
	assert_int_equal(thp_state_read(sysfs, NULL, &st), 0);
	assert_int_equal(st.live.pmd_shmem, SHMEM_INHERIT); /* no per-size shmem file */
	n = load("6.8", "smaps");
	vma_list_init(&l);
	assert_int_equal(parse_smaps_buf(buf, n, &l), 0);
	assert_int_equal(l.v[2].kind, VMA_SHMEM);
	l.v[2].thp_eligible = true;
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_KERNEL, &l.v[2], THP_PRCTL_NONE), SCAN_CANDIDATE);
	/* The plain memfd under advise stays 4 KiB in every scope. */
	l.v[2].vmflags &= ~VMF(HG);
	l.v[2].thp_eligible = false;
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_ALWAYS, &l.v[2], THP_PRCTL_NONE), SCAN_THP_POLICY);
	vma_list_free(&l);
}

static void test_6_12(void **state)
{
	(void)state;
	/* hugepages-2048kB/enabled=never: nothing anonymous at PMD size, though
	 * every anonymous VMA reads 1 (64kB inherits always); the memfd
	 * follows shmem_enabled=advise. */
	static const enum scan_result want[4] = {SCAN_THP_POLICY, SCAN_THP_POLICY, SCAN_CANDIDATE, SCAN_THP_POLICY};
	struct kernel_features f;
	char line[512];

	detect("6.12", &f);
	kernel_features_describe(&f, line, sizeof(line));
	assert_string_equal(line,
			    "kernel 6.12.57+deb13-amd64: process_madvise yes, MADV_COLLAPSE yes, PAGEMAP_SCAN yes, "
			    "per-size THP knobs yes, except-advised prctl no (status THP_enabled is exact), "
			    "khugepaged mTHP collapse no; THP sizes enabled: anonymous 64kB, shmem 2048kB");
	/* hugepages-8kB has shmem_enabled only (order 1 is in
	 * THP_ORDERS_ALL_FILE_DEFAULT, not in THP_ORDERS_ALL_ANON). */
	assert_int_equal(f.anon_orders & (1u << 1), 0);
	assert_int_equal(f.shmem_orders, 1u << 9);
	verdicts("6.12", &f, want, THP_PRCTL_NONE);
}

static void test_6_18(void **state)
{
	(void)state;
	/* An except-advised process: its plain 8 MiB VMA reads 0 while
	 * enabled=always allows it, so the daemon knows. */
	static const enum scan_result want[4] = {SCAN_THP_POLICY, SCAN_CANDIDATE, SCAN_THP_POLICY, SCAN_THP_POLICY};
	struct kernel_features f;
	char line[512];

	detect("6.18", &f);
	kernel_features_describe(&f, line, sizeof(line));
	assert_string_equal(line, "kernel 6.18.3: process_madvise yes, MADV_COLLAPSE yes, PAGEMAP_SCAN yes, "
				  "per-size THP knobs yes, except-advised prctl yes, khugepaged mTHP collapse no; THP "
				  "sizes enabled: anonymous 2048kB, shmem none");
	assert_int_equal(f.anon_orders, 1u << 9);
	assert_int_equal(f.shmem_orders, 0); /* hugepages-8kB/shmem_enabled never, shmem_enabled never */
	verdicts("6.18", &f, want, THP_PRCTL_EXCEPT_ADVISED);
}

/* 7.2 collapses to mTHP sizes: idle and off lose them; keep does not. */
static void test_7_2_mthp(void **state)
{
	(void)state;
	struct kernel_features f;
	char names[64];

	detect("6.12", &f);
	assert_int_equal(kernel_mthp_lost(&f, KHUGEPAGED_IDLE), 0);
	snprintf(f.release, sizeof(f.release), "7.2.0");
	f.major = 7;
	f.minor = 2;
	f.mthp_collapse = true;
	assert_int_equal(kernel_mthp_lost(&f, KHUGEPAGED_KEEP), 0);
	assert_int_equal(kernel_mthp_lost(&f, KHUGEPAGED_IDLE), 1u << 4);
	assert_int_equal(kernel_mthp_lost(&f, KHUGEPAGED_OFF), 1u << 4);
	kernel_orders_name(kernel_mthp_lost(&f, KHUGEPAGED_OFF), names, sizeof(names));
	assert_string_equal(names, "64kB");
}

static struct probes no_collapse = {{1, 0, 0, 0}}, no_pmadv = {{0, 0, 0, 0}};

/* Ubuntu 22.04's 5.15 has process_madvise but no MADV_COLLAPSE: refuse,
 * naming the version; 5.4 has neither. */
static void test_refuse(void **state)
{
	(void)state;
	char sysfs[512], why[256];
	struct kernel_probe kp = {
	    .sysfs_thp = sysfs, .release = "5.15.0-130-generic", .probe = fake_probe, .arg = &no_collapse};
	struct kernel_features f;

	snprintf(sysfs, sizeof(sysfs), "%s/kernels/6.1/sysfs", HC_FIXTURES);
	kernel_features_detect(&kp, &f);
	assert_false(kernel_features_usable(&f, why, sizeof(why)));
	assert_string_equal(why, "MADV_COLLAPSE needs Linux 6.1 or later (this is 5.15.0-130-generic)");
	kp.release = "5.4.0";
	kp.arg = &no_pmadv;
	kernel_features_detect(&kp, &f);
	assert_false(f.madv_collapse);
	assert_false(kernel_features_usable(&f, why, sizeof(why)));
	assert_string_equal(why,
			    "process_madvise(2) needs Linux 5.10 and MADV_COLLAPSE Linux 6.1 or later (this is 5.4.0)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_6_1),      cmocka_unit_test(test_6_1_prctl_disabled),
	    cmocka_unit_test(test_6_8),      cmocka_unit_test(test_6_8_shmem_top_level),
	    cmocka_unit_test(test_6_12),     cmocka_unit_test(test_6_18),
	    cmocka_unit_test(test_7_2_mthp), cmocka_unit_test(test_refuse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
