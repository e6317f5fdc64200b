/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Prometheus text exposition format, written atomically. */
#include "metrics.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collapse.h"
#include "coverage.h"
#include "coverage_metrics.h"
#include "histogram.h"
#include "metrics_label.h"
#include "producer.h"
#include "scan_result.h"
#include "series_keep.h"

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

/* The entry of name in *a (created at 0 if new), or NULL (no memory). */
static struct cgroup_bytes *entry(struct cgroup_bytes **a, size_t *n, const char *name)
{
	struct cgroup_bytes *g;

	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*a)[i].cgroup, name))
			return &(*a)[i];
	g = realloc(*a, (*n + 1) * sizeof(*g));
	if (!g)
		return NULL;
	*a = g;
	g[*n].cgroup = strdup(name);
	if (!g[*n].cgroup)
		return NULL;
	g[*n].bytes = 0;
	return &g[(*n)++];
}

/* Drops the entries of *a for which keep() is false. */
static void drop_unless(struct cgroup_bytes *a, size_t *n, bool (*keep)(const char *, const void *), const void *arg)
{
	size_t k = 0;

	for (size_t i = 0; i < *n; i++) {
		if (keep(a[i].cgroup, arg))
			a[k++] = a[i];
		else
			free(a[i].cgroup);
	}
	*n = k;
}

static bool is_group(const char *name, const void *arg)
{
	const struct coverage *c = arg;

	for (size_t i = 0; i < c->ncg; i++)
		if (!strcmp(c->cg[i].cgroup, name))
			return true;
	return false;
}

/* The index in m->seen of cgroup, the i-th of e->cg_bytes, or SIZE_MAX.
 * Both are in the same order (cg_bytes only appends and prunes in
 * order), so the first guess is right but after a change: O(cgroups). */
static size_t seen_at(const struct metrics_memory *m, size_t i, const char *cgroup)
{
	if (i < m->nseen && m->seen[i].cgroup && !strcmp(m->seen[i].cgroup, cgroup))
		return i;
	for (size_t j = 0; j < m->nseen; j++)
		if (m->seen[j].cgroup && !strcmp(m->seen[j].cgroup, cgroup))
			return j;
	return SIZE_MAX;
}

/* Adds what each cgroup collapsed since the last write to the counter of
 * the group it counts for now, so that every series only grows even when a
 * cgroup moves between its own series and "other" (series_keep.h). A
 * cgroup no longer in e->cg_bytes (removed) is forgotten: one of the same
 * name later starts from 0. */
static int count_collapsed(struct metrics_memory *m, const struct engine_stats *e, const struct coverage *c)
{
	struct cgroup_bytes *seen = calloc(e->ncg_bytes ? e->ncg_bytes : 1, sizeof(*seen));

	if (!seen)
		return -ENOMEM;
	for (size_t i = 0; i < e->ncg_bytes; i++) {
		const struct cgroup_bytes *cg = &e->cg_bytes[i];
		size_t j = seen_at(m, i, cg->cgroup);
		struct cgroup_bytes *ctr = entry(&m->counted, &m->ncounted, coverage_label(c, e->cfg, cg->cgroup));
		uint64_t prev = j == SIZE_MAX ? 0 : m->seen[j].bytes;

		if (j != SIZE_MAX) { /* the name moves to the new array */
			seen[i].cgroup = m->seen[j].cgroup;
			m->seen[j].cgroup = NULL;
		} else
			seen[i].cgroup = strdup(cg->cgroup);
		/* No memory: not counted now, counted from prev when there is. */
		seen[i].bytes = prev;
		if (!seen[i].cgroup || !ctr)
			continue;
		seen[i].bytes = cg->bytes;
		ctr->bytes += cg->bytes >= prev ? cg->bytes - prev : cg->bytes;
	}
	for (size_t j = 0; j < m->nseen; j++)
		free(m->seen[j].cgroup);
	free(m->seen);
	m->seen = seen;
	m->nseen = e->ncg_bytes;
	drop_unless(m->counted, &m->ncounted, is_group, c);
	return 0;
}

/* One series per group of c: the same labels as the coverage series. */
static void collapsed_series(FILE *f, const struct engine_stats *e, const struct coverage *c, struct metrics_memory *m)
{
	bool counted = m && count_collapsed(m, e, c) == 0;

	for (size_t i = 0; i < c->ncg; i++) {
		uint64_t v = counted ? 0 : c->cg[i].collapsed; /* without a memory: the sum now */

		for (size_t k = 0; counted && k < m->ncounted; k++)
			if (!strcmp(m->counted[k].cgroup, c->cg[i].cgroup))
				v = m->counted[k].bytes;
		fputs("hugecollapsed_collapsed_bytes_total{cgroup=\"", f);
		metrics_label_value(f, c->cg[i].cgroup);
		fprintf(f, "\"} %llu\n", (unsigned long long)v);
	}
}

void metrics_memory_free(struct metrics_memory *m)
{
	for (size_t i = 0; i < m->nseen; i++)
		free(m->seen[i].cgroup);
	for (size_t i = 0; i < m->ncounted; i++)
		free(m->counted[i].cgroup);
	free(m->seen);
	free(m->counted);
	series_keep_free(&m->keep);
	memset(m, 0, sizeof(*m));
}

/* The two histograms (histogram.c): what a target and the host feel. */
static void metrics_format_latency(FILE *f, const struct engine_stats *e)
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
static void metrics_format_observe(FILE *f, const struct engine_stats *e)
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
static struct producer producer; /* pid 0: not set, no series */

void metrics_set_producer(const struct producer *p)
{
	producer = *p;
}

void metrics_set_reload(const struct metrics_reload *r)
{
	reload = *r;
}

void metrics_format(FILE *f, const struct engine_stats *e, enum khugepaged_mode mode, struct metrics_memory *mem)
{
	const struct pass_stats *t = &e->total;
	struct timespec now;
	struct coverage c;
	/* Built once: its groups label the collapsed bytes too. */
	bool have_coverage = coverage_metrics_build(e, mem ? &mem->keep : NULL, &c) == 0;

	/* The version the package, --version and this series agree on
	 * (CMake's project(VERSION), checked against debian/changelog by lint). */
	header(f, "hugecollapsed_build_info", "gauge", "Always 1; the version of the running daemon as a label.");
	fprintf(f, "hugecollapsed_build_info{version=\"%s\"} 1\n", HC_VERSION);
	/* Who writes the file: --status tells a running daemon from a file
	 * left behind (producer.h). One series, new only when the daemon
	 * restarts. */
	if (producer.pid > 0) {
		header(f, "hugecollapsed_daemon_info", "gauge",
		       "Always 1; the writing daemon's identity (boot_id, pid, start time in clock ticks since boot).");
		fprintf(f, "hugecollapsed_daemon_info{boot_id=\"%s\",pid=\"%d\",start_ticks=\"%llu\"} 1\n",
			producer.boot_id, (int)producer.pid, (unsigned long long)producer.start_ticks);
	}
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
	scalar_u64(f, "hugecollapsed_proc_listings_total", "counter",
		   "Listings of /proc for new and exited processes: every 5 s without perf task records, else once "
		   "per full_rescan_s and after lost records.",
		   e->listings);
	scalar_u64(f, "hugecollapsed_task_births_total", "counter",
		   "New processes learned from perf fork records between listings, each read at the next pass.",
		   e->task_births);
	scalar_u64(f, "hugecollapsed_doorbell_wakeups_total", "counter",
		   "Back-to-back passes woken by the page-fault doorbell (scan_interval_ms = 0).", e->doorbell_wakeups);
	scalar_u64(f, "hugecollapsed_news_passes_total", "counter",
		   "Passes run before the timer for news: a process that faulted in new memory, or one that opted in "
		   "with MADV_HUGEPAGE (scan_interval_ms > 0).",
		   e->news_passes);
	scalar_seconds(f, "hugecollapsed_scan_seconds_total", "counter", "Wall time spent sampling and scanning.",
		       t->scan_s);
	scalar_seconds(f, "hugecollapsed_collapse_seconds_total", "counter", "Wall time spent in process_madvise.",
		       t->collapse_s);
	header(f, "hugecollapsed_collapsed_bytes_total", "counter",
	       "Bytes collapsed into huge pages, by group (a policy file's cgroup, the largest others, other).");
	if (have_coverage)
		collapsed_series(f, e, &c, mem);
	/* Two families, so that each sums to something: every block a scan
	 * classified, and every block picked for a collapse call. */
	header(f, "hugecollapsed_scan_ranges_total", "counter",
	       "2 MiB ranges classified by the scans, by scan result (a range scanned again counts again).");
	for (int r = 0; r < SCAN_NR_RESULTS; r++)
		fprintf(f, "hugecollapsed_scan_ranges_total{result=\"%s\"} %llu\n", scan_result_name(r),
			(unsigned long long)t->results[r]);
	header(f, "hugecollapsed_collapse_ranges_total", "counter",
	       "2 MiB ranges picked for process_madvise(MADV_COLLAPSE), by outcome (not_tried and stale were "
	       "not submitted).");
	for (int o = 0; o < COLLAPSE_NR_OUTCOMES; o++)
		fprintf(f, "hugecollapsed_collapse_ranges_total{outcome=\"%s\"} %llu\n", collapse_outcome_name(o),
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
		   e->memcg_gate_error != 0);
	scalar_u64(f, "hugecollapsed_memory_pressure_paused", "gauge",
		   "1 while collapsing waits for host memory pressure to pass (PSI memory or the zone watermarks).",
		   e->pressure_paused);
	scalar_u64(f, "hugecollapsed_memory_pressure_pauses_total", "counter",
		   "Times collapsing paused for host memory pressure.", e->pressure_pauses);
	header(f, "hugecollapsed_memory_pressure_check_seconds_total", "counter",
	       "Time spent reading /proc/pressure/memory and /proc/zoneinfo.");
	fprintf(f, "hugecollapsed_memory_pressure_check_seconds_total %.6f\n", e->pressure_read_s);
	metrics_format_observe(f, e);
	if (have_coverage) {
		coverage_metrics_write(f, &c); /* coverage_metrics.h */
		coverage_free(&c);
	}
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

static bool is_regular(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Puts tmp at path. rename() over an existing file costs 0.5-1.4 ms on
 * ext4 here (the metrics file's usual home): a replace-via-rename starts
 * writeback of the new file (auto_da_alloc), every write. Exchanging the
 * two names and unlinking the old file is the same to a reader (the name
 * always holds a whole file, an open one stays whole) and costs ~30 us;
 * the dirty pages of a file replaced within seconds never reach the disk.
 * Only a regular file is exchanged: anything else at path (raced in, too)
 * is put back, and rename() fails as it should (a directory: EISDIR). */
static int replace_file(const char *tmp, const char *path)
{
	if (is_regular(path) && renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) == 0) {
		if (is_regular(tmp)) {
			/* Failing, it leaves the old file at tmp: the next
			 * write's open_temp() removes it. */
			unlink(tmp);
			return 0;
		}
		if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) != 0)
			return -errno;
	}
	/* No file there yet, or no exchange on this filesystem (EINVAL). */
	return rename(tmp, path) == 0 ? 0 : -errno;
}

/* stdio's buffer for metrics_write(): larger than the whole file. */
#define METRICS_WRITE_BUF (64 * 1024)

int metrics_write(const char *path, const struct engine_stats *e, enum khugepaged_mode mode, struct metrics_memory *m)
{
	char tmp[4096], *buf;
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
	/* One write(2) for the whole file (~13 KiB), not one per 4 KiB:
	 * each call into the kernel costs 10-40 us cold in a guest. glibc
	 * takes a size only with a buffer. */
	buf = malloc(METRICS_WRITE_BUF);
	if (buf)
		setvbuf(f, buf, _IOFBF, METRICS_WRITE_BUF);
	metrics_format(f, e, mode, m);
	/* No fsync (73 us and a disk flush a pass): the file is a snapshot
	 * the next write replaces, and its readers (node_exporter, --status)
	 * read the page cache. Readers never see a partial file
	 * (replace_file()); after a power failure it may be old or empty
	 * until the next write. */
	if (fflush(f) != 0)
		err = -errno;
	if (fclose(f) != 0 && !err)
		err = -errno;
	free(buf);
	if (!err)
		err = replace_file(tmp, path);
	if (err)
		unlink(tmp);
	return err;
}
