/* SPDX-License-Identifier: GPL-2.0-or-later */
/* stat_fds on a fixture proc root (regular files): a PID read again is
 * read through the kept fd (a file renamed over the path is not seen, the
 * same inode rewritten is, an unlinked one still is); the least recently
 * read is evicted first; a failed read drops the fd and the next read opens
 * the path again; a missing PID is -ENOENT and keeps nothing. On the live
 * /proc (test_procs): an exited process's kept fd reads -ESRCH. */
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

#include "stat_fds.h"

struct fixture {
	char root[64];
	int rootfd;
	struct stat_fds c;
};

static void put(struct fixture *f, int pid, const char *text)
{
	char path[128];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%d", f->root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/stat", f->root, pid);
	fp = fopen(path, "r+");
	if (!fp)
		fp = fopen(path, "w");
	assert_non_null(fp);
	assert_int_equal(ftruncate(fileno(fp), 0), 0);
	fputs(text, fp);
	assert_int_equal(fclose(fp), 0);
}

/* A new file at the path: a kept fd still reads the old one. */
static void replace(struct fixture *f, int pid, const char *text)
{
	char path[128], tmp[128];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%d/stat", f->root, pid);
	snprintf(tmp, sizeof(tmp), "%s/%d/stat.new", f->root, pid);
	fp = fopen(tmp, "w");
	assert_non_null(fp);
	fputs(text, fp);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(rename(tmp, path), 0);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->root, sizeof(f->root), "/tmp/hc-stat-fds.XXXXXX");
	assert_non_null(mkdtemp(f->root));
	f->rootfd = open(f->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->rootfd >= 0);
	stat_fds_init(&f->c);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	stat_fds_close(&f->c);
	close(f->rootfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static const char *rd(struct fixture *f, int pid)
{
	static char buf[256];
	ssize_t n = stat_fds_read(&f->c, f->rootfd, pid, buf, sizeof(buf));

	return n < 0 ? strerror((int)-n) : buf;
}

static void test_kept_fd_reads_the_same_file(void **state)
{
	struct fixture *f = *state;

	put(f, 7, "one");
	assert_string_equal(rd(f, 7), "one");
	put(f, 7, "two"); /* the same inode, rewritten: the current values */
	assert_string_equal(rd(f, 7), "two");
	replace(f, 7, "three"); /* the kept fd holds the old file */
	assert_string_equal(rd(f, 7), "two");
	assert_int_equal(f->c.opens, 1);
	assert_int_equal(f->c.hits, 2);
}

static void test_least_recently_read_evicted(void **state)
{
	struct fixture *f = *state;

	for (int pid = 1; pid <= STAT_FDS_MAX + 1; pid++)
		put(f, pid, "x");
	put(f, 100, "busy");
	/* The busy one is read between every newcomer: never the oldest. */
	for (int pid = 1; pid <= STAT_FDS_MAX + 1; pid++) {
		assert_string_equal(rd(f, pid), "x");
		assert_string_equal(rd(f, 100), "busy");
	}
	replace(f, 100, "new");
	assert_string_equal(rd(f, 100), "busy"); /* still kept */
	/* 1 was the least recently read when the last newcomer came. */
	replace(f, 1, "y");
	assert_string_equal(rd(f, 1), "y");
	assert_int_equal(f->c.opens, STAT_FDS_MAX + 3);
}

static void test_kept_fd_outlives_the_path(void **state)
{
	struct fixture *f = *state;
	char path[128];

	put(f, 5, "a");
	assert_string_equal(rd(f, 5), "a");
	snprintf(path, sizeof(path), "%s/5/stat", f->root);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_string_equal(rd(f, 5), "a"); /* the kept fd: the unlinked file */
	assert_int_equal(stat_fds_read(&f->c, f->rootfd, 6, (char[8]){0}, 8), -ENOENT);
	assert_int_equal(rmdir(path), 0);
	put(f, 5, "b");
	assert_string_equal(rd(f, 5), "a"); /* still the kept, unlinked one */
	assert_int_equal(f->c.opens, 1);
}

static void test_too_big_drops_and_reports(void **state)
{
	struct fixture *f = *state;
	char small[4];

	put(f, 9, "abcdefgh");
	assert_int_equal(stat_fds_read(&f->c, f->rootfd, 9, small, sizeof(small)), -EFBIG);
	put(f, 9, "ab");
	assert_int_equal(stat_fds_read(&f->c, f->rootfd, 9, small, sizeof(small)), 2);
	assert_string_equal(small, "ab");
	/* Kept only after a good read: the failing one opened and closed. */
	assert_int_equal(f->c.opens, 2);
	put(f, 9, "abcdefgh");
	assert_int_equal(stat_fds_read(&f->c, f->rootfd, 9, small, sizeof(small)), -EFBIG);
	/* The kept fd failed: dropped, then the path opened and failed too. */
	assert_int_equal(f->c.opens, 3);
	put(f, 9, "cd");
	assert_int_equal(stat_fds_read(&f->c, f->rootfd, 9, small, sizeof(small)), 2);
	assert_int_equal(f->c.opens, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_kept_fd_reads_the_same_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_least_recently_read_evicted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_kept_fd_outlives_the_path, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_too_big_drops_and_reports, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
