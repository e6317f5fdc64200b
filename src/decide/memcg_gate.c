/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The memory-limit gate of a pass: which candidates fit in their cgroup. */
#include "memcg_gate.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "grow.h"
#include "log.h"
#include "pass.h"
#include "proc_state.h"
#include "procfs.h"

#define CGROUP_FILE 32768 /* /proc/PID/cgroup: long on v1 hosts */
#define NO_LIMIT    (-1)  /* no memory cgroup applies: never held back */
#define UNKNOWN     (-2)  /* not looked up yet in this pass */
#define RETRY_S     10.0  /* while the mounts are unknown: how often to read mountinfo again */

struct cg_room {
	char *path;
	uint64_t room; /* as read this pass */
	uint64_t left; /* what the blocks ahead in the order left of it */
	int err;       /* the limits could not be read: hold back */
};

struct memcg_gate {
	struct memcg_roots roots;
	bool have_roots;
	/* The mounts could not be found (mountinfo unreadable, malformed or
	 * past MOUNTINFO_MAX_BYTES): every block is held back, never let
	 * through as "no memory controller" (issue 16, defect 6). */
	int roots_err;
	double roots_tried;    /* in->now of the last attempt */
	const char *mountinfo; /* paths->mountinfo; tests set another */
	unsigned ncpus;
	uint64_t pass; /* in->pass the cache below belongs to */
	struct cg_room *cg;
	size_t ncg, capcg;
	int32_t *cg_of; /* per in->st index: index in cg, NO_LIMIT or UNKNOWN */
	uint32_t *held; /* per in->st index: blocks held back this call */
	size_t capcg_of, capheld;
	char *cgroup_buf;         /* CGROUP_FILE bytes, kept: one read per process per pass */
	char warned[PATH_MAX];    /* the last cgroup warned about: once, not every pass */
	bool counted;             /* the last call counted held[] in its pass_stats */
	struct candidate *passed; /* the last call's output: what fits, in order */
	size_t npassed, cappassed;
};

struct memcg_gate *memcg_gate_new(const char *mountinfo)
{
	struct memcg_gate *g = calloc(1, sizeof(*g));
	long n;

	if (!g)
		return NULL;
	n = sysconf(_SC_NPROCESSORS_ONLN);
	g->ncpus = n > 0 ? (unsigned)n : 1;
	g->pass = UINT64_MAX;
	g->mountinfo = mountinfo;
	return g;
}

int memcg_gate_set_roots(struct memcg_gate *g, const struct memcg_roots *roots)
{
	g->roots = *roots;
	g->have_roots = true;
	g->roots_err = 0;
	g->pass = UINT64_MAX;
	return 0;
}

static void cache_clear(struct memcg_gate *g)
{
	for (size_t i = 0; i < g->ncg; i++)
		free(g->cg[i].path);
	g->ncg = 0;
}

void memcg_gate_free(struct memcg_gate *g)
{
	if (!g)
		return;
	cache_clear(g);
	free(g->cg);
	free(g->cg_of);
	free(g->held);
	free(g->passed);
	free(g->cgroup_buf);
	free(g);
}

/* The memory cgroup path of a process, from /proc/PID/cgroup. */
static int proc_memcg_path(const char *proc_root, struct memcg_gate *g, pid_t pid, char *path, size_t len)
{
	char file[PATH_MAX];
	ssize_t n;

	if (!g->cgroup_buf)
		g->cgroup_buf = malloc(CGROUP_FILE);
	if (!g->cgroup_buf)
		return -ENOMEM;
	snprintf(file, sizeof(file), "%s/%d/cgroup", proc_root, (int)pid);
	n = read_one_shot_at(AT_FDCWD, file, g->cgroup_buf, CGROUP_FILE);
	if (n < 0)
		return (int)n;
	if (g->roots.mode == MEMCG_V1)
		return parse_cgroup_v1_buf(g->cgroup_buf, (size_t)n, "memory", path, len);
	return parse_cgroup_buf(g->cgroup_buf, (size_t)n, path, len);
}

/* The cache entry of process st[p]'s cgroup: read on first use this pass. */
static int32_t cg_lookup(const struct memcg_gate_input *in, struct memcg_gate *g, uint32_t p)
{
	const struct proc_state *s = &in->st[p];
	char path[PATH_MAX];
	struct cg_room *c;
	int r = proc_memcg_path(in->proc_root, g, s->pid, path, sizeof(path));

	if (r < 0) {
		/* Gone, or no line for it: dispatch finds out which. */
		log_proc(LOG_DEBUG, s->pid, proc_state_cgroup(s), NULL, "pid %d: no memory cgroup: %s", (int)s->pid,
			 strerror(-r));
		return NO_LIMIT;
	}
	for (size_t i = 0; i < g->ncg; i++)
		if (!strcmp(g->cg[i].path, path))
			return (int32_t)i;
	if (g->ncg >= INT32_MAX || GROW(g->cg, g->capcg, g->ncg + 1) < 0)
		return NO_LIMIT;
	c = &g->cg[g->ncg];
	c->path = strdup(path);
	if (!c->path)
		return NO_LIMIT;
	c->err = memcg_room(&g->roots, path, &c->room);
	c->left = c->room;
	/* What the pass decides by: the room is read once, before any collapse. */
	if (c->err == 0 && c->room != MEMCG_UNLIMITED)
		log_proc(LOG_DEBUG, s->pid, path, NULL, "memory cgroup %s: room %llu KiB below its limits", path,
			 (unsigned long long)(c->room >> 10));
	if (c->err < 0) {
		log_proc(strcmp(g->warned, path) ? LOG_WARNING : LOG_DEBUG, s->pid, path, "memcg_limit",
			 "cgroup %s: cannot read its memory limits (%s): not collapsing there this pass", path,
			 strerror(-c->err));
		snprintf(g->warned, sizeof(g->warned), "%s", path);
	}
	return (int32_t)g->ncg++;
}

const struct candidate *memcg_gate_passed(const struct memcg_gate *g, size_t *n)
{
	*n = g->npassed;
	return g->passed;
}

bool memcg_gate_counted(const struct memcg_gate *g)
{
	return g->counted;
}

uint32_t memcg_gate_held(const struct memcg_gate *g, size_t p)
{
	return p < g->capheld ? g->held[p] : 0;
}

/* This pass's held-back blocks are memcg_limit, not candidate, in ps (each
 * process's own results are its owner's: proc_state_memcg_held()). */
static void account(const struct memcg_gate_input *in, const struct memcg_gate *g, struct pass_stats *ps)
{
	for (size_t p = 0; p < in->nst; p++) {
		const struct proc_state *s = &in->st[p];
		uint64_t now = memcg_gate_held(g, p);

		if (!now)
			continue;
		if (g->cg_of[p] >= 0)
			log_proc(LOG_DEBUG, s->pid, g->cg[g->cg_of[p]].path, "memcg_limit",
				 "pid %d: %llu blocks wait for room below the limits of memory cgroup %s", (int)s->pid,
				 (unsigned long long)now, g->cg[g->cg_of[p]].path);
		ps->results[SCAN_MEMCG_LIMIT] += now;
		if (s->last_scan >= in->sample_time)
			ps->results[SCAN_CANDIDATE] -=
			    now < ps->results[SCAN_CANDIDATE] ? now : ps->results[SCAN_CANDIDATE];
	}
}

int memcg_gate_set_mountinfo(struct memcg_gate *g, const char *path)
{
	g->mountinfo = path;
	g->have_roots = false;
	g->roots_err = 0;
	return 0;
}

int memcg_gate_error(const struct memcg_gate *g)
{
	return g ? g->roots_err : 0;
}

/* The mounts, at the first pass and again every RETRY_S while unknown. */
static void find_roots(double now, struct memcg_gate *g)
{
	const char *path = g->mountinfo;
	int r;

	if (g->have_roots && (!g->roots_err || now - g->roots_tried < RETRY_S))
		return;
	g->roots_tried = now;
	r = memcg_roots_find(path, &g->roots);
	if (r < 0) {
		if (!g->roots_err)
			log_err("cannot find the memory cgroup mounts in %s (%s): holding back every collapse until "
				"it can be read",
				path, strerror(-r));
		g->roots.mode = MEMCG_NONE;
	} else if (g->roots_err) {
		log_info("memory cgroup mounts found in %s again: collapsing resumes", path);
	}
	g->roots_err = r < 0 ? r : 0;
	g->have_roots = true;
}

static int gate_prepare(const struct memcg_gate_input *in, struct memcg_gate *g)
{
	find_roots(in->now, g);
	if (g->pass != in->pass) {
		cache_clear(g);
		g->pass = in->pass;
		if (GROW(g->cg_of, g->capcg_of, in->nst + 1) < 0)
			return -ENOMEM;
		for (size_t i = 0; i < in->nst; i++)
			g->cg_of[i] = UNKNOWN;
	}
	if (GROW(g->held, g->capheld, in->nst + 1) < 0)
		return -ENOMEM;
	memset(g->held, 0, g->capheld * sizeof(*g->held));
	for (size_t i = 0; i < g->ncg; i++)
		g->cg[i].left = g->cg[i].room;
	return 0;
}

int memcg_gate_hold_back(struct memcg_gate *g, const struct memcg_gate_input *in, const struct candidate *cands,
			 size_t ncands, struct pass_stats *ps)
{
	size_t n = 0, nheld;
	int r;

	g->counted = false;
	g->npassed = 0;
	r = gate_prepare(in, g);
	if (r == 0 && GROW(g->passed, g->cappassed, ncands + 1) < 0)
		r = -ENOMEM;
	if (r < 0)
		return r;
	if (g->roots.mode == MEMCG_NONE && !g->roots_err) {
		memcpy(g->passed, cands, ncands * sizeof(*cands));
		g->npassed = ncands;
		return 0;
	}
	for (size_t i = 0; i < ncands && g->roots_err; i++)
		g->held[cands[i].proc]++; /* fail closed */
	for (size_t i = 0; i < ncands && !g->roots_err; i++) {
		struct candidate c = cands[i];
		const struct policy *pol = in->st[c.proc].policy;
		int32_t k;

		if (g->cg_of[c.proc] == UNKNOWN)
			g->cg_of[c.proc] = cg_lookup(in, g, c.proc);
		k = g->cg_of[c.proc];
		if (k == NO_LIMIT ||
		    (!g->cg[k].err &&
		     memcg_take(&g->cg[k].left, memcg_headroom_bytes(pol ? pol->memcg_headroom_mb : 0, g->ncpus),
				c.present)))
			g->passed[n++] = c;
		else
			g->held[c.proc]++;
	}
	nheld = ncands - n;
	g->npassed = n;
	if (ps) {
		account(in, g, ps);
		g->counted = true;
	}
	return nheld > INT32_MAX ? INT32_MAX : (int)nheld;
}
