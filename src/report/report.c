/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Text and JSON output of a pass. */
#include "report.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "collapse.h"
#include "config.h"
#include "json_number.h"
#include "log.h"
#include "report_table.h"
#include "scan_result.h"
#include "text_escape.h"
#include "utf8.h"
#include "units.h"

#define REPORT_MAX_RANGES 8 /* per process in the table; --json has them all */

static const char *tier_name(unsigned t)
{
	return t == TIER_AGED ? "aged" : t == TIER_ACTIVE ? "active" : "idle";
}

/* JSON text is UTF-8 (RFC 8259): a byte that starts no valid sequence (a
 * comm or cgroup name may hold any) becomes \ufffd, so jq and every other
 * parser still read the output. */
void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	while (*s) {
		unsigned char c = (unsigned char)*s;
		size_t l = utf8_seq_len(s);

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else if (!l)
			fputs("\\ufffd", f);
		else
			fwrite(s, 1, l, f);
		s += l ? l : 1;
	}
	fputc('"', f);
}

static bool shown(const struct proc_state *s)
{
	/* Not scanned, so no results: say so rather than leave it out. */
	if ((s->policy && !s->policy->enable) || s->cgroup_unknown)
		return true;
	for (int r = 0; r < SCAN_NR_RESULTS; r++)
		if (s->results[r])
			return true;
	return false;
}

static void text_process(FILE *f, const struct engine_view *v, size_t idx)
{
	const struct proc_state *s = &v->procs[idx];
	char comm[TEXT_ESCAPE_SIZE(sizeof(s->prev.comm))], cg[TEXT_ESCAPE_SIZE(PATH_MAX)];
	bool first = true;
	size_t rank = 0;

	text_escape(s->prev.comm, comm, sizeof(comm));
	fprintf(f, "PID %d (%s) cgroup %s%s\n", (int)s->pid, comm,
		text_escape(s->cgroup ? s->cgroup : "?", cg, sizeof(cg)),
		s->cgroup_unknown                 ? " [cgroup unknown: not collapsed]"
		: s->policy && !s->policy->enable ? " [disabled by policy]"
						  : "");
	fprintf(f, "  activity: cpu %.2f, faults %.3f; blocks:", s->activity.cpu, s->activity.faults);
	for (int r = 0; r < SCAN_NR_RESULTS; r++)
		if (s->results[r])
			fprintf(f, " %s %llu", scan_result_name(r), (unsigned long long)s->results[r]);
	fputc('\n', f);
	for (size_t i = 0; i < v->ncands; i++) {
		const struct candidate *c = &v->cands[i];

		if (c->proc != idx)
			continue;
		if (first)
			fprintf(f, "  candidates in collapse order (global rank):\n");
		first = false;
		if (++rank > 64) {
			fprintf(f, "    …\n");
			break;
		}
		fprintf(f, "    #%-5zu 0x%012llx  score %8.4f  present %3u/512  %s\n", i + 1,
			(unsigned long long)c->addr, c->score, c->present, tier_name(c->tier));
	}
}

void report_text(FILE *f, const struct engine_stats *e, const struct pass_options *o, const struct pass_stats *ps,
		 bool per_process)
{
	struct engine_view v = e->view;

	/* The table and ranges; every block only with -v (a 10 GiB heap is
	 * 5000 lines). */
	if (per_process)
		report_table(f, &v, REPORT_MAX_RANGES);
	if (per_process && log_is_verbose())
		for (size_t i = 0; i < v.nprocs; i++)
			if (shown(&v.procs[i]))
				text_process(f, &v, i);
	if (o->dry_run)
		fprintf(f, "dry run: %zu candidate blocks (%.1f MiB), nothing changed\n", v.ncands,
			v.ncands * (HPAGE_SIZE / MIB));
	else
		fprintf(f, "collapsed %.1f MiB in %llu blocks%s\n", ps->collapsed_bytes / MIB,
			(unsigned long long)ps->outcomes[COLLAPSE_OK],
			ps->pressure_paused ? " (paused: host memory pressure)"
			: ps->backing_off   ? " (some processes back off after ENOMEM)"
					    : "");
	fprintf(f,
		"scan %.1f ms (%u processes, %u scanned, %u unchanged, %u disabled, %u cgroup unknown), collapse %.1f "
		"ms\n",
		ps->scan_s * 1e3, ps->procs_total, ps->procs_scanned, ps->procs_unchanged, ps->procs_disabled,
		ps->procs_cgroup_unknown, ps->collapse_s * 1e3);
	fprintf(f, "results:");
	for (int r = 0; r < SCAN_NR_RESULTS; r++)
		fprintf(f, " %s %llu", scan_result_name(r), (unsigned long long)ps->results[r]);
	fprintf(f, "\noutcomes:");
	for (int i = 0; i < COLLAPSE_NR_OUTCOMES; i++)
		fprintf(f, " %s %llu", collapse_outcome_name(i), (unsigned long long)ps->outcomes[i]);
	fputc('\n', f);
	/* A run sees no advice given before it (cold_watch.h). */
	if (!e->cold_watched)
		fprintf(
		    f,
		    "coldness: per VMA only (min_referenced_pct); a MADV_COLD or MADV_PAGEOUT range inside a hot VMA "
		    "is told apart only by the daemon, for calls made after it started\n");
}

static void json_results(FILE *f, const uint64_t *results)
{
	fputc('{', f);
	for (int r = 0; r < SCAN_NR_RESULTS; r++)
		fprintf(f, "%s\"%s\":%llu", r ? "," : "", scan_result_name(r), (unsigned long long)results[r]);
	fputc('}', f);
}

/* What smaps said of its anon and shmem memory, and the candidate blocks
 * merged into ranges. */
static void json_usage_ranges(FILE *f, const struct engine_view *v, size_t idx)
{
	const struct thp_usage *u = &v->procs[idx].usage;
	size_t n, nr = 0;
	uint64_t *a = report_candidate_addrs(v, idx, &n);
	struct block_range *r = a ? malloc(n * sizeof(*r)) : NULL;

	fprintf(f, ",\"anon_bytes\":%llu,\"anon_huge_bytes\":%llu,\"shmem_bytes\":%llu,\"shmem_huge_bytes\":%llu",
		(unsigned long long)u->anon, (unsigned long long)u->anon_huge, (unsigned long long)u->shmem,
		(unsigned long long)u->shmem_huge);
	if (r)
		nr = merge_block_ranges(a, n, r);
	fprintf(f, ",\"ranges\":[");
	for (size_t i = 0; i < nr; i++)
		fprintf(f, "%s{\"start\":\"0x%llx\",\"end\":\"0x%llx\",\"blocks\":%llu}", i ? "," : "",
			(unsigned long long)r[i].start, (unsigned long long)r[i].end,
			(unsigned long long)((r[i].end - r[i].start) / HPAGE_SIZE));
	fputc(']', f);
	free(r);
	free(a);
}

static void json_process(FILE *f, const struct engine_view *v, size_t idx)
{
	const struct proc_state *s = &v->procs[idx];
	bool first = true;

	fprintf(f, "{\"pid\":%d,\"comm\":", (int)s->pid);
	json_string(f, s->prev.comm);
	fprintf(f, ",\"cgroup\":");
	json_string(f, s->cgroup ? s->cgroup : "");
	fprintf(f, ",\"cgroup_unknown\":%s", s->cgroup_unknown ? "true" : "false");
	fprintf(f, ",\"enabled\":%s,\"activity\":{\"cpu\":",
		(s->policy && !s->policy->enable) || s->cgroup_unknown ? "false" : "true");
	json_number(f, s->activity.cpu, JSON_SIG_SCORE);
	fprintf(f, ",\"faults\":");
	json_number(f, s->activity.faults, JSON_SIG_SCORE);
	fprintf(f, "},\"results\":");
	json_results(f, s->results);
	json_usage_ranges(f, v, idx);
	fprintf(f, ",\"candidates\":[");
	for (size_t i = 0; i < v->ncands; i++) {
		const struct candidate *c = &v->cands[i];

		if (c->proc != idx)
			continue;
		fprintf(f, "%s{\"addr\":\"0x%llx\",\"rank\":%zu,\"score\":", first ? "" : ",",
			(unsigned long long)c->addr, i + 1);
		json_number(f, c->score, JSON_SIG_SCORE);
		fprintf(f, ",\"present\":%u,\"tier\":\"%s\"}", c->present, tier_name(c->tier));
		first = false;
	}
	fprintf(f, "]}");
}

void report_json(FILE *f, const struct engine_stats *e, const struct pass_options *o, const struct pass_stats *ps,
		 bool per_process)
{
	struct engine_view v = e->view;
	bool first = true;

	fprintf(f, "{\"schema_version\":%d,\"version\":\"%s\",\"dry_run\":%s,\"collapsed_bytes\":%llu,",
		REPORT_JSON_SCHEMA_VERSION, HC_VERSION, o->dry_run ? "true" : "false",
		(unsigned long long)ps->collapsed_bytes);
	fprintf(f, "\"would_collapse_bytes\":%llu,\"scan_seconds\":", (unsigned long long)ps->would_collapse_bytes);
	json_number(f, ps->scan_s, JSON_SIG_SECONDS);
	fprintf(f, ",\"collapse_seconds\":");
	json_number(f, ps->collapse_s, JSON_SIG_SECONDS);
	fprintf(f, ",\"backing_off\":%s,\"pressure_paused\":%s,", ps->backing_off ? "true" : "false",
		ps->pressure_paused ? "true" : "false");
	fprintf(f, "\"processes_total\":%u,\"processes_scanned\":%u,\"processes_unchanged\":%u,", ps->procs_total,
		ps->procs_scanned, ps->procs_unchanged);
	fprintf(f,
		"\"processes_disabled\":%u,\"processes_cgroup_unknown\":%u,\"smaps_reads\":%llu,\"pagemap_ops\":%llu,"
		"\"results\":",
		ps->procs_disabled, ps->procs_cgroup_unknown, (unsigned long long)ps->smaps_reads,
		(unsigned long long)ps->pagemap_ops);
	json_results(f, ps->results);
	fprintf(f, ",\"outcomes\":{");
	for (int i = 0; i < COLLAPSE_NR_OUTCOMES; i++)
		fprintf(f, "%s\"%s\":%llu", i ? "," : "", collapse_outcome_name(i),
			(unsigned long long)ps->outcomes[i]);
	fputc('}', f);
	if (per_process) {
		fprintf(f, ",\"processes\":[");
		for (size_t i = 0; i < v.nprocs; i++) {
			if (!shown(&v.procs[i]))
				continue;
			if (!first)
				fputc(',', f);
			first = false;
			json_process(f, &v, i);
		}
		fputc(']', f);
	}
	fprintf(f, "}\n");
}
