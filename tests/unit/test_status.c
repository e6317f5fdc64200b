/* SPDX-License-Identifier: GPL-2.0-or-later */
/* status: parse_prom_sample_buf() on good and hostile lines, and
 * parse_status_buf() over the text metrics_format() writes (a round trip
 * of coverage series, escapes and all), then the tables and the JSON. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "engine_stats.h"
#include "metrics.h"
#include "scan_result.h"
#include "status.h"
#include "units.h"

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
	struct engine_stats e;
	struct status sts;
	char *buf = NULL, *out = NULL;
	size_t len = 0, outlen = 0;
	FILE *f;

	(void)state;
	memset(&e, 0, sizeof(e));
	memset(st, 0, sizeof(st));
	st[0] = (struct proc_state){.pid = 42, .scanned = true, .cgroup = "/we\"ird\\name\nhere"};
	st[0].usage = (struct thp_usage){.anon = 8 * HPAGE_SIZE, .anon_huge = 2 * HPAGE_SIZE};
	st[0].blocks = memos;
	st[0].nblocks = 4;
	st[0].results[SCAN_COLD] = 3;
	st[0].results[SCAN_EXCEED_NONE_PTE] = 1;
	snprintf(st[0].prev.comm, sizeof(st[0].prev.comm), "db");
	cgb[0] = (struct cgroup_bytes){.cgroup = "/we\"ird\\name\nhere", .bytes = 3 * HPAGE_SIZE};
	e.view.procs = st;
	e.view.nprocs = 1;
	e.cg_bytes = cgb;
	e.ncg_bytes = 1;
	e.passes = 9;
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	metrics_format(f, &e, KHUGEPAGED_IDLE, NULL);
	fclose(f);
	assert_int_equal(parse_status_buf(buf, len, &sts), 0);
	assert_true(sts.passes == 9);
	assert_true(sts.collapsed_bytes == 3 * HPAGE_SIZE);
	assert_string_equal(sts.khugepaged, "idle");
	assert_int_equal(sts.ncg, 1);
	assert_string_equal(sts.cg[0].cgroup, "/we\"ird\\name\nhere");
	assert_true(sts.cg[0].coverage == 0.25);
	assert_true(sts.cg[0].pending == 4 * HPAGE_SIZE);
	assert_true(sts.cg[0].target < 0);
	assert_int_equal(sts.nproc, 1);
	assert_int_equal(sts.proc[0].pid, 42);
	assert_string_equal(sts.proc[0].comm, ""); /* not a label: status_run() reads it */
	assert_string_equal(sts.proc[0].cgroup, "/we\"ird\\name\nhere");
	f = open_memstream(&out, &outlen);
	status_print_tables(f, &sts);
	status_print_json(f, &sts, "/run/x.prom", PRODUCER_UNKNOWN, 3, 0);
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
 * bytes exact, and no NaN (which is not JSON) from a hostile file: its
 * line is read as absent. */
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
	status_print_json(f, &sts, "/x", PRODUCER_UNKNOWN, 2.5, 0);
	status_print_tables(f, &sts);
	fclose(f);
	assert_true(!strncmp(out, "{\"schema_version\":1,", strlen("{\"schema_version\":1,")));
	assert_non_null(strstr(out, "\"coverage\":0.667,"));
	assert_null(strstr(out, "\"/b\"")); /* a NaN line counts as absent (parse_status_buf) */
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

#define FIX HC_FIXTURES "/status"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *b = malloc(1 << 20);

	assert_non_null(f);
	assert_non_null(b);
	*len = fread(b, 1, 1 << 20, f);
	fclose(f);
	return b;
}

static char *run(const char *file, bool json, const char *proc, int want)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(f);
	assert_int_equal(status_run_at(f, file, json, proc), want);
	fclose(f);
	return out;
}

/* What a daemon writes: every counter by the name the file gives (a result
 * this binary does not know too), the writer, the pid's comm read now. */
static void test_fixture_good(void **state)
{
	struct status st;
	size_t len;
	char *buf = slurp(FIX "/good.prom", &len), *out;

	(void)state;
	assert_int_equal(parse_status_buf(buf, len, &st), 0);
	free(buf);
	assert_true(st.passes == 12);
	assert_true(st.collapsed_bytes == 6 * MIB_BYTES);
	assert_true(st.procs_scanned == 40 && st.procs_unchanged == 30 && st.procs_active == 2);
	assert_int_equal(st.nresult, 3);
	assert_string_equal(st.result[1].name, "thp_policy");
	assert_true(st.result[1].value == 6);
	assert_string_equal(st.result[2].name, "cold_range");
	assert_int_equal(st.noutcome, 2);
	assert_string_equal(st.outcome[1].name, "eperm");
	assert_int_equal(st.daemon.pid, 4242);
	assert_int_equal(st.daemon.start_ticks, 1234567);
	assert_string_equal(st.daemon.boot_id, "6f1c5c33-5b5e-4c32-9d6b-3f1f0a8fbc0e");
	assert_int_equal(st.proc[0].pid, 777);
	status_free(&st);

	out = run(FIX "/good.prom", false, FIX "/proc", 0);
	assert_non_null(strstr(out, "hugecollapsed: 12 passes, 6.0 MiB collapsed, khugepaged keep\n"));
	assert_non_null(strstr(out, "  daemon: running (pid 4242)\n"));
	assert_non_null(strstr(out, "  scan results (2 MiB ranges): candidate 21 thp_policy 6 cold_range 2\n"));
	assert_non_null(strstr(out, "  collapse outcomes (2 MiB ranges): collapsed 3 eperm 1\n"));
	assert_non_null(strstr(out, "processes: 40 scans, 30 skipped unchanged, 2 active now"));
	assert_non_null(strstr(out, "last pass ended "));
	assert_non_null(strstr(out, "777      pgbench "));
	assert_null(strstr(out, "-1"));
	free(out);
	out = run(FIX "/good.prom", true, FIX "/proc", 0);
	assert_non_null(strstr(out, "\"daemon\":\"running\",\"daemon_pid\":4242"));
	assert_non_null(strstr(out, "\"last_pass_age_seconds\":"));
	assert_non_null(strstr(out, "\"comm\":\"pgbench\""));
	free(out);
}

/* The same file, its writer gone: a stale file, a reused pid, another boot
 * all read as stopped, and a top process that is gone has comm "?". */
static void test_fixture_writer_gone(void **state)
{
	static const char *const roots[] = {FIX "/proc_gone", FIX "/proc_reused", FIX "/proc_reboot"};
	char *out;

	(void)state;
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		out = run(FIX "/good.prom", false, roots[i], 0);
		assert_non_null(strstr(out, "  daemon: stopped"));
		assert_non_null(strstr(out, "(pid 4242 wrote the file"));
		assert_null(strstr(out, "running"));
		assert_non_null(strstr(out, "777      ?  "));
		free(out);
		out = run(FIX "/good.prom", true, roots[i], 0);
		assert_non_null(strstr(out, "\"daemon\":\"stopped\""));
		free(out);
	}
	out = run(FIX "/good.prom", false, FIX "/proc_reboot", 0);
	assert_non_null(strstr(out, "  daemon: stopped (pid 4242 wrote the file before the last boot)\n"));
	free(out);
	/* /proc that cannot say (no boot_id): unknown, never running. */
	out = run(FIX "/good.prom", false, FIX "/nonexistent", 0);
	assert_non_null(strstr(out, "  daemon: unknown (pid 4242 wrote the file)"));
	free(out);
}

/* Cut inside a line: what is whole is read, the cut line is dropped. */
static void test_fixture_truncated(void **state)
{
	struct status st;
	size_t len;
	char *buf = slurp(FIX "/truncated.prom", &len);

	(void)state;
	assert_int_equal(len, 1500);
	assert_int_equal(parse_status_buf(buf, len, &st), 0);
	assert_true(st.passes == 12);
	assert_true(isnan(st.procs_active)); /* after the cut */
	status_free(&st);
	free(buf);
	buf = run(FIX "/truncated.prom", false, FIX "/proc", 0);
	assert_non_null(strstr(buf, "- active now"));
	assert_null(strstr(buf, "-1"));
	assert_null(strstr(buf, "nan"));
	free(buf);
}

/* Garbage, NaN and ±Inf: skipped, read as absent, printed as "-". */
static void test_fixture_garbage(void **state)
{
	struct status st;
	size_t len;
	char *buf = slurp(FIX "/garbage.prom", &len);

	(void)state;
	assert_int_equal(parse_status_buf(buf, len, &st), 0);
	free(buf);
	assert_true(st.passes == 5);
	assert_true(isnan(st.scan_s) && isnan(st.collapse_s) && isnan(st.procs_active) && isnan(st.procs_scanned));
	assert_true(isnan(st.last_pass));
	assert_int_equal(st.nresult, 1); /* NaN candidate and the too long name are not kept */
	assert_string_equal(st.result[0].name, "cold");
	assert_int_equal(st.daemon.pid, 0);  /* not a boot_id */
	assert_int_equal(st.proc[0].pid, 0); /* a negative pid is none */
	status_free(&st);
	buf = run(FIX "/garbage.prom", false, FIX "/proc", 0);
	assert_non_null(strstr(buf, "time: scan -, collapse -\n"));
	assert_non_null(strstr(buf, "last pass ended -\n"));
	assert_non_null(strstr(buf, "daemon: unknown"));
	assert_null(strstr(buf, "nan"));
	assert_null(strstr(buf, "inf"));
	free(buf);
	buf = run(FIX "/nan_passes.prom", false, FIX "/proc", -EINVAL);
	free(buf);
}

/* Huge: more groups than kept, a line longer than any value, and a file
 * over STATUS_MAX_FILE, which is refused whole. */
static void test_huge(void **state)
{
	char path[] = "/tmp/hc-status-XXXXXX";
	size_t cap = 8 << 20, n = 0;
	char *t = malloc(cap);
	struct status st;
	int fd;

	(void)state;
	assert_non_null(t);
	n += (size_t)snprintf(t + n, cap - n, "hugecollapsed_passes_total 3\n");
	for (int i = 0; i < STATUS_MAX_CGROUPS + 500; i++)
		n += (size_t)snprintf(t + n, cap - n, "hugecollapsed_cgroup_anon_bytes{cgroup=\"/c%d\"} %d\n", i, i);
	n += (size_t)snprintf(t + n, cap - n, "hugecollapsed_cgroup_anon_bytes{cgroup=\"");
	memset(t + n, 'x', 1 << 20);
	n += 1 << 20;
	n += (size_t)snprintf(t + n, cap - n, "\"} 1\n");
	assert_int_equal(parse_status_buf(t, n, &st), 0);
	assert_int_equal(st.ncg, STATUS_MAX_CGROUPS);
	assert_true(st.passes == 3);
	status_free(&st);
	free(t);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)(17u << 20)), 0);
	close(fd);
	t = run(path, false, FIX "/proc", -EFBIG);
	free(t);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sample_lines),
	    cmocka_unit_test(test_json_numbers),
	    cmocka_unit_test(test_hostile_lines),
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_not_ours),
	    cmocka_unit_test(test_fixture_good),
	    cmocka_unit_test(test_fixture_writer_gone),
	    cmocka_unit_test(test_fixture_truncated),
	    cmocka_unit_test(test_fixture_garbage),
	    cmocka_unit_test(test_huge),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
