/* SPDX-License-Identifier: GPL-2.0-or-later */
/* parse_vmstat_buf() on real and hostile buffers; the kept-fd reader on
 * the real /proc/vmstat, twice (pread must re-read from the start). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vmstat.h"

static int parse(const char *s, uint64_t *v)
{
	return parse_vmstat_buf(s, strlen(s), v);
}

static void test_real_lines(void **state)
{
	const char *buf = "nr_free_pages 123\nthp_collapse_alloc 9\nthp_collapse_alloc_failed 42\nthp_split_page 0\n";
	uint64_t v = 0;

	(void)state;
	assert_int_equal(parse(buf, &v), 0);
	assert_int_equal(v, 42);
	/* Last line without a newline. */
	assert_int_equal(parse("a 1\nthp_collapse_alloc_failed 18446744073709551615", &v), 0);
	assert_true(v == UINT64_MAX);
}

static void test_hostile(void **state)
{
	uint64_t v = 5;

	(void)state;
	assert_int_equal(parse("", &v), -ENOENT);
	assert_int_equal(parse("thp_collapse_alloc 9\n", &v), -ENOENT);         /* a prefix is not the key */
	assert_int_equal(parse("xthp_collapse_alloc_failed 1\n", &v), -ENOENT); /* not at line start */
	assert_int_equal(parse("thp_collapse_alloc_failed \n", &v), -EINVAL);
	assert_int_equal(parse("thp_collapse_alloc_failed 1x\n", &v), -EINVAL);
	assert_int_equal(parse("thp_collapse_alloc_failed -1\n", &v), -EINVAL);
	assert_int_equal(parse("thp_collapse_alloc_failed 18446744073709551616\n", &v), -EINVAL);
	assert_int_equal(v, 5); /* untouched on failure */
	/* Not NUL-terminated: only len bytes are read. */
	assert_int_equal(parse_vmstat_buf("thp_collapse_alloc_failed 12345", 28, &v), 0);
	assert_int_equal(v, 12);
}

static void test_real_reader(void **state)
{
	struct vmstat_reader r;
	uint64_t a = 0, b = 0;

	(void)state;
	assert_int_equal(vmstat_reader_open(&r, "/proc"), 0);
	assert_int_equal(vmstat_read_alloc_failed(&r, &a), 0);
	assert_int_equal(vmstat_read_alloc_failed(&r, &b), 0);
	assert_true(b >= a);
	vmstat_reader_close(&r);
	assert_int_equal(r.fd, -1);
	assert_int_equal(vmstat_read_alloc_failed(&r, &a), -EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_real_lines),
	    cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_real_reader),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
