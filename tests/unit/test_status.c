/* SPDX-License-Identifier: GPL-2.0-or-later */
/* status: parse_prom_sample_buf() on good and hostile lines, and
 * parse_status_buf() over the text metrics_format() writes (a round trip
 * of coverage series, escapes and all), then the tables and the JSON. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "engine.h"
#include "metrics.h"
#include "scan_result.h"
#include "status.h"

#define MIB2 (UINT64_C(2) << 20)

static int parse(const char *line, struct prom_sample *s)
{
	return parse_prom_sample_buf(line, strlen(line), s);
}

static void test_sample_lines(void **state)
{
	struct prom_sample s;

	(void)state;
	assert_int_equal(parse("a_total 12", &s), 0);
	assert_string_equal(s.name, "a_total");
	assert_true(s.value == 12);
	assert_int_equal(parse("x{cgroup=\"/q\\\"b\\\\c\\nd\",result=\"cold\"} 1.5e3 1700000000000", &s), 0);
	assert_int_equal(s.nlabels, 2);
	assert_string_equal(prom_label(&s, "cgroup"), "/q\"b\\c\nd");
	assert_string_equal(prom_label(&s, "result"), "cold");
	assert_null(prom_label(&s, "nope"));
	assert_true(s.value == 1500);
	assert_int_equal(parse("# HELP a A.", &s), -ENOENT);
	assert_int_equal(parse("", &s), -ENOENT);
}

static void test_hostile_lines(void **state)
{
	static const char *const bad[] = {
	    "a",                                            /* no value */
	    "a ",                                           /* empty value */
	    "a 1x",                                         /* not a number */
	    "a{b=\"c\"",                                    /* unclosed braces */
	    "a{b=\"c} 1",                                   /* unclosed quote */
	    "a{b=c} 1",                                     /* unquoted value */
	    "a{b=\"\\t\"} 1",                               /* bad escape */
	    "a{b=\"\\",                                     /* escape at the end */
	    "a{=\"x\"} 1",                                  /* no label name */
	    "a{a=\"1\",b=\"2\",c=\"3\",d=\"4\",e=\"5\"} 1", /* too many labels */
	    "1a 1",                                         /* name starts with a digit */
	    "{a=\"1\"} 1",                                  /* no name */
	};
	char longname[256], longval[1024];
	struct prom_sample s;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (parse(bad[i], &s) != -EINVAL)
			fail_msg("accepted: %s", bad[i]);
	memset(longname, 'a', sizeof(longname));
	snprintf(longname + 200, sizeof(longname) - 200, " 1");
	assert_int_equal(parse(longname, &s), -EINVAL);
	snprintf(longval, sizeof(longval), "a{b=\"%0900d\"} 1", 0);
	assert_int_equal(parse(longval, &s), -EINVAL);
}

/* A hand-filled engine through metrics_format(), read back. */
static void test_round_trip(void **state)
{
	static struct proc_state st[2];
	static struct block_memo memos[4];
	static struct cgroup_bytes cgb[1];
	struct engine e;
	struct status sts;
	char *buf = NULL, *out = NULL;
	size_t len = 0, outlen = 0;
	FILE *f;

	(void)state;
	memset(&e, 0, sizeof(e));
	memset(st, 0, sizeof(st));
	st[0] = (struct proc_state){.pid = 42, .scanned = true, .cgroup = "/we\"ird\\name\nhere"};
	st[0].usage = (struct thp_usage){.anon = 8 * MIB2, .anon_huge = 2 * MIB2};
	st[0].blocks = memos;
	st[0].nblocks = 4;
	st[0].results[SCAN_COLD] = 3;
	st[0].results[SCAN_EXCEED_NONE_PTE] = 1;
	snprintf(st[0].prev.comm, sizeof(st[0].prev.comm), "db");
	cgb[0] = (struct cgroup_bytes){.cgroup = "/we\"ird\\name\nhere", .bytes = 3 * MIB2};
	e.st = st;
	e.nst = 1;
	e.cg_bytes = cgb;
	e.ncg_bytes = 1;
	e.passes = 9;
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	metrics_format(f, &e, KHUGEPAGED_IDLE);
	fclose(f);
	assert_int_equal(parse_status_buf(buf, len, &sts), 0);
	assert_true(sts.passes == 9);
	assert_true(sts.collapsed_bytes == 3 * MIB2);
	assert_string_equal(sts.khugepaged, "idle");
	assert_int_equal(sts.ncg, 1);
	assert_string_equal(sts.cg[0].cgroup, "/we\"ird\\name\nhere");
	assert_true(sts.cg[0].coverage == 0.25);
	assert_true(sts.cg[0].pending == 4 * MIB2);
	assert_true(sts.cg[0].target < 0);
	assert_int_equal(sts.nproc, 1);
	assert_int_equal(sts.proc[0].pid, 42);
	assert_string_equal(sts.proc[0].comm, "db");
	f = open_memstream(&out, &outlen);
	status_print_tables(f, &sts);
	status_print_json(f, &sts, "/run/x.prom", 3);
	fclose(f);
	assert_non_null(strstr(out, "    25.0%       -"));
	assert_non_null(strstr(out, "MiB  cold            /we\"ird")); /* the top reason */
	assert_non_null(strstr(
	    out, "\"skipped_bytes\":8388608,\"skipped_by_result\":{\"exceed_none_pte\":2097152,\"cold\":6291456}"));
	assert_non_null(strstr(out, "\"coverage\":0.25"));
	assert_non_null(strstr(out, "\"pending_bytes\":8388608"));
	assert_non_null(strstr(out, "\"cgroup\":\"/we\\\"ird\\\\name\\u000ahere\""));
	status_free(&sts);
	free(out);
	free(buf);
}

/* --status --json: the schema version first, ratios as people read them,
 * bytes exact, and no NaN (which is not JSON) from a hostile file. */
static void test_json_numbers(void **state)
{
	const char *t = "hugecollapsed_passes_total 3\n"
			"hugecollapsed_scan_seconds_total 0.100000\n"
			"hugecollapsed_observe_only 1\n"
			"hugecollapsed_would_collapse_bytes 67108864\n"
			"hugecollapsed_cgroup_thp_coverage_ratio{cgroup=\"/a\"} 0.666667\n"
			"hugecollapsed_cgroup_anon_bytes{cgroup=\"/a\"} 18446744073709551615\n"
			"hugecollapsed_cgroup_thp_coverage_ratio{cgroup=\"/b\"} NaN\n";
	struct status sts;
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(parse_status_buf(t, strlen(t), &sts), 0);
	f = open_memstream(&out, &len);
	assert_non_null(f);
	status_print_json(f, &sts, "/x", 2.5);
	status_print_tables(f, &sts);
	fclose(f);
	assert_true(!strncmp(out, "{\"schema_version\":1,", strlen("{\"schema_version\":1,")));
	assert_non_null(strstr(out, "\"coverage\":0.667,"));
	assert_non_null(strstr(out, "{\"cgroup\":\"/b\",\"coverage\":null,"));
	assert_non_null(strstr(out, "\"anon_bytes\":18446744073709551616,"));
	assert_non_null(strstr(out, "\"scan_seconds\":0.1,"));
	assert_non_null(strstr(out, "\"age_seconds\":2.5,"));
	assert_non_null(strstr(out, "\"observe_only\":true,\"would_collapse_bytes\":67108864,"));
	assert_non_null(strstr(out, "observe only: would collapse 64.0 MiB in 0 processes"));
	assert_null(strstr(out, "0.66666"));
	assert_null(strstr(out, "nan"));
	status_free(&sts);
	free(out);
}

static void test_not_ours(void **state)
{
	struct status sts;
	const char *t = "# HELP node_x X.\nnode_x 1\n";

	(void)state;
	assert_int_equal(parse_status_buf(t, strlen(t), &sts), -EINVAL);
	assert_int_equal(parse_status_buf("", 0, &sts), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sample_lines),  cmocka_unit_test(test_json_numbers),
	    cmocka_unit_test(test_hostile_lines), cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_not_ours),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
