/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cgroup2: the cgroup v2 mount from a real mountinfo capture and from
 * hostile lines; whether a cgroup still exists, on a fixture tree standing
 * in for the mount; pruning the per-cgroup metric series of removed ones. */
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

#include "cgroup2.h"
#include "engine_stats.h"

static char mnt[4096], root[CGROUP2_ROOT_MAX];

static int parse(const char *s)
{
	mnt[0] = root[0] = 0;
	return parse_cgroup2_mount_buf(s, strlen(s), mnt, sizeof(mnt), root, sizeof(root));
}

static void test_real_capture(void **state)
{
	struct cgroup2_root r;

	(void)state;
	assert_int_equal(cgroup2_open(&r, HC_FIXTURES "/proc/real/mountinfo"), 0);
	assert_string_equal(r.root, "/");
	assert_true(r.fd >= 0);
	cgroup2_close(&r);
	assert_int_equal(r.fd, -1);
}

static void test_line_forms(void **state)
{
	(void)state;
	assert_int_equal(parse("41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"), 0);
	assert_string_equal(mnt, "/sys/fs/cgroup/unified");
	assert_string_equal(root, "/");
	/* Optional fields before the separator, no final newline. */
	assert_int_equal(
	    parse("30 24 0:26 / /sys/fs/cgroup rw,nosuid shared:4 master:1 - cgroup2 cgroup2 rw,nsdelegate"), 0);
	assert_string_equal(mnt, "/sys/fs/cgroup");
	/* Spaces, tabs, newlines and backslashes are octal-escaped. */
	assert_int_equal(parse("1 2 0:3 /a\\040b /mnt/my\\040cg\\011x\\012y\\134z rw - cgroup2 none rw\n"), 0);
	assert_string_equal(mnt, "/mnt/my cg\tx\ny\\z");
	assert_string_equal(root, "/a b");
}

/* A container or a bind mount shows a subtree first; the whole hierarchy,
 * where there is one, wins. */
static void test_prefers_whole_hierarchy(void **state)
{
	(void)state;
	assert_int_equal(parse("1 0 0:1 / / rw - ext4 /dev/sda rw\n"
			       "2 1 0:9 /sub /mnt/sub rw - cgroup2 cgroup2 rw\n"
			       "3 1 0:9 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"),
			 0);
	assert_string_equal(mnt, "/sys/fs/cgroup");
	assert_string_equal(root, "/");
	assert_int_equal(parse("2 1 0:9 /sub /mnt/sub rw - cgroup2 cgroup2 rw\n"), 0);
	assert_string_equal(mnt, "/mnt/sub");
	assert_string_equal(root, "/sub");
}

static void test_hostile(void **state)
{
	char big[8192];

	(void)state;
	assert_int_equal(parse(""), -ENOENT);
	/* cgroup v1 only, and a v1 mount whose name mentions cgroup2. */
	assert_int_equal(parse("35 25 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"), -ENOENT);
	assert_int_equal(parse("35 25 0:30 / /cgroup2 rw - cgroup cgroup2 rw\n"), -ENOENT);
	/* "cgroup2" with no separator, or a separator and no fields before it. */
	assert_int_equal(parse("35 25 0:30 / /x rw cgroup2 cgroup2 rw\n"), -ENOENT);
	assert_int_equal(parse(" - cgroup2 cgroup2 rw\n"), -EINVAL);
	assert_int_equal(parse("1 2 3 - cgroup2 cgroup2 rw\n"), -EINVAL);
	/* A malformed line does not hide a good one after it. */
	assert_int_equal(parse("1 2 3 - cgroup2 cgroup2 rw\n4 5 0:6 / /good rw - cgroup2 cgroup2 rw\n"), 0);
	assert_string_equal(mnt, "/good");
	/* A truncated escape is taken literally. */
	assert_int_equal(parse("1 2 0:3 / /a\\04 rw - cgroup2 x rw"), 0);
	assert_string_equal(mnt, "/a\\04");
	/* A mount point longer than the buffer. */
	memset(big, 'a', sizeof(big));
	memcpy(big, "1 2 0:3 / /", 11);
	strcpy(big + sizeof(big) - 30, " rw - cgroup2 cgroup2 rw\n");
	assert_int_equal(parse(big), -ENAMETOOLONG);
	/* A NUL byte (raw or \000) in a path would cut it short: malformed. */
	assert_int_equal(
	    parse_cgroup2_mount_buf("1 2 0:3 / /a\0b rw - cgroup2 x rw\n", 34, mnt, sizeof(mnt), root, sizeof(root)),
	    -EINVAL);
	assert_int_equal(parse("1 2 0:3 / /a\\000b rw - cgroup2 x rw\n"), -EINVAL);
	/* Elsewhere on the line, a NUL is just a byte. */
	assert_int_equal(
	    parse_cgroup2_mount_buf("1 2 0:3 / /ab r\0w - cgroup2 x rw\n", 34, mnt, sizeof(mnt), root, sizeof(root)),
	    0);
	assert_string_equal(mnt, "/ab");
}

/* ---- existence and pruning on a fixture tree ---- */

static char tree[64];

static void mk(const char *rel)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", tree, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static int setup(void **state)
{
	(void)state;
	strcpy(tree, "/tmp/test_cgroup2.XXXXXX");
	return mkdtemp(tree) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tree);
	return system(cmd);
}

static void test_exists(void **state)
{
	struct cgroup2_root r;
	char p[256];

	(void)state;
	mk("system.slice");
	mk("system.slice/web.service");
	snprintf(p, sizeof(p), "%s/file", tree);
	close(open(p, O_WRONLY | O_CREAT, 0644));
	snprintf(p, sizeof(p), "%s/link", tree);
	assert_int_equal(symlink("system.slice", p), 0);
	assert_int_equal(cgroup2_open_dir(&r, tree, "/"), 0);
	assert_int_equal(cgroup2_exists(&r, "/"), 1);
	assert_int_equal(cgroup2_exists(&r, "/system.slice/web.service"), 1);
	assert_int_equal(cgroup2_exists(&r, "/system.slice/gone.service"), 0);
	assert_int_equal(cgroup2_exists(&r, "/file"), 0);
	assert_int_equal(cgroup2_exists(&r, "/file/below"), 0); /* ENOTDIR */
	assert_int_equal(cgroup2_exists(&r, "/link"), 0);       /* not a cgroup */
	assert_true(cgroup2_exists(&r, "?") < 0);               /* unknown: cannot tell */
	assert_true(cgroup2_exists(&r, "") < 0);
	cgroup2_close(&r);
	assert_true(cgroup2_exists(&r, "/") < 0); /* no mount known */
}

/* The mount shows the subtree /ns: "/ns/a" is at tree/a; a path outside
 * it cannot be checked. */
static void test_exists_subtree_root(void **state)
{
	struct cgroup2_root r;

	(void)state;
	mk("a");
	assert_int_equal(cgroup2_open_dir(&r, tree, "/ns"), 0);
	assert_int_equal(cgroup2_exists(&r, "/ns"), 1);
	assert_int_equal(cgroup2_exists(&r, "/ns/a"), 1);
	assert_int_equal(cgroup2_exists(&r, "/ns/b"), 0);
	assert_true(cgroup2_exists(&r, "/nsx/a") < 0);
	assert_true(cgroup2_exists(&r, "/other") < 0);
	cgroup2_close(&r);
}

static void test_prune(void **state)
{
	struct cgroup2_root r;
	struct cgroup_bytes cg[6];
	const char *names[] = {"/kept", "/gone1", "?", "/", "/gone2", "/kept/child"};
	size_t n = 6;

	(void)state;
	mk("kept");
	mk("kept/child");
	for (size_t i = 0; i < n; i++)
		cg[i] = (struct cgroup_bytes){.cgroup = strdup(names[i]), .bytes = i + 1};
	assert_int_equal(cgroup2_open_dir(&r, tree, "/"), 0);
	assert_int_equal(cgroup_bytes_prune(cg, &n, &r), 2);
	assert_int_equal(n, 4);
	assert_string_equal(cg[0].cgroup, "/kept");
	assert_int_equal(cg[0].bytes, 1);
	assert_string_equal(cg[1].cgroup, "?");
	assert_string_equal(cg[2].cgroup, "/");
	assert_string_equal(cg[3].cgroup, "/kept/child");
	assert_int_equal(cg[3].bytes, 6);
	/* Nothing more to drop; then the whole tree goes. */
	assert_int_equal(cgroup_bytes_prune(cg, &n, &r), 0);
	assert_int_equal(rmdir(strcat(strcpy((char[96]){0}, tree), "/kept/child")), 0);
	assert_int_equal(cgroup_bytes_prune(cg, &n, &r), 1);
	assert_int_equal(n, 3);
	cgroup2_close(&r);
	/* No mount known: nothing is dropped. */
	assert_int_equal(cgroup_bytes_prune(cg, &n, &r), 0);
	for (size_t i = 0; i < n; i++)
		free(cg[i].cgroup);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_real_capture),
	    cmocka_unit_test(test_line_forms),
	    cmocka_unit_test(test_prefers_whole_hierarchy),
	    cmocka_unit_test(test_hostile),
	    cmocka_unit_test_setup_teardown(test_exists, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_exists_subtree_root, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_prune, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
