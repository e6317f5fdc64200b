/* mem_pressure: the PSI and zoneinfo parsers on real and hostile fixtures,
 * the decision, and the reader on a fixture /proc (issue 16: host memory
 * pressure pauses collapsing). */
#include <errno.h>
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

#include "mem_pressure.h"

#define FIX HC_FIXTURES "/pressure"

static char buf[1 << 16];

static size_t load(const char *name)
{
	char path[512];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", FIX, name);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return n;
}

static void test_psi(void **state)
{
	struct psi_memory p;
	size_t n;

	(void)state;
	n = load("psi_idle");
	assert_int_equal(parse_psi_memory_buf(buf, n, &p), 0);
	assert_true(p.have_full);
	assert_true(p.some_avg10 >= 0 && p.some_avg10 < 100);
	n = load("psi_busy");
	assert_int_equal(parse_psi_memory_buf(buf, n, &p), 0);
	assert_true(p.some_avg10 > 23.5 && p.some_avg10 < 23.52);
	assert_true(p.full_avg10 > 3.09 && p.full_avg10 < 3.11);
	n = load("psi_no_full");
	assert_int_equal(parse_psi_memory_buf(buf, n, &p), 0);
	assert_false(p.have_full);
	assert_int_equal(parse_psi_memory_buf(buf, load("psi_garbage"), &p), -EINVAL);
	assert_int_equal(parse_psi_memory_buf(buf, load("psi_no_avg10"), &p), -EINVAL);
	assert_int_equal(parse_psi_memory_buf(buf, load("psi_over_100"), &p), -EINVAL);
	assert_int_equal(parse_psi_memory_buf(buf, load("psi_no_some"), &p), -ENOENT);
	assert_int_equal(parse_psi_memory_buf("", 0, &p), -ENOENT);
	/* No NUL needed: a cut line is malformed, not read past. */
	assert_int_equal(parse_psi_memory_buf("some avg10=1", 12, &p), 0);
	assert_int_equal(parse_psi_memory_buf("some avg10=", 11, &p), -EINVAL);
}

static void test_zoneinfo(void **state)
{
	uint64_t fr = 0, hi = 0;

	(void)state;
	assert_int_equal(parse_zoneinfo_buf(buf, load("zoneinfo_real"), &fr, &hi), 0);
	assert_true(fr == 3840 + 772798 + 555884);
	assert_true(hi == 48 + 9686 + 15607 + 32);
	assert_int_equal(parse_zoneinfo_buf(buf, load("zoneinfo_low"), &fr, &hi), 0);
	assert_true(fr == 500 && hi == 48 + 9686 + 15607 + 32);
	assert_int_equal(parse_zoneinfo_buf(buf, load("zoneinfo_garbage"), &fr, &hi), -EINVAL);
	assert_int_equal(parse_zoneinfo_buf("", 0, &fr, &hi), -ENOENT);
}

static void test_decide(void **state)
{
	const struct mem_pressure_limits l = {.some_pct = 10, .full_pct = 2, .free_margin_pages = 1000};
	const struct mem_pressure_limits off = {.some_pct = 0, .full_pct = 0, .free_margin_pages = 0};
	struct psi_memory idle = {.some_avg10 = 9.99, .full_avg10 = 1.99, .have_full = true};
	struct psi_memory some = {.some_avg10 = 10, .full_avg10 = 0, .have_full = true};
	struct psi_memory full = {.some_avg10 = 50, .full_avg10 = 2, .have_full = true};
	uint64_t fr = 10000, hi = 9000, low = 9999;

	(void)state;
	assert_int_equal(mem_pressure_decide(&l, &idle, &fr, &hi), MEM_PRESSURE_NONE);
	assert_int_equal(mem_pressure_decide(&l, &some, &fr, &hi), MEM_PRESSURE_PSI_SOME);
	assert_int_equal(mem_pressure_decide(&l, &full, &fr, &hi), MEM_PRESSURE_PSI_FULL);
	assert_int_equal(mem_pressure_decide(&l, &idle, &low, &hi), MEM_PRESSURE_WATERMARK);
	assert_int_equal(mem_pressure_decide(&l, NULL, NULL, NULL), MEM_PRESSURE_NONE);
	assert_int_equal(mem_pressure_decide(&off, &full, &fr, &hi), MEM_PRESSURE_NONE);
	/* Free below the high watermarks pauses whatever the margin. */
	assert_int_equal(mem_pressure_decide(&off, &full, &hi, &fr), MEM_PRESSURE_WATERMARK);
	assert_string_equal(mem_pressure_sign_name(MEM_PRESSURE_PSI_SOME), "psi_some");
}

/* The reader on a fixture /proc, at most every MEM_PRESSURE_CHECK_S. */
static void test_reader(void **state)
{
	char root[] = "/tmp/hc-test-pressure.XXXXXX", path[512], cmd[1024];
	const struct mem_pressure_limits l = {.some_pct = 10, .full_pct = 2, .free_margin_pages = 0};
	struct mem_pressure m;

	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(path, sizeof(path), "%s/pressure", root);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(cmd, sizeof(cmd), "cp %s/psi_busy %s/pressure/memory && cp %s/zoneinfo_real %s/zoneinfo", FIX, root,
		 FIX, root);
	assert_int_equal(system(cmd), 0);
	mem_pressure_init(&m);
	assert_int_equal(mem_pressure_check(&m, root, &l, 100, NULL), MEM_PRESSURE_PSI_FULL);
	snprintf(cmd, sizeof(cmd), "cp %s/psi_idle %s/pressure/memory", FIX, root);
	assert_int_equal(system(cmd), 0);
	/* Too soon: the last answer. */
	assert_int_equal(mem_pressure_check(&m, root, &l, 100 + MEM_PRESSURE_CHECK_S / 2, NULL), MEM_PRESSURE_PSI_FULL);
	assert_int_equal(mem_pressure_check(&m, root, &l, 101, NULL), MEM_PRESSURE_NONE);
	assert_int_equal(m.reads, 2);
	snprintf(cmd, sizeof(cmd), "cp %s/zoneinfo_low %s/zoneinfo", FIX, root);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(mem_pressure_check(&m, root, &l, 102, NULL), MEM_PRESSURE_WATERMARK);
	mem_pressure_close(&m);
	snprintf(cmd, sizeof(cmd), "rm -r %s", root);
	assert_int_equal(system(cmd), 0);
	/* Nothing readable: no sign (the files do not exist on this kernel). */
	mem_pressure_init(&m);
	assert_int_equal(mem_pressure_check(&m, "/nonexistent", &l, 1, NULL), MEM_PRESSURE_NONE);
	mem_pressure_close(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_psi),
	    cmocka_unit_test(test_zoneinfo),
	    cmocka_unit_test(test_decide),
	    cmocka_unit_test(test_reader),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
