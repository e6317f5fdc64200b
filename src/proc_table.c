/* The process table: find, update from a sample, sweep the exited. */
#include "proc_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
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

/* Updates one existing state from its new sample. */
static void state_update(struct proc_state *s, const struct proc_sample *p, double dt, long hz, double now)
{
	uint64_t dmin = delta(p->minflt, s->prev.minflt), dmaj = delta(p->majflt, s->prev.majflt);

	s->activity = activity_from_deltas(delta(p->cpu_ticks, s->prev.cpu_ticks), dmin, dmaj, dt, hz);
	if (s->activity.cpu >= ACTIVE_CPU || dmin + dmaj > 0)
		s->last_active = now;
	s->prev = *p;
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
		memset(s, 0, sizeof(*s));
		s->pid = p->pid;
		s->start_ticks = p->start_ticks;
		s->prev = *p;
		s->last_active = -1e9; /* unknown until a delta shows activity */
		s->seen = true;
	}
	if (n != w)
		qsort(st, n, sizeof(*st), cmp_state);
	*pn = n;
	return 0;
}

int engine_sample(struct engine *e)
{
	double now, dt;
	int r;

	r = e->enumerate(e->enumerate_ctx, &e->sample);
	if (r < 0)
		return r;
	now = e->now();
	dt = e->sample_time > 0 ? now - e->sample_time : 0;
	e->sample_time = now;
	return proc_states_update(&e->st, &e->nst, &e->capst, &e->sample, dt, e->hz, now);
}

const struct proc_state *engine_find(const struct engine *e, pid_t pid)
{
	return proc_state_find(e->st, e->nst, pid);
}
