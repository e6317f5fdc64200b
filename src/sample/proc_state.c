/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The process table: find, update from a sample, sweep the exited. */
#include "proc_state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* A process counts as active when it used this much CPU per second, or
 * faulted at all, since the last sample. */
#define ACTIVE_CPU 0.01

struct proc_state *proc_state_find(struct proc_state *st, size_t n, pid_t pid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (st[mid].pid == pid)
			return &st[mid];
		if (st[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void proc_state_clear(struct proc_state *s)
{
	free(s->cgroup);
	free(s->blocks);
	addr_set_free(&s->refused);
	addr_set_free(&s->given_up);
	memset(s, 0, sizeof(*s));
}

void proc_state_memcg_held(struct proc_state *s, uint64_t held)
{
	uint64_t *res = s->results;

	res[SCAN_CANDIDATE] += res[SCAN_MEMCG_LIMIT]; /* the last pass's count undone first */
	res[SCAN_MEMCG_LIMIT] = held;
	res[SCAN_CANDIDATE] -= held < res[SCAN_CANDIDATE] ? held : res[SCAN_CANDIDATE];
}

const char *proc_state_cgroup(const struct proc_state *s)
{
	return s->cgroup ? s->cgroup : "?";
}

static int cmp_state(const void *a, const void *b)
{
	pid_t x = ((const struct proc_state *)a)->pid, y = ((const struct proc_state *)b)->pid;

	return (x > y) - (x < y);
}

static uint64_t delta(uint64_t now, uint64_t before)
{
	return now > before ? now - before : 0;
}

/* Updates one existing state from its new sample. dt is the time since
 * the table's last sample; a process sampled on its own since has its own. */
static void state_update(struct proc_state *s, const struct proc_sample *p, double dt, long hz, double now)
{
	if (s->sample_time > 0 && now > s->sample_time)
		dt = now - s->sample_time;
	s->sample_time = now;
	uint64_t dmin = delta(p->minflt, s->prev.minflt), dmaj = delta(p->majflt, s->prev.majflt);

	s->unread_samples = 0;
	s->activity = activity_from_deltas(delta(p->cpu_ticks, s->prev.cpu_ticks), dmin, dmaj, dt, hz);
	if (s->activity.cpu >= ACTIVE_CPU || dmin + dmaj > 0)
		s->last_active = now;
	s->prev = *p;
}

/* A process seen for the first time (or its PID recycled). */
static void state_init(struct proc_state *s, const struct proc_sample *p, double now)
{
	memset(s, 0, sizeof(*s));
	s->pid = p->pid;
	s->start_ticks = p->start_ticks;
	s->prev = *p;
	s->sample_time = now;
	s->last_active = -1e9; /* unknown until a delta shows activity */
	s->seen = true;
}

int proc_states_update(struct proc_state **pst, size_t *pn, size_t *pcap, const struct proc_table *sample, double dt,
		       long hz, double now)
{
	struct proc_state *st = *pst;
	size_t n = *pn, nadd = 0, w;

	for (size_t i = 0; i < n; i++)
		st[i].seen = false;
	for (size_t i = 0; i < sample->n; i++) {
		const struct proc_sample *p = &sample->p[i];
		struct proc_state *s = proc_state_find(st, n, p->pid);

		if (s && s->start_ticks == p->start_ticks) {
			state_update(s, p, dt, hz, now);
			s->seen = true;
			continue;
		}
		/* A recycled PID is a different process: its old state is
		 * cleared (swept below) and it is appended like a new one, so
		 * it needs a slot of its own. */
		if (s)
			proc_state_clear(s);
		nadd++;
	}
	/* Sweep exited processes, then append new ones and restore the order. */
	w = 0;
	for (size_t i = 0; i < n; i++) {
		if (!st[i].seen && st[i].pid) {
			proc_state_clear(&st[i]);
			continue;
		}
		if (!st[i].pid)
			continue;
		st[w++] = st[i];
	}
	n = w;
	*pn = n;
	if (GROW(*pst, *pcap, n + nadd + 1) < 0)
		return -ENOMEM;
	st = *pst;
	for (size_t i = 0; i < sample->n; i++) {
		const struct proc_sample *p = &sample->p[i];
		struct proc_state *s = proc_state_find(st, w, p->pid);

		if (s)
			continue;
		s = &st[n++];
		state_init(s, p, now);
	}
	if (n != w)
		qsort(st, n, sizeof(*st), cmp_state);
	*pn = n;
	return 0;
}

/* st[0..known) and st[known..n) are each sorted by pid (the sample is):
 * merges them from the back, with the few new ones aside, instead of
 * sorting the whole table every pass. */
static int merge_new(struct proc_state *st, size_t known, size_t n)
{
	size_t nnew = n - known, i = known, j = nnew, w = n;
	struct proc_state *add = malloc(nnew * sizeof(*add));

	if (!add) { /* correct, only slower */
		qsort(st, n, sizeof(*st), cmp_state);
		return 0;
	}
	memcpy(add, st + known, nnew * sizeof(*add));
	while (j > 0) {
		if (i > 0 && st[i - 1].pid > add[j - 1].pid)
			st[--w] = st[--i];
		else
			st[--w] = add[--j];
	}
	free(add);
	return 0;
}

int proc_states_merge(struct proc_state **pst, size_t *pn, size_t *pcap, const struct proc_table *sample, long hz,
		      double now)
{
	size_t n = *pn, known = *pn;

	if (GROW(*pst, *pcap, n + sample->n + 1) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < sample->n; i++) {
		const struct proc_sample *p = &sample->p[i];
		struct proc_state *s = proc_state_find(*pst, known, p->pid);

		if (s && s->start_ticks == p->start_ticks) {
			state_update(s, p, 0, hz, now);
		} else if (s) {
			proc_state_clear(s); /* recycled: same slot, same order */
			state_init(s, p, now);
		} else {
			state_init(&(*pst)[n++], p, now);
		}
	}
	*pn = n;
	return n != known ? merge_new(*pst, known, n) : 0;
}

void proc_states_forget(struct proc_state *st, size_t *pn, const pid_t *gone, size_t ngone)
{
	size_t w = 0, j = 0;

	for (size_t i = 0; i < *pn; i++) {
		while (j < ngone && gone[j] < st[i].pid)
			j++;
		if (j < ngone && gone[j] == st[i].pid) {
			proc_state_clear(&st[i]);
			continue;
		}
		if (w != i)
			st[w] = st[i];
		w++;
	}
	*pn = w;
}

int proc_states_sweep(struct proc_state *st, size_t *pn, const pid_t *alive, size_t nalive, pid_t **fresh,
		      size_t *nfresh, size_t *capfresh)
{
	size_t i = 0, j = 0, w = 0, n = *pn;
	int r = 0;

	*nfresh = 0;
	while (i < n || j < nalive) {
		if (j == nalive || (i < n && st[i].pid < alive[j])) {
			proc_state_clear(&st[i++]); /* exited */
		} else if (i == n || alive[j] < st[i].pid) {
			if (r == 0 && GROW(*fresh, *capfresh, *nfresh + 1) < 0)
				r = -ENOMEM;
			if (r == 0)
				(*fresh)[(*nfresh)++] = alive[j];
			j++;
		} else {
			if (w != i)
				st[w] = st[i];
			w++;
			i++;
			j++;
		}
	}
	*pn = w;
	return r;
}
