/* SPDX-License-Identifier: GPL-2.0-or-later */
/* metrics: the Prometheus text of a hand-filled engine (values, label
 * escaping, families), and metrics_write()'s atomic replace. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "collapse.h"
#include "config.h"
#include "engine_stats.h"
#include "proc_state.h"
#include "metrics.h"
#include "status.h"
#include "scan_result.h"
#include "units.h"
#include "utf8.h"

static char tmp[64];

/* An engine with every field metrics_format() reads set to something
 * recognizable; cgroup names include the characters that need escaping. */
static struct cgroup_bytes cgs[2];
static struct engine_stats eng;

static void fill_engine(struct engine_stats *e)
{
	memset(e, 0, sizeof(*e));
	cgs[0] = (struct cgroup_bytes){.cgroup = "/system.slice/web.service", .bytes = 3 * HPAGE_SIZE};
	cgs[1] = (struct cgroup_bytes){.cgroup = "/we\"ird\\name\nhere", .bytes = 2 * HPAGE_SIZE};
	e->cg_bytes = cgs;
	e->ncg_bytes = 2;
	e->passes = 7;
	e->total.scan_s = 1.5;
	e->total.collapse_s = 0.25;
	e->total.procs_scanned = 11;
	e->total.procs_unchanged = 13;
	e->total.stale_dropped = 17;
	e->total.results[SCAN_CANDIDATE] = 21;
	e->total.results[SCAN_COLD] = 4;
	e->total.outcomes[COLLAPSE_OK] = 5;
	e->total.outcomes[COLLAPSE_EAGAIN] = 2;
	e->last.procs_active = 3;
	histogram_init(&e->block_hist, histogram_block_bounds, histogram_block_nbounds);
	histogram_init(&e->pass_hist, histogram_pass_bounds, histogram_pass_nbounds);
	histogram_observe(&e->block_hist, 0.0003, 16);
	histogram_observe(&e->pass_hist, 0.02, 1);
}

/* metrics_format() into a NUL-terminated string the caller frees. */
static char *format(const struct engine_stats *e, enum khugepaged_mode mode)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	metrics_format(f, e, mode, NULL);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* True if text holds line as a whole line. */
static bool has_line(const char *text, const char *line)
{
	size_t l = strlen(line);

	for (const char *p = text; (p = strstr(p, line)); p++)
		if ((p == text || p[-1] == '\n') && p[l] == '\n')
			return true;
	return false;
}

static void assert_line(const char *text, const char *line)
{
	if (!has_line(text, line))
		fail_msg("missing line: %s\n--- in ---\n%s", line, text);
}

static int count_prefix(const char *text, const char *prefix)
{
	int n = 0;
	size_t l = strlen(prefix);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		n += !strncmp(p, prefix, l);
	return n;
}

static int setup(void **state)
{
	(void)state;
	strcpy(tmp, "/tmp/test_metrics.XXXXXX");
	fill_engine(&eng);
	return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state)
{
	DIR *d = opendir(tmp);
	struct dirent *de;
	char p[512];

	(void)state;
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			snprintf(p, sizeof(p), "%s/%s", tmp, de->d_name);
			if (unlink(p) < 0)
				rmdir(p);
		}
	if (d)
		closedir(d);
	return rmdir(tmp);
}

static void test_values(void **state)
{
	char *t = format(&eng, KHUGEPAGED_IDLE);

	(void)state;
	assert_line(t, "hugecollapsed_passes_total 7");
	assert_line(t, "hugecollapsed_build_info{version=\"" HC_VERSION "\"} 1");
	assert_line(t, "hugecollapsed_scan_seconds_total 1.500000");
	assert_line(t, "hugecollapsed_collapse_seconds_total 0.250000");
	assert_line(t, "hugecollapsed_processes_scanned_total 11");
	assert_line(t, "hugecollapsed_processes_unchanged_total 13");
	assert_line(t, "hugecollapsed_stale_candidates_total 17");
	assert_line(t, "hugecollapsed_processes_active 3");
	assert_line(t, "hugecollapsed_scan_ranges_total{result=\"candidate\"} 21");
	assert_line(t, "hugecollapsed_scan_ranges_total{result=\"cold\"} 4");
	assert_line(t, "hugecollapsed_collapse_ranges_total{outcome=\"collapsed\"} 5");
	assert_line(t, "hugecollapsed_collapse_ranges_total{outcome=\"eagain\"} 2");
	assert_line(t, "hugecollapsed_scan_ranges_total{result=\"pmd_mapped\"} 0");
	assert_line(t, "hugecollapsed_collapsed_bytes_total{cgroup=\"/system.slice/web.service\"} 6291456");
	assert_line(t, "hugecollapsed_khugepaged_mode{mode=\"idle\"} 1");
	assert_line(t, "hugecollapsed_khugepaged_mode{mode=\"keep\"} 0");
	assert_line(t, "hugecollapsed_khugepaged_mode{mode=\"off\"} 0");
	assert_int_equal(count_prefix(t, "hugecollapsed_khugepaged_mode{"), 3);
	free(t);
}

/* A cgroup path may hold any byte but NUL: quote, backslash and newline
 * must be escaped or the line (and the whole file) is unparseable. */
/* Before any reload: none, none failed, "last" counts as a success; then
 * what the service set, until it sets something else. */
static void test_reload_series(void **state)
{
	const struct metrics_reload failed = {.total = 3, .failures = 2, .last_ok = false};
	const struct metrics_reload fixed = {.total = 4, .failures = 2, .last_ok = true};
	char *t = format(&eng, KHUGEPAGED_KEEP);

	(void)state;
	assert_line(t, "hugecollapsed_reloads_total 0");
	assert_line(t, "hugecollapsed_reload_failures_total 0");
	assert_line(t, "hugecollapsed_last_reload_success 1");
	free(t);
	metrics_set_reload(&failed);
	t = format(&eng, KHUGEPAGED_KEEP);
	assert_line(t, "hugecollapsed_reloads_total 3");
	assert_line(t, "hugecollapsed_reload_failures_total 2");
	assert_line(t, "hugecollapsed_last_reload_success 0");
	free(t);
	metrics_set_reload(&fixed);
	t = format(&eng, KHUGEPAGED_KEEP);
	assert_line(t, "hugecollapsed_reloads_total 4");
	assert_line(t, "hugecollapsed_last_reload_success 1");
	free(t);
}

static void test_label_escaping(void **state)
{
	char *t = format(&eng, KHUGEPAGED_KEEP);

	(void)state;
	assert_line(t, "hugecollapsed_collapsed_bytes_total{cgroup=\"/we\\\"ird\\\\name\\nhere\"} 4194304");
	/* The raw newline must not split the sample. */
	assert_null(strstr(t, "name\nhere"));
	free(t);
}

/* Label values must be UTF-8. A byte that starts no valid sequence becomes
 * U+FFFD; names that then read the same are one series (a label twice
 * makes the whole file invalid), with their sum. */
static void test_label_invalid_utf8(void **state)
{
	static struct cgroup_bytes bad[] = {
	    {.cgroup = "/a\xff", .bytes = HPAGE_SIZE},
	    {.cgroup = "/ok\xe2\x82\xac", .bytes = HPAGE_SIZE}, /* a valid euro sign */
	    {.cgroup = "/a\xfe", .bytes = 2 * HPAGE_SIZE},
	    {.cgroup = "/cut\xe2\x82", .bytes = HPAGE_SIZE},       /* truncated sequence */
	    {.cgroup = "/sur\xed\xa0\x80", .bytes = HPAGE_SIZE},   /* a UTF-16 surrogate */
	    {.cgroup = "/over\xc0\xaf", .bytes = HPAGE_SIZE},      /* overlong '/' */
	    {.cgroup = "/a\xef\xbf\xbd", .bytes = 4 * HPAGE_SIZE}, /* a real U+FFFD */
	    {.cgroup = "/q\"b\\\xff\n", .bytes = HPAGE_SIZE},      /* all of it at once */
	};
	struct engine_stats e;
	char *t;

	(void)state;
	fill_engine(&e);
	e.cg_bytes = bad;
	e.ncg_bytes = sizeof(bad) / sizeof(bad[0]);
	t = format(&e, KHUGEPAGED_KEEP);
	assert_true(utf8_valid(t));
	assert_line(t, "hugecollapsed_collapsed_bytes_total{cgroup=\"/a\xef\xbf\xbd\"} 14680064");
	assert_int_equal(count_prefix(t, "hugecollapsed_collapsed_bytes_total{cgroup=\"/a"), 1);
	assert_line(t, "hugecollapsed_collapsed_bytes_total{cgroup=\"/ok\xe2\x82\xac\"} 2097152");
	assert_line(t, "hugecollapsed_collapsed_bytes_total{cgroup=\"/cut\xef\xbf\xbd\xef\xbf\xbd\"} 2097152");
	assert_line(t,
		    "hugecollapsed_collapsed_bytes_total{cgroup=\"/sur\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"} 2097152");
	assert_line(t, "hugecollapsed_collapsed_bytes_total{cgroup=\"/over\xef\xbf\xbd\xef\xbf\xbd\"} 2097152");
	assert_line(t, "hugecollapsed_collapsed_bytes_total{cgroup=\"/q\\\"b\\\\\xef\xbf\xbd\\n\"} 2097152");
	assert_int_equal(count_prefix(t, "hugecollapsed_collapsed_bytes_total{"), 6);
	free(t);
}

/* Every scan result has its own scan_ranges_total series and every
 * collapse outcome its own collapse_ranges_total series, once; the two
 * families do not mix (a sum over one means something). */
static void test_every_result_and_outcome(void **state)
{
	char *t = format(&eng, KHUGEPAGED_KEEP), series[128];

	(void)state;
	for (int r = 0; r < SCAN_NR_RESULTS; r++) {
		snprintf(series, sizeof(series), "hugecollapsed_scan_ranges_total{result=\"%s\"} ",
			 scan_result_name(r));
		assert_int_equal(count_prefix(t, series), 1);
	}
	for (int o = 0; o < COLLAPSE_NR_OUTCOMES; o++) {
		snprintf(series, sizeof(series), "hugecollapsed_collapse_ranges_total{outcome=\"%s\"} ",
			 collapse_outcome_name(o));
		assert_int_equal(count_prefix(t, series), 1);
	}
	assert_int_equal(count_prefix(t, "hugecollapsed_scan_ranges_total{"), SCAN_NR_RESULTS);
	assert_int_equal(count_prefix(t, "hugecollapsed_collapse_ranges_total{"), COLLAPSE_NR_OUTCOMES);
	assert_int_equal(count_prefix(t, "hugecollapsed_ranges_total"), 0);
	free(t);
}

/* A histogram's _bucket, _sum and _count samples belong to the family
 * declared without the suffix. */
static void histogram_family(const char *t, const char *l, char *name, size_t *n)
{
	static const char *const sfx[] = {"_bucket", "_sum", "_count"};
	char key[160];

	for (size_t i = 0; i < 3; i++) {
		size_t sl = strlen(sfx[i]);

		if (*n <= sl || strcmp(name + *n - sl, sfx[i]))
			continue;
		/* strtok_r() has turned the line ends into NULs. */
		snprintf(key, sizeof(key), "# TYPE %.*s histogram", (int)(*n - sl), name);
		if (memmem(t, (size_t)(l - t), key, strlen(key) + 1)) {
			*n -= sl;
			name[*n] = 0;
		}
		return;
	}
}

/* Each sample's family has "# HELP" and "# TYPE" once, before it; counters
 * end in _total. */
static void test_families(void **state)
{
	char *t = format(&eng, KHUGEPAGED_OFF), *save = NULL, name[128], key[160];
	int samples = 0;

	(void)state;
	for (char *l = strtok_r(t, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *decl;
		size_t n;

		if (l[0] == '#')
			continue;
		n = strcspn(l, "{ ");
		assert_true(n > 0 && n < sizeof(name));
		memcpy(name, l, n);
		name[n] = 0;
		histogram_family(t, l, name, &n);
		samples++;
		/* The TYPE line is earlier in the (already split) buffer. */
		snprintf(key, sizeof(key), "# TYPE %s ", name);
		decl = memmem(t, (size_t)(l - t), key, strlen(key));
		if (!decl)
			fail_msg("sample %s has no TYPE before it", name);
		assert_null(memmem(decl + 1, (size_t)(l - decl - 1), key, strlen(key)));
		snprintf(key, sizeof(key), "# HELP %s ", name);
		if (!memmem(t, (size_t)(l - t), key, strlen(key)))
			fail_msg("sample %s has no HELP before it", name);
		if (!strncmp(decl + strlen("# TYPE ") + n, " counter", 8))
			assert_string_equal(name + n - 6, "_total");
	}
	assert_true(samples > 20);
	free(t);
}

/* The latency histograms: cumulative buckets, +Inf, _sum and _count, and
 * a HELP that says what the target feels. */
static void test_latency_histograms(void **state)
{
	char *t = format(&eng, KHUGEPAGED_KEEP);

	(void)state;
	assert_line(t, "# TYPE hugecollapsed_block_collapse_seconds histogram");
	assert_line(t, "hugecollapsed_block_collapse_seconds_bucket{le=\"0.00025\"} 0");
	assert_line(t, "hugecollapsed_block_collapse_seconds_bucket{le=\"0.0005\"} 16");
	assert_line(t, "hugecollapsed_block_collapse_seconds_bucket{le=\"+Inf\"} 16");
	assert_line(t, "hugecollapsed_block_collapse_seconds_count 16");
	assert_line(t, "hugecollapsed_block_collapse_seconds_sum 0.0048");
	assert_non_null(strstr(t, "mmap lock"));
	assert_line(t, "# TYPE hugecollapsed_pass_seconds histogram");
	assert_line(t, "hugecollapsed_pass_seconds_bucket{le=\"0.01\"} 0");
	assert_line(t, "hugecollapsed_pass_seconds_bucket{le=\"0.025\"} 1");
	assert_line(t, "hugecollapsed_pass_seconds_count 1");
	free(t);
}

/* No cgroup collapsed anything yet: the family is declared, no samples. */
static void test_no_cgroups(void **state)
{
	struct engine_stats e;
	char *t;

	(void)state;
	fill_engine(&e);
	e.ncg_bytes = 0;
	t = format(&e, KHUGEPAGED_KEEP);
	assert_line(t, "# TYPE hugecollapsed_collapsed_bytes_total counter");
	assert_int_equal(count_prefix(t, "hugecollapsed_collapsed_bytes_total"), 0);
	free(t);
}

static char *format_mem(const struct engine_stats *e, struct metrics_memory *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	metrics_format(f, e, KHUGEPAGED_KEEP, m);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* The lines of t that start with one of the per-group series. */
static char *group_lines(const char *t)
{
	char *out = calloc(1, strlen(t) + 1);
	size_t n = 0;

	assert_non_null(out);
	for (const char *p = t; *p;) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p + 1) : strlen(p);

		if (!strncmp(p, "hugecollapsed_collapsed_bytes_total{", 36) ||
		    !strncmp(p, "hugecollapsed_cgroup_", 21)) {
			memcpy(out + n, p, l);
			n += l;
		}
		p += l;
	}
	return out;
}

/* With a memory, collapsed bytes are counted for the group a cgroup counts
 * for when they were collapsed: each series only grows, "other" too, when
 * a cgroup moves between its own series and other; and a write where
 * nothing changed has the same series as the one before. Without it,
 * other would go down (the sums now). */
static void test_counters_stable(void **state)
{
	static struct proc_state st[2];
	static struct cgroup_bytes cgb[3];
	struct metrics_memory m = {0};
	struct config cfg;
	struct engine_stats e;
	char *t, *a, *b;

	(void)state;
	config_defaults(&cfg);
	cfg.coverage_top_cgroups = 1;
	fill_engine(&e);
	e.cfg = &cfg;
	st[0] = (struct proc_state){.pid = 10, .scanned = true, .cgroup = "/x"};
	st[0].usage.anon = 10 * HPAGE_SIZE;
	st[1] = (struct proc_state){.pid = 11, .scanned = true, .cgroup = "/y"};
	st[1].usage.anon = 8 * HPAGE_SIZE;
	e.view.procs = st;
	e.view.nprocs = 2;
	cgb[0] = (struct cgroup_bytes){.cgroup = "/x", .bytes = 1 * HPAGE_SIZE};
	cgb[1] = (struct cgroup_bytes){.cgroup = "/y", .bytes = 2 * HPAGE_SIZE};
	cgb[2] = (struct cgroup_bytes){.cgroup = "/z", .bytes = 1 * HPAGE_SIZE};
	e.cg_bytes = cgb;
	e.ncg_bytes = 3;

	t = format_mem(&e, &m);
	assert_line(t, "hugecollapsed_collapsed_bytes_total{cgroup=\"/x\"} 2097152");
	assert_line(t, "hugecollapsed_collapsed_bytes_total{cgroup=\"other\"} 6291456");
	assert_int_equal(count_prefix(t, "hugecollapsed_collapsed_bytes_total{"), 2);
	a = group_lines(t);
	free(t);
	/* Nothing changed: the same series, the same values. */
	t = format_mem(&e, &m);
	b = group_lines(t);
	assert_string_equal(a, b);
	free(a);
	free(b);
	free(t);

	/* /y grows past twice /x and collapses one more block: it gets /x's
	 * place; /x's bytes stay in other's count, which does not go down. */
	st[1].usage.anon = 25 * HPAGE_SIZE;
	cgb[1].bytes = 3 * HPAGE_SIZE;
	t = format_mem(&e, &m);
	assert_line(t, "hugecollapsed_collapsed_bytes_total{cgroup=\"/y\"} 2097152");
	assert_line(t, "hugecollapsed_collapsed_bytes_total{cgroup=\"other\"} 6291456");
	assert_int_equal(count_prefix(t, "hugecollapsed_collapsed_bytes_total{cgroup=\"/x\"}"), 0);
	free(t);
	/* /x collapses more while in other: other grows by it. */
	cgb[0].bytes = 2 * HPAGE_SIZE;
	t = format_mem(&e, &m);
	assert_line(t, "hugecollapsed_collapsed_bytes_total{cgroup=\"other\"} 8388608");
	free(t);
	/* /z is removed (pruned from cg_bytes), then a new /z collapses one
	 * block: it starts from 0, so other grows by that block alone. */
	e.ncg_bytes = 2;
	free(format_mem(&e, &m));
	e.ncg_bytes = 3;
	t = format_mem(&e, &m);
	assert_line(t, "hugecollapsed_collapsed_bytes_total{cgroup=\"other\"} 10485760");
	free(t);
	/* Without a memory: the sums now, and other (/x + /z) is less. */
	t = format(&e, KHUGEPAGED_KEEP);
	assert_line(t, "hugecollapsed_collapsed_bytes_total{cgroup=\"other\"} 6291456");
	free(t);
	metrics_memory_free(&m);
	cfg.rules = NULL;
	cfg.nrules = 0;
	config_free(&cfg);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;

	assert_non_null(f);
	n = getdelim(&buf, &cap, 0, f);
	fclose(f);
	assert_true(n > 0);
	return buf;
}

/* Drops the line that holds the wall clock, so two outputs compare. */
static void drop_timestamp(char *t)
{
	char *p = strstr(t, "\nhugecollapsed_last_pass_timestamp_seconds "), *end;

	assert_non_null(p);
	end = strchr(p + 1, '\n');
	assert_non_null(end);
	memmove(p, end, strlen(end) + 1);
}

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

static void test_write_contents_and_mode(void **state)
{
	char path[128], *file, *want;
	struct stat st;
	mode_t old;

	(void)state;
	snprintf(path, sizeof(path), "%s/metrics.prom", tmp);
	/* Whatever the daemon's umask (the unit sets 0077), node_exporter,
	 * another user, must be able to read the file. */
	old = umask(077);
	assert_int_equal(metrics_write(path, &eng, KHUGEPAGED_OFF, NULL), 0);
	umask(old);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	file = slurp(path);
	want = format(&eng, KHUGEPAGED_OFF);
	drop_timestamp(file);
	drop_timestamp(want);
	assert_string_equal(file, want);
	assert_int_equal(entries(tmp), 1); /* no temporary file left */
	free(file);
	free(want);
}

/* A second write replaces the file by rename: a reader holding the old one
 * keeps a complete old file, never a truncated or half-written one. */
static void test_write_replaces_by_rename(void **state)
{
	char path[128], old_text[32768];
	struct stat st1, st2;
	ssize_t n;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/metrics.prom", tmp);
	assert_int_equal(metrics_write(path, &eng, KHUGEPAGED_KEEP, NULL), 0);
	assert_int_equal(stat(path, &st1), 0);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	eng.passes = 8;
	assert_int_equal(metrics_write(path, &eng, KHUGEPAGED_KEEP, NULL), 0);
	assert_int_equal(stat(path, &st2), 0);
	assert_true(st1.st_ino != st2.st_ino);
	n = read(fd, old_text, sizeof(old_text) - 1);
	close(fd);
	assert_true(n > 0);
	old_text[n] = 0;
	assert_int_equal(n, st1.st_size);
	assert_true(has_line(old_text, "hugecollapsed_passes_total 7"));
	{
		char *now = slurp(path);

		assert_true(has_line(now, "hugecollapsed_passes_total 8"));
		free(now);
	}
	assert_int_equal(entries(tmp), 1);
}

static void test_write_missing_dir(void **state)
{
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/missing/metrics.prom", tmp);
	assert_int_equal(metrics_write(path, &eng, KHUGEPAGED_KEEP, NULL), -ENOENT);
	assert_int_equal(entries(tmp), 0);
}

/* rename() fails (the target is a directory): an error, and the temporary
 * file is removed, not left to pile up pass after pass. */
static void test_write_failed_rename_cleans_up(void **state)
{
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/metrics.prom", tmp);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(metrics_write(path, &eng, KHUGEPAGED_KEEP, NULL), -EISDIR);
	assert_int_equal(entries(tmp), 1);
}

/* The temporary file's name, as metrics_write() makes it. */
static void temp_name(char *out, size_t len, const char *path)
{
	snprintf(out, len, "%s.tmp.%d", path, (int)getpid());
}

static void on_alarm(int sig)
{
	(void)sig;
	/* A write that blocks (a FIFO opened for writing waits for a reader)
	 * must fail the test, not hang it. */
	_exit(99);
}

/* A FIFO planted at the temporary name: opening it for writing would block
 * the daemon until someone reads. The write goes to a new file instead. */
static void test_write_fifo_at_temp(void **state)
{
	char path[128], t[160], *file;
	struct stat st;

	(void)state;
	snprintf(path, sizeof(path), "%s/metrics.prom", tmp);
	temp_name(t, sizeof(t), path);
	assert_int_equal(mkfifo(t, 0666), 0);
	signal(SIGALRM, on_alarm);
	alarm(10);
	assert_int_equal(metrics_write(path, &eng, KHUGEPAGED_KEEP, NULL), 0);
	alarm(0);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	file = slurp(path);
	assert_true(has_line(file, "hugecollapsed_passes_total 7"));
	free(file);
	assert_int_equal(entries(tmp), 1); /* the FIFO is gone, no temp left */
}

/* A symlink planted at the temporary name, to a file elsewhere: the write
 * must neither follow it nor leave it; the target keeps its bytes. */
static void test_write_symlink_at_temp(void **state)
{
	char path[128], t[160], dir[128], target[160], *file;
	struct stat st;
	int fd;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/elsewhere", tmp);
	snprintf(target, sizeof(target), "%s/victim", dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	fd = open(target, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "untouched\n", 10), 10);
	close(fd);
	snprintf(path, sizeof(path), "%s/metrics.prom", tmp);
	temp_name(t, sizeof(t), path);
	assert_int_equal(symlink(target, t), 0);
	assert_int_equal(metrics_write(path, &eng, KHUGEPAGED_KEEP, NULL), 0);
	file = slurp(target);
	assert_string_equal(file, "untouched\n");
	free(file);
	assert_int_equal(stat(target, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(lstat(t, &st), -1); /* the link itself is gone */
	assert_int_equal(unlink(target), 0);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(entries(tmp), 1);
}

/* A symlink at the metrics path: the file replaces the link itself, as
 * rename() does (no exchange with what is not a regular file), and the
 * link's target keeps its bytes. */
static void test_write_symlink_at_path(void **state)
{
	char path[128], target[160], *file;
	struct stat st;
	int fd;

	(void)state;
	snprintf(target, sizeof(target), "%s/victim", tmp);
	fd = open(target, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "untouched\n", 10), 10);
	close(fd);
	snprintf(path, sizeof(path), "%s/metrics.prom", tmp);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(metrics_write(path, &eng, KHUGEPAGED_KEEP, NULL), 0);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	file = slurp(target);
	assert_string_equal(file, "untouched\n");
	free(file);
	assert_int_equal(unlink(target), 0);
	assert_int_equal(entries(tmp), 1);
}

/* A directory at the temporary name cannot be unlinked: an error (the
 * daemon logs it and carries on), and the directory is left alone. */
static void test_write_dir_at_temp(void **state)
{
	char path[128], t[160];
	struct stat st;

	(void)state;
	snprintf(path, sizeof(path), "%s/metrics.prom", tmp);
	temp_name(t, sizeof(t), path);
	assert_int_equal(mkdir(t, 0755), 0);
	assert_true(metrics_write(path, &eng, KHUGEPAGED_KEEP, NULL) < 0);
	assert_int_equal(lstat(t, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(lstat(path, &st), -1);
}

static void test_write_no_path(void **state)
{
	(void)state;
	assert_int_equal(metrics_write("", &eng, KHUGEPAGED_KEEP, NULL), 0);
	assert_int_equal(metrics_write(NULL, &eng, KHUGEPAGED_KEEP, NULL), 0);
	assert_int_equal(entries(tmp), 0);
}

/* --status reads back what metrics_write wrote, through the one parser
 * (status.h): every scan result and collapse outcome, none as -1. */
static void test_print_status(void **state)
{
	char path[128], *out = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/metrics.prom", tmp);
	assert_int_equal(metrics_write(path, &eng, KHUGEPAGED_IDLE, NULL), 0);
	f = open_memstream(&out, &len);
	assert_int_equal(status_run_at(f, path, false, "/proc"), 0);
	fclose(f);
	assert_non_null(strstr(out, "hugecollapsed: 7 passes, 10.0 MiB collapsed, khugepaged idle\n"));
	assert_non_null(strstr(out, "processes: 11 scans, 13 skipped unchanged, 3 active now"));
	assert_non_null(strstr(out, " candidate 21 "));
	assert_non_null(strstr(out, " thp_policy 0"));
	assert_non_null(strstr(out, " collapsed 5 "));
	assert_non_null(strstr(out, " eperm 0"));
	/* No producer was set: the file does not say who wrote it. */
	assert_non_null(strstr(out, "  daemon: unknown (the file does not name its writer"));
	assert_null(strstr(out, "-1"));
	free(out);
	snprintf(path, sizeof(path), "%s/none.prom", tmp);
	f = open_memstream(&out, &len);
	assert_int_equal(status_run_at(f, path, false, "/proc"), -ENOENT);
	fclose(f);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_values, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reload_series, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_label_escaping, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_label_invalid_utf8, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_every_result_and_outcome, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_families, setup, teardown),

	    cmocka_unit_test_setup_teardown(test_latency_histograms, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_cgroups, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_counters_stable, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_contents_and_mode, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_replaces_by_rename, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_missing_dir, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_failed_rename_cleans_up, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_fifo_at_temp, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_symlink_at_temp, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_symlink_at_path, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_dir_at_temp, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_no_path, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_print_status, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
