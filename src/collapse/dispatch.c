/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Dispatch to collapse: the verified pidfd, one batched call per process,
 * the outcomes' effects on the table (for the engine to apply), and the
 * recheck before collapse. */
#include "dispatch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cold_ranges.h"
#include "config.h"
#include "grow.h"
#include "log.h"
#include "proc_state.h"
#include "range_scan.h"
#include "smaps_scan.h"
#include "smaps_usage.h"

/* A process may have moved to another cgroup since its scan (up to
 * full_rescan_s ago): read its cgroup again, through the dirfd that is open
 * anyway, and let the policy it is under now decide. */
static bool policy_still_allows(const struct dispatch_env *env, uint32_t p, int dirfd)
{
	const struct proc_state *s = &env->st[p];
	const struct policy *before = s->policy;

	if (env->refresh_policy(env->ctx, p, dirfd) < 0)
		return false; /* logged there */
	if (s->policy->enable)
		return true;
	if (s->policy != before)
		log_proc(LOG_INFO, s->pid, s->cgroup, NULL,
			 "pid %d (%s): now in %s, whose policy disables collapsing: skipping its blocks", (int)s->pid,
			 s->prev.comm, s->cgroup);
	return false;
}

/* Whether dirfd is still of the process we scanned: the PID cannot have
 * been reused if /proc/PID/stat still shows the start time we know; and it
 * runs the image we scanned if the exec fingerprint matches too, stat's
 * addresses and the image's AT_RANDOM bytes (an execve() in between leaves
 * the rest of this pass's blocks to the next scan; with ASLR off the
 * addresses alone stay the same). Then checks its policy again (-ECANCELED: it no longer allows
 * collapsing). */
static int still_the_same(const struct dispatch_env *env, uint32_t p, int dirfd)
{
	const struct proc_state *s = &env->st[p];
	struct proc_sample now_stat;

	if (read_proc_stat(dirfd, &now_stat) < 0 || now_stat.start_ticks != s->start_ticks ||
	    (now_stat.exec_id ^ read_exec_random(dirfd)) != s->exec_id)
		return -ESRCH;
	return policy_still_allows(env, p, dirfd) ? 0 : -ECANCELED;
}

static int open_proc_dir(const struct dispatch_env *env, const struct proc_state *s)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%d", env->proc_root, (int)s->pid);
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* Opens a pidfd for a process we sampled and proves it is the same one:
 * after pidfd_open(), still_the_same() on /proc/PID. */
static int open_verified_pidfd(const struct dispatcher *d, const struct dispatch_env *env, uint32_t p)
{
	const struct proc_state *s = &env->st[p];
	int pidfd, dirfd, err;

	pidfd = d->pidfd_open(s->pid);
	if (pidfd < 0)
		return -errno;
	dirfd = open_proc_dir(env, s);
	err = dirfd < 0 ? -ESRCH : still_the_same(env, p, dirfd);
	if (dirfd >= 0)
		close(dirfd);
	if (err) {
		close(pidfd);
		return err;
	}
	return pidfd;
}

/* The re-check right before each call (collapse.h): the process, its
 * cgroup's policy and the THP policy and prctl it was scanned under
 * (env->policy_holds), then the page tables of just these blocks
 * (range_scan_recheck, through the dispatcher's range scanner), with the
 * scan's limits. */
struct call_check {
	const struct dispatch_env *env;
	struct range_scanner *range; /* the dispatcher's, attached to p */
	uint32_t p;
	int dirfd;
	int err; /* why the calls stopped: -ESRCH, -ECANCELED, ... */
	uint64_t stale;
};

static int recheck_call(void *opaque, const uint64_t *addrs, size_t n, bool *ok)
{
	struct call_check *cc = opaque;
	const struct proc_state *s = &cc->env->st[cc->p];
	struct recheck_block b[RECHECK_MAX];
	uint8_t result[RECHECK_MAX];
	int err = still_the_same(cc->env, cc->p, cc->dirfd);

	if (!err && !cc->env->policy_holds(cc->env->ctx, s, cc->dirfd))
		err = -ECANCELED;
	for (size_t k = 0; k < n && !err; k++) {
		const struct block_memo *m = block_memo_find(s->blocks, s->nblocks, addrs[k]);

		/* An EAGAIN retry's memo may be gone: then so is the scan's word. */
		b[k] = (struct recheck_block){
		    .addr = addrs[k], .lazy_sampled = m ? m->lazy_sampled : 0, .anon = m && m->anon};
		if (!m)
			ok[k] = false;
	}
	if (!err) {
		const struct collapse_limits lim = cc->env->limits(cc->env->ctx, s->policy);

		err = range_scan_recheck(cc->range, b, n, &lim, result);
	}
	if (err) {
		cc->err = err;
		return err;
	}
	/* Advice since the scan: MADV_COLD/MADV_PAGEOUT given after it. */
	const struct cold_ranges *cold = cc->env->cold_drain(cc->env->ctx);
	for (size_t k = 0; k < n; k++) {
		const struct block_memo *m = block_memo_find(s->blocks, s->nblocks, addrs[k]);

		if (result[k] != SCAN_CANDIDATE ||
		    (m && cold_ranges_overlap(cold, s->pid, addrs[k], HPAGE_SIZE, m->cold_gen)))
			ok[k] = false;
		cc->stale += !ok[k];
	}
	return 0;
}

static void add_cgroup_bytes(struct dispatcher *e, const char *cgroup, uint64_t bytes)
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

/* A call's time, shared by its blocks: what one block cost the target. */
static void observe_call(void *ctx, double seconds, size_t nblocks)
{
	struct dispatcher *e = ctx;

	if (nblocks)
		histogram_observe(&e->block_hist, seconds / (double)nblocks, nblocks);
}

/* Keeps a block's effect in cr->fx, if it has one. */
static void add_block_effect(struct collapse_run *cr, const struct block_effect *b)
{
	if (b->drop || b->refused || b->set_eagain)
		cr->fx.blocks[cr->fx.nblocks++] = *b;
}

/* Collapses n blocks (cr->addrs) of one process and says in cr->fx what the
 * outcomes make of it. Its effect (pe) is also this call's copy of what
 * the earlier blocks changed: the ENOMEM streak the next block's decision
 * reads, and whether the process is forgotten (then no block has a memo).
 * A call's blocks are distinct (one candidate per memo: budget.c), so no
 * block sees another's drop or EAGAIN count. */
static void collapse_process(struct dispatcher *e, const struct dispatch_env *env, uint32_t p, struct collapse_run *cr,
			     size_t n, struct pass_stats *ps, bool collect_retry, double now)
{
	const struct proc_state *s = &env->st[p];
	struct proc_effect *pe = &cr->fx.procs[cr->fx.nprocs++];
	int pidfd;
	struct call_check cc = {.env = env, .range = &e->range, .p = p, .dirfd = -1};
	size_t ok;

	*pe = (struct proc_effect){.proc = p, .enomem_streak = s->enomem_streak, .backoff_until = s->backoff_until};
	pidfd = open_verified_pidfd(e, env, p);
	if (pidfd == -ECANCELED) { /* moved under a policy that says no */
		pe->forget = true;
		return;
	}
	if (pidfd >= 0) {
		cc.dirfd = open_proc_dir(env, s);
		if (cc.dirfd < 0 || range_scanner_attach(&e->range, cc.dirfd, s->pid) < 0) {
			close(pidfd);
			pidfd = -ESRCH;
		}
	}
	if (pidfd < 0) {
		if (cc.dirfd >= 0)
			close(cc.dirfd);
		ps->outcomes[COLLAPSE_ESRCH] += n;
		pe->forget = true;
		return;
	}
	/* The policy bounds how long one call may hold the target's mmap lock
	 * (a process with candidates always has one: budget_candidates()). */
	const struct collapse_pacing pace = {.per_call = s->policy->blocks_per_call,
					     .pause_ms = s->policy->pause_ms,
					     .deadline = cr->deadline,
					     .interrupted = cr->interrupted,
					     .now = env->now,
					     .on_call = observe_call,
					     .ctx = e};
	const struct collapse_io io = {.madvise = e->madvise_fn,
				       .alloc_failed = e->alloc_failed,
				       .ctx = e->alloc_failed_ctx,
				       .pace = &pace,
				       .recheck = recheck_call,
				       .recheck_ctx = &cc};
	ok = collapse_blocks_io(pidfd, cr->addrs, n, &io, cr->out);
	close(pidfd);
	range_scanner_detach(&e->range);
	close(cc.dirfd);
	ps->stale_dropped += cc.stale;
	if (cc.err == -ECANCELED || cc.err == -ESRCH) /* no longer allowed, or not the one we scanned */
		pe->forget = true;
	if (ok) {                      /* coverage.h: the last scan's THP numbers are stale now */
		pe->enomem_streak = 0; /* it got huge pages: its next ENOMEM starts over */
		pe->usage = s->usage;
		pe->usage_set = thp_usage_refresh(env->proc_root, s->pid, s->start_ticks, &e->smaps_buf, &e->smaps_cap,
						  &e->vmas, &pe->usage) == 0;
		/* As after a scan: a process with tens of thousands of VMAs
		 * must not leave its smaps buffers to every later pass. */
		smaps_trim(&e->smaps_buf, &e->smaps_cap, &e->vmas, SMAPS_KEEP_BYTES);
	}
	/* Submitted blocks spend the budget, whatever the outcome; an EAGAIN
	 * retry later in the pass was paid for already. */
	if (collect_retry)
		cr->charges[cr->ncharges++] =
		    (struct dispatch_charge){.pol = s->policy, .bytes = (double)n * HPAGE_SIZE};
	/* One lookup per call, not per collapsed block. */
	if (ok)
		add_cgroup_bytes(e, proc_state_cgroup(s), (uint64_t)ok * HPAGE_SIZE);
	if (ok && e->log_collapses)
		/* Debug: the pass's one line sums them (service.c). */
		log_proc(LOG_DEBUG, s->pid, proc_state_cgroup(s), "collapsed", "pid %d (%s): collapsed %zu MiB",
			 (int)s->pid, s->prev.comm, ok * 2);
	for (size_t i = 0; i < n; i++) {
		enum collapse_outcome oc = cr->out[i];
		/* A forgotten process has no memos left. */
		const struct block_memo *m = pe->forget ? NULL : block_memo_find(s->blocks, s->nblocks, cr->addrs[i]);
		/* s->policy is NULL if its cgroup became unreadable in the
		 * re-check: then its blocks are gone (forgotten), m too. */
		const struct outcome_facts f = {.outcome = oc,
						.has_memo = m != NULL,
						.eagain = m ? m->eagain : 0,
						.eagain_retries = s->policy ? s->policy->eagain_retries : 0,
						.collect_retry = collect_retry,
						.enomem_streak = pe->enomem_streak,
						.alloc_backoff_ms = env->cfg->alloc_backoff_ms,
						.enomem_procs = cr->enomem_procs};
		const struct outcome_decision d = dispatch_outcome(&f);

		ps->outcomes[oc]++;
		if (d.collapsed)
			ps->collapsed_bytes += HPAGE_SIZE;
		/* A block without a memo has nothing to drop or count. */
		const struct block_effect b = {.proc = p,
					       .addr = cr->addrs[i],
					       .drop = d.fate != BLOCK_KEEP && m,
					       /* while its VMA stays the same (rescan.c) */
					       .refused = d.fate == BLOCK_REFUSED,
					       .vma_tag = m ? m->vma_tag : 0,
					       .refused_at = now,
					       .set_eagain = d.count_eagain && m,
					       .eagain = d.eagain};

		add_block_effect(cr, &b);
		if (d.retry)
			cr->retry[cr->nretry++] = (struct candidate){.proc = p, .addr = cr->addrs[i]};
		if (d.back_off) {
			pe->enomem_streak = d.enomem_streak;
			pe->backoff_until = now + d.backoff_s;
			log_proc_id(
			    LOG_WARNING, HC_MSGID_BACKOFF, s->pid, proc_state_cgroup(s), "enomem",
			    "pid %d (%s): no huge page available (%u in a row): backing off this process for %.0f ms",
			    (int)s->pid, s->prev.comm, (unsigned)pe->enomem_streak, d.backoff_s * 1e3);
			cr->enomem_procs++;
		}
		if (d.missing_privilege) {
			if (!ps->missing_privilege)
				log_proc(LOG_ERR, s->pid, proc_state_cgroup(s), "eperm",
					 "process_madvise refused: needs CAP_SYS_NICE (and ptrace access)");
			ps->missing_privilege = true;
		}
		if (d.stop_pass)
			cr->stop = true;
		if (d.forget_process) {
			pe->forget = true;
			return;
		}
	}
}

void collapse_selected(struct dispatcher *d, const struct dispatch_env *env, const struct candidate *sel, size_t nsel,
		       struct collapse_run *cr, struct pass_stats *ps, bool collect_retry, double now)
{
	memset(cr->taken, 0, nsel * sizeof(*cr->taken));
	cr->fx.nprocs = cr->fx.nblocks = 0; /* this round's */
	for (size_t i = 0; i < nsel && !cr->stop; i++) {
		uint32_t p = sel[i].proc;
		size_t n = 0;

		if (cr->taken[i])
			continue;
		for (size_t j = i; j < nsel; j++)
			if (sel[j].proc == p) {
				cr->addrs[n++] = sel[j].addr;
				cr->taken[j] = true;
			}
		/* A block that was not re-checked is never collapsed: a scan
		 * of this pass found it (last_scan), and no scan of the process
		 * stopped midway since (the blocks above its cursor are older). */
		if (env->st[p].last_scan < now || env->st[p].scan_cursor) {
			ps->outcomes[COLLAPSE_NOT_TRIED] += n;
			continue;
		}
		collapse_process(d, env, p, cr, n, ps, collect_retry, now);
		/* Bound one dispatch; what is left keeps its place. */
		if ((cr->deadline > 0 && env->now() >= cr->deadline) || (cr->interrupted && cr->interrupted()))
			cr->stop = true;
	}
}

bool dispatch_needs_rescan(const struct proc_state *s, double now)
{
	/* Not again if its scan stopped midway in this pass: it had its
	 * share (collapse_selected() leaves its blocks alone). */
	return s->last_scan < now && !(s->scan_cursor && s->cursor_set == now);
}

int dispatcher_init(struct dispatcher *d, const struct hc_paths *paths)
{
	vma_list_init(&d->vmas);
	return range_scanner_init(&d->range, paths->pagemap_read ? PAGEMAP_READ : PAGEMAP_AUTO, paths);
}

int dispatch_reserve(struct dispatcher *d, size_t nsel, struct collapse_run *cr)
{
	/* A round has at most one effect per block and per process: the
	 * retry round's blocks are some of the first's. */
	if (GROW(d->batch_addrs, d->capbatch_addrs, nsel + 1) < 0 ||
	    GROW(d->batch_out, d->capbatch_out, nsel + 1) < 0 || GROW(d->retry, d->capretry, nsel + 1) < 0 ||
	    GROW(d->taken, d->captaken, nsel + 1) < 0 || GROW(d->charges, d->capcharges, nsel + 1) < 0 ||
	    GROW(d->proc_fx, d->capproc_fx, nsel + 1) < 0 || GROW(d->block_fx, d->capblock_fx, nsel + 1) < 0)
		return -ENOMEM;
	cr->addrs = d->batch_addrs;
	cr->out = d->batch_out;
	cr->retry = d->retry;
	cr->taken = d->taken;
	cr->charges = d->charges;
	cr->fx = (struct collapse_effects){.procs = d->proc_fx, .blocks = d->block_fx};
	return 0;
}

void dispatcher_free(struct dispatcher *d)
{
	for (size_t i = 0; i < d->ncg_bytes; i++)
		free(d->cg_bytes[i].cgroup);
	free(d->cg_bytes);
	free(d->batch_addrs);
	free(d->batch_out);
	free(d->retry);
	free(d->taken);
	free(d->charges);
	free(d->proc_fx);
	free(d->block_fx);
	free(d->smaps_buf);
	vma_list_free(&d->vmas);
	range_scanner_free(&d->range);
	memset(d, 0, sizeof(*d));
}
