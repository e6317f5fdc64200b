/* SPDX-License-Identifier: GPL-2.0-or-later */
/* metrics: the Prometheus text file for node_exporter's textfile collector,
 * and the --status summary read back from it. */
#pragma once
#include <stdbool.h>
#include <stdio.h>

#include "config.h"
#include "engine.h"

/* The daemon's reloads (SIGHUP), which the engine does not know of: set by
 * the service after each one, written by metrics_format(). */
struct metrics_reload {
	unsigned long long total;    /* reloads asked for */
	unsigned long long failures; /* of which the file did not load */
	bool last_ok;                /* the last one loaded (true before any) */
};
void metrics_set_reload(const struct metrics_reload *r);

/* Writes the metrics text of everything since start to f. Label values
 * are escaped (\\ \" \n) and valid UTF-8: each byte of a cgroup name that
 * starts no valid sequence reads U+FFFD, and names that become equal are
 * one series with their sum. The caller forgets removed cgroups first
 * (cgroup_bytes_prune() in cgroup2.h). */
void metrics_format(FILE *f, const struct engine *e, enum khugepaged_mode mode);

/* Writes path atomically (temporary file PATH.tmp.PID in the same
 * directory, fsync, rename), mode 0644. The temporary file is created
 * O_EXCL|O_NOFOLLOW|O_NONBLOCK: whatever is found at its name (a FIFO, a
 * symlink, a stale file) is unlinked, never opened, and the open tried
 * once more. Returns 0 or -errno; "" means no metrics file. */
int metrics_write(const char *path, const struct engine *e, enum khugepaged_mode mode);

/* Writes s as a label value (no quotes): escaped and UTF-8, as above. */
void metrics_label_value(FILE *f, const char *s);

/* Prints a readable summary of a metrics file. Returns 0 or -errno. */
int metrics_print_status(FILE *out, const char *path);
