/* SPDX-License-Identifier: GPL-2.0-or-later */
/* metrics: the Prometheus text file for node_exporter's textfile collector,
 * read back by --status (status.h). */
#pragma once
#include <stdbool.h>
#include <stdio.h>

#include "config.h"
#include "engine_stats.h"
#include "series_keep.h"

/* The daemon's reloads (SIGHUP), which the engine does not know of: set by
 * the service after each one, written by metrics_format(). */
struct metrics_reload {
	unsigned long long total;    /* reloads asked for */
	unsigned long long failures; /* of which the file did not load */
	bool last_ok;                /* the last one loaded (true before any) */
};
void metrics_set_reload(const struct metrics_reload *r);

struct producer;
/* The daemon's identity (producer.h), set once at start: written as
 * hugecollapsed_daemon_info. Never set: no such series. */
void metrics_set_producer(const struct producer *p);

/* What the metrics writes remember from one to the next, so that the set
 * of per-group series is stable and their counters only grow: the groups
 * with their own series (series_keep.h), and the collapsed bytes counted
 * so far, per cgroup and per label. Zero-initialized; freed by
 * metrics_memory_free(). */
struct metrics_memory {
	struct series_keep keep;
	struct cgroup_bytes *seen; /* e->cg_bytes at the last write */
	size_t nseen;
	struct cgroup_bytes *counted; /* hugecollapsed_collapsed_bytes_total by label */
	size_t ncounted;
};
void metrics_memory_free(struct metrics_memory *m);

/* Writes the metrics text of everything since start to f. Label values
 * are escaped (\\ \" \n) and valid UTF-8: each byte of a cgroup name that
 * starts no valid sequence reads U+FFFD, and names that become equal are
 * one group. Per-group series (collapsed bytes, coverage) have the groups
 * of coverage_build(), chosen with m (NULL: no memory, the largest now,
 * and collapsed bytes as the sums now). The caller forgets removed cgroups
 * first (cgroup_bytes_prune() in cgroup2.h). */
void metrics_format(FILE *f, const struct engine_stats *e, enum khugepaged_mode mode, struct metrics_memory *m);

/* Writes path atomically (temporary file PATH.tmp.PID in the same
 * directory, then rename; no fsync), mode 0644. The temporary file is created
 * O_EXCL|O_NOFOLLOW|O_NONBLOCK: whatever is found at its name (a FIFO, a
 * symlink, a stale file) is unlinked, never opened, and the open tried
 * once more. Returns 0 or -errno; "" means no metrics file. */
int metrics_write(const char *path, const struct engine_stats *e, enum khugepaged_mode mode, struct metrics_memory *m);
