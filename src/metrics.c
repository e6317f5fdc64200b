/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Prometheus text exposition format, written atomically. */
#include "metrics.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collapse.h"
#include "coverage_metrics.h"
#include "histogram.h"
#include "memcg_gate.h"
#include "scan_result.h"
#include "utf8.h"

/* A label value as the text format requires: backslash, double quote and
 * newline escaped (\\ \" \n), and UTF-8, so each byte of s that starts
 * no valid sequence (a cgroup name may hold any byte but NUL, '/' and
 * newline, which cgroupfs refuses: it is escaped all the same) is written
 * as U+FFFD. Names that differ only there print the same: see
 * cgroup_series(). */
static void label_value(FILE *f, const char *s)
{
	while (*s) {
		size_t l = utf8_seq_len(s);

		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (!l)
			fputs(UTF8_REPLACEMENT, f);
		else
			fwrite(s, 1, l, f);
		s += l ? l : 1;
	}
}

void metrics_label_value(FILE *f, const char *s)
{
	label_value(f, s);
}

static void header(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A metric with one unlabelled sample. */
static void scalar_u64(FILE *f, const char *name, const char *type, const char *help, unsigned long long v)
{
	header(f, name, type, help);
	fprintf(f, "%s %llu\n", name, v);
}

static void scalar_seconds(FILE *f, const char *name, const char *type, const char *help, double v)
{
	header(f, name, type, help);
	fprintf(f, "%s %.6f\n", name, v);
}

/* The same label twice would make the whole file invalid, and names that
 * differ only in invalid UTF-8 print the same: such series are printed once,
 * with their sum. Only names with invalid UTF-8 (rare) are compared, so the
 * usual cost is one validation per cgroup. */
static void cgroup_series(FILE *f, const struct cgroup_bytes *cg, size_t n)
{
	char **fixed = NULL; /* utf8_replaced_dup() of each name, NULL if valid */
	size_t nfixed = 0;

	for (size_t i = 0; i < n; i++) {
		char *r = utf8_valid(cg[i].cgroup) ? NULL : utf8_replaced_dup(cg[i].cgroup);

		if (r && !fixed)
			fixed = calloc(n, sizeof(*fixed));
		if (r && !fixed)
			free(r); /* no memory: print unmerged, as valid as it gets */
		else if (r) {
			fixed[i] = r;
			nfixed++;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const char *li = fixed && fixed[i] ? fixed[i] : cg[i].cgroup;
		uint64_t sum = cg[i].bytes;
		bool dup = false;

		for (size_t j = 0; nfixed && j < n && !dup; j++) {
			const char *lj = fixed[j] ? fixed[j] : cg[j].cgroup;

			if (j == i || (!fixed[i] && !fixed[j]) || strcmp(li, lj) != 0)
				continue;
			if (j < i)
				dup = true; /* printed with the first */
			else
				sum += cg[j].bytes;
		}
		if (dup)
			continue;
		fputs("hugecollapsed_collapsed_bytes_total{cgroup=\"", f);
		label_value(f, li);
		fprintf(f, "\"} %llu\n", (unsigned long long)sum);
	}
	for (size_t i = 0; fixed && i < n; i++)
		free(fixed[i]);
	free(fixed);
}

/* The two histograms (histogram.c): what a target and the host feel. */
static void metrics_format_latency(FILE *f, const struct engine *e)
{
	histogram_format(f, "hugecollapsed_block_collapse_seconds",
			 "Time to collapse one 2 MiB block (each process_madvise call's time divided over its blocks). "
			 "The kernel holds the target's mmap lock for the whole call, so the target's page faults and "
			 "mmap/munmap can stall for up to one call's time: blocks_per_call times this.",
			 &e->block_hist);
	histogram_format(f, "hugecollapsed_pass_seconds",
			 "Duration of a pass (sampling, scanning and collapsing), idle passes included.",
			 &e->pass_hist);
}

/* mode = observe (config.h): what the daemon would have collapsed. */
static void metrics_format_observe(FILE *f, const struct engine *e)
{
	bool observe = e->cfg && e->cfg->mode == RUN_OBSERVE;

	scalar_u64(f, "hugecollapsed_observe_only", "gauge",
		   "1 in mode = observe: ranges are scanned and reported, nothing is collapsed and no THP or "
		   "khugepaged knob is written.",
		   observe);
	scalar_u64(f, "hugecollapsed_would_collapse_bytes", "gauge",
		   "mode = observe: bytes of the candidate ranges the last pass would have collapsed (within the "
		   "memory cgroup limits, at the budget's rate); 0 when collapsing.",
		   observe ? e->last.would_collapse_bytes : 0);
	scalar_u64(f, "hugecollapsed_would_collapse_processes", "gauge",
		   "mode = observe: processes holding those ranges; 0 when collapsing.",
		   observe ? e->last.procs_would_collapse : 0);
}

static struct metrics_reload reload = {.last_ok = true};

void metrics_set_reload(const struct metrics_reload *r)
{
	reload = *r;
}

void metrics_format(FILE *f, const struct engine *e, enum khugepaged_mode mode)
{
	const struct pass_stats *t = &e->total;
	struct timespec now;

	/* The version the package, --version and this series agree on
	 * (CMake's project(VERSION), checked against debian/changelog by lint). */
	header(f, "hugecollapsed_build_info", "gauge", "Always 1; the version of the running daemon as a label.");
	fprintf(f, "hugecollapsed_build_info{version=\"%s\"} 1\n", HC_VERSION);
	scalar_u64(f, "hugecollapsed_reloads_total", "counter", "Reloads (SIGHUP) asked for.", reload.total);
	scalar_u64(f, "hugecollapsed_reload_failures_total", "counter",
		   "Reloads whose configuration did not load; the previous one stayed in force.", reload.failures);
	scalar_u64(f, "hugecollapsed_last_reload_success", "gauge",
		   "0 while the last reload failed (the previous configuration runs), else 1.", reload.last_ok);
	scalar_u64(f, "hugecollapsed_passes_total", "counter", "Passes completed.", e->passes);
	scalar_u64(f, "hugecollapsed_passes_idle_total", "counter",
		   "Passes skipped because no process page-faulted since the last full pass and nothing was pending.",
		   e->passes_idle);
	scalar_u64(f, "hugecollapsed_samples_full_total", "counter",
		   "Passes that read every process's stat: first pass, lost fault records, memory mapped without "
		   "faults, no fault doorbell.",
		   e->full_samples);
	scalar_u64(f, "hugecollapsed_samples_partial_total", "counter",
		   "Passes that read the stat of changed processes only: faulted, new, holding candidates, the "
		   "rolling slice.",
		   e->partial_samples);
	scalar_u64(f, "hugecollapsed_stat_reads_total", "counter", "Process stat reads taken by samples.",
		   e->stat_reads);
	scalar_u64(f, "hugecollapsed_doorbell_wakeups_total", "counter",
		   "Back-to-back passes woken by the page-fault doorbell (scan_interval_ms = 0).", e->doorbell_wakeups);
	scalar_seconds(f, "hugecollapsed_scan_seconds_total", "counter", "Wall time spent sampling and scanning.",
		       t->scan_s);
	scalar_seconds(f, "hugecollapsed_collapse_seconds_total", "counter", "Wall time spent in process_madvise.",
		       t->collapse_s);
	header(f, "hugecollapsed_collapsed_bytes_total", "counter", "Bytes collapsed into huge pages, by cgroup.");
	cgroup_series(f, e->cg_bytes, e->ncg_bytes);
	header(f, "hugecollapsed_ranges_total", "counter", "2 MiB ranges by scan result and by collapse outcome.");
	for (int r = 0; r < SCAN_NR_RESULTS; r++)
		fprintf(f, "hugecollapsed_ranges_total{result=\"%s\"} %llu\n", scan_result_name(r),
			(unsigned long long)t->results[r]);
	for (int o = 0; o < COLLAPSE_NR_OUTCOMES; o++)
		fprintf(f, "hugecollapsed_ranges_total{result=\"%s\"} %llu\n", collapse_outcome_name(o),
			(unsigned long long)t->outcomes[o]);
	scalar_u64(f, "hugecollapsed_stale_candidates_total", "counter",
		   "Remembered ranges a rescan no longer found candidates (cold, lazy-free, emptied, unmapped, huge).",
		   t->stale_dropped);
	scalar_u64(f, "hugecollapsed_processes_scanned_total", "counter",
		   "Processes whose smaps and pagemap were read.", t->procs_scanned);
	scalar_u64(f, "hugecollapsed_processes_unchanged_total", "counter",
		   "Processes skipped at the cost of one stat read because nothing changed.", t->procs_unchanged);
	scalar_u64(f, "hugecollapsed_processes_active", "gauge", "Processes active within idle_after_s, last pass.",
		   e->last.procs_active);
	header(f, "hugecollapsed_khugepaged_mode", "gauge", "The khugepaged mode in force (1 for the current one).");
	for (int m = KHUGEPAGED_KEEP; m <= KHUGEPAGED_OFF; m++)
		fprintf(f, "hugecollapsed_khugepaged_mode{mode=\"%s\"} %d\n", khugepaged_mode_name(m), m == (int)mode);
	scalar_u64(f, "hugecollapsed_backing_off", "gauge",
		   "1 while some process's ranges wait after it got no huge page (ENOMEM); the others go on.",
		   e->last.backing_off);
	scalar_u64(f, "hugecollapsed_processes_backing_off", "gauge",
		   "Processes whose ranges wait after ENOMEM (each backs off alone, bounded).",
		   e->last.procs_backing_off);
	scalar_u64(f, "hugecollapsed_memcg_gate_failed", "gauge",
		   "1 while the memory cgroup mounts cannot be read: every collapse is held back (fail closed).",
		   memcg_gate_error(e) != 0);
	scalar_u64(f, "hugecollapsed_memory_pressure_paused", "gauge",
		   "1 while collapsing waits for host memory pressure to pass (PSI memory or the zone watermarks).",
		   e->pressure.paused);
	scalar_u64(f, "hugecollapsed_memory_pressure_pauses_total", "counter",
		   "Times collapsing paused for host memory pressure.", e->pressure.pauses);
	header(f, "hugecollapsed_memory_pressure_check_seconds_total", "counter",
	       "Time spent reading /proc/pressure/memory and /proc/zoneinfo.");
	fprintf(f, "hugecollapsed_memory_pressure_check_seconds_total %.6f\n", e->pressure.read_s);
	metrics_format_observe(f, e);
	coverage_metrics_format(f, e); /* coverage_metrics.h */
	metrics_format_latency(f, e);
	clock_gettime(CLOCK_REALTIME, &now);
	scalar_u64(f, "hugecollapsed_last_pass_timestamp_seconds", "gauge", "When the last pass ended.",
		   (unsigned long long)now.tv_sec);
}

/* The temporary file is always a new regular file of ours. O_EXCL opens
 * nothing that is already there: a FIFO planted at the name would block the
 * daemon, a symlink would redirect its write (O_NOFOLLOW, O_NONBLOCK: the
 * same, twice over). Whatever is there (a crashed daemon's file with our
 * PID, or something planted) is unlinked, which removes a symlink and not
 * its target, and the open tried once more; a directory there is an error. */
static int open_temp(const char *tmp)
{
	const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
	int fd = open(tmp, flags, 0644);

	if (fd < 0 && errno == EEXIST) {
		if (unlink(tmp) != 0 && errno != ENOENT)
			return -errno;
		fd = open(tmp, flags, 0644);
	}
	return fd < 0 ? -errno : fd;
}

int metrics_write(const char *path, const struct engine *e, enum khugepaged_mode mode)
{
	char tmp[4096];
	FILE *f;
	int fd, err = 0;

	if (!path || !*path)
		return 0;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open_temp(tmp);
	if (fd < 0)
		return fd;
	/* 0644 whatever the umask (the unit's is 0077): node_exporter reads it
	 * as another user. */
	if (fchmod(fd, 0644) != 0) {
		err = -errno;
		close(fd);
		unlink(tmp);
		return err;
	}
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		unlink(tmp);
		return err;
	}
	metrics_format(f, e, mode);
	if (fflush(f) != 0 || fsync(fd) != 0)
		err = -errno;
	if (fclose(f) != 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) != 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

/* Looks up "name value" or "name{labels} value"; returns the value or -1. */
static double value_of(const char *text, const char *series)
{
	size_t l = strlen(series);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, series, l) && p[l] == ' ')
			return strtod(p + l + 1, NULL);
	return -1;
}

int metrics_print_status(FILE *out, const char *path)
{
	static const char *const results[] = {
	    "candidate",   "pmd_mapped", "no_pte_table", "exceed_none_pte", "page_lazyfree", "cold",  "ineligible",
	    "memcg_limit", "collapsed",  "eagain",       "enomem",          "unmapped",      "stale", "einval"};
	char buf[65536], series[128];
	double passes, bytes = 0;
	struct stat st;
	const char *mode = "?";
	ssize_t n;
	int fd;

	if (!path || !*path) {
		fprintf(stderr, "hugecollapsed: no metrics_file is configured\n");
		return -ENOENT;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "hugecollapsed: %s: %s (is the daemon running?)\n", path, strerror(errno));
		return -errno;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	fstat(fd, &st);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = 0;
	passes = value_of(buf, "hugecollapsed_passes_total");
	if (passes < 0) {
		fprintf(stderr, "hugecollapsed: %s is not a hugecollapsed metrics file\n", path);
		return -EINVAL;
	}
	for (const char *p = strstr(buf, "hugecollapsed_collapsed_bytes_total{"); p;
	     p = strstr(p + 1, "hugecollapsed_collapsed_bytes_total{")) {
		const char *v = strstr(p, "} ");
		if (v)
			bytes += strtod(v + 2, NULL);
	}
	for (int m = KHUGEPAGED_KEEP; m <= KHUGEPAGED_OFF; m++) {
		snprintf(series, sizeof(series), "hugecollapsed_khugepaged_mode{mode=\"%s\"}", khugepaged_mode_name(m));
		if (value_of(buf, series) == 1)
			mode = khugepaged_mode_name(m);
	}
	fprintf(out, "hugecollapsed: %.0f passes, %.1f MiB collapsed, khugepaged %s\n", passes, bytes / 1048576.0,
		mode);
	fprintf(out, "  metrics file %s, updated %lld s ago\n", path, (long long)(time(NULL) - st.st_mtime));
	fprintf(out, "  time: scan %.3f s, collapse %.3f s\n", value_of(buf, "hugecollapsed_scan_seconds_total"),
		value_of(buf, "hugecollapsed_collapse_seconds_total"));
	fprintf(out, "  processes: %.0f scans, %.0f skipped unchanged, %.0f active now\n",
		value_of(buf, "hugecollapsed_processes_scanned_total"),
		value_of(buf, "hugecollapsed_processes_unchanged_total"),
		value_of(buf, "hugecollapsed_processes_active"));
	fprintf(out, "  ranges:");
	for (size_t i = 0; i < sizeof(results) / sizeof(results[0]); i++) {
		snprintf(series, sizeof(series), "hugecollapsed_ranges_total{result=\"%s\"}", results[i]);
		fprintf(out, " %s %.0f", results[i], value_of(buf, series));
	}
	fputc('\n', out);
	return 0;
}
