/* SPDX-License-Identifier: GPL-2.0-or-later */
/* coverage: how much of each cgroup's anonymous and shmem memory is
 * PMD-mapped, what waits for the budget and what was skipped, in the spirit
 * of the kernel's tools/mm/thpmaps. Pure aggregation of what the engine's
 * scans saw, plus the memory.stat parser for cgroups where a memory
 * controller can say it for the whole cgroup.
 *
 * Groups are disjoint, so sums over them mean something: a process counts
 * for the cgroup of the policy file that governs it (the longest matching
 * [cgroup] path of cgroup.d/), or else for its own cgroup. Every policy
 * group is kept; of the others, top_n chosen by size (anon + shmem bytes)
 * by series_keep_select(), and the rest are summed into one group named
 * "other". The cardinality of the metrics is then at most (policy files +
 * top_n + 1); series_keep.h says how the choice stays stable. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memcg.h" /* cgroup_controllers_have() */
#include "scan_result.h"
#include "thp_usage.h"

struct vma_list;
struct engine_stats;
struct config;
struct series_keep;

/* PMD-mapped share of anon + shmem, 0..1 (0 when there is none). */
double thp_usage_ratio(const struct thp_usage *u);

/* Parses memory.stat text into u (overwritten). cgroup v2 keys: anon,
 * anon_thp, shmem, shmem_thp. cgroup v1: the hierarchical total_rss,
 * total_rss_huge, total_shmem (v1 counts no shmem THP: shmem_huge stays 0);
 * v2 keys win when both appear. Values are bytes; lines that are not
 * "KEY DIGITS" are ignored, a value that overflows is an error. Returns 0,
 * -ENOENT (none of the keys), -EINVAL (a known key with a bad value); u is
 * written only on success. Pure.
 *   anon 1048576
 *   anon_thp 0 */
int parse_memory_stat_buf(const char *buf, size_t len, struct thp_usage *u);

/* Reads DIR/CGROUP/memory.stat relative to the directory fd of a cgroup
 * mount (cgroup ".." components are refused). Returns 0 or -errno. */
int read_memory_stat_at(int mount_fd, const char *cgroup, struct thp_usage *u);

enum coverage_source {
	COVERAGE_SMAPS,       /* summed from the smaps of scanned processes */
	COVERAGE_MEMORY_STAT, /* the cgroup's memory.stat */
};

struct cgroup_coverage {
	char *cgroup;        /* a cgroup path, or "other" */
	bool policy;         /* a policy file governs it */
	unsigned target_pct; /* its coverage_target_pct (0: none) */
	enum coverage_source source;
	struct thp_usage usage;
	uint64_t pending;                  /* bytes of candidates waiting for budget */
	uint64_t collapsed;                /* bytes collapsed since start */
	uint64_t skipped[SCAN_NR_RESULTS]; /* bytes by result, last scans; [candidate] and
					    * [pmd_mapped] stay 0 (not skipped) */
	unsigned processes;                /* scanned processes in it */
};

struct process_coverage {
	pid_t pid;
	char comm[64];
	char *cgroup; /* its group's label (coverage_label()) */
	struct thp_usage usage;
	uint64_t pending;
};

struct coverage {
	struct cgroup_coverage *cg;
	size_t ncg;
	struct process_coverage *top; /* by pending bytes, largest first */
	size_t ntop;
};

#define COVERAGE_TOP_PROCESSES 10
#define COVERAGE_TOP_DEFAULT   10 /* coverage_top_cgroups */

/* Builds c from the engine's per-process state (e->cfg NULL: no policy
 * files) (usage from the last scan
 * of each process, remembered candidates, results) and its collapsed bytes
 * per cgroup. top_n: groups without a policy file kept by size; keep: the
 * choice of the last build, updated (NULL: the top_n largest now). The top
 * processes' cgroup is their group's label. Returns 0 or -ENOMEM (c is
 * then empty). */
int coverage_build(const struct engine_stats *e, unsigned top_n, struct series_keep *keep, struct coverage *c);

/* The label (a group of c: its policy path, its own cgroup, or "other")
 * that cgroup counts for; points into c, or is "other". */
const char *coverage_label(const struct coverage *c, const struct config *cfg, const char *cgroup);

/* Replaces the usage of each named group by its memory.stat under the mount
 * at mount_fd, where there is one (groups whose file cannot be read keep the
 * smaps sums). Returns the number of groups replaced. */
size_t coverage_use_memory_stat(struct coverage *c, int mount_fd);

void coverage_free(struct coverage *c);
