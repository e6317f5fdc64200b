/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The process table: find, update from a sample, sweep the exited. */
#include "proc_table.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "grow.h"
#include "sample_set.h"

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

/* The /proc listing: sweeps the exited, and leaves in e->fresh the new PIDs
 * not known to have no memory. */
static int list_and_sweep(struct engine *e)
{
	int r = procs_list_pids(e->paths->proc, &e->listing, &e->nlisting, &e->caplisting);

	if (r < 0)
		return r;
	r = proc_states_sweep(e->st, &e->nst, e->listing, e->nlisting, &e->fresh, &e->nfresh, &e->capfresh);
	if (r < 0)
		return r;
	e->nnomm = pids_intersect(e->nomm, e->nnomm, e->listing, e->nlisting, e->nomm);
	e->nfresh = pids_diff(e->fresh, e->nfresh, e->nomm, e->nnomm, e->fresh);
	return 0;
}

/* Fresh PIDs whose stat showed no memory (kernel threads) are not read
 * again until the listing drops them. Zombies are: their PID is freed when
 * the parent reaps them and may be reused before the next listing (5 s),
 * which would keep a new process out of sight until a full sample (issue
 * 16); a zombie costs one stat read per listing. */
static int remember_nomm(struct engine *e)
{
	size_t k = pids_diff(e->fresh, e->nfresh, e->nomm, e->nnomm, e->fresh), w = 0;

	k = pids_diff(e->fresh, k, e->sample.zombies, e->sample.nzombies, e->fresh);

	for (size_t i = 0; i < k; i++)
		if (!proc_table_find(&e->sample, e->fresh[i]))
			e->fresh[w++] = e->fresh[i];
	return pids_add(&e->nomm, &e->nnomm, &e->capnomm, e->fresh, w);
}

/* New PIDs remembered for a growth of mapped memory, at most. */
#define NEWCOMERS_MAX 1024

/* Adds this drain's samples to each named process's unread ones, and
 * remembers the new PIDs named too rarely to be read now (newcomers). */
static int count_samples(struct engine *e)
{
	int r = 0;

	for (size_t i = 0; i < e->faulted.n; i++) {
		struct proc_state *s = proc_state_find(e->st, e->nst, e->faulted.pid[i]);
		uint32_t c = e->faulted.count ? e->faulted.count[i] : 1;

		if (s)
			s->unread_samples = s->unread_samples > UINT32_MAX - c ? UINT32_MAX : s->unread_samples + c;
		else if (!sample_faulted_now(NULL, c, e->policy_gen) && e->nnewcomers < NEWCOMERS_MAX && r == 0)
			r = pids_add(&e->newcomers, &e->nnewcomers, &e->capnewcomers, &e->faulted.pid[i], 1);
	}
	return r;
}

/* A full sample costs about 15 us per process: memory mapped without
 * faults asks for one at most this often (the move stays remembered). */
#define MAPPED_FULL_SAMPLE_S 5.0

/* An injected enumerator with the real doorbell: the partial path would
 * read the real /proc (or a fixture root) behind the enumerator's back, so
 * such a test sees every pass sample through its enumerator. A test that
 * injects the doorbell too gets the partial path. */
static bool enumerator_only(const struct engine *e)
{
	return e->enumerate != engine_enumerate_procs && e->doorbell_drain == fault_doorbell_drain;
}

static bool full_sample_needed(struct engine *e, const struct pass_options *o, double now)
{
	return e->sample_time == 0 || o->npids || o->unlimited || e->faulted.lost || enumerator_only(e) ||
	       (e->mapped_moved && now - e->last_full_sample >= MAPPED_FULL_SAMPLE_S);
}

int engine_sample_pass(struct engine *e, const struct pass_options *o, struct pass_stats *ps)
{
	const struct config *c = e->cfg;
	double now = e->now(), dt = e->sample_time > 0 ? now - e->sample_time : 0;
	struct sample_request rq = {.faulted = &e->faulted, .self = e->self, .policy_gen = e->policy_gen};
	int r;

	ps->full_sample = false;
	fault_pids_reset(&e->faulted);
	/* Drained on every pass, so the rings never fill while we sample
	 * everything anyway; -ENODEV (no doorbell) sets lost. */
	r = e->doorbell_drain(&e->doorbell, &e->faulted);
	if (r == -ENOMEM)
		return r;
	/* Growth the faults explain is not "mapped without faults". */
	mapped_watch_faulted(&e->mapped, e->faulted.samples * DOORBELL_PERIOD * 4);
	if (mapped_watch_moved(&e->mapped, now))
		e->mapped_moved = true;
	if (e->mapped.grew) /* consumed: one listing per growth seen */
		e->mapped_unlisted = true, e->mapped.grew = false;
	if (full_sample_needed(e, o, now)) {
		e->mapped_moved = false;
		e->last_full_sample = now;
		e->last_listing = now;
		e->nfresh = 0;
		e->full_samples++;
		ps->full_sample = true;
		r = engine_sample(e);
		ps->procs_sampled = (unsigned)e->sample.n;
		e->stat_reads += e->sample.n;
		return r;
	}
	e->nfresh = 0;
	r = count_samples(e);
	if (r < 0)
		return r;
	/* Memory mapped without faults is most often a new process's
	 * (MAP_POPULATE at start): when the total grew, faults or not, read
	 * the new processes the doorbell named (exec faults) too rarely to be
	 * read then, or, when it named none, list /proc within a second; both
	 * come before the full sample (which may have to wait
	 * MAPPED_FULL_SAMPLE_S, or never come when others' faults explain the
	 * growth). A listing costs about 0.5 us per process (5 ms at 10,000),
	 * a newcomer's stat read 15 us. */
	if (now - e->last_listing >= LISTING_PERIOD_S ||
	    (e->mapped_unlisted && !e->nnewcomers && now - e->last_listing >= 1.0)) {
		e->mapped_unlisted = false;
		r = list_and_sweep(e); /* finds every newcomer still alive */
		if (r < 0)
			return r;
		e->last_listing = now;
		e->nnewcomers = 0;
	} else if (e->mapped_unlisted && e->nnewcomers) {
		/* Not through e->fresh: those gone by now are not "no mm". */
		e->mapped_unlisted = false;
		rq.fresh = e->newcomers;
		rq.nfresh = e->nnewcomers;
		e->nnewcomers = 0;
	}
	if (!rq.fresh) { /* the listing's (it may have moved e->fresh) */
		rq.fresh = e->fresh;
		rq.nfresh = e->nfresh;
	}
	/* Every process once per full_rescan_s, at an even rate: the slice
	 * carries its fraction over to the next pass. */
	e->roll_credit += (double)e->nst * dt / (c->full_rescan_s ? c->full_rescan_s : 1);
	if (e->roll_credit > (double)e->nst + 1)
		e->roll_credit = (double)e->nst + 1;
	rq.roll = (size_t)e->roll_credit;
	e->roll_credit -= (double)rq.roll;
	r = sample_set_build(e->st, e->nst, &rq, &e->roll_pid, &e->want, &e->nwant, &e->capwant);
	if (r < 0)
		return r;
	if (e->proc_fd <= 0) { /* kept: a path walk of /proc per pass costs more than the reads */
		e->proc_fd = open(e->paths->proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (e->proc_fd < 0) {
			r = -errno;
			e->proc_fd = 0;
			return r;
		}
	}
	r = procs_sample_pids_at(e->proc_fd, e->want, e->nwant, &e->sample);
	if (r < 0)
		return r;
	e->partial_samples++;
	e->stat_reads += e->nwant;
	ps->procs_sampled = (unsigned)e->nwant;
	e->sample_time = now;
	r = remember_nomm(e);
	if (r == 0)
		r = proc_states_merge(&e->st, &e->nst, &e->capst, &e->sample, e->hz, now);
	return r;
}
