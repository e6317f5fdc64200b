/* SPDX-License-Identifier: GPL-2.0-or-later */
/* khugepaged: the keep/idle/off hand-over and its restore, against a fake
 * sysfs tree (the sysfs_dir of khugepaged_init()) in a temporary directory, and sysfs_selected().
 *
 * A regular file is not sysfs: write(2) at offset 0 without O_TRUNC leaves
 * the tail of a longer old text. The kernel takes the written bytes as the
 * whole value, so the checks look at what the file starts with.
 *
 * The record that survives a crash: the state file is written before the
 * first knob, a daemon "killed" (its struct dropped without a restore) and
 * started again takes its originals from the file, in the same mode or
 * another, a knob someone else changed meanwhile keeps their value,
 * restores remove the file, and hostile state files are refused (parser and
 * loader). */
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
#include "khugepaged_state.h"
#include "procfs.h" /* sysfs_selected() */

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
	struct khugepaged_saved s = {.sysfs_dir = tmp};
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
	struct khugepaged_saved s = {.sysfs_dir = tmp};

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
	struct khugepaged_saved s = {.sysfs_dir = tmp};

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
	struct khugepaged_saved s = {.sysfs_dir = tmp};

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

/* Issue 16: where shmem allows PMD pages, enabled=never leaves khugepaged
 * running (hugepage_pmd_enabled() counts shmem): off parks it too, and puts
 * everything back. */
static void test_off_parks_for_shmem(void **state)
{
	struct khugepaged_saved s = {.sysfs_dir = tmp};

	(void)state;
	put("shmem_enabled", "always within_size [advise] never deny force\n");
	assert_int_equal(khugepaged_apply(KHUGEPAGED_OFF, &s, err, sizeof(err)), 0);
	assert_int_equal(s.n, 4);
	assert_starts(ENABLED, "never");
	assert_starts(SLEEP, "4294967295");
	assert_starts(PAGES, "1");
	assert_int_equal(khugepaged_restore(&s), 0);
	assert_starts(SLEEP, "10000");
	assert_starts(PAGES, "4096");
	assert_starts(ENABLED, "madvise");
	put("shmem_enabled", "always within_size advise [never] deny force\n");
	assert_int_equal(khugepaged_apply(KHUGEPAGED_OFF, &s, err, sizeof(err)), 0);
	assert_int_equal(s.n, 2); /* the thread exits: nothing to park */
	assert_int_equal(khugepaged_restore(&s), 0);
}

/* Kernels before per-size THP controls have only the top-level file. */
static void test_off_without_per_size_controls(void **state)
{
	struct khugepaged_saved s = {.sysfs_dir = tmp};

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
 * every knob is read before any is written, so nothing was changed, and err
 * names the second. */
static void test_off_fails_midway(void **state)
{
	struct khugepaged_saved s = {.sysfs_dir = tmp};
	int r;

	(void)state;
	assert_int_equal(unlink(tpath(ENABLED)), 0);
	assert_int_equal(mkdir(tpath(ENABLED), 0755), 0);
	r = khugepaged_apply(KHUGEPAGED_OFF, &s, err, sizeof(err));
	assert_int_equal(r, -EISDIR);
	if (!strstr(err, "/enabled to never") || !strstr(err, strerror(EISDIR)))
		fail_msg("err does not name the file and the reason: %s", err);
	assert_null(strstr(err, "hugepages-2048kB"));
	assert_string_equal(get(PMD), "always [inherit] madvise never\n");
	assert_int_equal(s.n, 0);
	assert_int_equal(s.mode, KHUGEPAGED_KEEP);
}

/* The second file reads fine but refuses the write (immutable: EPERM even
 * for root): the first is put back, and err names the second. */
static void test_idle_fails_on_write(void **state)
{
	struct khugepaged_saved s = {.sysfs_dir = tmp};
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
	struct khugepaged_saved s = {.sysfs_dir = tmp};

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
	struct khugepaged_saved s = {.sysfs_dir = tmp};

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
	struct khugepaged_saved s = {.sysfs_dir = tmp};

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

/* ---- the record that survives a crash ---- */

#define STATE "run/khugepaged.state"

/* A daemon as service_run() makes it: the state file under tmp/run/. */
static void daemon_init(struct khugepaged_saved *s)
{
	assert_int_equal(khugepaged_init(s, tpath(STATE), tmp), 0);
}

/* SIGKILL: no restore, and the kernel drops the dead daemon's lock. */
static void sigkill(struct khugepaged_saved *s)
{
	close(s->lock_fd);
	s->lock_fd = -1;
}

/* A knob as the kernel shows it: the [selected] word, or the text. */
static const char *knob(const char *name)
{
	static char out[32];
	const char *text = get(name);

	if (sysfs_selected(text, out, sizeof(out)) < 0)
		snprintf(out, sizeof(out), "%.*s", (int)strcspn(text, "\n"), text);
	return out;
}

static bool exists(const char *name)
{
	return access(tpath(name), F_OK) == 0;
}

/* The state file as the loader sees it. */
static struct khugepaged_saved *load_state(void)
{
	static struct khugepaged_saved r;
	char msg[256];
	int rc;

	memset(&r, 0, sizeof(r));
	rc = khugepaged_state_load(tpath(STATE), &r, msg, sizeof(msg));
	if (rc < 0)
		fail_msg("cannot load %s: %s (%d)", tpath(STATE), msg, rc);
	return &r;
}

/* A stand-in for the kernel's sysfs write that first checks that the state
 * file already records the knob, with its original. */
struct writer_log {
	int calls;
	char seen[KHUGEPAGED_MAX_SAVED][96]; /* "file=original in the file" */
};

static int checking_writer(const char *file, const char *value, void *arg)
{
	struct writer_log *w = arg;
	struct khugepaged_saved *r = load_state();
	const char *orig = khugepaged_original(r, file);
	char text[64];

	if (!orig)
		fail_msg("%s written before the state file recorded it", file);
	if (w->calls < KHUGEPAGED_MAX_SAVED)
		snprintf(w->seen[w->calls], sizeof(w->seen[0]), "%s=%s", file, orig);
	w->calls++;
	snprintf(text, sizeof(text), "%s\n", value);
	put(file, text);
	return 0;
}

static void test_state_written_before_first_write(void **state)
{
	static struct khugepaged_saved s;
	struct writer_log w = {0};
	struct stat st;

	(void)state;
	daemon_init(&s);
	s.write_knob = checking_writer;
	s.write_arg = &w;
	assert_false(exists("run")); /* made on demand, as outside systemd */
	assert_int_equal(khugepaged_apply(KHUGEPAGED_OFF, &s, err, sizeof(err)), 0);
	assert_int_equal(w.calls, 2);
	assert_string_equal(w.seen[0], PMD "=inherit");
	assert_string_equal(w.seen[1], ENABLED "=madvise");
	assert_starts(ENABLED, "never");
	/* Root's, 0600, and nothing else but the file in its directory. */
	assert_int_equal(stat(tpath(STATE), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, geteuid());
	assert_false(exists(STATE ".tmp"));
	assert_int_equal(load_state()->mode, KHUGEPAGED_OFF);
	assert_string_equal(khugepaged_original(&s, ENABLED), "madvise");
	assert_string_equal(khugepaged_original(&s, PMD), "inherit");
	assert_null(khugepaged_original(&s, SLEEP));
	assert_int_equal(khugepaged_restore(&s), 0);
	assert_false(exists(STATE));
	assert_starts(ENABLED, "madvise");
	assert_starts(PMD, "inherit");
}

/* No record, no change: a state file that cannot be written (its directory
 * is a regular file) fails the apply before any knob is touched. */
static void test_state_unwritable_changes_nothing(void **state)
{
	static struct khugepaged_saved s;

	(void)state;
	put("run", "not a directory\n");
	daemon_init(&s);
	assert_int_equal(khugepaged_apply(KHUGEPAGED_IDLE, &s, err, sizeof(err)), -ENOTDIR);
	if (!strstr(err, "state file") || !strstr(err, tpath(STATE)))
		fail_msg("err does not name the state file: %s", err);
	assert_string_equal(get(SLEEP), "10000\n");
	assert_string_equal(get(PAGES), "4096\n");
	assert_int_equal(s.n, 0);
	assert_int_equal(s.mode, KHUGEPAGED_KEEP);
}

/* Killed and started again in the same mode: the knobs hold the dead
 * daemon's values, and the originals come from the file, not from them. */
static void test_restart_adopts_record(void **state)
{
	static struct khugepaged_saved dead, s;

	(void)state;
	for (int m = KHUGEPAGED_IDLE; m <= KHUGEPAGED_OFF; m++) {
		daemon_init(&dead);
		assert_int_equal(khugepaged_apply((enum khugepaged_mode)m, &dead, err, sizeof(err)), 0);
		sigkill(&dead);
		daemon_init(&s);
		assert_int_equal(khugepaged_apply((enum khugepaged_mode)m, &s, err, sizeof(err)), 0);
		assert_int_equal(s.n, 2);
		if (m == KHUGEPAGED_IDLE) {
			assert_string_equal(khugepaged_original(&s, SLEEP), "10000");
			assert_string_equal(khugepaged_original(&s, PAGES), "4096");
		} else {
			assert_string_equal(khugepaged_original(&s, ENABLED), "madvise");
			assert_string_equal(khugepaged_original(&s, PMD), "inherit");
		}
		assert_int_equal(load_state()->n, 2);
		/* Killed again, then stopped cleanly by a third. */
		sigkill(&s);
		daemon_init(&s);
		assert_int_equal(khugepaged_apply((enum khugepaged_mode)m, &s, err, sizeof(err)), 0);
		assert_int_equal(khugepaged_restore(&s), 0);
		assert_false(exists(STATE));
		assert_string_equal(knob(SLEEP), "10000");
		assert_string_equal(knob(PAGES), "4096");
		assert_string_equal(knob(ENABLED), "madvise");
		assert_string_equal(knob(PMD), "inherit");
	}
}

/* Killed in off, started in idle: off's knobs go back, idle's are recorded
 * with their own originals; started in keep: everything goes back. */
static void test_restart_in_another_mode(void **state)
{
	static struct khugepaged_saved dead, s;
	struct khugepaged_saved *r;

	(void)state;
	daemon_init(&dead);
	assert_int_equal(khugepaged_apply(KHUGEPAGED_OFF, &dead, err, sizeof(err)), 0);
	sigkill(&dead);
	daemon_init(&s);
	assert_int_equal(khugepaged_apply(KHUGEPAGED_IDLE, &s, err, sizeof(err)), 0);
	assert_starts(ENABLED, "madvise");
	assert_starts(PMD, "inherit");
	assert_starts(SLEEP, "4294967295");
	assert_starts(PAGES, "1");
	assert_null(khugepaged_original(&s, ENABLED));
	assert_string_equal(khugepaged_original(&s, SLEEP), "10000");
	r = load_state();
	assert_int_equal(r->mode, KHUGEPAGED_IDLE);
	assert_int_equal(r->n, 2);
	assert_null(khugepaged_original(r, ENABLED));
	assert_string_equal(khugepaged_original(r, PAGES), "4096");

	/* Killed in idle, started in keep. */
	sigkill(&s);
	daemon_init(&s);
	assert_int_equal(khugepaged_apply(KHUGEPAGED_KEEP, &s, err, sizeof(err)), 0);
	assert_int_equal(s.n, 0);
	assert_false(exists(STATE));
	assert_starts(SLEEP, "10000");
	assert_starts(PAGES, "4096");
	assert_starts(ENABLED, "madvise");
}

/* While no daemon ran, an administrator set enabled = always. Their value
 * wins: in off it is the original now (restored at exit), and in idle it is
 * left alone, while the other knob still goes back. */
static void test_restart_after_admin_change(void **state)
{
	static struct khugepaged_saved dead, s;

	(void)state;
	daemon_init(&dead);
	assert_int_equal(khugepaged_apply(KHUGEPAGED_OFF, &dead, err, sizeof(err)), 0);
	sigkill(&dead);
	put(ENABLED, "[always] madvise never\n");
	daemon_init(&s);
	assert_int_equal(khugepaged_apply(KHUGEPAGED_OFF, &s, err, sizeof(err)), 0);
	assert_starts(ENABLED, "never");
	assert_string_equal(khugepaged_original(&s, ENABLED), "always");
	assert_string_equal(khugepaged_original(&s, PMD), "inherit");
	assert_string_equal(khugepaged_original(load_state(), ENABLED), "always");
	assert_int_equal(khugepaged_restore(&s), 0);
	assert_starts(ENABLED, "always");
	assert_starts(PMD, "inherit");

	put(ENABLED, "always [madvise] never\n");
	daemon_init(&dead);
	assert_int_equal(khugepaged_apply(KHUGEPAGED_OFF, &dead, err, sizeof(err)), 0);
	sigkill(&dead);
	put(ENABLED, "[always] madvise never\n");
	daemon_init(&s);
	assert_int_equal(khugepaged_apply(KHUGEPAGED_IDLE, &s, err, sizeof(err)), 0);
	assert_string_equal(get(ENABLED), "[always] madvise never\n");
	assert_starts(PMD, "inherit");
	assert_null(khugepaged_original(&s, ENABLED));
	assert_int_equal(khugepaged_restore(&s), 0);
	assert_string_equal(get(ENABLED), "[always] madvise never\n");
	assert_false(exists(STATE));
}

/* Someone changes a knob while the daemon runs: the clean exit leaves their
 * value, and puts back the others. */
static void test_restore_leaves_foreign_value(void **state)
{
	static struct khugepaged_saved s;

	(void)state;
	daemon_init(&s);
	assert_int_equal(khugepaged_apply(KHUGEPAGED_IDLE, &s, err, sizeof(err)), 0);
	put(PAGES, "512\n");
	assert_int_equal(khugepaged_restore(&s), 0);
	assert_string_equal(get(PAGES), "512\n");
	assert_starts(SLEEP, "10000");
	assert_false(exists(STATE));
}

/* A reload from idle to off: one apply on the live record. */
static void test_reload_switches_mode(void **state)
{
	static struct khugepaged_saved s;
	struct khugepaged_saved *r;

	(void)state;
	daemon_init(&s);
	assert_int_equal(khugepaged_apply(KHUGEPAGED_IDLE, &s, err, sizeof(err)), 0);
	assert_int_equal(khugepaged_apply(KHUGEPAGED_OFF, &s, err, sizeof(err)), 0);
	assert_int_equal(s.mode, KHUGEPAGED_OFF);
	assert_starts(SLEEP, "10000");
	assert_starts(PAGES, "4096");
	assert_starts(ENABLED, "never");
	r = load_state();
	assert_int_equal(r->mode, KHUGEPAGED_OFF);
	assert_int_equal(r->n, 2);
	assert_string_equal(khugepaged_original(r, ENABLED), "madvise");
	/* And to keep: everything back, no file. */
	assert_int_equal(khugepaged_apply(KHUGEPAGED_KEEP, &s, err, sizeof(err)), 0);
	assert_starts(ENABLED, "madvise");
	assert_starts(PMD, "inherit");
	assert_false(exists(STATE));
}

/* `hugecollapsed --restore` after a SIGKILL, and with nothing to do. */
static void test_restore_from_file(void **state)
{
	static struct khugepaged_saved dead;

	(void)state;
	assert_int_equal(khugepaged_restore_from_file(tpath(STATE), tmp), 0); /* no file */
	daemon_init(&dead);
	assert_int_equal(khugepaged_apply(KHUGEPAGED_OFF, &dead, err, sizeof(err)), 0);
	sigkill(&dead);
	assert_int_equal(khugepaged_restore_from_file(tpath(STATE), tmp), 0);
	assert_starts(ENABLED, "madvise");
	assert_starts(PMD, "inherit");
	assert_false(exists(STATE));
	/* A restore that cannot write keeps the file for another try. */
	daemon_init(&dead);
	assert_int_equal(khugepaged_apply(KHUGEPAGED_IDLE, &dead, err, sizeof(err)), 0);
	sigkill(&dead);
	assert_int_equal(unlink(tpath(SLEEP)), 0);
	assert_int_equal(mkdir(tpath(SLEEP), 0755), 0);
	assert_int_equal(khugepaged_restore_from_file(tpath(STATE), tmp), -EISDIR);
	assert_true(exists(STATE));
	assert_starts(PAGES, "4096");
	assert_int_equal(rmdir(tpath(SLEEP)), 0);
	put(SLEEP, "4294967295\n");
	assert_int_equal(khugepaged_restore_from_file(tpath(STATE), tmp), 0);
	assert_starts(SLEEP, "10000");
	assert_false(exists(STATE));
}

/* One owner per state file: a second daemon with the same file, or a
 * --restore while the first runs, changes nothing and says who owns it. */
static void test_one_owner(void **state)
{
	static struct khugepaged_saved first, second;
	char pid[32];

	(void)state;
	snprintf(pid, sizeof(pid), "pid %d", (int)getpid());
	daemon_init(&first);
	assert_int_equal(khugepaged_apply(KHUGEPAGED_OFF, &first, err, sizeof(err)), 0);
	daemon_init(&second);
	assert_int_equal(khugepaged_apply(KHUGEPAGED_IDLE, &second, err, sizeof(err)), -EBUSY);
	if (!strstr(err, "in use") || !strstr(err, pid))
		fail_msg("err does not say who owns it: %s", err);
	assert_int_equal(khugepaged_restore_from_file(tpath(STATE), tmp), -EBUSY);
	assert_starts(ENABLED, "never");
	assert_starts(SLEEP, "10000");
	assert_int_equal(load_state()->mode, KHUGEPAGED_OFF);
	/* The owner's clean exit frees it. */
	assert_int_equal(khugepaged_restore(&first), 0);
	assert_starts(ENABLED, "madvise");
	daemon_init(&second);
	assert_int_equal(khugepaged_apply(KHUGEPAGED_IDLE, &second, err, sizeof(err)), 0);
	assert_int_equal(khugepaged_restore(&second), 0);
	assert_starts(SLEEP, "10000");
}

/* ---- hostile state files ---- */

static int parse(const char *text, struct khugepaged_saved *r)
{
	memset(r, 0, sizeof(*r));
	return parse_khugepaged_state_buf(text, strlen(text), r, err, sizeof(err));
}

static void test_parse_state(void **state)
{
	struct khugepaged_saved r, w = {.mode = KHUGEPAGED_OFF, .n = 2};
	char buf[KHUGEPAGED_STATE_MAX];
	int len;

	(void)state;
	assert_int_equal(parse("version=1\nmode=off\nhugepages-2048kB/enabled=inherit\nenabled=madvise\nend\n", &r), 0);
	assert_int_equal(r.mode, KHUGEPAGED_OFF);
	assert_int_equal(r.n, 2);
	assert_string_equal(r.saved[0].file, PMD);
	assert_string_equal(r.saved[1].value, "madvise");
	assert_int_equal(parse("# a comment\nversion=1\n#\nmode=idle\nend\n# after\n", &r), 0);
	assert_int_equal(r.mode, KHUGEPAGED_IDLE);
	assert_int_equal(r.n, 0);
	assert_int_equal(parse("version=1\nmode=idle\nkhugepaged/pages_to_scan=4096\nend\n", &r), 0);
	assert_string_equal(khugepaged_original(&r, PAGES), "4096");
	assert_int_equal(parse("version=1\nmode=off\nenabled=defer+madvise\nend\n", &r), 0);

	/* What the daemon writes reads back the same. */
	snprintf(w.saved[0].file, sizeof(w.saved[0].file), "%s", PMD);
	snprintf(w.saved[0].value, sizeof(w.saved[0].value), "inherit");
	snprintf(w.saved[1].file, sizeof(w.saved[1].file), "%s", ENABLED);
	snprintf(w.saved[1].value, sizeof(w.saved[1].value), "always");
	len = khugepaged_state_format(&w, buf, sizeof(buf));
	assert_true(len > 0);
	assert_int_equal(parse_khugepaged_state_buf(buf, (size_t)len, &r, err, sizeof(err)), 0);
	assert_int_equal(r.n, 2);
	assert_string_equal(r.saved[1].value, "always");
	assert_int_equal(khugepaged_state_format(&w, buf, 40), -ENOSPC);
}

static void test_parse_state_hostile(void **state)
{
	static const char *const bad[] = {
	    "",
	    "\n",
	    "version=1\n",
	    "version=1\nmode=off\n",                     /* cut before end */
	    "version=1\nmode=off\nenabled=madvise\n",    /* cut before end */
	    "version=1\nmode=off\nenabled=madvise\nend", /* cut: no newline */
	    "version=1\nmode=off\nenabled=madv",         /* cut mid-value */
	    "version=2\nmode=off\nend\n",                /* a future format */
	    "version=1 \nmode=off\nend\n",
	    "mode=off\nversion=1\nend\n",
	    "version=1\nversion=1\nmode=off\nend\n",
	    "version=1\nmode=keep\nend\n",
	    "version=1\nmode=\nend\n",
	    "version=1\nend\n",
	    "version=1\nmode=off\nend\nenabled=madvise\n", /* after end */
	    "version=1\nmode=off\nend\nend\n",
	    "version=1\nmode=off\n\nend\n", /* blank line */
	    "version=1\nmode=off\nenabled\nend\n",
	    "version=1\nmode=off\nenabled=\nend\n",
	    "version=1\nmode=off\nenabled=never\nend\n", /* our own value as original */
	    "version=1\nmode=idle\nkhugepaged/pages_to_scan=1\nend\n",
	    "version=1\nmode=off\nenabled=madvise\nenabled=always\nend\n",
	    "version=1\nmode=off\nshmem_enabled=always\nend\n", /* a knob we never write */
	    "version=1\nmode=off\n../../../proc/sys/kernel/core_pattern=x\nend\n",
	    "version=1\nmode=off\n/etc/passwd=x\nend\n",
	    "version=1\nmode=off\nenabled=mad vise\nend\n",
	    "version=1\nmode=off\nenabled=madvise\r\nend\n",
	    "version=1\nmode=off\nenabled=mad/vise\nend\n",
	    "version=1\nmode=off\nenabled=madvise=always\nend\n",
	    "version=1\nmode=off\nenabled=0123456789012345678901234567890123456789\nend\n",
	    "version=1\nmode=off\n=madvise\nend\n",
	    "version=1\nmode=off\nhugepages-2048kB/enabled/../../enabled=always\nend\n",
	    "\xff\xfe\x00garbage\n",
	};
	struct khugepaged_saved r;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r.mode = KHUGEPAGED_IDLE;
		r.n = 3;
		if (parse_khugepaged_state_buf(bad[i], strlen(bad[i]), &r, err, sizeof(err)) != -EINVAL)
			fail_msg("accepted #%zu: '%s'", i, bad[i]);
		if (!err[0])
			fail_msg("#%zu: no reason given", i);
		/* A refused record leaves out alone. */
		assert_int_equal(r.n, 3);
		assert_int_equal(r.mode, KHUGEPAGED_IDLE);
	}
	/* A NUL inside a line, which strlen() would hide. */
	assert_int_equal(
	    parse_khugepaged_state_buf("version=1\nmode=off\nenabled=madvise\0x\nend\n", 42, &r, err, sizeof(err)),
	    -EINVAL);
	/* A value with a newline in it is a line of its own, and a bad one. */
	assert_int_equal(parse("version=1\nmode=off\nenabled=mad\nvise\nend\n", &r), -EINVAL);
	assert_non_null(strstr(err, "line 4"));
	/* Five knobs: one too many (and a duplicate). */
	assert_int_equal(parse("version=1\nmode=off\nenabled=a\nhugepages-2048kB/enabled=b\n"
			       "khugepaged/pages_to_scan=c\nkhugepaged/scan_sleep_millisecs=d\nenabled=e\nend\n",
			       &r),
			 -EINVAL);
	/* Huge: refused before it is looked at. */
	{
		static char huge[KHUGEPAGED_STATE_MAX + 2];

		memset(huge, '#', sizeof(huge) - 1);
		huge[sizeof(huge) - 2] = '\n';
		assert_int_equal(parse_khugepaged_state_buf(huge, sizeof(huge) - 1, &r, err, sizeof(err)), -EFBIG);
	}
}

static void put_state(const char *text, mode_t mode)
{
	if (!exists("run"))
		assert_int_equal(mkdir(tpath("run"), 0700), 0);
	put(STATE, text);
	assert_int_equal(chmod(tpath(STATE), mode), 0);
}

#define GOOD_OFF_RECORD "version=1\nmode=off\nenabled=always\nhugepages-2048kB/enabled=always\nend\n"

/* The loader refuses what it cannot trust; the daemon then records the live
 * values, as on a first start, and its own file replaces the bad one. */
static void test_load_state_hostile(void **state)
{
	static struct khugepaged_saved r, s;
	char msg[256];

	(void)state;
	put_state(GOOD_OFF_RECORD, 0600);
	assert_int_equal(khugepaged_state_load(tpath(STATE), &r, msg, sizeof(msg)), 0);
	assert_string_equal(khugepaged_original(&r, ENABLED), "always");

	assert_int_equal(chmod(tpath(STATE), 0620), 0);
	assert_int_equal(khugepaged_state_load(tpath(STATE), &r, msg, sizeof(msg)), -EPERM);
	assert_non_null(strstr(msg, "writable"));
	assert_int_equal(chmod(tpath(STATE), 0602), 0);
	assert_int_equal(khugepaged_state_load(tpath(STATE), &r, msg, sizeof(msg)), -EPERM);
	assert_int_equal(chmod(tpath(STATE), 0644), 0); /* readable by others is fine */
	assert_int_equal(khugepaged_state_load(tpath(STATE), &r, msg, sizeof(msg)), 0);

	if (geteuid() == 0) {
		assert_int_equal(chown(tpath(STATE), 65534, 65534), 0);
		assert_int_equal(khugepaged_state_load(tpath(STATE), &r, msg, sizeof(msg)), -EPERM);
		assert_non_null(strstr(msg, "owned"));
		/* The daemon ignores it and records the live values itself. */
		daemon_init(&s);
		assert_int_equal(khugepaged_apply(KHUGEPAGED_OFF, &s, err, sizeof(err)), 0);
		assert_string_equal(khugepaged_original(&s, ENABLED), "madvise");
		assert_string_equal(khugepaged_original(load_state(), ENABLED), "madvise");
		assert_int_equal(khugepaged_restore(&s), 0);
		assert_starts(ENABLED, "madvise");
	}

	/* Too big, and a directory, a FIFO (must not block), garbage. */
	{
		static char huge[KHUGEPAGED_STATE_MAX + 100];

		memset(huge, '#', sizeof(huge) - 1);
		huge[sizeof(huge) - 2] = '\n';
		put_state(huge, 0600);
		assert_int_equal(khugepaged_state_load(tpath(STATE), &r, msg, sizeof(msg)), -EFBIG);
	}
	assert_int_equal(unlink(tpath(STATE)), 0);
	assert_int_equal(mkfifo(tpath(STATE), 0600), 0);
	assert_int_equal(khugepaged_state_load(tpath(STATE), &r, msg, sizeof(msg)), -EPERM);
	assert_int_equal(unlink(tpath(STATE)), 0);
	put_state("\x7f"
		  "ELF\x02\x01\x01 garbage",
		  0600);
	assert_int_equal(khugepaged_state_load(tpath(STATE), &r, msg, sizeof(msg)), -EINVAL);
	assert_int_equal(unlink(tpath(STATE)), 0);
	assert_int_equal(khugepaged_state_load(tpath(STATE), &r, msg, sizeof(msg)), -ENOENT);
}

/* A symlink at the state file's place is neither followed when read nor
 * written through: the rename replaces the link itself. Same for a link
 * planted at the temporary file's name. */
static void test_state_symlink(void **state)
{
	static struct khugepaged_saved r, s;
	char msg[256];
	struct stat st;

	(void)state;
	put_state(GOOD_OFF_RECORD, 0600);
	assert_int_equal(rename(tpath(STATE), tpath("target")), 0);
	assert_int_equal(symlink(tpath("target"), tpath(STATE)), 0);
	put("tmp-target", "precious\n");
	assert_int_equal(symlink(tpath("tmp-target"), tpath(STATE ".tmp")), 0);
	assert_int_equal(khugepaged_state_load(tpath(STATE), &r, msg, sizeof(msg)), -ELOOP);

	daemon_init(&s);
	assert_int_equal(khugepaged_apply(KHUGEPAGED_OFF, &s, err, sizeof(err)), 0);
	assert_string_equal(khugepaged_original(&s, ENABLED), "madvise"); /* not the link's "always" */
	assert_int_equal(lstat(tpath(STATE), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_string_equal(get("target"), GOOD_OFF_RECORD);
	assert_string_equal(get("tmp-target"), "precious\n");
	assert_int_equal(khugepaged_restore(&s), 0);
	assert_false(exists(STATE));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sysfs_selected),
	    cmocka_unit_test_setup_teardown(test_keep_touches_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_idle_and_restore, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_idle_already_partly_idle, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_off_parks_for_shmem, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_off_and_restore, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_off_without_per_size_controls, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_off_fails_midway, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_idle_fails_on_write, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_overlong_value, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_restore_failure, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_mode_switch, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_written_before_first_write, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_unwritable_changes_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_restart_adopts_record, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_restart_in_another_mode, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_restart_after_admin_change, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_restore_leaves_foreign_value, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reload_switches_mode, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_restore_from_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_one_owner, setup, teardown),
	    cmocka_unit_test(test_parse_state),
	    cmocka_unit_test(test_parse_state_hostile),
	    cmocka_unit_test_setup_teardown(test_load_state_hostile, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_symlink, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
