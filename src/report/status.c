/* SPDX-License-Identifier: GPL-2.0-or-later */
/* --status tables and JSON from the metrics file. */
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "json_number.h"
#include "metrics.h"
#include "report.h"
#include "text_escape.h"
#include "units.h"

#define STATUS_MAX_FILE (16u << 20) /* far above what 1000 cgroups take */

static bool name_char(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
	       (!first && c >= '0' && c <= '9');
}

/* Copies a quoted label value starting after the opening quote; returns
 * the position after the closing quote, or NULL. */
static const char *label_value_at(const char *p, const char *end, char *out, size_t outlen)
{
	size_t n = 0;

	for (; p < end && *p != '"'; p++) {
		char c = *p;

		if (c == '\\') {
			if (++p == end)
				return NULL;
			c = *p;
			if (c == 'n')
				c = '\n';
			else if (c != '\\' && c != '"')
				return NULL;
		}
		if (n + 1 >= outlen)
			return NULL;
		out[n++] = c;
	}
	out[n] = 0;
	return p < end ? p + 1 : NULL;
}

static const char *labels_at(const char *p, const char *end, struct prom_sample *s)
{
	while (p < end && *p != '}') {
		size_t k = 0;

		if (s->nlabels == PROM_MAX_LABELS)
			return NULL;
		while (p < end && name_char(*p, k == 0) && k + 1 < sizeof(s->label[0].key))
			s->label[s->nlabels].key[k++] = *p++;
		s->label[s->nlabels].key[k] = 0;
		if (!k || end - p < 2 || p[0] != '=' || p[1] != '"')
			return NULL;
		p = label_value_at(p + 2, end, s->label[s->nlabels].value, sizeof(s->label[0].value));
		if (!p)
			return NULL;
		s->nlabels++;
		if (p < end && *p == ',')
			p++;
	}
	return p < end ? p + 1 : NULL;
}

int parse_prom_sample_buf(const char *line, size_t len, struct prom_sample *s)
{
	const char *p = line, *end = line + len;
	char num[64], *e;
	size_t n = 0;

	memset(s, 0, sizeof(*s));
	if (!len || *line == '#')
		return -ENOENT;
	while (p < end && name_char(*p, n == 0)) {
		if (n + 1 >= sizeof(s->name))
			return -EINVAL;
		s->name[n++] = *p++;
	}
	if (!n)
		return -EINVAL;
	if (p < end && *p == '{') {
		p = labels_at(p + 1, end, s);
		if (!p)
			return -EINVAL;
	}
	if (p == end || *p != ' ' || (size_t)(end - p - 1) >= sizeof(num) || end - p < 2)
		return -EINVAL;
	memcpy(num, p + 1, (size_t)(end - p - 1));
	num[end - p - 1] = 0;
	errno = 0;
	s->value = strtod(num, &e);
	/* A timestamp may follow the value. */
	if (e == num || errno || (*e && *e != ' '))
		return -EINVAL;
	return 0;
}

const char *prom_label(const struct prom_sample *s, const char *key)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (!strcmp(s->label[i].key, key))
			return s->label[i].value;
	return NULL;
}

static struct status_cgroup *cgroup_of(struct status *st, const char *name, size_t *cap)
{
	struct status_cgroup *g;

	for (size_t i = 0; i < st->ncg; i++)
		if (!strcmp(st->cg[i].cgroup, name))
			return &st->cg[i];
	if (st->ncg == STATUS_MAX_CGROUPS)
		return NULL;
	if (st->ncg == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		g = realloc(st->cg, ncap * sizeof(*g));
		if (!g)
			return NULL;
		st->cg = g;
		*cap = ncap;
	}
	g = &st->cg[st->ncg++];
	memset(g, 0, sizeof(*g));
	snprintf(g->cgroup, sizeof(g->cgroup), "%s", name);
	g->target = -1;
	return g;
}

/* The cgroup field a series sets, or NULL. */
static double *cgroup_field(struct status_cgroup *g, const char *name)
{
	static const char pre[] = "hugecollapsed_cgroup_";
	const char *n = name + sizeof(pre) - 1;

	if (strncmp(name, pre, sizeof(pre) - 1) != 0)
		return NULL;
	return !strcmp(n, "anon_bytes")              ? &g->anon
	       : !strcmp(n, "anon_huge_bytes")       ? &g->anon_huge
	       : !strcmp(n, "shmem_bytes")           ? &g->shmem
	       : !strcmp(n, "shmem_huge_bytes")      ? &g->shmem_huge
	       : !strcmp(n, "pending_bytes")         ? &g->pending
	       : !strcmp(n, "collapsed_bytes")       ? &g->collapsed
	       : !strcmp(n, "thp_coverage_ratio")    ? &g->coverage
	       : !strcmp(n, "coverage_target_ratio") ? &g->target
						     : NULL;
}

/* The top-process series: rank and group labels; the pid is the value of
 * hugecollapsed_top_process_pid (the labels are bounded: no pid or comm,
 * which any user can multiply). A daemon before that labelled pid and comm. */
static void process_sample(struct status *st, const struct prom_sample *s)
{
	const char *rank = prom_label(s, "rank"), *pid = prom_label(s, "pid");
	const char *comm = prom_label(s, "comm"), *cg = prom_label(s, "cgroup");
	unsigned long r = rank ? strtoul(rank, NULL, 10) : 0;
	struct status_process *p;

	if (!r || r > STATUS_MAX_PROCESSES || !cg)
		return;
	p = &st->proc[r - 1];
	p->rank = (unsigned)r;
	if (pid)
		p->pid = (int)strtol(pid, NULL, 10);
	if (comm)
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
	snprintf(p->cgroup, sizeof(p->cgroup), "%s", cg);
	if (!strcmp(s->name, "hugecollapsed_top_process_pending_bytes"))
		p->pending = s->value;
	else if (!strcmp(s->name, "hugecollapsed_top_process_pid"))
		p->pid = s->value > 0 && s->value <= INT_MAX ? (int)s->value : 0;
	else
		p->coverage = s->value;
	if (r > st->nproc)
		st->nproc = r;
}

/* A scan result or collapse outcome counter; the same name again replaces. */
static void count_sample(struct status_count *c, size_t *n, const char *name, double v)
{
	size_t i;

	if (!name || strlen(name) >= sizeof(c[0].name))
		return;
	for (i = 0; i < *n && strcmp(c[i].name, name) != 0; i++)
		;
	if (i == *n) {
		if (*n == STATUS_MAX_COUNTS)
			return;
		snprintf(c[i].name, sizeof(c[i].name), "%s", name);
		(*n)++;
	}
	c[i].value = v;
}

/* hugecollapsed_daemon_info{boot_id,pid,start_ticks} 1 */
static void daemon_sample(struct status *st, const struct prom_sample *s)
{
	const char *boot = prom_label(s, "boot_id"), *pid = prom_label(s, "pid"), *ticks = prom_label(s, "start_ticks");
	struct producer p = {0};
	char *e;

	if (!boot || !pid || !ticks || parse_boot_id_buf(boot, strlen(boot), p.boot_id) < 0)
		return;
	errno = 0;
	long v = strtol(pid, &e, 10);

	if (errno || *e || v <= 0 || v > INT_MAX)
		return;
	p.pid = (pid_t)v;
	unsigned long long t = strtoull(ticks, &e, 10);

	if (errno || *e || *ticks == '-' || !*ticks)
		return;
	p.start_ticks = t;
	st->daemon = p;
}

static void scalar_sample(struct status *st, const struct prom_sample *s)
{
	const char *mode = prom_label(s, "mode");

	if (!strcmp(s->name, "hugecollapsed_passes_total"))
		st->passes = s->value;
	else if (!strcmp(s->name, "hugecollapsed_collapsed_bytes_total"))
		st->collapsed_bytes += s->value;
	else if (!strcmp(s->name, "hugecollapsed_scan_seconds_total"))
		st->scan_s = s->value;
	else if (!strcmp(s->name, "hugecollapsed_collapse_seconds_total"))
		st->collapse_s = s->value;
	else if (!strcmp(s->name, "hugecollapsed_last_pass_timestamp_seconds"))
		st->last_pass = s->value;
	else if (!strcmp(s->name, "hugecollapsed_backing_off"))
		st->backing_off = s->value;
	else if (!strcmp(s->name, "hugecollapsed_observe_only"))
		st->observe_only = s->value;
	else if (!strcmp(s->name, "hugecollapsed_would_collapse_bytes"))
		st->would_collapse_bytes = s->value;
	else if (!strcmp(s->name, "hugecollapsed_would_collapse_processes"))
		st->would_collapse_processes = s->value;
	else if (!strcmp(s->name, "hugecollapsed_processes_scanned_total"))
		st->procs_scanned = s->value;
	else if (!strcmp(s->name, "hugecollapsed_processes_unchanged_total"))
		st->procs_unchanged = s->value;
	else if (!strcmp(s->name, "hugecollapsed_processes_active"))
		st->procs_active = s->value;
	else if (!strcmp(s->name, "hugecollapsed_scan_ranges_total"))
		count_sample(st->result, &st->nresult, prom_label(s, "result"), s->value);
	else if (!strcmp(s->name, "hugecollapsed_collapse_ranges_total"))
		count_sample(st->outcome, &st->noutcome, prom_label(s, "outcome"), s->value);
	else if (!strcmp(s->name, "hugecollapsed_daemon_info"))
		daemon_sample(st, s);
	else if (!strcmp(s->name, "hugecollapsed_khugepaged_mode") && mode && s->value == 1)
		for (int m = KHUGEPAGED_KEEP; m <= KHUGEPAGED_OFF; m++)
			if (!strcmp(mode, khugepaged_mode_name(m)))
				st->khugepaged = khugepaged_mode_name(m);
}

static void add_skipped(struct status_cgroup *g, const char *result, double v)
{
	g->skipped += v;
	if (!result || g->nskip == STATUS_MAX_RESULTS)
		return;
	snprintf(g->skip[g->nskip].result, sizeof(g->skip[0].result), "%s", result);
	g->skip[g->nskip++].bytes = v;
}

/* The result that skipped the most bytes of g, or "-". */
static const char *top_skip(const struct status_cgroup *g)
{
	size_t best = 0;

	for (size_t i = 1; i < g->nskip; i++)
		if (g->skip[i].bytes > g->skip[best].bytes)
			best = i;
	return g->nskip && g->skip[best].bytes > 0 ? g->skip[best].result : "-";
}

static int sample(struct status *st, const struct prom_sample *s, size_t *cap, bool *seen_passes)
{
	const char *cg = prom_label(s, "cgroup");
	struct status_cgroup *g;
	double *f;

	/* Not a number, or infinite: as if the line were not there. */
	if (!isfinite(s->value))
		return 0;
	if (!strncmp(s->name, "hugecollapsed_top_process_", 26)) {
		process_sample(st, s);
		return 0;
	}
	*seen_passes |= !strcmp(s->name, "hugecollapsed_passes_total");
	if (strncmp(s->name, "hugecollapsed_cgroup_", 21) || !cg) {
		scalar_sample(st, s);
		return 0;
	}
	g = cgroup_of(st, cg, cap);
	if (!g)
		return st->ncg == STATUS_MAX_CGROUPS ? 0 : -ENOMEM;
	if (!strcmp(s->name, "hugecollapsed_cgroup_skipped_bytes"))
		add_skipped(g, prom_label(s, "result"), s->value);
	else if ((f = cgroup_field(g, s->name)))
		*f = s->value;
	return 0;
}

int parse_status_buf(const char *buf, size_t len, struct status *st)
{
	const char *p = buf, *end = buf + len;
	bool seen_passes = false;
	size_t cap = 0;

	memset(st, 0, sizeof(*st));
	st->khugepaged = "?";
	st->passes = st->scan_s = st->collapse_s = st->last_pass = NAN; /* collapsed_bytes: a sum, 0 */
	st->backing_off = st->procs_scanned = st->procs_unchanged = st->procs_active = NAN;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		struct prom_sample s;

		if (parse_prom_sample_buf(p, (size_t)(eol - p), &s) == 0 && sample(st, &s, &cap, &seen_passes) < 0) {
			status_free(st);
			return -ENOMEM;
		}
		p = nl ? nl + 1 : end;
	}
	if (!seen_passes) {
		status_free(st);
		return -EINVAL;
	}
	return 0;
}

void status_free(struct status *st)
{
	free(st->cg);
	st->cg = NULL;
	st->ncg = 0;
}

static double pct(double ratio)
{
	return isfinite(ratio) ? 100.0 * ratio : 0;
}

/* v with fmt, or "-" where the file had no value. */
static void num(FILE *out, const char *fmt, double v)
{
	if (isfinite(v))
		fprintf(out, fmt, v);
	else
		fputc('-', out);
}

static void counts(FILE *out, const char *what, const struct status_count *c, size_t n)
{
	fprintf(out, "  %s:", what);
	for (size_t i = 0; i < n; i++)
		fprintf(out, " %s %.0f", c[i].name, c[i].value);
	fputs(n ? "\n" : " -\n", out);
}

void status_print_summary(FILE *out, const struct status *st, const char *path, enum producer_state daemon,
			  double age_s, double now)
{
	char esc[TEXT_ESCAPE_SIZE(4096)];

	fputs("hugecollapsed: ", out);
	num(out, "%.0f", st->passes);
	fprintf(out, " passes, %.1f MiB collapsed, khugepaged %s\n", st->collapsed_bytes / MIB, st->khugepaged);
	fprintf(out, "  daemon: %s", producer_state_name(daemon));
	if (st->daemon.pid > 0)
		fprintf(out, " (pid %d%s)", (int)st->daemon.pid,
			daemon == PRODUCER_RUNNING      ? ""
			: daemon == PRODUCER_OTHER_BOOT ? " wrote the file before the last boot"
							: " wrote the file");
	else
		fputs(" (the file does not name its writer: a daemon older than this binary?)", out);
	fprintf(out, "\n  metrics file %s, updated %.0f s ago, last pass ended ", text_escape(path, esc, sizeof(esc)),
		age_s);
	num(out, "%.0f s ago", now - st->last_pass);
	fputs("\n  time: scan ", out);
	num(out, "%.3f s", st->scan_s);
	fputs(", collapse ", out);
	num(out, "%.3f s", st->collapse_s);
	fputs("\n  processes: ", out);
	num(out, "%.0f", st->procs_scanned);
	fputs(" scans, ", out);
	num(out, "%.0f", st->procs_unchanged);
	fputs(" skipped unchanged, ", out);
	num(out, "%.0f", st->procs_active);
	fputs(" active now\n", out);
	counts(out, "scan results (2 MiB ranges)", st->result, st->nresult);
	counts(out, "collapse outcomes (2 MiB ranges)", st->outcome, st->noutcome);
}

void status_print_tables(FILE *out, const struct status *st)
{
	if (st->observe_only == 1)
		fprintf(out, "  observe only: would collapse %.1f MiB in %.0f processes; nothing is collapsed\n",
			st->would_collapse_bytes / MIB, st->would_collapse_processes);
	fprintf(out, "\n%9s %7s %11s %11s %11s %11s %-15s  %s\n", "COVERAGE", "TARGET", "ANON+SHMEM", "COLLAPSED",
		"PENDING", "SKIPPED", " MOSTLY", "CGROUP");
	for (size_t i = 0; i < st->ncg; i++) {
		const struct status_cgroup *g = &st->cg[i];
		char target[16] = "-";

		if (g->target >= 0)
			snprintf(target, sizeof(target), "%.0f%%", pct(g->target));
		char cg[TEXT_ESCAPE_SIZE(sizeof(g->cgroup))];

		fprintf(out, "%8.1f%% %7s %7.1f MiB %7.1f MiB %7.1f MiB %7.1f MiB  %-15.15s %s\n", pct(g->coverage),
			target, (g->anon + g->shmem) / MIB, g->collapsed / MIB, g->pending / MIB, g->skipped / MIB,
			top_skip(g), text_escape(g->cgroup, cg, sizeof(cg)));
	}
	if (!st->ncg)
		fprintf(out, "  (no coverage series: a daemon older than this binary?)\n");
	fprintf(out, "\ntop processes by pending bytes:\n%-8s %-16s %11s %9s  %s\n", "PID", "COMMAND", "PENDING",
		"COVERAGE", "CGROUP");
	for (size_t i = 0; i < st->nproc; i++) {
		const struct status_process *p = &st->proc[i];

		if (!p->rank)
			continue;
		char comm[TEXT_ESCAPE_SIZE(sizeof(p->comm))], cg[TEXT_ESCAPE_SIZE(sizeof(p->cgroup))];

		text_escape(p->comm, comm, sizeof(comm));
		fprintf(out, "%-8d %-16s %7.1f MiB %8.1f%%  %s\n", p->pid, comm, p->pending / MIB, pct(p->coverage),
			text_escape(p->cgroup, cg, sizeof(cg)));
	}
	if (!st->nproc)
		fprintf(out, "  (none: nothing is waiting for the budget)\n");
}

/* Ratios at 3 significant digits, everything else (bytes are exact) at 6. */
static void json_num(FILE *out, const char *key, double v, bool comma)
{
	bool ratio = !strcmp(key, "coverage") || !strcmp(key, "target");

	fprintf(out, "%s\"%s\":", comma ? "," : "", key);
	json_number(out, v, ratio ? JSON_SIG_RATIO : JSON_SIG_SECONDS);
}

void status_print_json(FILE *out, const struct status *st, const char *path, enum producer_state daemon, double age_s,
		       double now)
{
	fprintf(out, "{\"schema_version\":%d,\"metrics_file\":", STATUS_JSON_SCHEMA_VERSION);
	json_string(out, path);
	json_num(out, "age_seconds", age_s, true);
	fprintf(out, ",\"daemon\":\"%s\"",
		daemon == PRODUCER_RUNNING   ? "running"
		: daemon == PRODUCER_UNKNOWN ? "unknown"
					     : "stopped");
	if (st->daemon.pid > 0)
		fprintf(out, ",\"daemon_pid\":%d", (int)st->daemon.pid);
	if (isfinite(st->last_pass))
		json_num(out, "last_pass_age_seconds", now - st->last_pass, true);
	json_num(out, "passes", st->passes, true);
	json_num(out, "collapsed_bytes", st->collapsed_bytes, true);
	json_num(out, "scan_seconds", st->scan_s, true);
	json_num(out, "collapse_seconds", st->collapse_s, true);
	json_num(out, "last_pass_timestamp", st->last_pass, true);
	fprintf(out, ",\"observe_only\":%s", st->observe_only == 1 ? "true" : "false");
	json_num(out, "would_collapse_bytes", st->would_collapse_bytes, true);
	json_num(out, "would_collapse_processes", st->would_collapse_processes, true);
	fprintf(out, ",\"backing_off\":%s,\"khugepaged\":\"%s\",\"cgroups\":[", st->backing_off == 1 ? "true" : "false",
		st->khugepaged);
	for (size_t i = 0; i < st->ncg; i++) {
		const struct status_cgroup *g = &st->cg[i];

		fprintf(out, "%s{\"cgroup\":", i ? "," : "");
		json_string(out, g->cgroup);
		json_num(out, "coverage", g->coverage, true);
		if (g->target >= 0)
			json_num(out, "target", g->target, true);
		json_num(out, "anon_bytes", g->anon, true);
		json_num(out, "anon_huge_bytes", g->anon_huge, true);
		json_num(out, "shmem_bytes", g->shmem, true);
		json_num(out, "shmem_huge_bytes", g->shmem_huge, true);
		json_num(out, "collapsed_bytes", g->collapsed, true);
		json_num(out, "pending_bytes", g->pending, true);
		json_num(out, "skipped_bytes", g->skipped, true);
		fprintf(out, ",\"skipped_by_result\":{");
		for (size_t k = 0; k < g->nskip; k++) {
			fprintf(out, "%s", k ? "," : "");
			json_string(out, g->skip[k].result);
			fputc(':', out);
			json_number(out, g->skip[k].bytes, JSON_SIG_SECONDS);
		}
		fprintf(out, "}}");
	}
	fprintf(out, "],\"processes\":[");
	for (size_t i = 0, n = 0; i < st->nproc; i++) {
		const struct status_process *p = &st->proc[i];

		if (!p->rank)
			continue;
		fprintf(out, "%s{\"pid\":%d,\"comm\":", n++ ? "," : "", p->pid);
		json_string(out, p->comm);
		fprintf(out, ",\"cgroup\":");
		json_string(out, p->cgroup);
		json_num(out, "pending_bytes", p->pending, true);
		json_num(out, "coverage", p->coverage, true);
		fputc('}', out);
	}
	fprintf(out, "]}\n");
}

/* The whole file, NUL-terminated, at most STATUS_MAX_FILE bytes. */
static int read_all(const char *path, char **buf, size_t *len, double *age_s)
{
	struct stat sb;
	size_t cap = 65536, n = 0;
	char *b = NULL, *nb;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	*age_s = difftime(time(NULL), sb.st_mtime);
	do {
		if (n + 1 >= cap || !b) {
			cap = b ? cap * 2 : cap;
			nb = cap > STATUS_MAX_FILE ? NULL : realloc(b, cap);
			if (!nb) {
				free(b);
				close(fd);
				return -EFBIG;
			}
			b = nb;
		}
		r = read(fd, b + n, cap - n - 1);
		n += r > 0 ? (size_t)r : 0;
	} while (r > 0);
	close(fd);
	if (r < 0) {
		free(b);
		return -EIO;
	}
	b[n] = 0;
	*buf = b;
	*len = n;
	return 0;
}

/* The comm of each top process that names none (the series do not label
 * it), read now; "?" if it is gone. Best effort: a pid reused since the
 * file was written shows the new process's name. */
static void fill_comms(struct status *st, const char *proc_root)
{
	for (size_t i = 0; i < st->nproc; i++) {
		struct status_process *p = &st->proc[i];
		char path[4096];
		ssize_t n = -1;
		int fd;

		if (!p->rank || p->comm[0])
			continue;
		snprintf(p->comm, sizeof(p->comm), "?");
		if (p->pid <= 0 ||
		    (size_t)snprintf(path, sizeof(path), "%s/%d/comm", proc_root, p->pid) >= sizeof(path))
			continue;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			n = read(fd, p->comm, sizeof(p->comm) - 1);
			close(fd);
		}
		if (n > 0) {
			p->comm[n] = 0;
			p->comm[strcspn(p->comm, "\n")] = 0;
		} else
			snprintf(p->comm, sizeof(p->comm), "?");
	}
}

int status_run_at(FILE *out, const char *path, bool json, const char *proc_root)
{
	enum producer_state daemon;
	struct status st;
	double age = 0;
	char *buf = NULL;
	size_t len = 0;
	int r;

	if (!path || !*path) {
		fprintf(stderr, "hugecollapsed: no metrics_file is configured\n");
		return -ENOENT;
	}
	r = read_all(path, &buf, &len, &age);
	if (r < 0) {
		fprintf(stderr, "hugecollapsed: %s: %s (is the daemon running?)\n", path, strerror(-r));
		return r;
	}
	r = parse_status_buf(buf, len, &st);
	free(buf);
	if (r < 0) {
		fprintf(stderr, "hugecollapsed: %s is not a hugecollapsed metrics file\n", path);
		return r;
	}
	daemon = producer_check(proc_root, &st.daemon);
	fill_comms(&st, proc_root);
	if (json)
		status_print_json(out, &st, path, daemon, age, (double)time(NULL));
	else {
		status_print_summary(out, &st, path, daemon, age, (double)time(NULL));
		status_print_tables(out, &st);
	}
	status_free(&st);
	return 0;
}

int status_run(FILE *out, const char *path, bool json)
{
	return status_run_at(out, path, json, "/proc");
}
