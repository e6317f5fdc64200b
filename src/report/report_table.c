/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The dry-run table and address ranges. */
#include "report_table.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "coverage.h"
#include "scan_result.h"
#include "text_escape.h"
#include "units.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

size_t merge_block_ranges(uint64_t *addrs, size_t n, struct block_range *out)
{
	size_t nr = 0;

	if (n > 1) /* addrs may be NULL when empty */
		qsort(addrs, n, sizeof(*addrs), cmp_u64);
	for (size_t i = 0; i < n; i++) {
		uint64_t end = addrs[i] > UINT64_MAX - HPAGE_SIZE ? UINT64_MAX : addrs[i] + HPAGE_SIZE;

		if (nr && addrs[i] <= out[nr - 1].end) {
			if (end > out[nr - 1].end)
				out[nr - 1].end = end;
			continue;
		}
		out[nr++] = (struct block_range){addrs[i], end};
	}
	return nr;
}

uint64_t *report_candidate_addrs(const struct engine_view *v, size_t idx, size_t *n)
{
	uint64_t *a;
	size_t k = 0;

	*n = 0;
	for (size_t i = 0; i < v->ncands; i++)
		k += v->cands[i].proc == idx;
	if (!k)
		return NULL;
	a = malloc(k * sizeof(*a));
	if (!a)
		return NULL;
	for (size_t i = 0; i < v->ncands; i++)
		if (v->cands[i].proc == idx)
			a[(*n)++] = v->cands[i].addr;
	qsort(a, *n, sizeof(*a), cmp_u64);
	return a;
}

struct row {
	size_t idx;   /* into v->procs */
	size_t first; /* global rank of its first candidate, from 1 */
	size_t ncand;
};

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	return (x->first > y->first) - (x->first < y->first);
}

/* One row per process with candidates, in order of its first one. */
static struct row *rows_of(const struct engine_view *v, size_t *nrows)
{
	struct row *rows = calloc(v->nprocs ? v->nprocs : 1, sizeof(*rows));
	size_t n = 0;

	*nrows = 0;
	if (!rows)
		return NULL;
	for (size_t i = 0; i < v->ncands; i++) {
		uint32_t p = v->cands[i].proc;

		if (p >= v->nprocs)
			continue;
		if (!rows[p].ncand)
			rows[p].first = i + 1;
		rows[p].ncand++;
	}
	for (size_t i = 0; i < v->nprocs; i++)
		if (rows[i].ncand)
			rows[n++] = (struct row){i, rows[i].first, rows[i].ncand};
	if (n > 1)
		qsort(rows, n, sizeof(*rows), cmp_row);
	*nrows = n;
	return rows;
}

static double pct_after(const struct thp_usage *u, uint64_t add)
{
	uint64_t all = u->anon + u->shmem, huge = u->anon_huge + u->shmem_huge + add;

	if (!all)
		return 0;
	return huge >= all ? 100.0 : 100.0 * (double)huge / (double)all;
}

static void print_ranges(FILE *f, const struct engine_view *v, size_t idx, size_t max_ranges)
{
	size_t n, nr;
	uint64_t *a = report_candidate_addrs(v, idx, &n);
	struct block_range *r = a ? malloc(n * sizeof(*r)) : NULL;

	if (!r) {
		free(a);
		return;
	}
	nr = merge_block_ranges(a, n, r);
	char comm[TEXT_ESCAPE_SIZE(sizeof(v->procs[idx].prev.comm))];

	fprintf(f, "  %d (%s): %zu range%s\n", (int)v->procs[idx].pid,
		text_escape(v->procs[idx].prev.comm, comm, sizeof(comm)), nr, nr == 1 ? "" : "s");
	for (size_t i = 0; i < nr && i < max_ranges; i++)
		fprintf(f, "    0x%012llx-0x%012llx %7.1f MiB\n", (unsigned long long)r[i].start,
			(unsigned long long)r[i].end, (double)(r[i].end - r[i].start) / MIB);
	if (nr > max_ranges)
		fprintf(f, "    … %zu more (-v lists every block)\n", nr - max_ranges);
	free(r);
	free(a);
}

static size_t count_disabled(const struct engine_view *v)
{
	size_t n = 0;

	for (size_t i = 0; i < v->nprocs; i++)
		n += v->procs[i].policy && !v->procs[i].policy->enable;
	return n;
}

/* Processes this pass looked at: scanned (some block has a result) or
 * disabled by policy. Not the others --pid left out. */
static size_t count_looked_at(const struct engine_view *v)
{
	size_t n = 0;

	for (size_t i = 0; i < v->nprocs; i++) {
		bool any = v->procs[i].policy && !v->procs[i].policy->enable;

		for (int r = 0; r < SCAN_NR_RESULTS && !any; r++)
			any = v->procs[i].results[r] != 0;
		n += any;
	}
	return n;
}

void report_table(FILE *f, const struct engine_view *v, size_t max_ranges)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t nrows, disabled = count_disabled(v);
	struct row *rows = rows_of(v, &nrows);

	if (!rows)
		return;
	fprintf(f, "%-8s %-16s %9s %9s %9s %7s %7s  %s\n", "PID", "COMMAND", "RSS MiB", "HUGE MiB", "CAND MiB",
		"BEFORE", "AFTER", "CGROUP");
	for (size_t i = 0; i < nrows; i++) {
		const struct proc_state *s = &v->procs[rows[i].idx];
		uint64_t cand = rows[i].ncand * HPAGE_SIZE;

		char comm[TEXT_ESCAPE_SIZE(sizeof(s->prev.comm))], cg[TEXT_ESCAPE_SIZE(PATH_MAX)];

		/* Escaped whole: a width cut would split an escape. */
		text_escape(s->prev.comm, comm, sizeof(comm));
		text_escape(s->cgroup ? s->cgroup : "?", cg, sizeof(cg));
		fprintf(f, "%-8d %-16s %9.1f %9.1f %9.1f %6.1f%% %6.1f%%  %s\n", (int)s->pid, comm,
			(double)s->prev.rss_pages * (double)page / MIB,
			(double)(s->usage.anon_huge + s->usage.shmem_huge) / MIB, (double)cand / MIB,
			pct_after(&s->usage, 0), pct_after(&s->usage, cand), cg);
	}
	fprintf(f, "%zu of %zu processes looked at have candidates", nrows, count_looked_at(v));
	if (disabled)
		fprintf(f, "; %zu disabled by policy", disabled);
	fprintf(f, "\n");
	if (nrows)
		fprintf(f, "candidate ranges:\n");
	for (size_t i = 0; i < nrows; i++)
		print_ranges(f, v, rows[i].idx, max_ranges);
	free(rows);
}
