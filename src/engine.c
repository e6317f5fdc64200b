/* Per-process state between passes, and one pass: sample, rescan what
 * changed, order every candidate, collapse within the budget. */
#include "engine.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "grow.h"
#include "khugepaged.h"
#include "log.h"
#include "vma_eligibility.h"

#define MIB (1024.0 * 1024.0)
/* A process counts as active when it used this much CPU per second, or
 * faulted at all, since the last sample. */
#define ACTIVE_CPU 0.01

double monotonic_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int engine_init(struct engine *e, const struct config *cfg)
{
	int r;

	memset(e, 0, sizeof(*e));
	e->cfg = cfg;
	e->hz = sysconf(_SC_CLK_TCK);
	e->madvise_fn = sys_process_madvise;
	e->now = monotonic_seconds;
	e->doorbell_rang = fault_doorbell_rang;
	e->thp_dir = khugepaged_sysfs_dir();
	e->prctl_infer = thp_prctl_infer;
	e->thp_read_at = -1e9;
	vma_list_init(&e->vmas);
	e->procs = procs_open();
	if (!e->procs)
		return -errno;
	r = range_scanner_init(&e->scanner);
	if (r < 0) {
		procs_close(e->procs);
		e->procs = NULL;
		return r;
	}
	r = fault_doorbell_open(&e->doorbell);
	if (r < 0)
		log_info("no page-fault doorbell (perf events: %s): every pass samples every process", strerror(-r));
	return 0;
}

static void state_clear(struct proc_state *s)
{
	free(s->cgroup);
	free(s->blocks);
	free(s->refused.v);
	free(s->given_up.v);
	memset(s, 0, sizeof(*s));
}

void engine_free(struct engine *e)
{
	for (size_t i = 0; i < e->nst; i++)
		state_clear(&e->st[i]);
	free(e->st);
	for (size_t i = 0; i < e->ncg_bytes; i++)
		free(e->cg_bytes[i].cgroup);
	free(e->cg_bytes);
	free(e->cands);
	free(e->batch_addrs);
	free(e->batch_out);
	free(e->retry);
	free(e->smaps_buf);
	free(e->old_blocks);
	vma_list_free(&e->vmas);
	proc_table_free(&e->sample);
	range_scanner_free(&e->scanner);
	fault_doorbell_close(&e->doorbell);
	if (e->procs)
		procs_close(e->procs);
	memset(e, 0, sizeof(*e));
}

/* Policies point into the config: a new config means looking them up again. */
void engine_set_config(struct engine *e, const struct config *cfg)
{
	e->cfg = cfg;
	for (size_t i = 0; i < e->nst; i++)
		e->st[i].policy = e->st[i].cgroup ? config_policy_for(cfg, e->st[i].cgroup) : NULL;
}

static struct proc_state *state_find(struct proc_state *st, size_t n, pid_t pid)
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

const struct proc_state *engine_find(const struct engine *e, pid_t pid)
{
	return state_find(e->st, e->nst, pid);
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

int engine_sample(struct engine *e)
{
	double now, dt;
	size_t nnew = 0, w;
	int r;

	r = procs_sample(e->procs, &e->sample);
	if (r < 0)
		return r;
	now = e->now();
	dt = e->sample_time > 0 ? now - e->sample_time : 0;
	e->sample_time = now;

	for (size_t i = 0; i < e->nst; i++)
		e->st[i].seen = false;
	for (size_t i = 0; i < e->sample.n; i++) {
		const struct proc_sample *p = &e->sample.p[i];
		struct proc_state *s = state_find(e->st, e->nst, p->pid);

		if (s && s->start_ticks == p->start_ticks) {
			state_update(s, p, dt, e->hz, now);
			s->seen = true;
			continue;
		}
		if (s) /* the PID was recycled: a different process */
			state_clear(s);
		else
			nnew++;
	}
	/* Sweep exited processes, then append new ones and restore the order. */
	w = 0;
	for (size_t i = 0; i < e->nst; i++) {
		if (!e->st[i].seen && e->st[i].pid) {
			state_clear(&e->st[i]);
			continue;
		}
		if (!e->st[i].pid)
			continue;
		e->st[w++] = e->st[i];
	}
	e->nst = w;
	if (GROW(e->st, e->capst, e->nst + nnew + 1) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < e->sample.n; i++) {
		const struct proc_sample *p = &e->sample.p[i];
		struct proc_state *s = state_find(e->st, w, p->pid);

		if (s)
			continue;
		s = &e->st[e->nst++];
		memset(s, 0, sizeof(*s));
		s->pid = p->pid;
		s->start_ticks = p->start_ticks;
		s->prev = *p;
		s->last_active = -1e9; /* unknown until a delta shows activity */
		s->seen = true;
	}
	if (e->nst != w)
		qsort(e->st, e->nst, sizeof(*e->st), cmp_state);
	return 0;
}

static bool pid_selected(const struct pass_options *o, pid_t pid)
{
	if (pid == getpid())
		return false;
	if (!o->npids)
		return true;
	for (size_t i = 0; i < o->npids; i++)
		if (o->pids[i] == pid)
			return true;
	return false;
}

static bool addr_set_has(const struct addr_set *set, uint64_t addr)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->v[i] == addr)
			return true;
	return false;
}

/* Best effort: without memory the block is merely tried again. */
static void addr_set_add(struct addr_set *set, uint64_t addr)
{
	if (GROW(set->v, set->cap, set->n + 1) == 0)
		set->v[set->n++] = addr;
}

static struct block_memo *memo_find(struct block_memo *b, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b[mid].addr == addr)
			return &b[mid];
		if (b[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

struct scan_ctx {
	struct engine *e;
	struct proc_state *s;
	uint64_t *results;
	unsigned referenced_pct;
	double now;
	int err;
};

/* A block the range scan found worth collapsing: remember it, keeping the
 * age and EAGAIN count it had in the previous scan; unless the kernel
 * refused it, or it failed with EAGAIN too often. */
static void on_candidate(void *opaque, uint64_t addr, const struct block_counts *c)
{
	struct scan_ctx *x = opaque;
	struct proc_state *s = x->s;
	struct block_memo *old, *m;

	if (addr_set_has(&s->refused, addr)) {
		x->results[SCAN_CANDIDATE]--;
		x->results[SCAN_INELIGIBLE]++;
		return;
	}
	if (addr_set_has(&s->given_up, addr))
		return;
	if (GROW(s->blocks, s->capblocks, s->nblocks + 1) < 0) {
		x->err = -ENOMEM;
		return;
	}
	old = memo_find(x->e->old_blocks, x->e->nold_blocks, addr);
	m = &s->blocks[s->nblocks++];
	m->addr = addr;
	m->present = c->present;
	m->referenced_pct = (uint8_t)(x->referenced_pct > 100 ? 100 : x->referenced_pct);
	m->first_seen = old ? old->first_seen : x->now;
	m->eagain = old ? old->eagain : 0;
}

/* A process that opts in with MADV_HUGEPAGE right after faulting its memory
 * in is looked at again this long after the scan that saw the faults. */
#define POLICY_RECHECK_S 0.5 /* the next pass at the default 1 s interval, whatever its jitter */

/* The THP policy, read again at most once a second: an administrator may
 * change a knob the daemon does not own. On failure the last one stands. */
static void thp_refresh(struct engine *e, double now)
{
	int r;

	if (now - e->thp_read_at < 1.0)
		return;
	e->thp_read_at = now;
	r = thp_state_read(e->thp_dir, e->khp, &e->thp);
	if (r < 0)
		log_debug("cannot read the THP policy from %s: %s", e->thp_dir, strerror(-r));
}

/* Reads smaps and page tables of one process; replaces its block list.
 * Returns 0, or -errno (-ESRCH: gone or recycled). */
static int scan_process(struct engine *e, struct proc_state *s, int dirfd, struct pass_stats *ps, double now)
{
	const struct policy *pol = s->policy;
	struct scan_ctx ctx = {.e = e, .s = s, .results = s->results, .now = now};
	int r;

	r = read_smaps(dirfd, &e->smaps_buf, &e->smaps_cap, (vma_list_clear(&e->vmas), &e->vmas));
	ps->smaps_reads++;
	if (r < 0 && r != -EINVAL)
		return r;
	if (r == -EINVAL)
		log_proc(LOG_WARNING, s->pid, s->cgroup, NULL, "pid %d: malformed smaps, using the %zu VMAs before it",
			 (int)s->pid, e->vmas.n);
	r = range_scanner_attach(&e->scanner, dirfd);
	if (r < 0)
		return r;

	/* Keep the previous candidates aside so ages carry over. */
	if (GROW(e->old_blocks, e->capold_blocks, s->nblocks) < 0) {
		range_scanner_detach(&e->scanner);
		return -ENOMEM;
	}
	if (s->nblocks) /* both may still be NULL: memcpy(NULL, NULL, 0) is undefined */
		memcpy(e->old_blocks, s->blocks, s->nblocks * sizeof(*s->blocks));
	e->nold_blocks = s->nblocks;
	s->nblocks = 0;
	memset(s->results, 0, sizeof(s->results));
	s->policy_refused = false;
	thp_refresh(e, now);
	s->thp_prctl = (uint8_t)e->prctl_infer(&e->thp.live, s->thp_enabled, e->vmas.v, e->vmas.n);

	for (size_t i = 0; i < e->vmas.n && r >= 0; i++) {
		const struct vma *v = &e->vmas.v[i];
		struct vma_blocks b;
		enum scan_result verdict;

		vma_blocks(v, &b);
		s->results[SCAN_INELIGIBLE] += b.partial;
		verdict =
		    vma_verdict(v, &pol->limits, thp_vma_check(&e->thp, pol->scope, v, (enum thp_prctl)s->thp_prctl),
				pol->file_backed);
		if (verdict != SCAN_CANDIDATE) {
			s->results[verdict] += b.whole;
			/* Populated enough to be a candidate once advised. */
			if (verdict == SCAN_THP_POLICY && b.whole && v->rss_kb * 1024 >= HPAGE_SIZE / 2)
				s->policy_refused = true;
			continue;
		}
		if (!b.whole)
			continue;
		ctx.referenced_pct = vma_referenced_pct(v);
		r = range_scan_vma(&e->scanner, v, v->lazyfree_kb > 0, &pol->limits, s->results, on_candidate, &ctx);
		if (ctx.err)
			r = ctx.err;
	}
	range_scanner_detach(&e->scanner);
	for (int i = 0; i < SCAN_NR_RESULTS; i++)
		ps->results[i] += s->results[i];
	return r;
}

static const char *cgroup_or_unknown(const struct proc_state *s)
{
	return s->cgroup ? s->cgroup : "?";
}

/* access_sampling: clear the referenced bits, so that the next scan's
 * Referenced counts only what was touched since. Costs one walk of the
 * process's page tables, and makes reclaim see those pages as not recently
 * used (they are aged as if idle until touched again). */
static void clear_referenced(int dirfd, const struct proc_state *s)
{
	int fd = openat(dirfd, "clear_refs", O_WRONLY | O_CLOEXEC);

	if (fd < 0 || write(fd, "1", 1) != 1)
		log_proc(LOG_DEBUG, s->pid, cgroup_or_unknown(s), NULL, "pid %d: cannot write clear_refs: %s",
			 (int)s->pid, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* Decides whether a process must be scanned again (always if forced), and
 * does it. */
static void visit_process(struct engine *e, struct proc_state *s, const struct pass_options *o, struct pass_stats *ps,
			  double now, bool force)
{
	const struct config *cfg = e->cfg;
	bool maps_changed = s->scan_vsize != s->prev.vsize;
	bool changed = !s->scanned || maps_changed || s->scan_minflt != s->prev.minflt ||
		       s->scan_majflt != s->prev.majflt || s->scan_rss != s->prev.rss_pages;
	bool due = now - s->last_scan >= cfg->full_rescan_s;
	bool recheck = s->policy_recheck && now - s->last_scan >= POLICY_RECHECK_S;
	bool sample_due = s->policy && s->policy->access_sampling && now - s->last_clear >= s->policy->access_sample_s;
	char path[64], cg[PATH_MAX];
	struct proc_sample now_stat;
	int dirfd, r;

	if (!changed && !due && !recheck && !sample_due && !force && !o->unlimited && s->policy) {
		ps->procs_unchanged++;
		return;
	}
	snprintf(path, sizeof(path), "%s/%d", proc_root(), (int)s->pid);
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return;
	/* Through this dirfd every read is of the process we sampled, or fails:
	 * check that it is still the one with our start time. */
	if (read_proc_stat(dirfd, &now_stat) < 0 || now_stat.start_ticks != s->start_ticks)
		goto out;
	if (!s->cgroup || !s->policy || due) {
		r = read_proc_cgroup(dirfd, cg, sizeof(cg));
		if (r < 0)
			snprintf(cg, sizeof(cg), "/");
		if (!s->cgroup || strcmp(cg, s->cgroup)) {
			free(s->cgroup);
			s->cgroup = strdup(cg);
		}
		s->policy = config_policy_for(cfg, s->cgroup ? s->cgroup : "/");
	}
	if (!s->policy->enable) {
		s->nblocks = 0;
		goto remember; /* not scanned, but not looked at again until it changes */
	}
	if (maps_changed)
		s->refused.n = 0; /* the kernel's EINVALs were about the old layout */
	if (due)
		s->given_up.n = 0;
	r = read_proc_thp_enabled(dirfd);
	s->thp_enabled = r != 0; /* unknown (error) counts as enabled */
	/* Read before smaps: an exec after this point shows as a mismatch. */
	s->exec_id = now_stat.exec_id;
	r = scan_process(e, s, dirfd, ps, now);
	if (r == -EACCES || r == -EPERM) {
		/* Capabilities were checked at start, so this process is
		 * protected on its own (another user namespace, a sandbox):
		 * leave it alone until its next full rescan. */
		if (!s->denied)
			log_proc(LOG_INFO, s->pid, cgroup_or_unknown(s), "eperm",
				 "pid %d (%s): no ptrace read access to its memory maps; skipping it", (int)s->pid,
				 s->prev.comm);
		s->denied = true;
		s->nblocks = 0;
		r = 0;
	} else if (r < 0 && r != -ESRCH && r != -ENOENT) {
		log_proc(LOG_DEBUG, s->pid, cgroup_or_unknown(s), NULL, "pid %d: scan failed: %s", (int)s->pid,
			 strerror(-r));
	}
	if (r < 0) {
		s->nblocks = 0;
		goto out;
	}
	ps->procs_scanned++;
	s->policy_recheck = changed && s->policy_refused;
	/* A dry run changes nothing, not even the referenced bits. */
	if (s->policy->access_sampling && !o->dry_run && !o->unlimited &&
	    now - s->last_clear >= s->policy->access_sample_s) {
		clear_referenced(dirfd, s);
		s->last_clear = now;
	}
remember:
	s->scanned = true;
	s->last_scan = now;
	s->scan_minflt = now_stat.minflt;
	s->scan_majflt = now_stat.majflt;
	s->scan_rss = now_stat.rss_pages;
	s->scan_vsize = now_stat.vsize;
out:
	close(dirfd);
}

static void add_cgroup_bytes(struct engine *e, const char *cgroup, uint64_t bytes)
{
	size_t i;
	struct cgroup_bytes *n;

	for (i = 0; i < e->ncg_bytes; i++)
		if (!strcmp(e->cg_bytes[i].cgroup, cgroup)) {
			e->cg_bytes[i].bytes += bytes;
			return;
		}
	n = realloc(e->cg_bytes, (e->ncg_bytes + 1) * sizeof(*n));
	if (!n)
		return;
	e->cg_bytes = n;
	n[e->ncg_bytes].cgroup = strdup(cgroup);
	if (!n[e->ncg_bytes].cgroup)
		return;
	n[e->ncg_bytes++].bytes = bytes;
}

/* Scores every remembered block of every selected, enabled process; counts
 * the active processes in ps (if not NULL). */
static int build_candidates(struct engine *e, const struct pass_options *o, struct pass_stats *ps, double now)
{
	e->ncands = 0;
	for (size_t i = 0; i < e->nst; i++) {
		struct proc_state *s = &e->st[i];
		const struct policy *pol = s->policy;
		bool active;

		if (!pol || !pol->enable || !pid_selected(o, s->pid))
			continue;
		active = now - s->last_active <= pol->idle_after_s;
		if (ps)
			ps->procs_active += active;
		if (GROW(e->cands, e->capcands, e->ncands + s->nblocks) < 0)
			return -ENOMEM;
		for (size_t j = 0; j < s->nblocks; j++) {
			const struct block_memo *m = &s->blocks[j];
			struct candidate *c = &e->cands[e->ncands++];

			c->addr = m->addr;
			c->proc = (uint32_t)i;
			c->present = m->present;
			if (now - m->first_seen >= pol->max_wait_s) {
				/* Aged blocks go first, oldest first: FIFO bounds the wait. */
				c->tier = TIER_AGED;
				c->score = now - m->first_seen;
			} else {
				c->tier = active ? TIER_ACTIVE : TIER_IDLE;
				c->score = candidate_score(pol->weight, &s->activity, m->referenced_pct, m->present);
			}
		}
	}
	plan_order(e->cands, e->ncands);
	return 0;
}

/* Per-policy spending within one pass (rules may cap their subtree). */
struct spend {
	const struct policy *pol;
	double bytes;
};

static bool within_budget(struct spend *sp, size_t *nsp, size_t cap, const struct policy *pol, double *global,
			  double global_budget, double scale)
{
	size_t i;

	if (*global + HPAGE_SIZE > global_budget)
		return false;
	for (i = 0; i < *nsp && sp[i].pol != pol; i++)
		;
	if (i == *nsp) {
		if (*nsp == cap)
			return false;
		sp[(*nsp)++] = (struct spend){pol, 0};
	}
	if (sp[i].bytes + HPAGE_SIZE > pol->budget_mb_per_s * MIB * scale)
		return false;
	sp[i].bytes += HPAGE_SIZE;
	*global += HPAGE_SIZE;
	return true;
}

/* Opens a pidfd for a process we sampled and proves it is the same one: the
 * PID cannot have been reused if, after pidfd_open(), /proc/PID/stat still
 * shows the start time we know; and it runs the image we scanned if the
 * exec fingerprint matches too (an execve() in between leaves the rest of
 * this pass's blocks to the next scan). */
static int open_verified_pidfd(const struct proc_state *s)
{
	char path[64];
	struct proc_sample now_stat;
	int pidfd, dirfd, ok;

	pidfd = pidfd_open_pid(s->pid);
	if (pidfd < 0)
		return -errno;
	snprintf(path, sizeof(path), "%s/%d", proc_root(), (int)s->pid);
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ok = dirfd >= 0 && read_proc_stat(dirfd, &now_stat) == 0 && now_stat.start_ticks == s->start_ticks &&
	     now_stat.exec_id == s->exec_id;
	if (dirfd >= 0)
		close(dirfd);
	if (!ok) {
		close(pidfd);
		return -ESRCH;
	}
	return pidfd;
}

/* Blocks are 2 MiB-aligned, so bit 0 of a memo's address is free to mark it
 * dropped. Unlike overwriting the address, it keeps the array sorted: later
 * memo_find() calls in the same pass must still find their blocks, or a
 * collapsed block stays a candidate and is submitted again every pass. */
#define MEMO_DROPPED 1u

static void drop_memo(struct proc_state *s, uint64_t addr)
{
	struct block_memo *m = memo_find(s->blocks, s->nblocks, addr);

	if (m)
		m->addr |= MEMO_DROPPED; /* compacted after the pass */
}

/* Drops the dropped; blocks past eagain_retries are left alone until the
 * next full rescan (a rescan for any other reason must not revive them). */
static void compact_memos(struct proc_state *s, unsigned eagain_retries)
{
	size_t w = 0;

	for (size_t i = 0; i < s->nblocks; i++) {
		const struct block_memo *m = &s->blocks[i];

		if (m->addr & MEMO_DROPPED)
			continue;
		if (m->eagain > eagain_retries)
			addr_set_add(&s->given_up, m->addr);
		else
			s->blocks[w++] = *m;
	}
	s->nblocks = w;
}

struct collapse_run {
	uint64_t *addrs;
	uint8_t *out;
	struct candidate *retry; /* blocks that answered EAGAIN */
	size_t nretry;
	double deadline; /* monotonic seconds; 0: none */
	bool (*interrupted)(void);
	bool stop; /* ENOMEM, EPERM or the deadline: no more this pass */
};

/* Collapses n blocks (cr->addrs) of one process and applies the outcomes. */
static void collapse_process(struct engine *e, uint32_t p, struct collapse_run *cr, size_t n, struct pass_stats *ps,
			     bool collect_retry, double now)
{
	struct proc_state *s = &e->st[p];
	int pidfd = open_verified_pidfd(s);
	size_t ok;

	if (pidfd < 0) {
		ps->outcomes[COLLAPSE_ESRCH] += n;
		s->nblocks = 0;
		return;
	}
	ok = collapse_blocks(pidfd, cr->addrs, n, e->madvise_fn, cr->out);
	close(pidfd);
	if (ok && e->log_collapses)
		log_proc(LOG_INFO, s->pid, cgroup_or_unknown(s), "collapsed", "pid %d (%s): collapsed %zu MiB",
			 (int)s->pid, s->prev.comm, ok * 2);
	for (size_t i = 0; i < n; i++) {
		enum collapse_outcome oc = cr->out[i];
		struct block_memo *m;

		ps->outcomes[oc]++;
		switch (oc) {
		case COLLAPSE_OK:
			ps->collapsed_bytes += HPAGE_SIZE;
			add_cgroup_bytes(e, cgroup_or_unknown(s), HPAGE_SIZE);
			drop_memo(s, cr->addrs[i]);
			break;
		case COLLAPSE_EINVAL:
			addr_set_add(&s->refused, cr->addrs[i]);
			drop_memo(s, cr->addrs[i]);
			break;
		case COLLAPSE_EAGAIN:
		case COLLAPSE_EBUSY:
			m = memo_find(s->blocks, s->nblocks, cr->addrs[i]);
			if (m)
				m->eagain++;
			/* The retry later in this pass is one of its eagain_retries. */
			if (collect_retry && oc == COLLAPSE_EAGAIN && m && m->eagain <= s->policy->eagain_retries)
				cr->retry[cr->nretry++] = (struct candidate){.proc = p, .addr = cr->addrs[i]};
			break;
		case COLLAPSE_ENOMEM:
			if (now >= e->backoff_until)
				log_proc(LOG_WARNING, s->pid, cgroup_or_unknown(s), "enomem",
					 "no huge page available: backing off for %u ms", e->cfg->alloc_backoff_ms);
			e->backoff_until = now + e->cfg->alloc_backoff_ms / 1000.0;
			cr->stop = true;
			break;
		case COLLAPSE_ESRCH:
			s->nblocks = 0;
			return;
		case COLLAPSE_EPERM:
			if (!ps->missing_privilege)
				log_proc(LOG_ERR, s->pid, cgroup_or_unknown(s), "eperm",
					 "process_madvise refused: needs CAP_SYS_NICE (and ptrace access)");
			ps->missing_privilege = true;
			cr->stop = true;
			break;
		default:
			break;
		}
	}
}

/* Processes go in the order of their best block; each process's blocks go
 * in one batched call (one LRU drain). Consumes sel[] (marks it used). */
static void collapse_selected(struct engine *e, struct candidate *sel, size_t nsel, struct collapse_run *cr,
			      struct pass_stats *ps, bool collect_retry, double now)
{
	for (size_t i = 0; i < nsel && !cr->stop; i++) {
		uint32_t p = sel[i].proc;
		size_t n = 0;

		if (p == UINT32_MAX)
			continue;
		for (size_t j = i; j < nsel; j++)
			if (sel[j].proc == p) {
				cr->addrs[n++] = sel[j].addr;
				sel[j].proc = UINT32_MAX;
			}
		collapse_process(e, p, cr, n, ps, collect_retry, now);
		/* Bound one dispatch; what is left keeps its place. */
		if ((cr->deadline > 0 && monotonic_seconds() >= cr->deadline) || (cr->interrupted && cr->interrupted()))
			cr->stop = true;
	}
}

/* Moves the candidates the budget allows this pass to the front of
 * e->cands, in their global order; returns how many. */
static size_t select_within_budget(struct engine *e, const struct pass_options *o, double scale)
{
	double global = 0, global_budget;
	struct spend sp[64];
	size_t nsp = 0, nsel = 0;

	global_budget = o->unlimited ? 1e300 : e->cfg->defaults.budget_mb_per_s * MIB * scale;
	for (size_t i = 0; i < e->ncands; i++) {
		struct candidate c = e->cands[i];

		if (o->unlimited || within_budget(sp, &nsp, 64, e->st[c.proc].policy, &global, global_budget, scale))
			e->cands[nsel++] = c;
		else if (global + HPAGE_SIZE > global_budget)
			break;
	}
	return nsel;
}

/* Blocks remembered from an earlier scan may have gone cold (MADV_COLD) or
 * been lazily freed (MADV_FREE) since: neither faults nor shows in
 * /proc/PID/stat, so nothing made us look again. Scans once more each
 * selected process not scanned in this pass (about 1 ms for 8 GiB of THP,
 * small next to collapsing even one block). Returns how many selected
 * blocks are no longer candidates. */
static size_t recheck_selected(struct engine *e, const struct pass_options *o, size_t nsel, struct pass_stats *ps,
			       double now)
{
	size_t dropped = 0;

	for (size_t i = 0; i < nsel; i++) {
		struct proc_state *s = &e->st[e->cands[i].proc];

		if (s->last_scan < now)
			visit_process(e, s, o, ps, now, true);
		if (!memo_find(s->blocks, s->nblocks, e->cands[i].addr))
			dropped++;
	}
	ps->stale_dropped += dropped;
	return dropped;
}

static int collapse_in_order(struct engine *e, const struct pass_options *o, struct pass_stats *ps, double now,
			     double pass_start)
{
	double scale = e->last_pass > 0 ? now - e->last_pass : e->cfg->scan_interval_ms / 1000.0;
	struct collapse_run cr = {.deadline = o->max_seconds > 0 ? pass_start + o->max_seconds : 0,
				  .interrupted = o->interrupted};
	size_t nsel;
	int r = 0;

	/* The budget is a rate: spend what the time since the last pass earned,
	 * at least 10 ms and at most 10 s of it. */
	scale = scale < 0.01 ? 0.01 : scale > 10 ? 10 : scale;
	nsel = select_within_budget(e, o, scale);
	/* What stale blocks would have spent goes to the next in line. Each
	 * round rescans at least one process that the next cannot, so this
	 * ends; usually after one round. */
	while (recheck_selected(e, o, nsel, ps, now)) {
		r = build_candidates(e, o, NULL, now);
		if (r < 0)
			goto out;
		nsel = select_within_budget(e, o, scale);
	}
	if (GROW(e->batch_addrs, e->capbatch_addrs, nsel + 1) < 0 ||
	    GROW(e->batch_out, e->capbatch_out, nsel + 1) < 0 || GROW(e->retry, e->capretry, nsel + 1) < 0) {
		r = -ENOMEM;
		goto out;
	}
	cr.addrs = e->batch_addrs;
	cr.out = e->batch_out;
	cr.retry = e->retry;
	collapse_selected(e, e->cands, nsel, &cr, ps, true, now);
	/* EAGAIN is transient (a page was locked or off the LRU): one more try
	 * at the end of the pass; later passes retry up to eagain_retries. */
	if (cr.nretry && !cr.stop)
		collapse_selected(e, cr.retry, cr.nretry, &cr, ps, false, now);
out:
	for (size_t i = 0; i < e->nst; i++)
		compact_memos(&e->st[i], e->st[i].policy ? e->st[i].policy->eagain_retries : 0);
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
	return !sampling && e->pending == 0 && e->resume_pid == 0 && e->last_full_pass > 0 &&
	       now - e->last_full_pass < c->full_rescan_s && !e->doorbell_rang(&e->doorbell) &&
	       !mapped_watch_moved(&e->mapped, now);
}

int engine_pass(struct engine *e, const struct pass_options *o, struct pass_stats *ps)
{
	double t0, t1, now;
	int r;

	memset(ps, 0, sizeof(*ps));
	t0 = monotonic_seconds();
	if (o->allow_idle && pass_can_idle(e, e->now())) {
		ps->idle = true;
		ps->scan_s = monotonic_seconds() - t0;
		e->total.scan_s += ps->scan_s;
		e->passes++;
		e->passes_idle++;
		return 0;
	}
	r = engine_sample(e);
	if (r < 0)
		return r;
	now = e->sample_time;
	e->scanner.stats = (struct range_scan_stats){0};
	/* A pass that runs out of time stops scanning where it is and the next
	 * one starts there, so no process waits behind the others for ever. */
	size_t first = 0;
	while (first < e->nst && e->st[first].pid < e->resume_pid)
		first++;
	e->resume_pid = 0;
	for (size_t k = 0; k < e->nst; k++) {
		size_t i = (first + k) % e->nst;

		if (!pid_selected(o, e->st[i].pid))
			continue;
		if ((o->interrupted && o->interrupted()) ||
		    (o->max_seconds > 0 && monotonic_seconds() - t0 > o->max_seconds)) {
			e->resume_pid = e->st[i].pid;
			break;
		}
		ps->procs_total++;
		visit_process(e, &e->st[i], o, ps, now, false);
		if (e->st[i].policy && !e->st[i].policy->enable)
			ps->procs_disabled++;
	}
	ps->pagemap_ops = e->scanner.stats.scan_ioctls + e->scanner.stats.pagemap_preads;
	r = build_candidates(e, o, ps, now);
	t1 = monotonic_seconds();
	ps->scan_s = t1 - t0;
	if (r == 0 && !o->dry_run) {
		if (now < e->backoff_until)
			ps->backing_off = true;
		else
			r = collapse_in_order(e, o, ps, now, t0);
		ps->collapse_s = monotonic_seconds() - t1;
	}
	e->last_pass = now;
	e->last_full_pass = now;
	e->pending = 0;
	for (size_t i = 0; i < e->nst; i++)
		if (e->st[i].policy && e->st[i].policy->enable && pid_selected(o, e->st[i].pid))
			e->pending += e->st[i].nblocks;
	/* Armed after our own work, so the pass's own faults do not count. */
	fault_doorbell_arm(&e->doorbell);
	mapped_watch_note(&e->mapped, e->now());
	e->passes++;
	for (int i = 0; i < SCAN_NR_RESULTS; i++)
		e->total.results[i] += ps->results[i];
	for (int i = 0; i < COLLAPSE_NR_OUTCOMES; i++)
		e->total.outcomes[i] += ps->outcomes[i];
	e->total.collapsed_bytes += ps->collapsed_bytes;
	e->total.scan_s += ps->scan_s;
	e->total.collapse_s += ps->collapse_s;
	e->total.procs_scanned += ps->procs_scanned;
	e->total.procs_unchanged += ps->procs_unchanged;
	e->total.smaps_reads += ps->smaps_reads;
	e->total.pagemap_ops += ps->pagemap_ops;
	e->total.stale_dropped += ps->stale_dropped;
	e->last = *ps;
	return r;
}
