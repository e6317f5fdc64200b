/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memcg: the parsers on literal and hostile inputs, memcg_room() on cgroup
 * v2 and v1 fixture trees (this machine has no v2 memory controller), the
 * roots from a mountinfo, and how blocks spend a cgroup's room. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "memcg.h"
#include "procs.h"
#include "units.h"

#define FIX     HC_FIXTURES
#define HOSTILE FIX "/memcg_hostile"

static char buf[8192];

static size_t load(const char *name)
{
	char path[PATH_MAX];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", HOSTILE, name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		fail_msg("open %s", path);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	assert_true(n >= 0);
	return (size_t)n;
}

static int value_of(const char *s, uint64_t *v)
{
	return parse_memcg_value_buf(s, strlen(s), v);
}

static void test_value(void **state)
{
	uint64_t v = 0;

	(void)state;
	assert_int_equal(value_of("max\n", &v), 0);
	assert_true(v == MEMCG_UNLIMITED);
	assert_int_equal(value_of("536870912\n", &v), 0);
	assert_true(v == 536870912);
	assert_int_equal(value_of("0", &v), 0);
	assert_true(v == 0);
	assert_int_equal(value_of("18446744073709551615\n", &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(value_of("9223372036854771712\n", &v), 0); /* v1 unlimited */
	assert_true(v == UINT64_C(9223372036854771712));
}

static void test_value_hostile(void **state)
{
	static const char *const bad[] = {"value_two_lines", "value_space", "value_negative", "value_overflow",
					  "value_empty",     "value_nul",   "value_crlf"};
	uint64_t v = 7;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n = load(bad[i]);

		if (parse_memcg_value_buf(buf, n, &v) != -EINVAL)
			fail_msg("%s: accepted", bad[i]);
	}
	assert_true(v == 7); /* untouched on failure */
}

static void test_stat(void **state)
{
	static const char stat[] = "cache 4096\nrss 8192\nhierarchical_memory_limit 209715200\n"
				   "hierarchical_memsw_limit max\ntotal_cache 1\n";
	uint64_t v = 0;
	size_t n;

	(void)state;
	assert_int_equal(parse_memcg_stat_buf(stat, sizeof(stat) - 1, "hierarchical_memory_limit", &v), 0);
	assert_true(v == 209715200);
	assert_int_equal(parse_memcg_stat_buf(stat, sizeof(stat) - 1, "hierarchical_memsw_limit", &v), 0);
	assert_true(v == MEMCG_UNLIMITED);
	assert_int_equal(parse_memcg_stat_buf(stat, sizeof(stat) - 1, "cache", &v), 0);
	assert_true(v == 4096); /* not total_cache */
	assert_int_equal(parse_memcg_stat_buf(stat, sizeof(stat) - 1, "swap", &v), -ENOENT);

	n = load("stat_no_value");
	assert_int_equal(parse_memcg_stat_buf(buf, n, "hierarchical_memory_limit", &v), -ENOENT);
	n = load("stat_prefix_key"); /* a longer key first, then ours without a newline */
	assert_int_equal(parse_memcg_stat_buf(buf, n, "hierarchical_memory_limit", &v), 0);
	assert_true(v == 7);
	n = load("stat_tab");
	assert_int_equal(parse_memcg_stat_buf(buf, n, "hierarchical_memory_limit", &v), -ENOENT);
}

static void test_mountinfo(void **state)
{
	static const char host[] = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
				   "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
				   "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
				   "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
	static const char v2[] = "25 30 0:23 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n";
	static const char container[] =
	    "700 690 0:32 /docker/abc /sys/fs/cgroup/memory ro,nosuid master:15 - cgroup cgroup rw,cpu,memory\n";
	struct memcg_roots r;
	size_t n;

	(void)state;
	assert_int_equal(parse_mountinfo_memcg_buf(host, sizeof(host) - 1, &r), 0);
	assert_int_equal(r.mode, MEMCG_V1); /* v1 memory wins over a controller-less v2 */
	assert_string_equal(r.mount, "/sys/fs/cgroup/memory");
	assert_string_equal(r.root, "/");
	assert_int_equal(parse_mountinfo_memcg_buf(v2, sizeof(v2) - 1, &r), 0);
	assert_int_equal(r.mode, MEMCG_V2);
	assert_string_equal(r.mount, "/sys/fs/cgroup");
	assert_int_equal(parse_mountinfo_memcg_buf(container, sizeof(container) - 1, &r), 0);
	assert_int_equal(r.mode, MEMCG_V1);
	assert_string_equal(r.root, "/docker/abc");
	assert_int_equal(parse_mountinfo_memcg_buf("", 0, &r), 0);
	assert_int_equal(r.mode, MEMCG_NONE);

	n = load("mountinfo_truncated");
	assert_int_equal(parse_mountinfo_memcg_buf(buf, n, &r), 0);
	assert_int_equal(r.mode, MEMCG_NONE);
	n = load("mountinfo_memoryx");
	assert_int_equal(parse_mountinfo_memcg_buf(buf, n, &r), 0);
	assert_int_equal(r.mode, MEMCG_NONE);
	n = load("mountinfo_relative");
	assert_int_equal(parse_mountinfo_memcg_buf(buf, n, &r), -EINVAL);
	n = load("mountinfo_escaped");
	assert_int_equal(parse_mountinfo_memcg_buf(buf, n, &r), 0);
	assert_string_equal(r.mount, "/sys/fs/with space");
	n = load("mountinfo_nul_escape");
	assert_int_equal(parse_mountinfo_memcg_buf(buf, n, &r), -EINVAL);
}

/* memcg_roots_find() checks the v2 root's cgroup.controllers. */
static void test_roots_find_v2(void **state)
{
	char path[] = "/tmp/hc-test-mountinfo.XXXXXX";
	struct memcg_roots r;
	FILE *f;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fprintf(f, "41 31 0:38 / %s/cgroup2 rw - cgroup2 cgroup2 rw\n", FIX);
	fclose(f);
	assert_int_equal(memcg_roots_find(path, &r), 0);
	assert_int_equal(r.mode, MEMCG_V2);
	f = fopen(path, "w");
	fprintf(f, "41 31 0:38 / %s/cgroup2_nomem rw - cgroup2 cgroup2 rw\n", FIX);
	fclose(f);
	assert_int_equal(memcg_roots_find(path, &r), 0);
	assert_int_equal(r.mode, MEMCG_NONE);
	unlink(path);
	assert_int_equal(memcg_roots_find(path, &r), -ENOENT);
}

/* A mountinfo of nlines overlay mounts (about 260 bytes each, as on a dense
 * Kubernetes node), then the last line. Returns its size. */
static size_t write_hostile_mountinfo(const char *path, unsigned nlines, const char *last)
{
	FILE *f = fopen(path, "w");
	long size;

	assert_non_null(f);
	for (unsigned i = 0; i < nlines; i++)
		fprintf(
		    f,
		    "%u 29 0:%u / /var/lib/containerd/io.containerd.runtime.v2.task/k8s.io/%064x/rootfs rw,relatime "
		    "- overlay overlay rw,lowerdir=/var/lib/l/%u,upperdir=/var/lib/u/%u,workdir=/w/%u\n",
		    1000 + i, 100 + i, i, i, i, i);
	fprintf(f, "%s\n", last);
	size = ftell(f);
	fclose(f);
	return (size_t)size;
}

/* Issue 16, defect 6: mountinfo past 1 MiB (and past cgroup2.c's old 4 MiB)
 * is read whole; the memory hierarchy at its end is found. Before, the read
 * failed with -EFBIG and the gate assumed no memory controller. */
static void test_roots_find_huge_mountinfo(void **state)
{
	char path[] = "/tmp/hc-test-mountinfo.XXXXXX";
	char last[PATH_MAX + 128];
	struct memcg_roots r;
	const unsigned lines[] = {5000, 17000};
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	snprintf(last, sizeof(last), "35 31 0:32 / %s/cgroup1 rw,relatime - cgroup cgroup rw,memory", FIX);
	for (size_t k = 0; k < 2; k++) {
		size_t size = write_hostile_mountinfo(path, lines[k], last);

		assert_true(size > (k ? 4u << 20 : 1u << 20));
		memset(&r, 0, sizeof(r));
		assert_int_equal(memcg_roots_find(path, &r), 0);
		assert_int_equal(r.mode, MEMCG_V1);
		assert_string_equal(r.mount, FIX "/cgroup1");
	}
	unlink(path);
}

static struct memcg_roots roots(enum memcg_mode mode, const char *mount, const char *root)
{
	struct memcg_roots r = {.mode = mode};

	snprintf(r.mount, sizeof(r.mount), "%s", mount);
	snprintf(r.root, sizeof(r.root), "%s", root);
	return r;
}

static void test_room_v2(void **state)
{
	struct memcg_roots r = roots(MEMCG_V2, FIX "/cgroup2", "/");
	uint64_t room = 0;

	(void)state;
	assert_int_equal(memcg_room(&r, "/a/b/c", &room), 0);
	assert_true(room == 524288000 - 500000000); /* /a/b's memory.high */
	assert_int_equal(memcg_room(&r, "/a", &room), 0);
	assert_true(room == UINT64_C(1073741824) - 1000000000);
	assert_int_equal(memcg_room(&r, "/nolimit", &room), 0);
	assert_true(room == MEMCG_UNLIMITED);
	assert_int_equal(memcg_room(&r, "/", &room), 0); /* the root: no limit files */
	assert_true(room == MEMCG_UNLIMITED);
	assert_int_equal(memcg_room(&r, "/over", &room), 0);
	assert_true(room == 0);
	assert_int_equal(memcg_room(&r, "/highonly", &room), 0);
	assert_true(room == 2000000);
	assert_int_equal(memcg_room(&r, "/garbage", &room), -EINVAL);
	assert_int_equal(memcg_room(&r, "/nocurrent", &room), -ENOENT);
	assert_int_equal(memcg_room(&r, "/gone", &room), -ENOENT);
	assert_int_equal(memcg_room(&r, "/a/../a", &room), -EINVAL);
	assert_int_equal(memcg_room(&r, "a", &room), -EINVAL);
	r.mode = MEMCG_NONE;
	assert_int_equal(memcg_room(&r, "/over", &room), 0);
	assert_true(room == MEMCG_UNLIMITED);
}

static void test_room_v1(void **state)
{
	struct memcg_roots host = roots(MEMCG_V1, FIX "/cgroup1", "/");
	struct memcg_roots container = roots(MEMCG_V1, FIX "/cgroup1/x", "/docker/abc");
	uint64_t room = 0;

	(void)state;
	assert_int_equal(memcg_room(&host, "/x", &room), 0);
	assert_true(room == 209715200 - 104857600);
	assert_int_equal(memcg_room(&host, "/x/y", &room), 0);
	assert_true(room == 150000000 - 60000000); /* memsw is the tightest */
	assert_int_equal(memcg_room(&host, "/x/z", &room), 0);
	assert_true(room == 9715200); /* hierarchical limit against its own usage */
	assert_int_equal(memcg_room(&host, "/bad", &room), -EINVAL);
	/* In a container, x/ is the mount: only memory.stat knows its limit. */
	assert_int_equal(memcg_room(&container, "/docker/abc/z", &room), 0);
	assert_true(room == 9715200);
	assert_int_equal(memcg_room(&container, "/docker/abcd/z", &room), -ENOENT);
	assert_int_equal(memcg_room(&container, "/other", &room), -ENOENT);
}

static void test_cgroup_v1_line(void **state)
{
	static const char real[] = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/78b8\n1:cpu:/\n0::/\n";
	char path[64];
	size_t n;

	(void)state;
	assert_int_equal(parse_cgroup_v1_buf(real, sizeof(real) - 1, "memory", path, sizeof(path)), 0);
	assert_string_equal(path, "/process_api/78b8");
	assert_int_equal(parse_cgroup_v1_buf(real, sizeof(real) - 1, "memory", path, 10), -ENAMETOOLONG);
	assert_int_equal(parse_cgroup_v1_buf("0::/\n", 5, "memory", path, sizeof(path)), -ENOENT);
	n = load("cgroup_v1_joined");
	assert_int_equal(parse_cgroup_v1_buf(buf, n, "memory", path, sizeof(path)), 0);
	assert_string_equal(path, "/j");
	n = load("cgroup_v1_prefix");
	assert_int_equal(parse_cgroup_v1_buf(buf, n, "memory", path, sizeof(path)), -ENOENT);
	n = load("cgroup_v1_no_colon");
	assert_int_equal(parse_cgroup_v1_buf(buf, n, "memory", path, sizeof(path)), -ENOENT);
	n = load("cgroup_v1_relative");
	assert_int_equal(parse_cgroup_v1_buf(buf, n, "memory", path, sizeof(path)), -EINVAL);
	n = load("cgroup_v1_empty");
	assert_int_equal(parse_cgroup_v1_buf(buf, n, "memory", path, sizeof(path)), -EINVAL);
	/* The v2 parser still reads only the 0:: line. */
	assert_int_equal(parse_cgroup_buf(real, sizeof(real) - 1, path, sizeof(path)), 0);
	assert_string_equal(path, "/");
}

/* The scenario: 4 MiB of room, blocks 3/4 populated. */
static void test_take(void **state)
{
	uint64_t room = 4 * MIB_BYTES, headroom = memcg_headroom_bytes(0, 2);
	unsigned n = 0;

	(void)state;
	assert_true(headroom == 2 * 64 * 4096);
	assert_true(memcg_headroom_bytes(2, 1) == 2 * MIB_BYTES + 64 * 4096);
	while (memcg_take(&room, headroom, 384))
		n++;
	assert_int_equal(n, 4); /* 4, 3.5, 3, 2.5 MiB left before each: 2.5 >= 2 + 0.5 */
	assert_true(room == 2 * MIB_BYTES);
	/* A full block keeps nothing, but its 2 MiB peak must still fit. */
	room = 2 * MIB_BYTES + headroom;
	assert_true(memcg_take(&room, headroom, 512));
	assert_true(room == 2 * MIB_BYTES + headroom);
	room = 2 * MIB_BYTES + headroom - 1;
	assert_false(memcg_take(&room, headroom, 512));
	room = 0;
	assert_false(memcg_take(&room, 0, 512));
	room = MEMCG_UNLIMITED;
	assert_true(memcg_take(&room, headroom, 0));
	assert_true(room == MEMCG_UNLIMITED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_value),          cmocka_unit_test(test_value_hostile),
	    cmocka_unit_test(test_stat),           cmocka_unit_test(test_mountinfo),
	    cmocka_unit_test(test_roots_find_v2),  cmocka_unit_test(test_roots_find_huge_mountinfo),
	    cmocka_unit_test(test_room_v2),        cmocka_unit_test(test_room_v1),
	    cmocka_unit_test(test_cgroup_v1_line), cmocka_unit_test(test_take),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
