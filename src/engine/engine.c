/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pass: sample, rescan what changed, order every candidate, collapse
 * within the budget; and the engine's life cycle. Each step lives in its
 * own file (sampler, rescan, budget, memcg_gate, dispatch; engine.h). */
#include "engine.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "budget.h"
#include "cgroup2.h"
#include "collapse_effects.h"
#include "dispatch.h"
#include "grow.h"
#include "log.h"
#include "memcg_gate.h"
#include "rescan.h"
#include "selector.h"

double monotonic_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int read_alloc_failed(void *ctx, uint64_t *count)
{
	return vmstat_read_alloc_failed(ctx, count);
}

static enum mem_pressure_sign check_pressure(struct engine *e, double now)
{
	const struct mem_pressure_limits l = {.some_pct = e->cfg->pressure_some_pct,
					      .full_pct = e->cfg->pressure_full_pct,
					      .free_margin_pages = (uint64_t)e->cfg->pressure_free_margin_mb << 8};

	return mem_pressure_check(&e->pressure, e->paths->proc, &l, now, monotonic_seconds);
}

/* Whether this pass collapses nothing for host memory pressure; logs the
 * start and the end of each pause. */
static bool pressure_pauses(struct engine *e, double now)
{
	struct mem_pressure *m = &e->pressure;
	enum mem_pressure_sign sign = e->pressure_check(e, now);

	if (sign != MEM_PRESSURE_NONE && !m->paused) {
		m->paused = true;
		m->paused_since = now;
		m->pauses++;
		log_id(LOG_WARNING, HC_MSGID_PRESSURE,
		       "host memory pressure (%s: PSI some %.2f%% full %.2f%%, free %llu MiB, high watermarks %llu "
		       "MiB): collapsing paused",
		       mem_pressure_sign_name(sign), m->psi.some_avg10, m->psi.full_avg10,
		       (unsigned long long)(m->free_pages >> 8), (unsigned long long)(m->high_pages >> 8));
	} else if (sign == MEM_PRESSURE_NONE && m->paused) {
		m->paused = false;
		m->paused_s += now - m->paused_since;
		log_id(LOG_INFO, HC_MSGID_PRESSURE, "host memory pressure over after %.1f s: collapsing resumes",
		       now - m->paused_since);
	}
	return m->paused;
}

static void open_vmstat(struct engine *e, const struct config *cfg)
{
	if (cfg->mode == RUN_OBSERVE || e->vmstat.fd >= 0)
		return;
	if (vmstat_reader_open(&e->vmstat, e->paths->proc) < 0)
		log_info("cannot read %s/vmstat: every ENOMEM from a collapse backs off", e->paths->proc);
}

int engine_sample(struct engine *e)
{
	const struct sample_table t = {.st = &e->st, .n = &e->nst, .cap = &e->capst};

	return sampler_sample_all(&e->sampler, e->now, e->hz, &t);
}

int engine_sample_pass(struct engine *e, const struct pass_options *o, struct pass_stats *ps)
{
	const struct sample_table t = {.st = &e->st, .n = &e->nst, .cap = &e->capst};
	const struct sample_input in = {.now = e->now,
					.hz = e->hz,
					.full_rescan_s = e->cfg->full_rescan_s,
					.policy_gen = e->scanner.policy_gen,
					.self = e->self,
					.proc_root = e->paths->proc,
					.every_process = o->npids || o->unlimited,
					.read_now = e->cold.advised.pid,
					.nread_now = e->cold.advised.n};
	struct sample_out out = {0};
	int r = sampler_pass(&e->sampler, &in, &t, &out);

	ps->full_sample = out.full;
	ps->procs_sampled = out.sampled;
	return r;
}

const struct proc_state *engine_find(const struct engine *e, pid_t pid)
{
	return proc_state_find(e->st, e->nst, pid);
}

/* Back to back, each doorbell wake-up runs a pass for whoever faulted on
 * the CPU; with a timer it only asks whether news warrant one early, and
 * only one process's faults are news (fault_doorbell.h). */
static void open_doorbell(struct engine *e, const struct config *cfg, bool reopen)
{
	bool timer = cfg->scan_interval_ms != 0;
	unsigned wakeup = timer ? DOORBELL_WAKEUP_NEWS : DOORBELL_WAKEUP;

	if (reopen)
		sampler_doorbell_wakeup(&e->sampler, wakeup, timer);
	else
		sampler_open_doorbell(&e->sampler, e->now(), wakeup, timer);
}

int engine_init(struct engine *e, const struct config *cfg, const struct hc_paths *paths)
{
	int r;

	memset(e, 0, sizeof(*e));
	e->cfg = cfg;
	e->paths = paths;
	e->hz = sysconf(_SC_CLK_TCK);
	e->dispatch.madvise_fn = sys_process_madvise;
	e->dispatch.pidfd_open = pidfd_open_pid;
	/* Without it every ENOMEM backs off, as before (collapse.h). Only
	 * collapsing needs it: observe mode opens it when a reload switches. */
	e->vmstat.fd = -1;
	open_vmstat(e, cfg);
	e->dispatch.alloc_failed = read_alloc_failed; /* e->vmstat */
	e->dispatch.alloc_failed_ctx = &e->vmstat;
	mem_pressure_init(&e->pressure);
	e->pressure_check = check_pressure;
	e->now = monotonic_seconds;
	e->sampler.mapped.proc_root = paths->proc;
	e->sampler.mapped.read_free_kb = mapped_free_kb_sysinfo;
	histogram_init(&e->dispatch.block_hist, histogram_block_bounds, histogram_block_nbounds);
	histogram_init(&e->pass_hist, histogram_pass_bounds, histogram_pass_nbounds);
	e->self = getpid();
	r = selector_init(&e->selector, cfg);
	if (r < 0) {
		vmstat_reader_close(&e->vmstat);
		return r;
	}
	e->procs = procs_open();
	if (!e->procs) {
		r = -errno;
		selector_free(&e->selector);
		vmstat_reader_close(&e->vmstat);
		return r;
	}
	sampler_init(&e->sampler, e->procs);
	r = scanner_init(&e->scanner, paths);
	if (r == 0) {
		r = dispatcher_init(&e->dispatch, paths);
		if (r < 0)
			scanner_free(&e->scanner);
	}
	if (r < 0) {
		procs_close(e->procs);
		e->procs = NULL;
		selector_free(&e->selector);
		vmstat_reader_close(&e->vmstat);
		return r;
	}
	open_doorbell(e, cfg, false);
	return 0;
}

int engine_prctl_open(struct engine *e)
{
	return scanner_prctl_open(&e->scanner);
}

int engine_cold_open(struct engine *e, char *why, size_t whylen)
{
	cold_watch_close(&e->cold);
	return cold_watch_open(&e->cold, e->paths->proc, why, whylen);
}

static pid_t st_pid(const void *ctx, size_t i)
{
	return ((const struct proc_state *)ctx)[i].pid;
}

void engine_cold_drain(struct engine *e)
{
	if (!cold_watch_active(&e->cold) || !cold_watch_drain(&e->cold))
		return;
	/* Someone's advice was not recorded: fail toward not collapsing. */
	if (e->cold.losses == 1) /* once: a flood would repeat it every pass */
		log_warn("MADV_COLD/MADV_PAGEOUT records lost (or a process_madvise target unknown): every process "
			 "counts as cold until its VMAs show their pages referenced");
	if (cold_ranges_whole_all(&e->cold.ranges, st_pid, e->st, e->nst) < 0)
		log_warn("no memory to mark every process cold after lost MADV_COLD records");
}

/* The observer's events follow CPU hotplug (cold_watch_refresh()). Calls
 * on a CPU that came online before its events did were not seen: every
 * process counts as cold, as after lost records, and is read again (its
 * THP policy may have changed too). Hotplug is rare: one full read. */
static void cold_refresh(struct engine *e, double now)
{
	int r = cold_watch_refresh(&e->cold, now, e->cfg->full_rescan_s);

	if (r < 0)
		log_warn("cannot open the MADV_COLD/MADV_PAGEOUT tracepoint events again (%s): CPUs that came "
			 "online are not observed",
			 strerror(-r));
	if (r != 2)
		return;
	log_info("MADV_COLD/MADV_PAGEOUT ranges: observed on %d CPUs (online: %.*s); calls on the new ones before "
		 "now were not: every process counts as cold until its VMAs show their pages referenced",
		 e->cold.ncpu, (int)strcspn(e->cold.online, "\n"), e->cold.online);
	if (cold_ranges_whole_all(&e->cold.ranges, st_pid, e->st, e->nst) < 0)
		log_warn("no memory to mark every process cold after CPU hotplug");
	for (size_t i = 0; i < e->nst; i++)
		if (fault_pids_add(&e->cold.advised, e->st[i].pid) < 0)
			break; /* the full rescan reads the others */
	fault_pids_finish(&e->cold.advised);
}

/* After a sample: ranges follow their process (bound to its start time, so
 * a recycled PID starts clean) and go with it. A PID not in the table yet
 * may be a newcomer the sample did not list: kept while it exists. */
static void cold_ranges_follow(struct engine *e)
{
	struct cold_ranges *t = &e->cold.ranges;

	for (size_t i = 0; i < t->n;) {
		pid_t pid = t->v[i].pid;
		const struct proc_state *s = proc_state_find(e->st, e->nst, pid);
		size_t j = i;

		if (s)
			cold_ranges_bind(t, pid, s->start_ticks);
		else if (t->v[i].start_ticks || (kill(pid, 0) < 0 && errno == ESRCH))
			cold_ranges_forget(t, pid);
		while (j < t->n && t->v[j].pid == pid)
			j++;
		i = j;
	}
}

void engine_free(struct engine *e)
{
	for (size_t i = 0; i < e->nst; i++)
		proc_state_clear(&e->st[i]);
	free(e->st);
	dispatcher_free(&e->dispatch);
	selector_free(&e->selector);
	sampler_free(&e->sampler);
	scanner_free(&e->scanner);
	cold_watch_close(&e->cold);
	vmstat_reader_close(&e->vmstat);
	mem_pressure_close(&e->pressure);
	memcg_gate_free(e->memcg);
	if (e->procs)
		procs_close(e->procs);
	memset(e, 0, sizeof(*e));
	e->vmstat.fd = -1; /* fd 0 is not ours: a second free must not close it */
	mem_pressure_init(&e->pressure);
}

/* Policies point into the config: a new config means looking them up again.
 * The old config must still be valid here (its rules' paths carry the
 * budgets over). */
void engine_set_config(struct engine *e, const struct config *cfg)
{
	const struct config *old = e->cfg;

	e->cfg = cfg;
	open_doorbell(e, cfg, true);
	scanner_policy_changed(&e->scanner); /* what was closed under the old rules may not be */
	open_vmstat(e, cfg);
	for (size_t i = 0; i < e->nst; i++)
		e->st[i].policy = e->st[i].cgroup ? config_policy_for(cfg, e->st[i].cgroup) : NULL;
	/* Without memory, the rules past the old count get no budget until
	 * the next reload: fail closed. */
	if (selector_configure(&e->selector, old, cfg) < 0)
		log_warn("no memory for the budgets of %zu cgroup policies", cfg->nrules);
}

/* The pass's candidates past the memory cgroup gate, in order (none
 * before the first pass). */
static const struct candidate *gated_candidates(const struct engine *e, size_t *n)
{
	*n = 0;
	return e->memcg ? memcg_gate_passed(e->memcg, n) : NULL;
}

struct engine_view engine_view(const struct engine *e)
{
	size_t ncands;
	const struct candidate *cands = gated_candidates(e, &ncands);

	return (struct engine_view){.procs = e->st, .nprocs = e->nst, .cands = cands, .ncands = ncands};
}

/* Blocks remembered, a scan stopped midway, a pass that ran out of time:
 * the next pass has work whether or not anything faulted. */
static bool engine_work_left(const struct engine *e)
{
	return e->pending || e->scanner.resume_pid || e->partial_scans;
}

void engine_stats_get(const struct engine *e, struct engine_stats *out)
{
	*out = (struct engine_stats){.cfg = e->cfg,
				     .view = engine_view(e),
				     .cg_bytes = e->dispatch.cg_bytes,
				     .ncg_bytes = e->dispatch.ncg_bytes,
				     .total = e->total,
				     .last = e->last,
				     .passes = e->passes,
				     .passes_idle = e->passes_idle,
				     .full_samples = e->sampler.full_samples,
				     .partial_samples = e->sampler.partial_samples,
				     .stat_reads = e->sampler.stat_reads,
				     .listings = e->sampler.listings,
				     .task_births = e->sampler.task_born,
				     .doorbell_wakeups = e->doorbell_wakeups,
				     .news_passes = e->news_passes,
				     .doorbell_opens = e->sampler.doorbell.opens,
				     .resume_pid = e->scanner.resume_pid,
				     .work_left = engine_work_left(e),
				     .block_hist = e->dispatch.block_hist,
				     .pass_hist = e->pass_hist,
				     .pressure_paused = e->pressure.paused,
				     .pressure_pauses = e->pressure.pauses,
				     .pressure_read_s = e->pressure.read_s,
				     .cold_watched = cold_watch_active(&e->cold),
				     .memcg_gate_error = memcg_gate_error(e->memcg)};
}

void engine_count_wakeup(struct engine *e)
{
	e->doorbell_wakeups++;
}

static void add_news(struct engine *e, pid_t pid)
{
	if (e->nnews < ENGINE_NEWS_MAX)
		e->news[e->nnews++] = pid;
	else
		e->news_overflow = true; /* too many to scan one by one */
}

size_t engine_news(struct engine *e, uint32_t min_samples, const pid_t **pids)
{
	const struct fault_pids *p;

	engine_cold_drain(e);
	e->nnews = 0;
	e->news_overflow = false;
	for (size_t i = 0; i < e->cold.advised.n; i++)
		add_news(e, e->cold.advised.pid[i]);
	p = sampler_peek(&e->sampler);
	for (size_t i = 0; p && i < p->n; i++)
		if (p->count[i] >= min_samples && !cold_watch_advised(&e->cold, p->pid[i]))
			add_news(e, p->pid[i]);
	*pids = e->news_overflow ? NULL : e->news;
	return e->nnews;
}

void engine_count_news(struct engine *e)
{
	e->news_passes++;
}

const struct fault_doorbell *engine_doorbell(const struct engine *e)
{
	return &e->sampler.doorbell;
}

const struct cold_watch *engine_cold(const struct engine *e)
{
	return &e->cold;
}

void engine_cold_close(struct engine *e)
{
	cold_watch_close(&e->cold);
}

uint64_t engine_passes(const struct engine *e)
{
	return e->passes;
}

bool engine_prctl_exact(const struct engine *e)
{
	return e->scanner.prctl_exact != NULL;
}

void engine_prune_cgroups(struct engine *e, const struct cgroup2_root *r)
{
	cgroup_bytes_prune(e->dispatch.cg_bytes, &e->dispatch.ncg_bytes, r);
}

/* Which processes a pass looks at. */
static struct pid_filter pass_filter(const struct engine *e, const struct pass_options *o)
{
	return (struct pid_filter){.pids = o->pids, .npids = o->npids, .self = e->self};
}

/* What the selector reads of the others (selector.h), at each call. */
static struct selector_input selector_input(const struct engine *e, const struct pass_options *o, double now)
{
	return (struct selector_input){
	    .cfg = e->cfg, .st = e->st, .nst = e->nst, .filter = pass_filter(e, o), .now = now};
}

/* The memory cgroup gate on the selector's order: what fits is its
 * output (gated_candidates()); each process's results follow what it held
 * back (their owner: proc_state.c). */
static int memcg_hold_back(struct engine *e, const struct candidate *order, size_t norder, struct pass_stats *ps)
{
	const struct memcg_gate_input in = {.st = e->st,
					    .nst = e->nst,
					    .proc_root = e->paths->proc,
					    .pass = e->passes,
					    .sample_time = e->sampler.sample_time,
					    .now = e->now()};
	int r;

	if (!e->memcg && !(e->memcg = memcg_gate_new(e->paths->mountinfo)))
		return -ENOMEM;
	r = memcg_gate_hold_back(e->memcg, &in, order, norder, ps);
	if (r >= 0 && memcg_gate_counted(e->memcg))
		for (size_t p = 0; p < e->nst; p++)
			proc_state_memcg_held(&e->st[p], memcg_gate_held(e->memcg, p));
	return r;
}

static int build_candidates(struct engine *e, const struct pass_options *o, struct pass_stats *ps, double now)
{
	const struct selector_input in = selector_input(e, o, now);
	const struct candidate *order;
	size_t norder;
	int r = selector_order(&e->selector, &in, ps ? &ps->procs_active : NULL, &order, &norder);

	/* Before the budget: what does not fit in its cgroup spends nothing. */
	if (r == 0)
		r = memcg_hold_back(e, order, norder, ps);
	return r < 0 ? r : 0;
}

/* What the scanner reads of the rest of the engine (rescan.h), at each
 * call: the config, paths and clock can change between passes. */
static struct scan_input scan_input(struct engine *e)
{
	return (struct scan_input){.cfg = e->cfg,
				   .proc_root = e->paths->proc,
				   .sysfs_thp = e->paths->thp,
				   .khp = e->khp,
				   .cold = &e->cold.ranges,
				   .advised = cold_watch_active(&e->cold) ? &e->cold : NULL,
				   .now = e->now,
				   .pass_start = e->pass_start,
				   .no_except_advised = e->no_except_advised};
}

/* The recheck before collapse (issue 16): rescans each process of
 * sel[0..nsel) that dispatch says must be found again; returns how many of
 * those blocks are no longer candidates. The engine calls the scanner, so
 * that dispatch never calls back into it. */
static size_t recheck_selected(struct engine *e, const struct pass_options *o, const struct candidate *sel, size_t nsel,
			       struct pass_stats *ps, double now)
{
	const struct scan_input in = scan_input(e);
	size_t dropped = 0;

	for (size_t i = 0; i < nsel; i++) {
		struct proc_state *s = &e->st[sel[i].proc];

		if (dispatch_needs_rescan(s, now))
			rescan_visit(&e->scanner, &in, s, o, ps, now, true);
		if (!block_memo_find(s->blocks, s->nblocks, sel[i].addr))
			dropped++;
	}
	return dropped;
}

static int refresh_policy(void *ctx, uint32_t proc, int dirfd)
{
	const struct engine *e = ctx;

	return rescan_refresh_policy(e->cfg, &e->st[proc], dirfd);
}

static bool policy_holds(void *ctx, const struct proc_state *s, int dirfd)
{
	struct engine *e = ctx;
	const struct scan_input in = scan_input(e);

	return rescan_policy_holds(&e->scanner, &in, s, dirfd);
}

static struct collapse_limits limits(void *ctx, const struct policy *pol)
{
	const struct engine *e = ctx;

	return rescan_limits(&e->scanner, pol);
}

static const struct cold_ranges *cold_drain(void *ctx)
{
	struct engine *e = ctx;

	engine_cold_drain(e);
	return &e->cold.ranges;
}

/* What dispatch uses of the other stages: the table (read only) and the
 * checks before each call. */
static struct dispatch_env dispatch_env(struct engine *e)
{
	return (struct dispatch_env){.st = e->st,
				     .nst = e->nst,
				     .cfg = e->cfg,
				     .proc_root = e->paths->proc,
				     .now = e->now,
				     .ctx = e,
				     .refresh_policy = refresh_policy,
				     .policy_holds = policy_holds,
				     .limits = limits,
				     .cold_drain = cold_drain};
}

static int collapse_in_order(struct engine *e, const struct pass_options *o, struct pass_stats *ps, double now,
			     double pass_start)
{
	struct dispatch_env env;
	struct selector_input in = selector_input(e, o, now);
	struct collapse_run cr = {.deadline = o->max_seconds > 0 ? pass_start + o->max_seconds : 0,
				  .interrupted = o->interrupted};
	const struct candidate *gated, *sel;
	size_t ngated, nsel;
	int r = 0;

	/* The budget is a rate: the time since the last refill earned tokens,
	 * up to a burst (budget.h); what this pass submits spends them. */
	gated = gated_candidates(e, &ngated);
	nsel = selector_select(&e->selector, &in, gated, ngated, o->unlimited, &sel);
	/* What stale blocks would have spent goes to the next in line. Each
	 * round rescans at least one process that the next cannot, so this
	 * ends; usually after one round. */
	while (recheck_selected(e, o, sel, nsel, ps, now)) {
		r = build_candidates(e, o, NULL, now);
		if (r < 0)
			goto out;
		in = selector_input(e, o, now);
		gated = gated_candidates(e, &ngated);
		nsel = selector_reselect(&e->selector, &in, gated, ngated, o->unlimited, &sel);
	}
	r = dispatch_reserve(&e->dispatch, nsel, &cr);
	if (r < 0)
		goto out;
	env = dispatch_env(e);
	collapse_selected(&e->dispatch, &env, sel, nsel, &cr, ps, true, now);
	/* What was submitted spends the budget, whatever the outcome. */
	for (size_t i = 0; i < cr.ncharges; i++)
		selector_charge(&e->selector, e->cfg, cr.charges[i].pol, cr.charges[i].bytes);
	/* What the outcomes make of the table: the retry round reads it. */
	collapse_effects_apply(e->st, e->nst, &cr.fx);
	/* EAGAIN is transient (a page was locked or off the LRU): one more try
	 * at the end of the pass; later passes retry up to eagain_retries. */
	if (cr.nretry && !cr.stop) {
		collapse_selected(&e->dispatch, &env, cr.retry, cr.nretry, &cr, ps, false, now);
		collapse_effects_apply(e->st, e->nst, &cr.fx);
	}
out:
	for (size_t i = 0; i < e->nst; i++)
		block_memo_compact(e->st[i].blocks, &e->st[i].nblocks, &e->st[i].given_up,
				   e->st[i].policy ? e->st[i].policy->eagain_retries : 0, now);
	return r;
}

/* Nothing can have become a candidate if no process faulted since the last
 * full pass, no memory was mapped without faults, nothing is left over from
 * it, and no full rescan is due (which catches the changes that come
 * without faults or new memory: mremap, THP splits). */
static bool pass_can_idle(struct engine *e, double now)
{
	const struct config *c = e->cfg;
	bool sampling = c->defaults.access_sampling;

	for (size_t i = 0; i < c->nrules && !sampling; i++)
		sampling = c->rules[i].policy.access_sampling;
	if (sampling || engine_work_left(e) || e->last_full_pass <= 0 || now - e->last_full_pass >= c->full_rescan_s ||
	    sampler_rang(&e->sampler) || (e->cold.recheck_at > 0 && now >= e->cold.recheck_at) || e->cold.advised.n)
		return false;
	return sampler_mapped_quiet(&e->sampler, now);
}

/* What a dry run leaves: every candidate past the memory cgroup gate would
 * be collapsed, within the budget's rate. Counts its distinct processes. */
static void count_would_collapse(struct engine *e, struct pass_stats *ps)
{
	unsigned char *seen = e->nst ? calloc(e->nst, 1) : NULL;
	size_t ncands;
	const struct candidate *cands = gated_candidates(e, &ncands);

	ps->would_collapse_bytes = (uint64_t)ncands * HPAGE_SIZE;
	for (size_t i = 0; seen && i < ncands; i++)
		if (cands[i].proc < e->nst && !seen[cands[i].proc]) {
			seen[cands[i].proc] = 1;
			ps->procs_would_collapse++;
		}
	free(seen);
}

int engine_pass(struct engine *e, const struct pass_options *o, struct pass_stats *ps)
{
	struct pid_filter f = pass_filter(e, o);
	double t0, t1, now;
	int r;

	memset(ps, 0, sizeof(*ps));
	t0 = e->now();
	/* Before the sample: a PID the rings name existed by then. */
	engine_cold_drain(e);
	if (o->allow_idle && pass_can_idle(e, t0)) {
		ps->idle = true;
		ps->scan_s = e->now() - t0;
		histogram_observe(&e->pass_hist, ps->scan_s, 1);
		e->total.scan_s += ps->scan_s;
		e->passes++;
		e->passes_idle++;
		return 0;
	}
	r = engine_sample_pass(e, o, ps);
	if (r < 0)
		return r;
	cold_ranges_follow(e);
	now = e->sampler.sample_time;
	/* Before anything is judged by the observer's record. */
	cold_refresh(e, now);
	e->pass_start = t0;
	{
		const struct scan_input in = scan_input(e);

		/* The lazy-free probe changes memory: never in a dry run. */
		struct pid_filter sf = f;

		if (o->nscan_only && !o->npids)
			sf = (struct pid_filter){.pids = o->scan_only, .npids = o->nscan_only, .self = e->self};
		scanner_pass(&e->scanner, &in, e->st, e->nst, &sf, o, ps, now,
			     o->dry_run ? NULL : e->dispatch.madvise_fn);
	}
	/* The opt-ins were news for this pass's scan; those drained later
	 * (before each call) are for the next. A scan stopped midway keeps
	 * them for the processes it did not reach. */
	if (!e->scanner.resume_pid)
		fault_pids_reset(&e->cold.advised);
	r = build_candidates(e, o, ps, now);
	if (r == 0 && o->dry_run)
		count_would_collapse(e, ps);
	t1 = e->now();
	ps->scan_s = t1 - t0;
	if (r == 0 && !o->dry_run) {
		size_t ngated;

		/* Asked only when there is something to collapse: a pass with
		 * no candidate reads nothing more. */
		if (gated_candidates(e, &ngated) && ngated && pressure_pauses(e, now))
			ps->pressure_paused = true;
		else
			r = collapse_in_order(e, o, ps, now, t0);
		ps->collapse_s = e->now() - t1;
	}
	e->last_full_pass = now;
	e->pending = 0;
	e->partial_scans = 0;
	e->cold.recheck_at = 0;
	for (size_t i = 0; i < e->nst; i++) {
		const struct proc_state *s = &e->st[i];

		if (s->results[SCAN_LACK_REFERENCED_PAGE] &&
		    (!e->cold.recheck_at || s->last_scan + COLD_RECHECK_S < e->cold.recheck_at))
			e->cold.recheck_at = s->last_scan + COLD_RECHECK_S;
		if (e->st[i].policy && e->st[i].policy->enable && pid_filter_match(&f, e->st[i].pid)) {
			e->pending += e->st[i].nblocks;
			ps->procs_backing_off += e->st[i].nblocks && now < e->st[i].backoff_until;
		}
		e->partial_scans += e->st[i].scan_cursor != 0;
	}
	ps->backing_off = ps->procs_backing_off > 0;
	sampler_refresh_doorbell(&e->sampler, now, e->cfg->full_rescan_s);
	/* The rings are drained at the start of the next pass: faults during
	 * this one are not lost (a refresh keeps what the old rings held),
	 * and our own are ignored by PID. */
	sampler_after_pass(&e->sampler, e->now);
	e->passes++;
	for (int i = 0; i < SCAN_NR_RESULTS; i++)
		e->total.results[i] += ps->results[i];
	for (int i = 0; i < COLLAPSE_NR_OUTCOMES; i++)
		e->total.outcomes[i] += ps->outcomes[i];
	e->total.collapsed_bytes += ps->collapsed_bytes;
	e->total.scan_s += ps->scan_s;
	e->total.collapse_s += ps->collapse_s;
	histogram_observe(&e->pass_hist, ps->scan_s + ps->collapse_s, 1);
	e->total.procs_scanned += ps->procs_scanned;
	e->total.procs_unchanged += ps->procs_unchanged;
	e->total.smaps_reads += ps->smaps_reads;
	e->total.pagemap_ops += ps->pagemap_ops;
	e->total.stale_dropped += ps->stale_dropped;
	e->last = *ps;
	return r;
}
