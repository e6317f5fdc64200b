/* SPDX-License-Identifier: GPL-2.0-or-later */
/* status: `hugecollapsed --status` tables and `--status --json`, read back
 * from the metrics file the daemon writes (coverage_metrics.h names the
 * series). The parser is pure and bounded: the file is the daemon's, but
 * whoever can write its directory can put anything there.
 *
 * Per cgroup group: coverage %, its target, anon + shmem bytes, collapsed,
 * pending and skipped bytes. Then the top processes by pending bytes. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "producer.h"

#define PROM_MAX_LABELS 4
#define PROM_NAME_MAX   96
#define PROM_VALUE_MAX  512

/* One sample line: name{k="v",...} value. Label values unescaped. */
struct prom_sample {
	char name[PROM_NAME_MAX];
	size_t nlabels;
	struct {
		char key[16];
		char value[PROM_VALUE_MAX];
	} label[PROM_MAX_LABELS];
	double value;
};

/* Parses one line (no newline) of the text format. Returns 0, -ENOENT for
 * a comment or an empty line, -EINVAL for anything malformed (a name,
 * label or value too long, too many labels, a bad escape, no value). */
int parse_prom_sample_buf(const char *line, size_t len, struct prom_sample *s);

/* The value of label key in s, or NULL. */
const char *prom_label(const struct prom_sample *s, const char *key);

#define STATUS_MAX_RESULTS 24

struct status_cgroup {
	char cgroup[PROM_VALUE_MAX];
	double anon, anon_huge, shmem, shmem_huge, pending, collapsed, skipped;
	double coverage, target; /* ratios; target < 0: none */
	struct {
		char result[32];
		double bytes;
	} skip[STATUS_MAX_RESULTS]; /* skipped bytes by scan result */
	size_t nskip;
};

struct status_process {
	unsigned rank;
	int pid;
	char comm[PROM_VALUE_MAX];
	char cgroup[PROM_VALUE_MAX];
	double pending, coverage;
};

#define STATUS_MAX_CGROUPS   2048
#define STATUS_MAX_PROCESSES 16
#define STATUS_MAX_COUNTS    32 /* scan results, collapse outcomes: names as the file has them */

/* A counter by name (scan result or collapse outcome), in file order. */
struct status_count {
	char name[32];
	double value;
};

struct status {
	/* NAN where the file has no (finite) value: printed as "-". */
	double passes, collapsed_bytes, scan_s, collapse_s, last_pass, backing_off;
	double observe_only, would_collapse_bytes, would_collapse_processes; /* mode = observe */
	double procs_scanned, procs_unchanged, procs_active;
	const char *khugepaged; /* static string, "?" if unknown */
	struct status_count result[STATUS_MAX_COUNTS], outcome[STATUS_MAX_COUNTS];
	size_t nresult, noutcome;
	struct producer daemon; /* hugecollapsed_daemon_info; pid 0: none */
	struct status_cgroup *cg;
	size_t ncg;
	struct status_process proc[STATUS_MAX_PROCESSES];
	size_t nproc;
};

/* Fills st from the text of a metrics file: the one parser of --status,
 * its summary, tables and JSON. Malformed lines (garbage, a line cut by a
 * truncated file) are skipped, values that are not finite (NaN, ±Inf)
 * read as absent; at most STATUS_MAX_CGROUPS groups, STATUS_MAX_PROCESSES
 * processes and STATUS_MAX_COUNTS results and outcomes are kept. Returns
 * 0, -EINVAL if it is not a hugecollapsed metrics file (no finite
 * hugecollapsed_passes_total), -ENOMEM. */
int parse_status_buf(const char *buf, size_t len, struct status *st);
void status_free(struct status *st);

/* The summary lines: passes, bytes, the daemon (running: state of
 * producer_check()), the file's age (age_s: since it was written; now:
 * the time, for the age of the last pass), time, processes, the scan
 * results and the collapse outcomes. */
void status_print_summary(FILE *out, const struct status *st, const char *path, enum producer_state daemon,
			  double age_s, double now);
/* The cgroup and process tables of st. */
void status_print_tables(FILE *out, const struct status *st);
/* Everything in st as one JSON object; age_s: seconds since the file was
 * written. */
void status_print_json(FILE *out, const struct status *st, const char *path, enum producer_state daemon, double age_s,
		       double now);

/* Reads path (the daemon's metrics file), asks proc_root ("/proc") whether
 * its writer runs, and prints the summary and the tables, or the JSON
 * object. Returns 0 or -errno, after a message on stderr. */
int status_run_at(FILE *out, const char *path, bool json, const char *proc_root);
/* status_run_at() with the real /proc. */
int status_run(FILE *out, const char *path, bool json);
