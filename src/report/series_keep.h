/* SPDX-License-Identifier: GPL-2.0-or-later */
/* series_keep: which groups have series of their own, the one cardinality
 * rule of every per-cgroup series (coverage.h builds the groups, metrics.c
 * and coverage_metrics.c write them).
 *
 * Every group with a policy file has its own series. Of the others, at
 * most top_n do; the rest are summed into one group, "other". So the
 * number of series per metric is at most policy files + top_n + 1, whatever
 * any user does (cgroups are cheap to make).
 *
 * With a memory (a struct series_keep kept from one metrics write to the
 * next) the set is also stable: a group that has its own series keeps it
 * while it is there (has a scanned process or collapsed bytes) and nothing
 * SERIES_KEEP_FACTOR times its size wants its place; a free place goes to
 * the largest group without one; "other", once written, stays. A series
 * thus never flaps in and out while nothing changes, and sizes that move a
 * little (two groups of about the same size) do not swap places. Without
 * a memory (NULL): the top_n largest now. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SERIES_KEEP_FACTOR 2 /* an outsider takes a place only when this many times larger */

struct series_keep {
	char **names; /* groups without a policy file that have their own series */
	size_t n;
	bool other; /* "other" has been written */
};

struct series_item {
	const char *name;
	bool policy;   /* a policy file governs it: always its own series */
	uint64_t size; /* anon + shmem bytes */
};

/* Sets own[i] for each of the n items (names distinct): true for its own
 * series, false for "other". k: the memory, updated (NULL: none). Returns
 * 0 or -ENOMEM (k is then unchanged, and own[] may hold the policy
 * groups only). */
int series_keep_select(struct series_keep *k, unsigned top_n, const struct series_item *it, size_t n, bool *own);

void series_keep_free(struct series_keep *k);
