/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The sampler: who is read this pass, reading them, and the doorbell. */
#include "sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"
#include "log.h"
#include "proc_state.h"
#include "sample_set.h"

#define DOORBELL_CHECK_S 1.0

/* Says how the doorbell counts, if that changed since the last look. */
static void log_counting(struct sampler *sm)
{
	int now = sm->doorbell.news ? 1 : sm->doorbell.news_err;

	if (!sm->doorbell.ncpu || !sm->doorbell.per_process || now == sm->doorbell_counting)
		return;
	sm->doorbell_counting = now;
	if (now == 1)
		log_info("page-fault doorbell: news counted per process (BPF filter)");
	else
		log_info("page-fault doorbell: news counted per CPU, not per process (BPF filter: %s)", strerror(-now));
}

/* A CPU that came online since the events were opened has none (a pass
 * that is not idle looks, at most every DOORBELL_CHECK_S; about 10 us), and one that went offline and came
 * back between two looks has a silent one: those are opened again at least
 * every full_rescan_s, the bound on what the doorbell may miss anyway. */
void sampler_refresh_doorbell(struct sampler *e, double now, double full_rescan_s)
{
	bool force = now - e->doorbell_opened >= full_rescan_s;
	int r;

	/* The online list costs a sysfs read (3 system calls): once a second
	 * is enough, not on every pass the doorbell wakes. */
	if (!force && now - e->doorbell_checked < DOORBELL_CHECK_S)
		return;
	e->doorbell_checked = now;
	r = fault_doorbell_refresh(&e->doorbell, force);
	if (r == 0)
		return;
	e->doorbell_opened = now;
	if (r < 0)
		log_info("page-fault doorbell lost (perf events: %s): every pass samples every process", strerror(-r));
	else if (strcmp(e->doorbell.online, e->doorbell_logged))
		log_info("page-fault doorbell on %d CPUs (online: %.*s)", e->doorbell.ncpu,
			 (int)strcspn(e->doorbell.online, "\n"), e->doorbell.online);
	snprintf(e->doorbell_logged, sizeof(e->doorbell_logged), "%s", e->doorbell.online);
	log_counting(e);
}

int sampler_enumerate_procs(void *ctx, struct proc_table *out)
{
	return procs_sample(ctx, out);
}

void sampler_init(struct sampler *sm, void *enumerate_ctx)
{
	sm->enumerate = sampler_enumerate_procs;
	sm->enumerate_ctx = enumerate_ctx;
	sm->proc_fd = -1; /* fd 0 is a valid fd when stdin was closed */
	stat_fds_init(&sm->stat_fds);
	sm->doorbell_rang = fault_doorbell_rang;
	sm->doorbell_drain = fault_doorbell_drain;
}

void sampler_open_doorbell(struct sampler *sm, double now, unsigned wakeup, bool per_process)
{
	int r = fault_doorbell_open(&sm->doorbell, wakeup, per_process);

	if (r < 0)
		log_info("no page-fault doorbell (perf events: %s): every pass samples every process", strerror(-r));
	else
		log_info("page-fault doorbell on %d CPUs (online: %.*s); process births and exits %s",
			 sm->doorbell.ncpu, (int)strcspn(sm->doorbell.online, "\n"), sm->doorbell.online,
			 sm->doorbell.tasks ? "from perf task records" : "from a listing of /proc every 5 s");
	log_counting(sm);
	sm->doorbell_opened = now;
	snprintf(sm->doorbell_logged, sizeof(sm->doorbell_logged), "%s", sm->doorbell.online);
}

void sampler_free(struct sampler *sm)
{
	proc_table_free(&sm->sample);
	fault_pids_free(&sm->faulted);
	free(sm->listing);
	free(sm->fresh);
	free(sm->nomm);
	free(sm->want);
	free(sm->newcomers);
	task_events_free(&sm->tasks);
	free(sm->born);
	free(sm->gone);
	free(sm->pend);
	free(sm->pend2);
	fault_doorbell_close(&sm->doorbell);
	mapped_watch_close(&sm->mapped);
	stat_fds_close(&sm->stat_fds);
	if (sm->proc_fd >= 0)
		close(sm->proc_fd);
	memset(sm, 0, sizeof(*sm));
	sm->proc_fd = -1;
	stat_fds_init(&sm->stat_fds);
}

bool sampler_rang(const struct sampler *sm)
{
	return sm->doorbell_rang(&sm->doorbell);
}

void sampler_doorbell_wakeup(struct sampler *sm, unsigned wakeup, bool per_process)
{
	if (sm->doorbell.ncpu && fault_doorbell_set_wakeup(&sm->doorbell, wakeup, per_process) < 0)
		log_warn("cannot open the page-fault doorbell again: every pass samples every process");
	log_counting(sm);
}

const struct fault_pids *sampler_peek(struct sampler *sm)
{
	return fault_doorbell_peek(&sm->doorbell);
}

bool sampler_mapped_quiet(struct sampler *sm, double now)
{
	/* Remembered: a move asks for a full sample. */
	if (mapped_watch_moved(&sm->mapped, now))
		sm->mapped_moved = true;
	if (sm->mapped.grew) /* consumed: one listing per growth seen */
		sm->mapped_unlisted = true, sm->mapped.grew = false;
	return !sm->mapped_moved;
}

void sampler_after_pass(struct sampler *sm, double (*now)(void))
{
	if (!sm->mapped.known)
		mapped_watch_note(&sm->mapped, now());
}

int sampler_sample_all(struct sampler *sm, double (*clock)(void), long hz, const struct sample_table *t)
{
	double now, dt;
	int r;

	r = sm->enumerate(sm->enumerate_ctx, &sm->sample);
	if (r < 0)
		return r;
	now = clock();
	dt = sm->sample_time > 0 ? now - sm->sample_time : 0;
	sm->sample_time = now;
	return proc_states_update(t->st, t->n, t->cap, &sm->sample, dt, hz, now);
}

/* The /proc listing: sweeps the exited, and leaves in e->fresh the new PIDs
 * not known to have no memory. */
static int list_and_sweep(struct sampler *e, const char *proc_root, const struct sample_table *t)
{
	int r = procs_list_pids(proc_root, &e->listing, &e->nlisting, &e->caplisting);

	if (r < 0)
		return r;
	e->listings++;
	r = proc_states_sweep(*t->st, t->n, e->listing, e->nlisting, &e->fresh, &e->nfresh, &e->capfresh);
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
static int remember_nomm(struct sampler *e)
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
 * remembers the new PIDs named too rarely to be read now (newcomers),
 * gathered in e->fresh (empty here) and added in one sort: a shell's
 * short commands name dozens a pass. */
static int count_samples(struct sampler *e, const struct sample_table *t, unsigned policy_gen)
{
	size_t room = e->nnewcomers < NEWCOMERS_MAX ? NEWCOMERS_MAX - e->nnewcomers : 0;

	if (GROW(e->fresh, e->capfresh, e->faulted.n) < 0)
		return -ENOMEM;
	e->nfresh = 0;
	for (size_t i = 0; i < e->faulted.n; i++) {
		struct proc_state *s = proc_state_find(*t->st, *t->n, e->faulted.pid[i]);
		uint32_t c = e->faulted.count ? e->faulted.count[i] : 1;

		if (s)
			s->unread_samples = s->unread_samples > UINT32_MAX - c ? UINT32_MAX : s->unread_samples + c;
		else if (!sample_faulted_now(NULL, c, policy_gen) && e->nfresh < room)
			e->fresh[e->nfresh++] = e->faulted.pid[i];
	}
	return pids_add(&e->newcomers, &e->nnewcomers, &e->capnewcomers, e->fresh, e->nfresh);
}

/* A full sample costs about 15 us per process: memory mapped without
 * faults asks for one at most this often (the move stays remembered). */
#define MAPPED_FULL_SAMPLE_S 5.0

/* An injected enumerator with the real doorbell: the partial path would
 * read the real /proc (or a fixture root) behind the enumerator's back, so
 * such a test sees every pass sample through its enumerator. A test that
 * injects the doorbell too gets the partial path. */
static bool enumerator_only(const struct sampler *e)
{
	return e->enumerate != sampler_enumerate_procs && e->doorbell_drain == fault_doorbell_drain;
}

/* Whether births and exits come from the doorbell's task records. A test
 * that injects the drain has no task records: it lists /proc. */
static bool tasks_known(const struct sampler *e)
{
	return e->doorbell.tasks && e->doorbell_drain == fault_doorbell_drain;
}

/* Births and exits since the last pass (fault_doorbell_tasks()): sets
 * e->born and e->gone, or e->tasks_lost. Without task events, neither. */
static int read_tasks(struct sampler *e)
{
	int r;

	e->nborn = e->ngone = 0;
	task_events_reset(&e->tasks);
	if (e->doorbell_drain != fault_doorbell_drain ||
	    (!e->doorbell.tasks && !e->doorbell.kept_tasks.n && !e->doorbell.kept_tasks.lost))
		return 0;
	r = fault_doorbell_tasks(&e->doorbell, &e->tasks);
	if (r == -ENOMEM)
		return r;
	if (e->tasks.lost) {
		e->tasks_lost = true;
		return 0;
	}
	return task_events_reduce(&e->tasks, &e->born, &e->nborn, &e->capborn, &e->gone, &e->ngone, &e->capgone);
}

/* When /proc is listed: every LISTING_PERIOD_S without task records; with
 * them only once per full_rescan_s (what they may miss: a process born
 * before its CPU's events were opened again), and at once after they lost
 * some. */
static bool listing_due(const struct sampler *e, const struct sample_input *in, double now)
{
	if (!tasks_known(e))
		return now - e->last_listing >= LISTING_PERIOD_S;
	return e->tasks_lost || now - e->last_listing >= in->full_rescan_s;
}

/* Pending born PIDs: the gone dropped, the born merged in (sorted). */
static int pend_update(struct sampler *e, double now)
{
	size_t i = 0, j = 0, g = 0, w = 0;

	if (GROW(e->pend2, e->cappend2, e->npend + e->nborn + 1) < 0)
		return -ENOMEM;
	while (i < e->npend || j < e->nborn) {
		struct born_pid b;

		if (j == e->nborn || (i < e->npend && e->pend[i].pid < e->born[j]))
			b = e->pend[i++];
		else if (i == e->npend || e->born[j] < e->pend[i].pid)
			b = (struct born_pid){.pid = e->born[j++], .at = now};
		else /* born again: its PID was reused */
			b = (struct born_pid){.pid = e->born[j++], .at = now}, i++;
		while (g < e->ngone && e->gone[g] < b.pid)
			g++;
		if (g < e->ngone && e->gone[g] == b.pid)
			continue;
		e->pend2[w++] = b;
	}
	{
		struct born_pid *t = e->pend;
		size_t c = e->cappend;

		e->pend = e->pend2, e->cappend = e->cappend2;
		e->pend2 = t, e->cappend2 = c;
	}
	e->npend = w;
	return 0;
}

/* What the task records say, in place of a listing: the gone are
 * forgotten; the born that lived LISTING_PERIOD_S (all of them if now_all,
 * when memory was mapped without faults) are read this pass, unless known
 * to have no memory. */
static int apply_tasks(struct sampler *e, const struct sample_table *t, double now, bool now_all)
{
	size_t w = 0, nready = 0;
	int r;

	proc_states_forget(*t->st, t->n, e->gone, e->ngone);
	e->nnomm = pids_diff(e->nomm, e->nnomm, e->gone, e->ngone, e->nomm);
	r = pend_update(e, now);
	if (r < 0)
		return r;
	if (e->npend > TASK_EVENTS_MAX) { /* a listing is cheaper */
		e->npend = 0;
		e->tasks_lost = true;
		return 0;
	}
	if (GROW(e->fresh, e->capfresh, e->npend + 1) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < e->npend; i++) {
		if (proc_state_find(*t->st, *t->n, e->pend[i].pid))
			continue; /* read already: its faults named it */
		if (now_all || now - e->pend[i].at >= LISTING_PERIOD_S)
			e->fresh[nready++] = e->pend[i].pid;
		else
			e->pend[w++] = e->pend[i];
	}
	e->npend = w;
	e->nfresh = pids_diff(e->fresh, nready, e->nomm, e->nnomm, e->fresh);
	e->task_born += e->nfresh;
	return 0;
}

static bool full_sample_needed(struct sampler *e, const struct sample_input *in, double now)
{
	return e->sample_time == 0 || in->every_process || e->faulted.lost || enumerator_only(e) ||
	       (e->mapped_moved && now - e->last_full_sample >= MAPPED_FULL_SAMPLE_S);
}

int sampler_pass(struct sampler *e, const struct sample_input *in, const struct sample_table *t, struct sample_out *out)
{
	double now = in->now(), dt = e->sample_time > 0 ? now - e->sample_time : 0;
	struct sample_request rq = {.faulted = &e->faulted, .self = in->self, .policy_gen = in->policy_gen};
	size_t nst;
	int r;

	out->full = false;
	fault_pids_reset(&e->faulted);
	/* Drained on every pass, so the rings never fill while we sample
	 * everything anyway; -ENODEV (no doorbell) sets lost. */
	r = e->doorbell_drain(&e->doorbell, &e->faulted);
	if (r == -ENOMEM)
		return r;
	/* Every pass, so that the task rings never fill: a full sample has
	 * no use for them. */
	r = read_tasks(e);
	if (r < 0)
		return r;
	/* Growth the faults explain is not "mapped without faults". */
	mapped_watch_faulted(&e->mapped, e->faulted.samples * DOORBELL_PERIOD * 4);
	if (mapped_watch_moved(&e->mapped, now))
		e->mapped_moved = true;
	if (e->mapped.grew) /* consumed: one listing per growth seen */
		e->mapped_unlisted = true, e->mapped.grew = false;
	if (full_sample_needed(e, in, now)) {
		e->mapped_moved = false;
		e->last_full_sample = now;
		e->last_listing = now;
		e->tasks_lost = false; /* every process is read: nobody is missed */
		e->nfresh = 0;
		e->full_samples++;
		out->full = true;
		r = sampler_sample_all(e, in->now, in->hz, t);
		out->sampled = (unsigned)e->sample.n;
		e->stat_reads += e->sample.n;
		return r;
	}
	r = count_samples(e, t, in->policy_gen);
	e->nfresh = 0;
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
	if (tasks_known(e) && !listing_due(e, in, now)) {
		/* The born are known: memory mapped without faults asks only
		 * that they be read now. */
		r = apply_tasks(e, t, now, e->mapped_unlisted);
		if (r < 0)
			return r;
		e->mapped_unlisted = false;
		e->nnewcomers = 0;
	} else if (listing_due(e, in, now) || (e->mapped_unlisted && !e->nnewcomers && now - e->last_listing >= 1.0)) {
		e->mapped_unlisted = false;
		e->tasks_lost = false;
		e->npend = 0;                            /* the listing finds those alive */
		r = list_and_sweep(e, in->proc_root, t); /* finds every newcomer still alive */
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
	nst = *t->n; /* after the sweep */
	e->roll_credit += (double)nst * dt / (in->full_rescan_s ? in->full_rescan_s : 1);
	if (e->roll_credit > (double)nst + 1)
		e->roll_credit = (double)nst + 1;
	rq.roll = (size_t)e->roll_credit;
	e->roll_credit -= (double)rq.roll;
	r = sample_set_build(*t->st, nst, &rq, &e->roll_pid, &e->want, &e->nwant, &e->capwant);
	if (r == 0)
		r = pids_add(&e->want, &e->nwant, &e->capwant, in->read_now, in->nread_now);
	if (r < 0)
		return r;
	if (e->proc_fd < 0) { /* kept: a path walk of /proc per pass costs more than the reads */
		e->proc_fd = open(in->proc_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (e->proc_fd < 0)
			return -errno;
	}
	r = procs_sample_pids_kept(e->proc_fd, &e->stat_fds, e->want, e->nwant, &e->sample);
	if (r < 0)
		return r;
	e->partial_samples++;
	e->stat_reads += e->nwant;
	out->sampled = (unsigned)e->nwant;
	e->sample_time = now;
	r = remember_nomm(e);
	if (r == 0)
		r = proc_states_merge(t->st, t->n, t->cap, &e->sample, in->hz, now);
	return r;
}
