/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Per-cgroup and per-process THP coverage from what the scans saw. */
#include "coverage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "engine_stats.h"
#include "grow.h"
#include "procfs.h"
#include "procs.h"
#include "series_keep.h"
#include "smaps_scan.h"
#include "utf8.h"

double thp_usage_ratio(const struct thp_usage *u)
{
	uint64_t all = u->anon + u->shmem, huge = u->anon_huge + u->shmem_huge;

	if (!all)
		return 0;
	return huge >= all ? 1.0 : (double)huge / (double)all;
}

/* ---- memory.stat ---- */

enum stat_key { K_ANON, K_ANON_THP, K_SHMEM, K_SHMEM_THP, K_V1_RSS, K_V1_RSS_HUGE, K_V1_SHMEM, K_NR };

static const char *const stat_keys[K_NR] = {"anon",      "anon_thp",       "shmem",      "shmem_thp",
					    "total_rss", "total_rss_huge", "total_shmem"};

int parse_memory_stat_buf(const char *buf, size_t len, struct thp_usage *u)
{
	uint64_t val[K_NR] = {0};
	bool seen[K_NR] = {0};
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		const char *sp = memchr(p, ' ', (size_t)(eol - p));

		for (int k = 0; sp && k < K_NR; k++) {
			size_t kl = strlen(stat_keys[k]);

			if ((size_t)(sp - p) != kl || memcmp(p, stat_keys[k], kl) != 0)
				continue;
			if (parse_dec_u64(sp + 1, (size_t)(eol - sp - 1), &val[k]) < 0)
				return -EINVAL;
			seen[k] = true;
		}
		p = nl ? nl + 1 : end;
	}
	/* v1 files have a "shmem" line too (its own, not hierarchical): only
	 * the keys v1 lacks tell a v2 file. */
	if (seen[K_ANON] || seen[K_ANON_THP] || seen[K_SHMEM_THP]) {
		*u = (struct thp_usage){val[K_ANON], val[K_ANON_THP], val[K_SHMEM], val[K_SHMEM_THP]};
		return 0;
	}
	if (seen[K_V1_RSS] || seen[K_V1_RSS_HUGE] || seen[K_V1_SHMEM]) {
		*u = (struct thp_usage){val[K_V1_RSS], val[K_V1_RSS_HUGE], val[K_V1_SHMEM], 0};
		return 0;
	}
	return -ENOENT;
}

int read_memory_stat_at(int mount_fd, const char *cgroup, struct thp_usage *u)
{
	char path[4096], buf[8192];
	ssize_t n;
	int fd;

	while (*cgroup == '/')
		cgroup++;
	if (!strcmp(cgroup, "..") || !strncmp(cgroup, "../", 3) || strstr(cgroup, "/../") ||
	    (strlen(cgroup) >= 3 && !strcmp(cgroup + strlen(cgroup) - 3, "/..")))
		return -EINVAL;
	if ((size_t)snprintf(path, sizeof(path), "%s%smemory.stat", cgroup, *cgroup ? "/" : "") >= sizeof(path))
		return -ENAMETOOLONG;
	fd = openat(mount_fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0)
		return -errno;
	/* A memory.stat is about 1.5 KiB (v1) to 3 KiB (v2): a full buffer
	 * cut a line; every key we read is near the top, and a cut value is
	 * only ever the last line, which is dropped. */
	if ((size_t)n == sizeof(buf)) {
		while (n > 0 && buf[n - 1] != '\n')
			n--;
	}
	return parse_memory_stat_buf(buf, (size_t)n, u);
}

/* ---- aggregation ---- */

/* The group a cgroup counts for: its policy file's path, or itself. */
static const char *group_of(const struct config *cfg, const char *cgroup, const struct cgroup_rule **rule)
{
	const struct policy *p = cfg ? config_policy_for(cfg, cgroup) : NULL;

	*rule = NULL;
	for (size_t i = 0; p && i < cfg->nrules; i++)
		if (p == &cfg->rules[i].policy) {
			*rule = &cfg->rules[i];
			return cfg->rules[i].path;
		}
	return cgroup;
}

/* Groups by name while they are built: open addressing over indices into
 * c->cg, so a metrics write costs O(processes), not processes x cgroups
 * (2000 processes in 2000 cgroups: 12 ms with a linear search). */
struct group_index {
	size_t *slot; /* SIZE_MAX: empty */
	size_t mask;
	size_t cap; /* of c->cg */
};

static int group_index_init(struct group_index *ix, size_t max_groups)
{
	size_t n = 64;

	while (n < 2 * max_groups && n < SIZE_MAX / 4)
		n *= 2;
	ix->slot = malloc(n * sizeof(*ix->slot));
	if (!ix->slot)
		return -ENOMEM;
	memset(ix->slot, 0xff, n * sizeof(*ix->slot));
	ix->mask = n - 1;
	ix->cap = 0;
	return 0;
}

static size_t name_hash(const char *s)
{
	uint64_t h = UINT64_C(14695981039346656037); /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
	return (size_t)h;
}

/* The group for cgroup; created if new. max_groups passed to
 * group_index_init() bounds the calls that create one. */
static struct cgroup_coverage *group_get(struct coverage *c, struct group_index *ix, const struct config *cfg,
					 const char *cgroup)
{
	const struct cgroup_rule *rule;
	const char *raw = group_of(cfg, cgroup, &rule);
	/* Groups are kept by their printed name, so two cgroups that print the
	 * same are one group (one series), never two samples with one label. */
	char *fixed = utf8_valid(raw) ? NULL : utf8_replaced_dup(raw);
	const char *name = fixed ? fixed : raw;
	struct cgroup_coverage *g;
	size_t h;

	if (!utf8_valid(raw) && !fixed)
		return NULL;
	for (h = name_hash(name) & ix->mask; ix->slot[h] != SIZE_MAX; h = (h + 1) & ix->mask)
		if (!strcmp(c->cg[ix->slot[h]].cgroup, name)) {
			free(fixed);
			return &c->cg[ix->slot[h]];
		}
	if (grow_array((void **)&c->cg, &ix->cap, c->ncg + 1, sizeof(*c->cg)) < 0) {
		free(fixed);
		return NULL;
	}
	g = &c->cg[c->ncg];
	memset(g, 0, sizeof(*g));
	g->cgroup = fixed ? fixed : strdup(raw);
	if (!g->cgroup)
		return NULL;
	g->policy = rule != NULL;
	g->target_pct = rule ? rule->policy.coverage_target_pct : 0;
	ix->slot[h] = c->ncg++;
	return g;
}

static uint64_t usage_total(const struct thp_usage *u)
{
	return u->anon + u->shmem;
}

/* Policy groups first (by name), then the others by size, largest first. */
static int cmp_group(const void *a, const void *b)
{
	const struct cgroup_coverage *x = a, *y = b;
	uint64_t sx = usage_total(&x->usage), sy = usage_total(&y->usage);

	if (x->policy != y->policy)
		return x->policy ? -1 : 1;
	if (!x->policy && sx != sy)
		return sx > sy ? -1 : 1;
	return strcmp(x->cgroup, y->cgroup);
}

static void group_add(struct cgroup_coverage *into, const struct cgroup_coverage *g)
{
	into->usage.anon += g->usage.anon;
	into->usage.anon_huge += g->usage.anon_huge;
	into->usage.shmem += g->usage.shmem;
	into->usage.shmem_huge += g->usage.shmem_huge;
	into->pending += g->pending;
	into->collapsed += g->collapsed;
	into->processes += g->processes;
	for (int r = 0; r < SCAN_NR_RESULTS; r++)
		into->skipped[r] += g->skipped[r];
}

/* Keeps the groups series_keep_select() gives their own series (the one
 * cardinality rule, series_keep.h); sums the rest into "other". */
static int keep_top(struct coverage *c, unsigned top_n, struct series_keep *keep)
{
	struct series_item *it = calloc(c->ncg ? c->ncg : 1, sizeof(*it));
	bool *own = calloc(c->ncg ? c->ncg : 1, sizeof(*own));
	struct cgroup_coverage rest = {0};
	size_t kept = 0;
	int r = it && own ? 0 : -ENOMEM;

	for (size_t i = 0; !r && i < c->ncg; i++)
		it[i] = (struct series_item){c->cg[i].cgroup, c->cg[i].policy, usage_total(&c->cg[i].usage)};
	if (!r)
		r = series_keep_select(keep, top_n, it, c->ncg, own);
	free(it);
	if (r) {
		free(own);
		return r;
	}
	for (size_t i = 0; i < c->ncg; i++) {
		if (own[i]) {
			c->cg[kept++] = c->cg[i];
			continue;
		}
		group_add(&rest, &c->cg[i]);
		free(c->cg[i].cgroup);
	}
	free(own);
	/* "other" once written stays (keep->other), even with nothing in it. */
	if (kept < c->ncg || (keep && keep->other)) {
		rest.cgroup = strdup("other");
		if (!rest.cgroup) {
			c->ncg = kept;
			return -ENOMEM;
		}
		if (kept == c->ncg) { /* no folded group left its slot */
			struct cgroup_coverage *g = realloc(c->cg, (c->ncg + 1) * sizeof(*g));

			if (!g) {
				free(rest.cgroup);
				return -ENOMEM;
			}
			c->cg = g;
		}
		c->cg[kept++] = rest;
	}
	c->ncg = kept;
	/* Sorted for whoever reads: policy groups by name, then by size. */
	if (c->ncg > 1) /* c->cg may be NULL when empty: qsort(NULL, 0, …) is undefined */
		qsort(c->cg, c->ncg, sizeof(*c->cg), cmp_group);
	return 0;
}

/* Remembered blocks that wait for the budget: not those the memcg gate held
 * back this pass, which wait for room and count as skipped (memcg_limit). */
static uint64_t pending_bytes(const struct proc_state *s)
{
	uint64_t held = s->results[SCAN_MEMCG_LIMIT];

	return (s->nblocks > held ? s->nblocks - held : 0) * HPAGE_SIZE;
}

static int add_process(struct coverage *c, struct group_index *ix, const struct engine_stats *e,
		       const struct proc_state *s)
{
	struct cgroup_coverage *g = group_get(c, ix, e->cfg, s->cgroup ? s->cgroup : "/");

	if (!g)
		return -ENOMEM;
	g->usage.anon += s->usage.anon;
	g->usage.anon_huge += s->usage.anon_huge;
	g->usage.shmem += s->usage.shmem;
	g->usage.shmem_huge += s->usage.shmem_huge;
	g->pending += pending_bytes(s);
	g->processes++;
	for (int r = 0; r < SCAN_NR_RESULTS; r++)
		if (r != SCAN_CANDIDATE && r != SCAN_PMD_MAPPED)
			g->skipped[r] += s->results[r] * HPAGE_SIZE;
	return 0;
}

static int cmp_pending(const void *a, const void *b)
{
	const struct process_coverage *x = a, *y = b;

	if (x->pending != y->pending)
		return x->pending > y->pending ? -1 : 1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* The COVERAGE_TOP_PROCESSES processes with the most pending bytes. */
static int top_processes(struct coverage *c, const struct engine_stats *e)
{
	struct process_coverage all[COVERAGE_TOP_PROCESSES + 1];
	size_t n = 0;

	for (size_t i = 0; i < e->view.nprocs; i++) {
		const struct proc_state *s = &e->view.procs[i];

		if (!pending_bytes(s))
			continue;
		struct process_coverage p = {.pid = s->pid, .usage = s->usage, .pending = pending_bytes(s)};
		size_t at = n;

		/* Insertion into the sorted few: most processes stop here. */
		if (n == COVERAGE_TOP_PROCESSES && cmp_pending(&p, &all[n - 1]) >= 0)
			continue;
		while (at > 0 && cmp_pending(&p, &all[at - 1]) < 0)
			at--;
		memmove(&all[at + 1], &all[at], (n - at) * sizeof(*all));
		snprintf(p.comm, sizeof(p.comm), "%s", s->prev.comm);
		p.cgroup = s->cgroup;
		all[at] = p;
		if (n < COVERAGE_TOP_PROCESSES)
			n++;
	}
	c->top = calloc(n ? n : 1, sizeof(*c->top));
	if (!c->top)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		c->top[i] = all[i];
		/* The label of its group, bounded like the group series. */
		c->top[i].cgroup = strdup(coverage_label(c, e->cfg, all[i].cgroup ? all[i].cgroup : "/"));
		if (!c->top[i].cgroup)
			return -ENOMEM;
		c->ntop++;
	}
	return 0;
}

int coverage_build(const struct engine_stats *e, unsigned top_n, struct series_keep *keep, struct coverage *c)
{
	struct group_index ix;
	int r;

	memset(c, 0, sizeof(*c));
	r = group_index_init(&ix, (e->cfg ? e->cfg->nrules : 0) + e->view.nprocs + e->ncg_bytes);
	if (r < 0)
		return r;
	/* Policy groups appear even with no process in them yet: the alert
	 * on their coverage needs a series to compare. */
	for (size_t i = 0; e->cfg && i < e->cfg->nrules && !r; i++)
		r = group_get(c, &ix, e->cfg, e->cfg->rules[i].path) ? 0 : -ENOMEM;
	for (size_t i = 0; i < e->view.nprocs && !r; i++)
		if (e->view.procs[i].scanned && e->view.procs[i].cgroup)
			r = add_process(c, &ix, e, &e->view.procs[i]);
	for (size_t i = 0; i < e->ncg_bytes && !r; i++) {
		struct cgroup_coverage *g = group_get(c, &ix, e->cfg, e->cg_bytes[i].cgroup);

		if (g)
			g->collapsed += e->cg_bytes[i].bytes;
		else
			r = -ENOMEM;
	}
	free(ix.slot);
	if (!r)
		r = keep_top(c, top_n, keep);
	if (!r)
		r = top_processes(c, e);
	if (r)
		coverage_free(c);
	return r;
}

const char *coverage_label(const struct coverage *c, const struct config *cfg, const char *cgroup)
{
	const struct cgroup_rule *rule;
	const char *raw = group_of(cfg, cgroup, &rule);
	char *fixed = utf8_valid(raw) ? NULL : utf8_replaced_dup(raw);
	const char *name = fixed ? fixed : raw, *label = "other";

	for (size_t i = 0; i < c->ncg; i++)
		if (!strcmp(c->cg[i].cgroup, name)) {
			label = c->cg[i].cgroup;
			break;
		}
	free(fixed);
	return label;
}

size_t coverage_use_memory_stat(struct coverage *c, int mount_fd)
{
	size_t n = 0;

	for (size_t i = 0; i < c->ncg; i++) {
		struct thp_usage u;

		if (!strcmp(c->cg[i].cgroup, "other") || read_memory_stat_at(mount_fd, c->cg[i].cgroup, &u) < 0)
			continue;
		c->cg[i].usage = u;
		c->cg[i].source = COVERAGE_MEMORY_STAT;
		n++;
	}
	return n;
}

void coverage_free(struct coverage *c)
{
	for (size_t i = 0; i < c->ncg; i++)
		free(c->cg[i].cgroup);
	for (size_t i = 0; i < c->ntop; i++)
		free(c->top[i].cgroup);
	free(c->cg);
	free(c->top);
	memset(c, 0, sizeof(*c));
}
