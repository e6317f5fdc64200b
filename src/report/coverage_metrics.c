/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Coverage series in the Prometheus text format. */
#include "coverage_metrics.h"

#include <stdint.h>
#include <string.h>

#include "config.h"
#include "metrics_label.h"
#include "procfs.h"
#include "scan_result.h"
#include "series_keep.h"

static void header(FILE *f, const char *name, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

static void cg_sample(FILE *f, const char *name, const struct cgroup_coverage *g)
{
	fprintf(f, "%s{cgroup=\"", name);
	metrics_label_value(f, g->cgroup);
	fputs("\"} ", f);
}

enum field { F_ANON, F_ANON_HUGE, F_SHMEM, F_SHMEM_HUGE, F_PENDING, F_COLLAPSED, F_NR };

static uint64_t field(const struct cgroup_coverage *g, enum field k)
{
	switch (k) {
	case F_ANON:
		return g->usage.anon;
	case F_ANON_HUGE:
		return g->usage.anon_huge;
	case F_SHMEM:
		return g->usage.shmem;
	case F_SHMEM_HUGE:
		return g->usage.shmem_huge;
	case F_PENDING:
		return g->pending;
	default:
		return g->collapsed;
	}
}

static void byte_gauges(FILE *f, const struct coverage *c)
{
	static const char *const names[F_NR][2] = {
	    {"hugecollapsed_cgroup_anon_bytes", "Anonymous memory (smaps Anonymous, or memory.stat anon)."},
	    {"hugecollapsed_cgroup_anon_huge_bytes", "Anonymous memory mapped by PMD (AnonHugePages, anon_thp)."},
	    {"hugecollapsed_cgroup_shmem_bytes", "Shared memory and tmpfs mapped (Rss of shmem mappings, shmem)."},
	    {"hugecollapsed_cgroup_shmem_huge_bytes", "Shared memory mapped by PMD (ShmemPmdMapped, shmem_thp)."},
	    {"hugecollapsed_cgroup_pending_bytes", "Candidate ranges waiting for the collapse budget."},
	    {"hugecollapsed_cgroup_collapsed_bytes",
	     "Bytes collapsed since the daemon started, by coverage group (the other group changes members)."},
	};

	for (int k = 0; k < F_NR; k++) {
		header(f, names[k][0], names[k][1]);
		for (size_t i = 0; i < c->ncg; i++) {
			cg_sample(f, names[k][0], &c->cg[i]);
			fprintf(f, "%llu\n", (unsigned long long)field(&c->cg[i], (enum field)k));
		}
	}
}

static void ratios(FILE *f, const struct coverage *c)
{
	header(f, "hugecollapsed_cgroup_thp_coverage_ratio",
	       "PMD-mapped share of anonymous and shared memory, 0 to 1, per cgroup with a policy file, the largest "
	       "others and other.");
	for (size_t i = 0; i < c->ncg; i++) {
		cg_sample(f, "hugecollapsed_cgroup_thp_coverage_ratio", &c->cg[i]);
		fprintf(f, "%.6f\n", thp_usage_ratio(&c->cg[i].usage));
	}
	header(f, "hugecollapsed_cgroup_coverage_target_ratio",
	       "coverage_target_pct of a policy file, 0 to 1 (only where it is set).");
	for (size_t i = 0; i < c->ncg; i++)
		if (c->cg[i].policy && c->cg[i].target_pct) {
			cg_sample(f, "hugecollapsed_cgroup_coverage_target_ratio", &c->cg[i]);
			fprintf(f, "%.2f\n", c->cg[i].target_pct / 100.0);
		}
}

static void skipped(FILE *f, const struct coverage *c)
{
	header(f, "hugecollapsed_cgroup_skipped_bytes",
	       "2 MiB blocks the last scans skipped, in bytes of address space (not all resident: ineligible "
	       "counts whole mappings), by scan result.");
	for (size_t i = 0; i < c->ncg; i++)
		for (int r = 0; r < SCAN_NR_RESULTS; r++) {
			if (!c->cg[i].skipped[r])
				continue;
			fputs("hugecollapsed_cgroup_skipped_bytes{cgroup=\"", f);
			metrics_label_value(f, c->cg[i].cgroup);
			fprintf(f, "\",result=\"%s\"} %llu\n", scan_result_name(r),
				(unsigned long long)c->cg[i].skipped[r]);
		}
}

/* Labelled by rank and group only: a pid or comm label would make a new
 * series for every process that ever ranks (any user can start them), so
 * the pid is a value of its own series. */
static void top_sample(FILE *f, const char *name, size_t rank, const struct process_coverage *p)
{
	fprintf(f, "%s{rank=\"%zu\",cgroup=\"", name, rank);
	metrics_label_value(f, p->cgroup);
	fputs("\"} ", f);
}

static void top_processes(FILE *f, const struct coverage *c)
{
	header(f, "hugecollapsed_top_process_pending_bytes",
	       "The processes with the most candidate bytes waiting, largest first (at most 10), by rank and group.");
	for (size_t i = 0; i < c->ntop; i++) {
		top_sample(f, "hugecollapsed_top_process_pending_bytes", i + 1, &c->top[i]);
		fprintf(f, "%llu\n", (unsigned long long)c->top[i].pending);
	}
	header(f, "hugecollapsed_top_process_thp_coverage_ratio",
	       "PMD-mapped share of the anonymous and shared memory of those processes.");
	for (size_t i = 0; i < c->ntop; i++) {
		top_sample(f, "hugecollapsed_top_process_thp_coverage_ratio", i + 1, &c->top[i]);
		fprintf(f, "%.6f\n", thp_usage_ratio(&c->top[i].usage));
	}
	header(f, "hugecollapsed_top_process_pid", "The pid of the process at that rank.");
	for (size_t i = 0; i < c->ntop; i++) {
		top_sample(f, "hugecollapsed_top_process_pid", i + 1, &c->top[i]);
		fprintf(f, "%d\n", (int)c->top[i].pid);
	}
}

void coverage_metrics_write(FILE *f, const struct coverage *c)
{
	byte_gauges(f, c);
	ratios(f, c);
	skipped(f, c);
	top_processes(f, c);
}

/* The daemon's one cgroup v2 mount with a memory controller, or -1. */
static int memory_stat_fd = -1;

bool coverage_metrics_memory_stat(int mount_fd, const char *root)
{
	char buf[512];
	ssize_t n;

	memory_stat_fd = -1;
	if (mount_fd < 0 || !root || strcmp(root, "/") != 0)
		return false;
	n = read_small_file_at(mount_fd, "cgroup.controllers", buf, sizeof(buf));
	if (n > 0 && cgroup_controllers_have(buf, (size_t)n, "memory"))
		memory_stat_fd = mount_fd;
	return memory_stat_fd >= 0;
}

int coverage_metrics_build(const struct engine_stats *e, struct series_keep *keep, struct coverage *c)
{
	int r = coverage_build(e, e->cfg ? e->cfg->coverage_top_cgroups : COVERAGE_TOP_DEFAULT, keep, c);

	if (r == 0 && memory_stat_fd >= 0)
		coverage_use_memory_stat(c, memory_stat_fd);
	return r;
}
