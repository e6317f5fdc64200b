/* SPDX-License-Identifier: GPL-2.0-or-later */
/* config: keys, defaults, every error message, hostile files, ownership,
 * cgroup matching and reload atomicity. Temporary files live in a mkdtemp
 * directory under /tmp that each test creates and removes. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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

#include "config.h"

#define FIX    HC_FIXTURES "/config"
#define NOBODY 65534

static char tmp[64];
static char err[1024];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static int setup(void **state)
{
	(void)state;
	strcpy(tmp, "/tmp/test_config.XXXXXX");
	if (!mkdtemp(tmp))
		return -1;
	chmod(tmp, 0755); /* mkdtemp makes 0700; fine, but be explicit */
	err[0] = '\0';
	/* Whether this host has node_exporter's directory must not matter. */
	config_textfile_dir = "/nonexistent/node-exporter";
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* tmp/name, in a static rotation so a test can hold a few at once. */
static const char *tpath(const char *name)
{
	static char bufs[4][256];
	static int i;
	char *b = bufs[i++ % 4];

	snprintf(b, sizeof(bufs[0]), "%s/%s", tmp, name);
	return b;
}

static const char *write_bytes(const char *name, const void *data, size_t len)
{
	const char *p = tpath(name);
	FILE *f = fopen(p, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(p, 0644), 0);
	return p;
}

static const char *write_file(const char *name, const char *text)
{
	return write_bytes(name, text, strlen(text));
}

static void make_dir(const char *name)
{
	assert_int_equal(mkdir(tpath(name), 0755), 0);
}

/* Loads tmp/main.conf (skipping the owner check) and expects failure with
 * exactly "<file>:<line>: <why>", where file is tmp/<file_name>. */
static void expect_error_in(const char *file_name, unsigned line, const char *why)
{
	struct config c;
	char want[1024];

	memset(&c, 0xa5, sizeof(c));
	assert_int_equal(config_load(tpath("main.conf"), false, true, &c, err, sizeof(err)), -1);
	if (line)
		snprintf(want, sizeof(want), "%s:%u: %s", tpath(file_name), line, why);
	else
		snprintf(want, sizeof(want), "%s: %s", tpath(file_name), why);
	assert_string_equal(err, want);
}

static void expect_main_error(const char *text, unsigned line, const char *why)
{
	write_file("main.conf", text);
	expect_error_in("main.conf", line, why);
}

static void load_ok(const char *path, struct config *c)
{
	int r = config_load(path, false, true, c, err, sizeof(err));

	if (r != 0)
		fail_msg("config_load: %s", err);
}

static void assert_default_policy(const struct policy *p)
{
	assert_true(p->enable);
	assert_int_equal(p->weight, 100);
	assert_int_equal(p->budget_mb_per_s, 128);
	assert_int_equal(p->limits.max_ptes_none, 255);
	assert_int_equal(p->limits.max_ptes_swap, 0);
	assert_int_equal(p->limits.max_ptes_shared, 0);
	assert_int_equal(p->limits.min_referenced_pct, 50);
	assert_int_equal(p->idle_after_s, 60);
	assert_int_equal(p->max_wait_s, 30);
	assert_int_equal(p->eagain_retries, 3);
	assert_true(p->file_backed);
	assert_false(p->access_sampling);
	assert_int_equal(p->access_sample_s, 30);
	assert_int_equal(p->coverage_target_pct, 0);
	assert_int_equal(p->scope, THP_SCOPE_KERNEL);
	assert_int_equal(p->memcg_headroom_mb, 2);
	assert_int_equal(p->blocks_per_call, 1023);
	assert_int_equal(p->pause_ms, 0);
}

static void assert_default_daemon(const struct config *c)
{
	assert_int_equal(c->scan_interval_ms, 1000);
	assert_int_equal(c->metrics_interval_s, 10);
	assert_string_equal(c->metrics_file, "/run/hugecollapsed/metrics.prom");
	assert_string_equal(c->state_file, "/run/hugecollapsed/khugepaged.state");
	assert_int_equal(c->khugepaged, KHUGEPAGED_KEEP);
	assert_int_equal(c->mode, RUN_COLLAPSE);
	assert_int_equal(config_khugepaged_in_force(c), KHUGEPAGED_KEEP);
	assert_int_equal(c->full_rescan_s, 300);
	assert_int_equal(c->alloc_backoff_ms, 60000);
	assert_int_equal(c->pressure_some_pct, 10);
	assert_int_equal(c->pressure_full_pct, 2);
	assert_int_equal(c->pressure_free_margin_mb, 64);
	assert_true(c->cold_watch);
	assert_int_equal(c->coverage_top_cgroups, 10);
}

/* ---- defaults and every key ---- */

static void test_builtin_defaults(void **state)
{
	struct config c;

	(void)state;
	config_defaults(&c);
	assert_default_daemon(&c);
	assert_default_policy(&c.defaults);
	assert_string_equal(c.cgroup_dir, "/etc/hugecollapsed/cgroup.d");
	assert_int_equal(c.nrules, 0);
	config_free(&c);

	assert_int_equal(config_load(NULL, false, false, &c, err, sizeof(err)), 0);
	assert_null(c.path);
	assert_default_daemon(&c);
	assert_default_policy(&c.defaults);
	assert_ptr_equal(config_policy_for(&c, "/any/thing"), &c.defaults);
	config_free(&c);

	assert_string_equal(khugepaged_mode_name(KHUGEPAGED_KEEP), "keep");
	assert_string_equal(khugepaged_mode_name(KHUGEPAGED_IDLE), "idle");
	assert_string_equal(khugepaged_mode_name(KHUGEPAGED_OFF), "off");
	assert_string_equal(thp_scope_name(THP_SCOPE_KERNEL), "kernel");
	assert_string_equal(thp_scope_name(THP_SCOPE_MADVISE), "madvise");
	assert_string_equal(thp_scope_name(THP_SCOPE_ALWAYS), "always");
}

static void test_file_without_keys_gives_defaults(void **state)
{
	struct config c;

	(void)state;
	load_ok(FIX "/no_keys.conf", &c);
	assert_string_equal(c.path, FIX "/no_keys.conf");
	assert_string_equal(c.cgroup_dir, FIX "/cgroup.d");
	assert_default_daemon(&c);
	assert_default_policy(&c.defaults);
	assert_int_equal(c.nrules, 0);
	config_free(&c);

	load_ok(write_file("empty.conf", ""), &c);
	assert_default_daemon(&c);
	assert_default_policy(&c.defaults);
	config_free(&c);
}

static void test_shipped_config_is_all_defaults(void **state)
{
	const char *path = HC_FIXTURES "/../../conf/hugecollapsed.conf";
	struct config c;

	(void)state;
	load_ok(path, &c);
	assert_default_daemon(&c);
	assert_int_equal(c.khugepaged, KHUGEPAGED_KEEP);
	assert_default_policy(&c.defaults);
	config_free(&c);
}

static void test_every_key_parsed(void **state)
{
	const struct policy *d, *web, *batch;
	struct config c;

	(void)state;
	load_ok(FIX "/all_keys.conf", &c);
	assert_int_equal(c.scan_interval_ms, 0);
	assert_string_equal(c.metrics_file, "");
	assert_string_equal(c.cgroup_dir, FIX "/all_keys.d"); /* relative to the main file */
	assert_int_equal(c.khugepaged, KHUGEPAGED_IDLE);
	assert_string_equal(c.state_file, "/var/tmp/hc.state");
	assert_int_equal(c.full_rescan_s, 86400);
	assert_int_equal(c.metrics_interval_s, 3600);
	assert_int_equal(c.alloc_backoff_ms, 3600000);
	assert_int_equal(c.coverage_top_cgroups, 1000);
	assert_int_equal(c.pressure_some_pct, 0);
	assert_int_equal(c.pressure_full_pct, 100);
	assert_int_equal(c.pressure_free_margin_mb, 65536);
	assert_false(c.cold_watch);

	d = &c.defaults;
	assert_false(d->enable);
	assert_int_equal(d->weight, 10000);
	assert_int_equal(d->budget_mb_per_s, 1);
	assert_int_equal(d->limits.max_ptes_none, 511);
	assert_int_equal(d->limits.max_ptes_swap, 64);
	assert_int_equal(d->limits.max_ptes_shared, 256);
	assert_int_equal(d->limits.min_referenced_pct, 0);
	assert_int_equal(d->idle_after_s, 1);
	assert_int_equal(d->max_wait_s, 86400);
	assert_int_equal(d->eagain_retries, 100);
	assert_false(d->file_backed);
	assert_true(d->access_sampling);
	assert_int_equal(d->access_sample_s, 7);
	assert_int_equal(d->coverage_target_pct, 100);
	assert_int_equal(d->scope, THP_SCOPE_ALWAYS);
	assert_int_equal(d->memcg_headroom_mb, 0);
	assert_int_equal(d->blocks_per_call, 1);
	assert_int_equal(d->pause_ms, 10000);

	/* Two rules (README and *.conf.example ignored), sorted by path. */
	assert_int_equal(c.nrules, 2);
	assert_string_equal(c.rules[0].path, "/batch.slice");
	assert_string_equal(c.rules[0].file, FIX "/all_keys.d/20-batch.conf");
	assert_int_equal(c.rules[0].line, 3);
	assert_string_equal(c.rules[1].path, "/system.slice/web.service");
	assert_int_equal(c.rules[1].line, 3);

	web = config_policy_for(&c, "/system.slice/web.service");
	assert_ptr_equal(web, &c.rules[1].policy);
	assert_true(web->enable);
	assert_int_equal(web->weight, 1000);
	/* The rest is inherited from the main [collapse], not the built-ins. */
	assert_int_equal(web->budget_mb_per_s, 1);
	assert_int_equal(web->limits.max_ptes_none, 511);
	assert_int_equal(web->limits.max_ptes_swap, 64);
	assert_int_equal(web->limits.max_ptes_shared, 256);
	assert_int_equal(web->limits.min_referenced_pct, 0);
	assert_int_equal(web->idle_after_s, 1);
	assert_int_equal(web->max_wait_s, 86400);
	assert_int_equal(web->eagain_retries, 100);
	assert_false(web->file_backed);
	assert_true(web->access_sampling);
	assert_int_equal(web->access_sample_s, 7);
	assert_int_equal(web->scope, THP_SCOPE_ALWAYS);
	assert_int_equal(web->memcg_headroom_mb, 0);
	assert_int_equal(web->blocks_per_call, 1);
	assert_int_equal(web->pause_ms, 10000);

	batch = config_policy_for(&c, "/batch.slice/job-1.scope");
	assert_ptr_equal(batch, &c.rules[0].policy);
	assert_false(batch->enable);
	assert_int_equal(batch->weight, 10000);
	assert_int_equal(batch->budget_mb_per_s, 100000);
	assert_int_equal(batch->limits.max_ptes_none, 0);
	assert_int_equal(batch->limits.max_ptes_swap, 1);
	assert_int_equal(batch->limits.max_ptes_shared, 2);
	assert_int_equal(batch->limits.min_referenced_pct, 100);
	assert_int_equal(batch->idle_after_s, 86400);
	assert_int_equal(batch->max_wait_s, 1);
	assert_int_equal(batch->eagain_retries, 0);
	assert_true(batch->file_backed);
	assert_false(batch->access_sampling);
	assert_int_equal(batch->access_sample_s, 86400);
	assert_int_equal(batch->scope, THP_SCOPE_MADVISE);
	assert_int_equal(batch->memcg_headroom_mb, 65536);
	assert_int_equal(batch->blocks_per_call, 1023);
	assert_int_equal(batch->pause_ms, 0);
	config_free(&c);
}

static void test_syntax_variants_accepted(void **state)
{
	struct config c;

	(void)state;
	/* BOM, CRLF, indentation (not a continuation line), ':' separator,
	 * inline ';' comment, boolean spellings, section-line comment. */
	load_ok(write_file("v.conf", "\xef\xbb\xbf[daemon] ; the daemon\r\n"
				     "  scan_interval_ms = 5\r\n"
				     "\tkhugepaged: OFF ; say off\n"
				     "[collapse]\n"
				     "enable = 0\n"
				     "file_backed = No\n"
				     "access_sampling = TRUE\n"
				     "weight = 007\n"
				     "# a comment with unicode: ünïcødé ✓\n"),
		&c);
	assert_int_equal(c.scan_interval_ms, 5);
	assert_int_equal(c.khugepaged, KHUGEPAGED_OFF);
	assert_false(c.defaults.enable);
	assert_false(c.defaults.file_backed);
	assert_true(c.defaults.access_sampling);
	assert_int_equal(c.defaults.weight, 7);
	config_free(&c);
}

static void test_missing_file(void **state)
{
	struct config c;

	(void)state;
	memset(&c, 0xa5, sizeof(c));
	assert_int_equal(config_load(tpath("nope.conf"), false, true, &c, err, sizeof(err)), -1);
	{
		char want[512];

		snprintf(want, sizeof(want), "%s: cannot open: No such file or directory", tpath("nope.conf"));
		assert_string_equal(err, want);
	}

	/* missing_ok: the defaults, and the cgroup_dir beside it still counts. */
	make_dir("cgroup.d");
	write_file("cgroup.d/a.conf", "[cgroup]\npath = /a\nweight = 5\n");
	assert_int_equal(config_load(tpath("nope.conf"), true, true, &c, err, sizeof(err)), 0);
	assert_default_daemon(&c);
	assert_string_equal(c.path, tpath("nope.conf"));
	assert_int_equal(c.nrules, 1);
	assert_int_equal(config_policy_for(&c, "/a/b")->weight, 5);
	config_free(&c);
}

/* ---- the drop-in directory: the *.conf files of main.conf.d, by name ---- */

static void test_dropins_override_in_order(void **state)
{
	struct config c;

	(void)state;
	write_file("main.conf", "[daemon]\nscan_interval_ms = 7\nfull_rescan_s = 60\n[collapse]\nweight = 5\n");
	make_dir("main.conf.d");
	write_file("main.conf.d/20-later.conf", "[daemon]\nscan_interval_ms = 9\n");
	write_file("main.conf.d/10-first.conf",
		   "[daemon]\nscan_interval_ms = 8\nkhugepaged = idle\ncgroup_dir = policies\n"
		   "[collapse]\nweight = 6\n");
	write_file("main.conf.d/30-ignored.conf.dpkg-old", "[daemon]\nscan_interval_ms = 99\n");
	write_file("main.conf.d/.hidden.conf", "[daemon]\nscan_interval_ms = 98\n");
	make_dir("policies");
	write_file("policies/a.conf", "[cgroup]\npath = /a\n");
	load_ok(tpath("main.conf"), &c);
	assert_int_equal(c.scan_interval_ms, 9); /* 20-later after 10-first after main */
	assert_int_equal(c.full_rescan_s, 60);   /* main, untouched */
	assert_int_equal(c.khugepaged, KHUGEPAGED_IDLE);
	assert_int_equal(c.defaults.weight, 6);
	/* Relative to the main file's directory, and cgroup files inherit the
	 * [collapse] values the drop-ins left. */
	assert_string_equal(c.cgroup_dir, tpath("policies"));
	assert_int_equal(c.nrules, 1);
	assert_int_equal(config_policy_for(&c, "/a")->weight, 6);
	config_free(&c);
}

static void test_dropin_errors(void **state)
{
	char want[1024];
	struct config c;

	(void)state;
	write_file("main.conf", "[daemon]\nscan_interval_ms = 7\n");
	make_dir("main.conf.d");
	write_file("main.conf.d/a.conf", "[daemon]\nscan_interval_ms = 8\nscan_interval_ms = 9\n");
	expect_error_in("main.conf.d/a.conf", 3, "key 'scan_interval_ms': set twice (first on line 2)");
	write_file("main.conf.d/a.conf", "[cgroup]\npath = /a\n");
	expect_error_in("main.conf.d/a.conf", 1,
			"section [cgroup]: belongs in a file in cgroup_dir, not in the main file");
	write_file("main.conf.d/a.conf", "[daemon]\nno_such_key = 1\n");
	expect_error_in("main.conf.d/a.conf", 2, "key 'no_such_key': unknown key in [daemon]");
	/* The directory is checked like cgroup_dir (the check is on even for
	 * fixtures: skip_owner_check = false needs root to pass). */
	write_file("main.conf.d/a.conf", "[daemon]\nscan_interval_ms = 8\n");
	if (geteuid() == 0) {
		assert_int_equal(chmod(tpath("main.conf.d"), 0775), 0);
		assert_int_equal(chmod(tpath("main.conf"), 0644), 0);
		assert_int_equal(chmod(tpath("main.conf.d/a.conf"), 0644), 0);
		assert_int_equal(config_load(tpath("main.conf"), false, false, &c, err, sizeof(err)), -1);
		snprintf(want, sizeof(want), "%s: writable by group (mode 0775); refusing to trust it (chmod go-w)",
			 tpath("main.conf.d"));
		assert_string_equal(err, want);
	}
}

/* Where node_exporter's textfile directory exists, the metrics go there;
 * a file of that name, or nothing, leaves them in /run. */
static void test_default_metrics_file(void **state)
{
	struct config c;
	char *p;

	(void)state;
	make_dir("textfile");
	config_textfile_dir = tpath("textfile");
	config_defaults(&c);
	assert_string_equal(c.metrics_file, tpath("textfile/hugecollapsed.prom"));
	config_free(&c);

	write_file("plain", "");
	p = config_default_metrics_file(tpath("plain"));
	assert_string_equal(p, "/run/hugecollapsed/metrics.prom");
	free(p);
	p = config_default_metrics_file("");
	assert_string_equal(p, "/run/hugecollapsed/metrics.prom");
	free(p);
	p = config_default_metrics_file(NULL);
	assert_string_equal(p, "/run/hugecollapsed/metrics.prom");
	free(p);
}

/* ---- errors in the main file: exact FILE:LINE: key 'K': why ---- */

static void test_main_value_errors(void **state)
{
	(void)state;
	expect_main_error("[daemon]\nscan_interval_ms = abc\n", 2,
			  "key 'scan_interval_ms': 'abc' is not a number (range 0..3600000)");
	expect_main_error("[daemon]\n\nfull_rescan_s = 10s\n", 3,
			  "key 'full_rescan_s': '10s' has junk after the number");
	expect_main_error("[daemon]\nalloc_backoff_ms = 1 000\n", 2,
			  "key 'alloc_backoff_ms': '1 000' has junk after the number");
	expect_main_error("[collapse]\nmax_ptes_swap = -1\n", 2,
			  "key 'max_ptes_swap': '-1' is negative (range 0..511)");
	expect_main_error("[collapse]\nmax_ptes_none = 512\n", 2, "key 'max_ptes_none': 512 is out of range 0..511");
	expect_main_error("[collapse]\nmin_referenced_pct = 101\n", 2,
			  "key 'min_referenced_pct': 101 is out of range 0..100");
	expect_main_error("[collapse]\n\n\nweight = 0\n", 4, "key 'weight': 0 is out of range 1..10000");
	expect_main_error("[daemon]\ncoverage_top_cgroups = 1001\n", 2,
			  "key 'coverage_top_cgroups': 1001 is out of range 0..1000");
	expect_main_error("[collapse]\ncoverage_target_pct = 101\n", 2,
			  "key 'coverage_target_pct': 101 is out of range 0..100");
	expect_main_error("[collapse]\nweight = 99999999999999999999999\n", 2,
			  "key 'weight': 99999999999999999999999 is out of range 1..10000");
	expect_main_error("[collapse]\nweight = +5\n", 2, "key 'weight': '+5' is not a number (range 1..10000)");
	expect_main_error("[collapse]\nweight = 0x10\n", 2, "key 'weight': '0x10' has junk after the number");
	expect_main_error("[collapse]\nweight =\n", 2, "key 'weight': empty value (expected a number in 1..10000)");
	expect_main_error("[collapse]\nidle_after_s = 0\n", 2, "key 'idle_after_s': 0 is out of range 1..86400");
	expect_main_error("[collapse]\neagain_retries = 101\n", 2, "key 'eagain_retries': 101 is out of range 0..100");
	expect_main_error("[collapse]\nmemcg_headroom_mb = 65537\n", 2,
			  "key 'memcg_headroom_mb': 65537 is out of range 0..65536");
	expect_main_error("[collapse]\nblocks_per_call = 0\n", 2, "key 'blocks_per_call': 0 is out of range 1..1023");
	expect_main_error("[collapse]\nblocks_per_call = 1024\n", 2,
			  "key 'blocks_per_call': 1024 is out of range 1..1023");
	expect_main_error("[collapse]\npause_ms = 10001\n", 2, "key 'pause_ms': 10001 is out of range 0..10000");
	expect_main_error("[collapse]\nbudget_mb_per_s = 100001\n", 2,
			  "key 'budget_mb_per_s': 100001 is out of range 1..100000");
	expect_main_error("[collapse]\nenable = maybe\n", 2,
			  "key 'enable': 'maybe' is not a boolean (use yes/no, true/false, on/off or 1/0)");
	expect_main_error("[collapse]\nfile_backed = y\n", 2,
			  "key 'file_backed': 'y' is not a boolean (use yes/no, true/false, on/off or 1/0)");
	expect_main_error("[collapse]\nscope = never\n", 2,
			  "key 'scope': 'never' is not one of kernel, madvise, always");
	expect_main_error("[collapse]\n\nscope =\n", 3, "key 'scope': '' is not one of kernel, madvise, always");
	expect_main_error("[daemon]\nscope = kernel\n", 2,
			  "key 'scope': not allowed in [daemon]; it belongs in [collapse] or [cgroup]");
	expect_main_error("[daemon]\nkhugepaged = never\n", 2,
			  "key 'khugepaged': 'never' is not one of keep, idle, off");
	expect_main_error("[daemon]\nmetrics_file = metrics.prom\n", 2,
			  "key 'metrics_file': 'metrics.prom' must be an absolute path (or empty for none)");
	expect_main_error("[daemon]\ncgroup_dir =\n", 2, "key 'cgroup_dir': must not be empty");
	expect_main_error("[daemon]\nstate_file = run/khugepaged.state\n", 2,
			  "key 'state_file': 'run/khugepaged.state' must be an absolute path (or empty for none)");
}

static void test_main_structure_errors(void **state)
{
	(void)state;
	expect_main_error("[daemon]\nscan_interval_ms = 1\n[bogus]\n", 3,
			  "section [bogus]: unknown section (expected [daemon] or [collapse])");
	expect_main_error("[Daemon]\n", 1, "section [Daemon]: unknown section (expected [daemon] or [collapse])");
	expect_main_error("[daemon\n", 1, "section header without ']'");
	expect_main_error("[daemon] x\n", 1, "section [daemon]: junk after ']'");
	expect_main_error("[daemon]\nfrobnicate = 1\n", 2, "key 'frobnicate': unknown key in [daemon]");
	expect_main_error("[daemon]\nweight = 1\n", 2,
			  "key 'weight': not allowed in [daemon]; it belongs in [collapse] or [cgroup]");
	expect_main_error("[collapse]\nkhugepaged = off\n", 2,
			  "key 'khugepaged': not allowed in [collapse]; it belongs in [daemon] of the main file");
	expect_main_error("[collapse]\npath = /a\n", 2,
			  "key 'path': not allowed in [collapse]; it belongs in [cgroup] of a file in cgroup_dir");
	expect_main_error("scan_interval_ms = 1\n", 1, "key 'scan_interval_ms': outside any section");
	expect_main_error("[collapse]\nweight = 1\nenable = yes\n\nweight = 2\n", 5,
			  "key 'weight': set twice (first on line 2)");
	/* Twice across two [collapse] headers is still twice. */
	expect_main_error("[collapse]\nweight = 1\n[daemon]\n[collapse]\nweight = 2\n", 5,
			  "key 'weight': set twice (first on line 2)");
	expect_main_error("[daemon]\n\n[cgroup]\npath = /a\n", 3,
			  "section [cgroup]: belongs in a file in cgroup_dir, not in the main file");
	expect_main_error("[daemon]\njust some words\n", 2, "expected 'key = value', '[section]' or a comment");
	expect_main_error("[daemon]\n= 5\n", 2, "empty key name");
	/* Only the first error counts, even when a later one is different. */
	expect_main_error("[daemon]\nbad = 1\n[nope]\n", 2, "key 'bad': unknown key in [daemon]");
	/* An indented line is a key of its own, not a continuation. */
	expect_main_error("[collapse]\nweight = 5\n    weight = 6\n", 3, "key 'weight': set twice (first on line 2)");
}

/* ---- hostile files ---- */

static void test_long_and_binary_lines(void **state)
{
	size_t n = 100 * 1024;
	char *big = malloc(n + 64);
	struct config c;
	char why[128];

	(void)state;
	assert_non_null(big);
	/* A 100 KB line: inih alone would split it into 200-byte "lines". */
	strcpy(big, "[daemon]\nmetrics_file = /");
	memset(big + strlen(big), 'x', n);
	strcpy(big + 25 + n, "\n");
	write_file("main.conf", big);
	snprintf(why, sizeof(why), "line is %zu bytes long; the limit is 197", n + 16);
	expect_error_in("main.conf", 2, why);

	/* 197 bytes fit, 198 do not. */
	memset(big, 0, n + 64);
	strcpy(big, "[daemon]\nmetrics_file = /");
	memset(big + strlen(big), 'y', 197 - 16);
	strcat(big, "\n");
	assert_int_equal(strlen(big) - 10, 197);
	load_ok(write_file("ok.conf", big), &c);
	assert_int_equal(strlen(c.metrics_file), 197 - 15);
	config_free(&c);
	big[strlen(big) - 1] = 'y';
	strcat(big, "\n");
	write_file("main.conf", big);
	expect_error_in("main.conf", 2, "line is 198 bytes long; the limit is 197");

	write_bytes("main.conf", "[daemon]\n# ok\nscan_interval_ms = 1\0 0\n", 38);
	expect_error_in("main.conf", 3, "NUL byte at column 21 (binary data, not a config file?)");
	write_bytes("main.conf",
		    "\x7f"
		    "ELF\x02\x01\x01\0\0\0",
		    10);
	expect_error_in("main.conf", 1, "control character 0x7f at column 1");
	expect_main_error("[daemon]\n# caf\xe9\n", 2, "invalid UTF-8 at column 6");
	expect_main_error("[daemon]\n# overlong \xc0\xaf\n", 2, "invalid UTF-8 at column 12");
	expect_main_error("[daemon]\n# surrogate \xed\xa0\x80\n", 2, "invalid UTF-8 at column 13");
	expect_main_error("[daemon]\n# truncated \xe2\x9c\n", 2, "invalid UTF-8 at column 13");
	expect_main_error("[daemon]\nkhugepaged = keep\rx\n", 2, "control character 0x0d at column 18");
	expect_main_error("[daemon]\nkhugepaged = \x1b[31mkeep\n", 2, "control character 0x1b at column 14");
	free(big);
}

static void test_ten_thousand_lines(void **state)
{
	size_t cap = 10000 * 16 + 64, len = 0;
	char *text = malloc(cap);
	struct config c;

	(void)state;
	assert_non_null(text);
	len += (size_t)sprintf(text + len, "[collapse]\n");
	for (int i = 2; i < 10000; i++)
		len += (size_t)sprintf(text + len, "; filler %d\n", i);
	sprintf(text + len, "weight = 42\n");
	load_ok(write_file("big.conf", text), &c);
	assert_int_equal(c.defaults.weight, 42);
	config_free(&c);

	sprintf(text + len, "weight = 42x\n");
	write_file("main.conf", text);
	expect_error_in("main.conf", 10000, "key 'weight': '42x' has junk after the number");
	free(text);

	/* Bigger than 1 MiB: refused as a whole. */
	text = calloc(1, (1 << 20) + 2);
	assert_non_null(text);
	memset(text, '#', (1 << 20) + 1);
	write_file("main.conf", text);
	expect_error_in("main.conf", 0, "larger than 1048576 bytes; not a config file?");
	free(text);
}

static void test_not_a_regular_file(void **state)
{
	struct config c;

	(void)state;
	make_dir("main.conf");
	expect_error_in("main.conf", 0, "is a directory, not a config file");
	assert_int_equal(config_load("/dev/null", false, true, &c, err, sizeof(err)), -1);
	assert_string_equal(err, "/dev/null: is not a regular file");
}

static void test_symlink(void **state)
{
	struct config c;
	char want[512];

	(void)state;
	write_file("real.conf", "[daemon]\nscan_interval_ms = 7\n");
	assert_int_equal(symlink(tpath("real.conf"), tpath("main.conf")), 0);
	load_ok(tpath("main.conf"), &c); /* followed */
	assert_int_equal(c.scan_interval_ms, 7);
	config_free(&c);

	if (geteuid() != 0)
		return;
	/* The target is checked, and the message says it was a symlink. */
	assert_int_equal(chown(tpath("real.conf"), NOBODY, NOBODY), 0);
	assert_int_equal(config_load(tpath("main.conf"), false, false, &c, err, sizeof(err)), -1);
	snprintf(
	    want, sizeof(want),
	    "%s: owned by uid 65534, not root (a symlink; checked its target %s); refusing to trust it (chown root)",
	    tpath("main.conf"), tpath("real.conf"));
	assert_string_equal(err, want);

	/* Dangling: like a missing file. */
	assert_int_equal(unlink(tpath("real.conf")), 0);
	assert_int_equal(config_load(tpath("main.conf"), false, true, &c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "cannot open: No such file or directory"));
}

/* ---- StrictModes-like ownership checks ---- */

static void test_owner_and_mode(void **state)
{
	struct config c;
	char main_conf[256], want[512];

	(void)state;
	if (geteuid() != 0) {
		skip();
		return;
	}
	strcpy(main_conf, write_file("main.conf", "[daemon]\nscan_interval_ms = 3\n"));
	assert_int_equal(config_load(main_conf, false, false, &c, err, sizeof(err)), 0); /* root, 0644 */
	config_free(&c);

	assert_int_equal(chmod(main_conf, 0664), 0);
	assert_int_equal(config_load(main_conf, false, false, &c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s: writable by group (mode 0664); refusing to trust it (chmod go-w)", main_conf);
	assert_string_equal(err, want);

	assert_int_equal(chmod(main_conf, 0646), 0);
	assert_int_equal(config_load(main_conf, false, false, &c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s: writable by others (mode 0646); refusing to trust it (chmod go-w)",
		 main_conf);
	assert_string_equal(err, want);

	assert_int_equal(chmod(main_conf, 0644), 0);
	assert_int_equal(chown(main_conf, NOBODY, 0), 0);
	assert_int_equal(config_load(main_conf, false, false, &c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s: owned by uid 65534, not root; refusing to trust it (chown root)", main_conf);
	assert_string_equal(err, want);

	/* skip_owner_check bypasses both checks. */
	assert_int_equal(chmod(main_conf, 0666), 0);
	assert_int_equal(config_load(main_conf, false, true, &c, err, sizeof(err)), 0);
	assert_int_equal(c.scan_interval_ms, 3);
	config_free(&c);

	/* The cgroup dir and its files are checked too. */
	assert_int_equal(chown(main_conf, 0, 0), 0);
	assert_int_equal(chmod(main_conf, 0600), 0);
	make_dir("cgroup.d");
	write_file("cgroup.d/a.conf", "[cgroup]\npath = /a\n");
	assert_int_equal(config_load(main_conf, false, false, &c, err, sizeof(err)), 0);
	assert_int_equal(c.nrules, 1);
	config_free(&c);

	assert_int_equal(chmod(tpath("cgroup.d"), 0757), 0);
	assert_int_equal(config_load(main_conf, false, false, &c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s: writable by others (mode 0757); refusing to trust it (chmod go-w)",
		 tpath("cgroup.d"));
	assert_string_equal(err, want);
	assert_int_equal(chmod(tpath("cgroup.d"), 0755), 0);
	assert_int_equal(chown(tpath("cgroup.d"), NOBODY, NOBODY), 0);
	assert_int_equal(config_load(main_conf, false, false, &c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s: owned by uid 65534, not root; refusing to trust it (chown root)",
		 tpath("cgroup.d"));
	assert_string_equal(err, want);
	assert_int_equal(chown(tpath("cgroup.d"), 0, 0), 0);

	assert_int_equal(chmod(tpath("cgroup.d/a.conf"), 0620), 0);
	assert_int_equal(config_load(main_conf, false, false, &c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s: writable by group (mode 0620); refusing to trust it (chmod go-w)",
		 tpath("cgroup.d/a.conf"));
	assert_string_equal(err, want);
	assert_int_equal(config_load(main_conf, false, true, &c, err, sizeof(err)), 0);
	config_free(&c);
}

/* ---- cgroup_dir files ---- */

static void test_cgroup_dir_missing_or_not_a_dir(void **state)
{
	struct config c;

	(void)state;
	write_file("main.conf", "[daemon]\ncgroup_dir = rules\n");
	load_ok(tpath("main.conf"), &c);
	assert_string_equal(c.cgroup_dir, tpath("rules"));
	assert_int_equal(c.nrules, 0);
	config_free(&c);

	write_file("rules", "not a directory\n");
	expect_error_in("rules", 0, "cgroup_dir exists but is not a directory");

	/* An absolute cgroup_dir is kept as is. */
	write_file("main.conf", "[daemon]\ncgroup_dir = /nonexistent/hugecollapsed.d\n");
	load_ok(tpath("main.conf"), &c);
	assert_string_equal(c.cgroup_dir, "/nonexistent/hugecollapsed.d");
	config_free(&c);
}

static void test_cgroup_file_errors(void **state)
{
	(void)state;
	write_file("main.conf", "[collapse]\nweight = 50\n");
	make_dir("cgroup.d");

	write_file("cgroup.d/web.conf", "# web\n[cgroup]\npath = /system.slice/web.service\nweight = 0\n");
	expect_error_in("cgroup.d/web.conf", 4, "key 'weight': 0 is out of range 1..10000");

	write_file("cgroup.d/web.conf", "[cgroup]\nenable = yes\n");
	expect_error_in("cgroup.d/web.conf", 0,
			"key 'path': missing; each file in cgroup_dir needs [cgroup] path = /...");
	write_file("cgroup.d/web.conf", "");
	expect_error_in("cgroup.d/web.conf", 0,
			"key 'path': missing; each file in cgroup_dir needs [cgroup] path = /...");

	write_file("cgroup.d/web.conf", "[cgroup]\npath = system.slice\n");
	expect_error_in("cgroup.d/web.conf", 2, "key 'path': 'system.slice' must start with '/'");
	write_file("cgroup.d/web.conf", "[cgroup]\npath = /a/../b\n");
	expect_error_in("cgroup.d/web.conf", 2, "key 'path': '/a/../b' '.' and '..' components are not allowed");
	write_file("cgroup.d/web.conf", "[cgroup]\npath = /a/./b\n");
	expect_error_in("cgroup.d/web.conf", 2, "key 'path': '/a/./b' '.' and '..' components are not allowed");
	write_file("cgroup.d/web.conf", "[cgroup]\npath =\n");
	expect_error_in("cgroup.d/web.conf", 2, "key 'path': '' must start with '/'");
	write_file("cgroup.d/web.conf", "[cgroup]\npath = /a\npath = /b\n");
	expect_error_in("cgroup.d/web.conf", 3, "key 'path': set twice (first on line 2)");

	write_file("cgroup.d/web.conf", "[daemon]\nscan_interval_ms = 1\n");
	expect_error_in("cgroup.d/web.conf", 1, "section [daemon]: only allowed in the main file");
	write_file("cgroup.d/web.conf", "[cgroup]\npath = /a\n[cgroup]\npath = /b\n");
	expect_error_in("cgroup.d/web.conf", 3, "section [cgroup]: a second one; use one file per cgroup");
	write_file("cgroup.d/web.conf", "[cgroup]\npath = /a\n[extra]\n");
	expect_error_in("cgroup.d/web.conf", 3, "section [extra]: unknown section (expected [cgroup] or [collapse])");
	write_file("cgroup.d/web.conf", "path = /a\n");
	expect_error_in("cgroup.d/web.conf", 1, "key 'path': outside any section");
	write_file("cgroup.d/web.conf", "[cgroup]\npath = /a\nscope = madvise always\n");
	expect_error_in("cgroup.d/web.conf", 3, "key 'scope': 'madvise always' is not one of kernel, madvise, always");
	write_file("cgroup.d/web.conf", "[cgroup]\npath = /a\nkhugepaged = off\n");
	expect_error_in("cgroup.d/web.conf", 3,
			"key 'khugepaged': not allowed in [cgroup]; it belongs in [daemon] of the main file");
	/* The same key in [cgroup] and in [collapse] of one file. */
	write_file("cgroup.d/web.conf", "[cgroup]\npath = /a\nweight = 5\n[collapse]\nweight = 6\n");
	expect_error_in("cgroup.d/web.conf", 5, "key 'weight': set twice (first on line 3)");
	write_file("cgroup.d/web.conf", "[cgroup]\npath = /a\n[collapse]\npath = /b\n");
	expect_error_in("cgroup.d/web.conf", 4,
			"key 'path': not allowed in [collapse]; it belongs in [cgroup] of a file in cgroup_dir");
	write_file("cgroup.d/web.conf", "[cgroup]\npath = /a\n# \xff\n");
	expect_error_in("cgroup.d/web.conf", 3, "invalid UTF-8 at column 3");

	/* The same path in two files (after normalization): the later file,
	 * in name order, is the one blamed. */
	write_file("cgroup.d/web.conf", "[cgroup]\npath = /system.slice/web.service\n");
	write_file("cgroup.d/zz-web.conf", "\n[cgroup]\npath = //system.slice//web.service/\n");
	{
		char why[512];

		snprintf(why, sizeof(why), "key 'path': /system.slice/web.service already has a rule in %s:2",
			 tpath("cgroup.d/web.conf"));
		expect_error_in("cgroup.d/zz-web.conf", 3, why);
	}
	assert_int_equal(unlink(tpath("cgroup.d/zz-web.conf")), 0);

	/* A directory named *.conf in cgroup_dir. */
	make_dir("cgroup.d/dir.conf");
	expect_error_in("cgroup.d/dir.conf", 0, "is a directory, not a config file");
}

static void test_cgroup_inherits_after_whole_main_file(void **state)
{
	struct config c;

	(void)state;
	/* [collapse] after [daemon]'s cgroup_dir: the rule still inherits it. */
	write_file("main.conf", "[daemon]\ncgroup_dir = r\n[collapse]\nmax_ptes_none = 7\nenable = no\n");
	make_dir("r");
	write_file("r/x.conf", "[cgroup]\nenable = yes\npath = /x\n");
	load_ok(tpath("main.conf"), &c);
	assert_int_equal(c.nrules, 1);
	assert_int_equal(c.rules[0].line, 3);
	assert_true(c.rules[0].policy.enable);
	assert_int_equal(c.rules[0].policy.limits.max_ptes_none, 7);
	assert_false(config_policy_for(&c, "/y")->enable);
	config_free(&c);
}

static void test_shipped_example_parses(void **state)
{
	const char *path = HC_FIXTURES "/../../conf/cgroup.d/example.conf.sample";
	FILE *in = fopen(path, "r");
	FILE *out = NULL;
	char line[512], name[32];
	const struct policy *web, *batch;
	struct config c;
	int files = 0;

	(void)state;
	assert_non_null(in);
	/* Uncomment each "# --- x.conf" part of the sample into its own file. */
	make_dir("cgroup.d");
	write_file("main.conf", "");
	while (fgets(line, sizeof(line), in)) {
		if (!strncmp(line, "# --- ", 6)) {
			if (out)
				fclose(out);
			snprintf(name, sizeof(name), "cgroup.d/%d.conf", files++);
			out = fopen(tpath(name), "w");
			assert_non_null(out);
		} else if (out && line[0] == '#') {
			fputs(line[1] == ' ' ? line + 2 : line + 1, out);
		}
	}
	fclose(in);
	assert_non_null(out);
	fclose(out);
	assert_int_equal(files, 3);
	load_ok(tpath("main.conf"), &c);
	assert_int_equal(c.nrules, 3);
	web = config_policy_for(&c, "/system.slice/web.service");
	batch = config_policy_for(&c, "/batch.slice/x.scope");
	assert_true(web->enable);
	assert_true(web->weight > c.defaults.weight);
	assert_int_equal(web->coverage_target_pct, 80);
	assert_int_equal(web->scope, THP_SCOPE_ALWAYS);
	assert_int_equal(web->blocks_per_call, 16);
	assert_int_equal(web->pause_ms, 5);
	assert_int_equal(config_policy_for(&c, "/system.slice/docker-abc.scope")->memcg_headroom_mb, 64);
	assert_false(batch->enable);
	config_free(&c);
}

/* ---- matching ---- */

static void test_policy_matching(void **state)
{
	static const char *const paths[] = {
	    "/a", "/a/b", "/ab", "/", "/system.slice/foo bar@1.service", "/system.slice/x\\x2dy:z.mount", "/ünï/cødé",
	};
	struct config c;
	char name[32], text[256];

	(void)state;
	make_dir("cgroup.d");
	write_file("main.conf", "");
	for (unsigned i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		snprintf(name, sizeof(name), "cgroup.d/%u.conf", i);
		snprintf(text, sizeof(text), "[cgroup]\npath = %s\nweight = %u\n", paths[i], 10 + i);
		write_file(name, text);
	}
	load_ok(tpath("main.conf"), &c);
	assert_int_equal(c.nrules, 7);
	for (size_t i = 1; i < c.nrules; i++) /* sorted by path */
		assert_true(strcmp(c.rules[i - 1].path, c.rules[i].path) < 0);

	assert_int_equal(config_policy_for(&c, "/a")->weight, 10);
	assert_int_equal(config_policy_for(&c, "/a/x/y")->weight, 10);
	assert_int_equal(config_policy_for(&c, "/a/b")->weight, 11);
	assert_int_equal(config_policy_for(&c, "/a/b/c")->weight, 11);
	assert_int_equal(config_policy_for(&c, "/a/bc")->weight, 10);
	assert_int_equal(config_policy_for(&c, "/ab")->weight, 12);
	assert_int_equal(config_policy_for(&c, "/ab/c")->weight, 12);
	assert_int_equal(config_policy_for(&c, "/abc")->weight, 13); /* only "/" */
	assert_int_equal(config_policy_for(&c, "/")->weight, 13);
	assert_int_equal(config_policy_for(&c, "/system.slice/foo bar@1.service")->weight, 14);
	assert_int_equal(config_policy_for(&c, "/system.slice/foo bar@1.service/sub")->weight, 14);
	assert_int_equal(config_policy_for(&c, "/system.slice/foo bar@2.service")->weight, 13);
	assert_int_equal(config_policy_for(&c, "/system.slice/x\\x2dy:z.mount")->weight, 15);
	assert_int_equal(config_policy_for(&c, "/system.slice/x-y:z.mount")->weight, 13); /* escapes are verbatim */
	assert_int_equal(config_policy_for(&c, "/ünï/cødé/x")->weight, 16);
	assert_ptr_equal(config_policy_for(&c, NULL), &c.defaults);
	config_free(&c);

	/* Without a "/" rule, unmatched cgroups get the defaults. */
	assert_int_equal(unlink(tpath("cgroup.d/3.conf")), 0);
	load_ok(tpath("main.conf"), &c);
	assert_ptr_equal(config_policy_for(&c, "/abc"), &c.defaults);
	assert_ptr_equal(config_policy_for(&c, "/"), &c.defaults);
	assert_int_equal(config_policy_for(&c, "/ab")->weight, 12);
	config_free(&c);
}

/* ---- cgroup paths with globs ---- */

static unsigned weight_for(const struct config *c, const char *cgroup)
{
	return config_policy_for(c, cgroup)->weight;
}

/* tests/fixtures/config/globs.d: the winner of several matches is the most
 * specific (config_rule_more_specific), whatever the file names say. */
static void test_glob_policies(void **state)
{
	static const char *const kp = "/kubepods.slice/kubepods-besteffort.slice/";
	static const char *const kb = "/kubepods.slice/kubepods-burstable.slice/";
	struct config c;
	char cg[256];

	(void)state;
	load_ok(FIX "/globs.conf", &c);
	assert_int_equal(c.nrules, 11);
#define W(want, ...)                                                                                                   \
	do {                                                                                                           \
		snprintf(cg, sizeof(cg), __VA_ARGS__);                                                                 \
		if (weight_for(&c, cg) != (want))                                                                      \
			fail_msg("%s: weight %u, want %u", cg, weight_for(&c, cg), (unsigned)(want));                  \
	} while (0)
	W(20, "%scri-containerd-abc.scope", kp);       /* the glob, deeper than the literal /kubepods.slice */
	W(20, "%scri-containerd-abc.scope/sub/x", kp); /* descendants too */
	W(10, "%s", kp);                               /* only the literal ancestor */
	W(10, "/kubepods.slice");
	W(10, "/kubepods.slice/a/b/cri-containerd-x.scope"); /* '*' never crosses '/' */
	W(10, "%scri-containerd-abc.scopex", kp);            /* the pattern is anchored at its end */
	W(30, "%scri-containerd-abc.scope", kb);             /* more literal bytes than the 20 */
	W(40, "%scri-containerd-db.scope", kb);              /* a literal beats every glob at its depth */
	W(40, "%scri-containerd-db.scope/sub", kb);
	W(30, "%scri-containerd-db2.scope", kb); /* 30 and 25 match: 30 has more literal bytes */
	W(25, "%scri-containerd-db2.scope", kp); /* 25 over 20: "db" is literal */
	W(50, "/system.slice/system-getty.slice/getty@tty1.service");
	W(1, "/system.slice/system-getty.slice/getty@tty10.service"); /* '?' is one character */
	W(60, "/system.slice/app-42.service");
	W(1, "/system.slice/app-4.service");
	W(61, "/system.slice/app-web.service");
	W(1, "/system.slice/app-4x.service");
	W(70, "/system.slice/x\\x2dy-1.mount"); /* backslash is an ordinary character */
	W(1, "/system.slice/x-y-1.mount");
	W(81, "/user.slice/user-1000.slice");
	W(81, "/user.slice/user-1000.slice/session-2.scope");
	W(80, "/user.slice/user-1001.slice/session-3.scope");
	W(1, "/user.slice"); /* '*' needs a component */
	W(1, "/");
#undef W
	config_free(&c);
}

static void test_glob_order_is_total(void **state)
{
	static const char *const paths[] = {"/a", "/a/b", "/a/*", "/a/b*", "/a/*b", "/a/[b]", "/a/b/c", "/a/?", "/*/b"};
	struct cgroup_rule r[sizeof(paths) / sizeof(paths[0])];
	size_t n = sizeof(paths) / sizeof(paths[0]);

	(void)state;
	for (size_t i = 0; i < n; i++) {
		r[i] = (struct cgroup_rule){.path = (char *)paths[i]};
		config_rule_init(&r[i]);
	}
	assert_false(r[0].glob);
	assert_true(r[2].glob);
	assert_int_equal(r[6].depth, 3);
	assert_int_equal(r[3].literals, 4); /* "/a/b" of "/a/b*" */
	assert_int_equal(r[5].literals, 3); /* [b] counts as a wildcard */
	assert_int_equal(r[8].literal_prefix, 1);
	/* Antisymmetric, irreflexive and transitive: one winner, always. */
	for (size_t i = 0; i < n; i++) {
		assert_false(config_rule_more_specific(&r[i], &r[i]));
		for (size_t j = 0; j < n; j++) {
			if (i != j)
				assert_true(config_rule_more_specific(&r[i], &r[j]) !=
					    config_rule_more_specific(&r[j], &r[i]));
			for (size_t k = 0; k < n; k++)
				if (config_rule_more_specific(&r[i], &r[j]) && config_rule_more_specific(&r[j], &r[k]))
					assert_true(config_rule_more_specific(&r[i], &r[k]));
		}
	}
	assert_true(config_rule_more_specific(&r[1], &r[3])); /* /a/b over /a/b* */
	assert_true(config_rule_more_specific(&r[3], &r[2])); /* "/a/b*" over "/a/\x2a" */
	assert_true(config_rule_more_specific(&r[6], &r[1])); /* deeper */
	assert_true(config_rule_more_specific(&r[8], &r[0])); /* depth first: /x/b over /a */
}

/* A pattern never matches the root, whose one component is empty: "/\x2a"
 * is for the root's children (fuzz_config found "/" picking "/\x2a"'s policy
 * over the literal "/" rule's). */
static void test_glob_not_root(void **state)
{
	struct cgroup_rule star = {.path = (char *)"/*"}, root = {.path = (char *)"/"};

	(void)state;
	config_rule_init(&star);
	config_rule_init(&root);
	assert_true(star.glob);
	assert_false(config_rule_matches(&star, "/"));
	assert_true(config_rule_matches(&star, "/a"));
	assert_true(config_rule_matches(&star, "/a/b")); /* descendants, as for every rule */
	assert_true(config_rule_matches(&root, "/"));
}

static void test_glob_errors(void **state)
{
	char want_dup[1024];

	(void)state;
	write_file("main.conf", "");
	make_dir("cgroup.d");
	write_file("cgroup.d/k.conf", "[cgroup]\npath = /kubepods.slice/**\n");
	expect_error_in("cgroup.d/k.conf", 2,
			"key 'path': '/kubepods.slice/**' has '**': '*' matches within one path component, never "
			"across '/'; write one per component");
	write_file("cgroup.d/k.conf", "[cgroup]\npath = /a/[b\n");
	expect_error_in("cgroup.d/k.conf", 2,
			"key 'path': '/a/[b' has a '[' without its ']' in the same component (for a literal '[' "
			"write [[])");
	write_file("cgroup.d/k.conf", "[cgroup]\npath = /a/[b/c]\n");
	expect_error_in("cgroup.d/k.conf", 2,
			"key 'path': '/a/[b/c]' has a '[' without its ']' in the same component (for a literal '[' "
			"write [[])");
	write_file("cgroup.d/k.conf", "[cgroup]\npath = /a/[[:foo:]]\n");
	expect_error_in("cgroup.d/k.conf", 2, "key 'path': '/a/[[:foo:]]' names an unknown [:class:]");
	write_file("cgroup.d/k.conf", "[cgroup]\npath = /a/[[:alpha]\n");
	expect_error_in("cgroup.d/k.conf", 2, "key 'path': '/a/[[:alpha]' has a '[:' without its ':]'");
	write_file("cgroup.d/k.conf", "[cgroup]\npath = /a/[[=a=]]\n");
	expect_error_in("cgroup.d/k.conf", 2,
			"key 'path': '/a/[[=a=]]' uses [= =] or [. .], which cgroup names have no use for");
	/* The same pattern twice, after normalization, is a duplicate. */
	write_file("cgroup.d/k.conf", "[cgroup]\npath = //a//*/\n");
	write_file("cgroup.d/l.conf", "[cgroup]\npath = /a/*\n");
	snprintf(want_dup, sizeof(want_dup), "key 'path': /a/* already has a rule in %s:2", tpath("cgroup.d/k.conf"));
	expect_error_in("cgroup.d/l.conf", 2, want_dup);
}

/* ---- mode = observe ---- */

static void test_observe_mode(void **state)
{
	static const char *const khp[] = {"keep", "idle", "off"};
	struct config c;
	char text[128];

	(void)state;
	/* Whatever khugepaged = says, observe puts keep in force. */
	for (unsigned i = 0; i < 3; i++) {
		snprintf(text, sizeof(text), "[daemon]\nmode = observe\nkhugepaged = %s\n", khp[i]);
		write_file("main.conf", text);
		load_ok(tpath("main.conf"), &c);
		assert_int_equal(c.mode, RUN_OBSERVE);
		assert_int_equal(c.khugepaged, (int)i);
		assert_int_equal(config_khugepaged_in_force(&c), KHUGEPAGED_KEEP);
		config_free(&c);
	}
	write_file("main.conf", "[daemon]\nmode = Collapse\nkhugepaged = idle\n");
	load_ok(tpath("main.conf"), &c);
	assert_int_equal(c.mode, RUN_COLLAPSE);
	assert_int_equal(config_khugepaged_in_force(&c), KHUGEPAGED_IDLE);
	config_free(&c);
	/* A drop-in switches a fleet's hosts to observe without editing the main file. */
	make_dir("main.conf.d");
	write_file("main.conf.d/10-rollout.conf", "[daemon]\nmode = observe\n");
	load_ok(tpath("main.conf"), &c);
	assert_int_equal(c.mode, RUN_OBSERVE);
	config_free(&c);
	assert_int_equal(unlink(tpath("main.conf.d/10-rollout.conf")), 0);

	expect_main_error("[daemon]\nmode = dry-run\n", 2, "key 'mode': 'dry-run' is not one of collapse, observe");
	expect_main_error("[daemon]\nmode =\n", 2, "key 'mode': '' is not one of collapse, observe");
	expect_main_error("[collapse]\nmode = observe\n", 2,
			  "key 'mode': not allowed in [collapse]; it belongs in [daemon] of the main file");
	expect_main_error("[daemon]\nmode = observe\nmode = collapse\n", 3, "key 'mode': set twice (first on line 2)");
	assert_string_equal(run_mode_name(RUN_OBSERVE), "observe");
	assert_string_equal(run_mode_name(RUN_COLLAPSE), "collapse");
}

/* ---- reload atomicity ---- */

static void test_failed_reload_leaves_previous(void **state)
{
	struct config c, snapshot;

	(void)state;
	make_dir("cgroup.d");
	write_file("main.conf", "[daemon]\nscan_interval_ms = 11\n[collapse]\nweight = 22\n");
	write_file("cgroup.d/a.conf", "[cgroup]\npath = /a\nweight = 33\n");
	load_ok(tpath("main.conf"), &c);
	snapshot = c;

	/* Fails late: in the second cgroup file, after the main file and the
	 * first rule were parsed into the new struct. */
	write_file("main.conf", "[daemon]\nscan_interval_ms = 44\n[collapse]\nweight = 55\n");
	write_file("cgroup.d/b.conf", "[cgroup]\npath = /b\nweight = nope\n");
	assert_int_equal(config_load(tpath("main.conf"), false, true, &c, err, sizeof(err)), -1);
	assert_memory_equal(&c, &snapshot, sizeof(c));
	assert_int_equal(c.scan_interval_ms, 11);
	assert_int_equal(c.defaults.weight, 22);
	assert_int_equal(c.nrules, 1);
	assert_string_equal(c.rules[0].path, "/a");
	assert_int_equal(config_policy_for(&c, "/a")->weight, 33);

	/* A good reload replaces it. */
	write_file("cgroup.d/b.conf", "[cgroup]\npath = /b\nweight = 66\n");
	config_free(&c);
	load_ok(tpath("main.conf"), &c);
	assert_int_equal(c.scan_interval_ms, 44);
	assert_int_equal(c.nrules, 2);
	assert_int_equal(config_policy_for(&c, "/b/c")->weight, 66);
	config_free(&c);
	assert_null(c.rules);
	assert_int_equal(c.nrules, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_builtin_defaults, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_file_without_keys_gives_defaults, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_shipped_config_is_all_defaults, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_every_key_parsed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_syntax_variants_accepted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_missing_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_default_metrics_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dropins_override_in_order, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dropin_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_main_value_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_main_structure_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_long_and_binary_lines, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ten_thousand_lines, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_not_a_regular_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_symlink, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_owner_and_mode, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cgroup_dir_missing_or_not_a_dir, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cgroup_file_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cgroup_inherits_after_whole_main_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_shipped_example_parses, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_policy_matching, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_observe_mode, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_glob_policies, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_glob_order_is_total, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_glob_not_root, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_glob_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_failed_reload_leaves_previous, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
