/* SPDX-License-Identifier: GPL-2.0-or-later */
/* report_table: the --once --dry-run report as a reader wants it: one table
 * row per process that has something to do, and its candidate blocks merged
 * into address ranges. Output only; no decisions. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine_stats.h"

/* [start, end) of adjacent 2 MiB candidate blocks. */
struct block_range {
	uint64_t start, end;
};

/* Sorts addrs[0..n) and merges blocks that touch into ranges, written to
 * out (room for n). Duplicates count once. Returns the number of ranges.
 * Pure. */
size_t merge_block_ranges(uint64_t *addrs, size_t n, struct block_range *out);

/* Candidate blocks of process idx (v->procs[idx]) in the last order, by
 * address; *n their count. NULL with *n = 0 if none (or no memory). The
 * caller frees. */
uint64_t *report_candidate_addrs(const struct engine_view *v, size_t idx, size_t *n);

/* The table (PID, command, RSS, huge, candidates, coverage before and
 * after, cgroup) in collapse order of each process's first candidate, its
 * merged ranges (at most max_ranges per process, then a count), and one
 * line for the processes with nothing to do. */
void report_table(FILE *f, const struct engine_view *v, size_t max_ranges);
