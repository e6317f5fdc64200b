/* tmpfs_mounts: tmpfs devices and their huge= from mountinfo; VMAs on them
 * become shmem judged by the mount (issue 16 defect 5: a MADV_HUGEPAGE file
 * on a huge=never tmpfs at /tmp was a candidate under khugepaged = off). */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "thp_policy.h"
#include "tmpfs_mounts.h"

static char buf[1 << 16];

static size_t load(const char *name)
{
	char path[512];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/tmpfs/%s", HC_FIXTURES, name);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return n;
}

static void load_vmas(struct vma_list *l)
{
	size_t n = load("smaps");

	vma_list_init(l);
	assert_int_equal(parse_smaps_buf(buf, n, l), 0);
	assert_int_equal(l->n, 7);
}

static void test_parse(void **state)
{
	(void)state;
	struct tmpfs_mounts t = {.fd = -1};
	const struct tmpfs_dev *d;
	size_t n = load("mountinfo");

	assert_int_equal(parse_tmpfs_mountinfo_buf(buf, n, &t), 0);
	/* sysfs, devtmpfs, /dev/shm, /tmp, two huge mounts, overlay, one with
	 * escapes: every major-0 device; ext4 (8:1) and the bad line are not. */
	assert_int_equal(t.n, 8);
	assert_null(tmpfs_mounts_find(&t, 8, 1));
	d = tmpfs_mounts_find(&t, 0, 40);
	assert_non_null(d);
	assert_true(d->tmpfs);
	assert_int_equal(d->huge, SHMEM_NEVER); /* no huge=: never */
	d = tmpfs_mounts_find(&t, 0, 41);
	assert_int_equal(d->huge, SHMEM_WITHIN_SIZE);
	assert_int_equal(tmpfs_mounts_find(&t, 0, 42)->huge, SHMEM_ADVISE);
	assert_int_equal(tmpfs_mounts_find(&t, 0, 44)->huge, SHMEM_ALWAYS);
	assert_false(tmpfs_mounts_find(&t, 0, 5)->tmpfs); /* devtmpfs is not tmpfs */
	assert_false(tmpfs_mounts_find(&t, 0, 43)->tmpfs);
	free(t.d);
}

static void test_apply(void **state)
{
	(void)state;
	struct tmpfs_mounts t = {.fd = -1};
	struct vma_list l;
	size_t n = load("mountinfo");

	assert_int_equal(parse_tmpfs_mountinfo_buf(buf, n, &t), 0);
	load_vmas(&l);
	/* By name alone, /tmp and /srv files are files. */
	assert_int_equal(l.v[0].kind, VMA_FILE);
	assert_int_equal(l.v[1].kind, VMA_SHMEM);
	assert_int_equal(l.v[1].mount_huge, VMA_HUGE_UNKNOWN);
	assert_int_equal(tmpfs_mounts_apply(&t, &l), 1); /* 00:37 is in no table here */
	assert_int_equal(l.v[0].kind, VMA_SHMEM);
	assert_int_equal(l.v[0].shmem_src, SHMEM_SRC_MOUNT);
	assert_int_equal(l.v[0].mount_huge, SHMEM_NEVER);
	assert_int_equal(l.v[1].mount_huge, SHMEM_NEVER); /* /dev/shm: its mount's */
	assert_int_equal(l.v[2].kind, VMA_SHMEM);
	assert_int_equal(l.v[2].mount_huge, SHMEM_WITHIN_SIZE);
	assert_int_equal(l.v[3].kind, VMA_FILE); /* overlay */
	assert_int_equal(l.v[4].shmem_src, SHMEM_SRC_INTERNAL);
	assert_int_equal(l.v[5].kind, VMA_FILE);
	assert_int_equal(l.v[6].kind, VMA_FILE);
	vma_list_free(&l);
	free(t.d);
}

/* The defect itself: khugepaged = off changed enabled (madvise → never),
 * the hg file on /tmp (huge=never) reads THPeligible 0. As a file it was
 * judged by the recorded enabled=madvise and collapsed; as what it is,
 * shmem on a huge=never mount, it is left alone in every scope. */
static void test_off_mode_tmp_file(void **state)
{
	(void)state;
	struct thp_state st = {
	    .live = {.enabled = THP_NEVER, .pmd = THP_NEVER, .shmem = SHMEM_NEVER, .pmd_shmem = SHMEM_INHERIT},
	    .orig = {.enabled = THP_MADVISE, .pmd = THP_INHERIT, .shmem = SHMEM_NEVER, .pmd_shmem = SHMEM_INHERIT}};
	struct tmpfs_mounts t = {.fd = -1};
	struct vma_list l;
	size_t n = load("mountinfo");

	assert_int_equal(parse_tmpfs_mountinfo_buf(buf, n, &t), 0);
	load_vmas(&l);
	/* What the daemon did before it knew the filesystem. */
	assert_int_equal(thp_vma_check(&st, THP_SCOPE_KERNEL, &l.v[0], THP_PRCTL_NONE), SCAN_CANDIDATE);
	tmpfs_mounts_apply(&t, &l);
	for (int s = THP_SCOPE_KERNEL; s <= THP_SCOPE_ALWAYS; s++) {
		assert_int_equal(thp_vma_check(&st, (enum thp_scope)s, &l.v[0], THP_PRCTL_NONE), SCAN_THP_POLICY);
		assert_int_equal(thp_vma_check(&st, (enum thp_scope)s, &l.v[1], THP_PRCTL_NONE), SCAN_THP_POLICY);
		/* huge=within_size: THPeligible 1 and the mount agree. */
		assert_int_equal(thp_vma_check(&st, (enum thp_scope)s, &l.v[2], THP_PRCTL_NONE), SCAN_CANDIDATE);
	}
	vma_list_free(&l);
	free(t.d);
}

/* A device of another mount namespace: that process's mountinfo names it,
 * once; what nobody names is remembered as not tmpfs. */
static void test_other_namespace(void **state)
{
	(void)state;
	struct tmpfs_mounts t;
	struct vma_list l;
	char dir[512];
	int dirfd;

	assert_int_equal(tmpfs_mounts_open(&t, HC_FIXTURES "/tmpfs/none"), -2); /* -ENOENT: empty, usable */
	snprintf(dir, sizeof(dir), "%s/tmpfs/pid", HC_FIXTURES);
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dirfd >= 0);
	load_vmas(&l);
	tmpfs_mounts_classify(&t, dirfd, &l);
	assert_int_equal(t.lookups, 1);
	assert_int_equal(l.v[6].kind, VMA_SHMEM);
	assert_int_equal(l.v[6].mount_huge, SHMEM_ALWAYS);
	assert_int_equal(l.v[0].kind, VMA_FILE); /* 0:40 is named by neither: not tmpfs */
	vma_list_clear(&l);
	vma_list_free(&l);
	load_vmas(&l);
	tmpfs_mounts_classify(&t, dirfd, &l);
	assert_int_equal(t.lookups, 1); /* all known now */
	assert_int_equal(l.v[6].kind, VMA_SHMEM);
	close(dirfd);
	vma_list_free(&l);
	tmpfs_mounts_close(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_apply),
	    cmocka_unit_test(test_off_mode_tmp_file),
	    cmocka_unit_test(test_other_namespace),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
