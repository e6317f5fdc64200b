/* SPDX-License-Identifier: GPL-2.0-or-later */
/* coverage_metrics: the coverage series of the metrics file (see
 * coverage.h for the groups and their bounded number), and the names that
 * --status and the example alerting rules read back.
 *
 *   hugecollapsed_cgroup_{anon,anon_huge,shmem,shmem_huge}_bytes{cgroup}
 *   hugecollapsed_cgroup_thp_coverage_ratio{cgroup}          0..1
 *   hugecollapsed_cgroup_coverage_target_ratio{cgroup}       policy files with a target
 *   hugecollapsed_cgroup_pending_bytes{cgroup}
 *   hugecollapsed_cgroup_collapsed_bytes{cgroup}
 *   hugecollapsed_cgroup_skipped_bytes{cgroup,result}        results that skipped bytes
 *   hugecollapsed_top_process_pending_bytes{rank,cgroup}     cgroup: the group's label
 *   hugecollapsed_top_process_thp_coverage_ratio{rank,cgroup}
 *   hugecollapsed_top_process_pid{rank,cgroup}               the pid, as a value
 */
#pragma once
#include <stdbool.h>
#include <stdio.h>

#include "coverage.h"
#include "engine_stats.h"

struct series_keep;

/* Builds the coverage of e (e->cfg->coverage_top_cgroups groups chosen with
 * keep, series_keep.h; NULL: no memory), from memory.stat where
 * coverage_metrics_memory_stat() said so. Returns 0 or -ENOMEM. */
int coverage_metrics_build(const struct engine_stats *e, struct series_keep *keep, struct coverage *c);

/* Where the cgroup v2 mount at mount_fd (its root in the hierarchy: root)
 * has the memory controller enabled, later coverage_metrics_build() calls
 * read each group's memory.stat through it instead of summing smaps (the
 * fd must stay open). Anything else (no memory controller, a mount of a
 * subtree) keeps the smaps sums. Returns true if memory.stat will be used. */
bool coverage_metrics_memory_stat(int mount_fd, const char *root);

/* The series of an already built coverage. */
void coverage_metrics_write(FILE *f, const struct coverage *c);
