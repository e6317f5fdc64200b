/* khugepaged: the keep/idle/off hand-over and its restore, against a fake
 * sysfs tree (HC_SYSFS_THP) in a temporary directory, and sysfs_selected().
 *
 * A regular file is not sysfs: write(2) at offset 0 without O_TRUNC leaves
 * the tail of a longer old text. The kernel takes the written bytes as the
 * whole value, so the checks look at what the file starts with. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/fs.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "khugepaged.h"

#define SLEEP   "khugepaged/scan_sleep_millisecs"
#define PAGES   "khugepaged/pages_to_scan"
#define ENABLED "enabled"
#define PMD     "hugepages-2048kB/enabled"

static char tmp[64];
static char err[512];
static char immutable[512]; /* a file made immutable, to undo in teardown */

static const char *tpath(const char *name)
{
	static char bufs[4][256];
	static int i;
	char *b = bufs[i++ % 4];

	snprintf(b, sizeof(bufs[0]), "%s/%s", tmp, name);
	return b;
}

static void put(const char *name, const char *text)
{
	FILE *f = fopen(tpath(name), "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static char *get(const char *name)
{
	static char buf[256];
	FILE *f = fopen(tpath(name), "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return buf;
}

static void assert_starts(const char *name, const char *value)
{
	const char *text = get(name);

	if (strncmp(text, value, strlen(value)))
		fail_msg("%s: holds '%s', expected it to start with '%s'", name, text, value);
}

static int set_immutable(const char *path, bool on)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), flags, r = -1;

	if (fd < 0)
		return -1;
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
		flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
		r = ioctl(fd, FS_IOC_SETFLAGS, &flags);
	}
	close(fd);
	return r;
}

/* The kernel's files as this machine has them: madvise, per-size controls
 * that inherit, khugepaged scanning 4096 pages every 10 s. */
static int setup(void **state)
{
	(void)state;
	strcpy(tmp, "/tmp/test_khugepaged.XXXXXX");
	if (!mkdtemp(tmp))
		return -1;
	if (mkdir(tpath("khugepaged"), 0755) || mkdir(tpath("hugepages-2048kB"), 0755))
		return -1;
	put(ENABLED, "always [madvise] never\n");
	put(PMD, "always [inherit] madvise never\n");
	put(SLEEP, "10000\n");
	put(PAGES, "4096\n");
	put("khugepaged/full_scans", "24\n");
	put("khugepaged/pages_collapsed", "4\n");
	setenv("HC_SYSFS_THP", tmp, 1);
	err[0] = 0;
	immutable[0] = 0;
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	(void)state;
	if (immutable[0])
		set_immutable(immutable, false);
	unsetenv("HC_SYSFS_THP");
	return nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void test_sysfs_selected(void **state)
{
	char out[16];

	(void)state;
	assert_int_equal(sysfs_selected("always [madvise] never\n", out, sizeof(out)), 0);
	assert_string_equal(out, "madvise");
	assert_int_equal(sysfs_selected("[always] madvise never", out, sizeof(out)), 0);
	assert_string_equal(out, "always");
	assert_int_equal(sysfs_selected("always inherit madvise [never]\n", out, sizeof(out)), 0);
	assert_string_equal(out, "never");
	assert_int_equal(sysfs_selected("always defer defer+madvise [madvise] never", out, sizeof(out)), 0);
	assert_string_equal(out, "madvise");
	/* No selection, an empty one, an unclosed one. */
	assert_int_equal(sysfs_selected("always madvise never\n", out, sizeof(out)), -EINVAL);
	assert_int_equal(sysfs_selected("always [] never", out, sizeof(out)), -EINVAL);
	assert_int_equal(sysfs_selected("always [madvise never", out, sizeof(out)), -EINVAL);
	assert_int_equal(sysfs_selected("", out, sizeof(out)), -EINVAL);
	/* "madvise" needs 8 bytes with its NUL. */
	assert_int_equal(sysfs_selected("[madvise]", out, 8), 0);
	assert_string_equal(out, "madvise");
	assert_int_equal(sysfs_selected("[madvise]", out, 7), -EINVAL);
}

static void test_keep_touches_nothing(void **state)
{
	struct khugepaged_saved s = {0};
	const char *files[] = {ENABLED, PMD, SLEEP, PAGES};
	struct stat before[4], after;

	(void)state;
	for (int i = 0; i < 4; i++)
		assert_int_equal(stat(tpath(files[i]), &before[i]), 0);
	assert_int_equal(khugepaged_apply(KHUGEPAGED_KEEP, &s, err, sizeof(err)), 0);
	assert_int_equal(s.mode, KHUGEPAGED_KEEP);
	assert_int_equal(s.n, 0);
	assert_int_equal(khugepaged_restore(&s), 0);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(stat(tpath(files[i]), &after), 0);
		assert_int_equal(after.st_mtim.tv_sec, before[i].st_mtim.tv_sec);
		assert_int_equal(after.st_mtim.tv_nsec, before[i].st_mtim.tv_nsec);
	}
	assert_string_equal(get(ENABLED), "always [madvise] never\n");
	assert_string_equal(get(SLEEP), "10000\n");
}

static void test_idle_and_restore(void **state)
{
	struct khugepaged_saved s = {0};

	(void)state;
	assert_int_equal(khugepaged_apply(KHUGEPAGED_IDLE, &s, err, sizeof(err)), 0);
	assert_int_equal(s.mode, KHUGEPAGED_IDLE);
	assert_int_equal(s.n, 2);
	assert_starts(SLEEP, "4294967295");
	assert_starts(PAGES, "1");
	assert_string_equal(s.saved[0].file, SLEEP);
	assert_string_equal(s.saved[0].value, "10000");
	assert_string_equal(s.saved[1].file, PAGES);
	assert_string_equal(s.saved[1].value, "4096");
	/* THP itself is left alone. */
	assert_string_equal(get(ENABLED), "always [madvise] never\n");
	assert_string_equal(get(PMD), "always [inherit] madvise never\n");

	assert_int_equal(khugepaged_restore(&s), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(s.mode, KHUGEPAGED_KEEP);
	assert_starts(SLEEP, "10000");
	assert_starts(PAGES, "4096");
	/* A second restore has nothing left to write. */
	put(PAGES, "77\n");
	assert_int_equal(khugepaged_restore(&s), 0);
	assert_string_equal(get(PAGES), "77\n");
}

/* A knob already at our value is not recorded: restoring must not "put
 * back" a value we never changed. */
static void test_idle_already_partly_idle(void **state)
{
	struct khugepaged_saved s = {0};

	(void)state;
	put(PAGES, "1\n");
	assert_int_equal(khugepaged_apply(KHUGEPAGED_IDLE, &s, err, sizeof(err)), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.saved[0].file, SLEEP);
	assert_int_equal(khugepaged_restore(&s), 0);
	assert_starts(SLEEP, "10000");
	assert_string_equal(get(PAGES), "1\n");
}

static void test_off_and_restore(void **state)
{
	struct khugepaged_saved s = {0};

	(void)state;
	assert_int_equal(khugepaged_apply(KHUGEPAGED_OFF, &s, err, sizeof(err)), 0);
	assert_int_equal(s.mode, KHUGEPAGED_OFF);
	assert_int_equal(s.n, 2);
	assert_starts(PMD, "never");
	assert_starts(ENABLED, "never");
	assert_string_equal(s.saved[0].file, PMD);
	assert_string_equal(s.saved[0].value, "inherit");
	assert_string_equal(s.saved[1].file, ENABLED);
	assert_string_equal(s.saved[1].value, "madvise");
	/* khugepaged's own knobs are left alone. */
	assert_string_equal(get(SLEEP), "10000\n");
	assert_string_equal(get(PAGES), "4096\n");

	assert_int_equal(khugepaged_restore(&s), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(s.mode, KHUGEPAGED_KEEP);
	assert_starts(PMD, "inherit");
	assert_starts(ENABLED, "madvise");
}

/* Kernels before per-size THP controls have only the top-level file. */
static void test_off_without_per_size_controls(void **state)
{
	struct khugepaged_saved s = {0};

	(void)state;
	assert_int_equal(unlink(tpath(PMD)), 0);
	assert_int_equal(rmdir(tpath("hugepages-2048kB")), 0);
	assert_int_equal(khugepaged_apply(KHUGEPAGED_OFF, &s, err, sizeof(err)), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.saved[0].file, ENABLED);
	assert_starts(ENABLED, "never");
	assert_int_equal(khugepaged_restore(&s), 0);
	assert_starts(ENABLED, "madvise");
}

/* The second file cannot be read (a directory where the file should be):
 * the first, already written, is put back, and err names the second. */
static void test_off_fails_midway(void **state)
{
	struct khugepaged_saved s = {0};
	int r;

	(void)state;
	assert_int_equal(unlink(tpath(ENABLED)), 0);
	assert_int_equal(mkdir(tpath(ENABLED), 0755), 0);
	r = khugepaged_apply(KHUGEPAGED_OFF, &s, err, sizeof(err));
	assert_int_equal(r, -EISDIR);
	if (!strstr(err, "/enabled to never") || !strstr(err, strerror(EISDIR)))
		fail_msg("err does not name the file and the reason: %s", err);
	assert_null(strstr(err, "hugepages-2048kB"));
	assert_starts(PMD, "inherit");
	assert_int_equal(s.n, 0);
	assert_int_equal(s.mode, KHUGEPAGED_KEEP);
}

/* The second file reads fine but refuses the write (immutable: EPERM even
 * for root): the first is put back, and err names the second. */
static void test_idle_fails_on_write(void **state)
{
	struct khugepaged_saved s = {0};
	int r;

	(void)state;
	if (set_immutable(tpath(PAGES), true) < 0)
		skip(); /* needs CAP_LINUX_IMMUTABLE and a filesystem with the flag */
	snprintf(immutable, sizeof(immutable), "%s", tpath(PAGES));
	r = khugepaged_apply(KHUGEPAGED_IDLE, &s, err, sizeof(err));
	assert_int_equal(r, -EPERM);
	if (!strstr(err, PAGES) || !strstr(err, strerror(EPERM)))
		fail_msg("err does not name the file and the reason: %s", err);
	assert_starts(SLEEP, "10000");
	assert_string_equal(get(PAGES), "4096\n");
	assert_int_equal(s.n, 0);
	assert_int_equal(s.mode, KHUGEPAGED_KEEP);
}

/* A value too long to record is refused before anything is written. */
static void test_overlong_value(void **state)
{
	struct khugepaged_saved s = {0};

	(void)state;
	put(SLEEP, "1234567890123456789012345678901234567890\n");
	assert_int_equal(khugepaged_apply(KHUGEPAGED_IDLE, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, SLEEP));
	assert_int_equal(s.n, 0);
	assert_string_equal(get(PAGES), "4096\n");
}

/* A restore that cannot write one file still restores the others and
 * returns the error. */
static void test_restore_failure(void **state)
{
	struct khugepaged_saved s = {0};

	(void)state;
	assert_int_equal(khugepaged_apply(KHUGEPAGED_IDLE, &s, err, sizeof(err)), 0);
	assert_int_equal(unlink(tpath(SLEEP)), 0);
	assert_int_equal(mkdir(tpath(SLEEP), 0755), 0);
	assert_int_equal(khugepaged_restore(&s), -EISDIR);
	assert_starts(PAGES, "4096");
	assert_int_equal(s.n, 0);
	assert_int_equal(s.mode, KHUGEPAGED_KEEP);
}

/* Reapplying after a restore (a reload to another mode) starts clean. */
static void test_mode_switch(void **state)
{
	struct khugepaged_saved s = {0};

	(void)state;
	assert_int_equal(khugepaged_apply(KHUGEPAGED_IDLE, &s, err, sizeof(err)), 0);
	assert_int_equal(khugepaged_restore(&s), 0);
	assert_int_equal(khugepaged_apply(KHUGEPAGED_OFF, &s, err, sizeof(err)), 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.saved[0].file, PMD);
	assert_int_equal(khugepaged_restore(&s), 0);
	assert_starts(SLEEP, "10000");
	assert_starts(PAGES, "4096");
	assert_starts(PMD, "inherit");
	assert_starts(ENABLED, "madvise");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sysfs_selected),
	    cmocka_unit_test_setup_teardown(test_keep_touches_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_idle_and_restore, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_idle_already_partly_idle, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_off_and_restore, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_off_without_per_size_controls, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_off_fails_midway, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_idle_fails_on_write, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_overlong_value, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_restore_failure, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_mode_switch, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
