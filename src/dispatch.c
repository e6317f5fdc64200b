/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Dispatch to collapse: the verified pidfd, one batched call per process,
 * the outcomes applied to the memos, and the recheck before collapse. */
#include "dispatch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "log.h"
#include "rescan.h"
#include "smaps_scan.h"

/* A process may have moved to another cgroup since its scan (up to
 * full_rescan_s ago): read its cgroup again, through the dirfd that is open
 * anyway, and let the policy it is under now decide. */
static bool policy_still_allows(struct engine *e, struct proc_state *s, int dirfd)
{
	const struct policy *before = s->policy;

	if (rescan_refresh_policy(e, s, dirfd) < 0)
		return false; /* logged there */
	if (s->policy->enable)
		return true;
	if (s->policy != before)
		log_proc(LOG_INFO, s->pid, s->cgroup, NULL,
			 "pid %d (%s): now in %s, whose policy disables collapsing: skipping its blocks", (int)s->pid,
			 s->prev.comm, s->cgroup);
	return false;
}

/* Opens a pidfd for a process we sampled and proves it is the same one: the
 * PID cannot have been reused if, after pidfd_open(), /proc/PID/stat still
 * shows the start time we know; and it runs the image we scanned if the
 * exec fingerprint matches too (an execve() in between leaves the rest of
 * this pass's blocks to the next scan). Then checks its policy again
 * (-ECANCELED: it no longer allows collapsing). */
int open_verified_pidfd(struct engine *e, struct proc_state *s)
{
	char path[PATH_MAX];
	struct proc_sample now_stat;
	int pidfd, dirfd, err = 0;

	pidfd = pidfd_open_pid(s->pid);
	if (pidfd < 0)
		return -errno;
	snprintf(path, sizeof(path), "%s/%d", e->proc_root, (int)s->pid);
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0 || read_proc_stat(dirfd, &now_stat) < 0 || now_stat.start_ticks != s->start_ticks ||
	    now_stat.exec_id != s->exec_id)
		err = -ESRCH;
	else if (!policy_still_allows(e, s, dirfd))
		err = -ECANCELED;
	if (dirfd >= 0)
		close(dirfd);
	if (err) {
		close(pidfd);
		return err;
	}
	return pidfd;
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

/* A call's time, shared by its blocks: what one block cost the target. */
static void observe_call(void *ctx, double seconds, size_t nblocks)
{
	struct engine *e = ctx;

	if (nblocks)
		histogram_observe(&e->block_hist, seconds / (double)nblocks, nblocks);
}

/* Collapses n blocks (cr->addrs) of one process and applies the outcomes. */
static void collapse_process(struct engine *e, uint32_t p, struct collapse_run *cr, size_t n, struct pass_stats *ps,
			     bool collect_retry, double now)
{
	struct proc_state *s = &e->st[p];
	int pidfd = open_verified_pidfd(e, s);
	size_t ok;

	if (pidfd == -ECANCELED) { /* moved under a policy that says no */
		s->nblocks = 0;
		return;
	}
	if (pidfd < 0) {
		ps->outcomes[COLLAPSE_ESRCH] += n;
		s->nblocks = 0;
		return;
	}
	/* The policy bounds how long one call may hold the target's mmap lock
	 * (a process with candidates always has one: budget_candidates()). */
	const struct collapse_pacing pace = {.per_call = s->policy->blocks_per_call,
					     .pause_ms = s->policy->pause_ms,
					     .deadline = cr->deadline,
					     .interrupted = cr->interrupted,
					     .now = e->now,
					     .on_call = observe_call,
					     .ctx = e};
	const struct collapse_io io = {
	    .madvise = e->madvise_fn, .alloc_failed = e->alloc_failed, .ctx = e->alloc_failed_ctx, .pace = &pace};
	ok = collapse_blocks_io(pidfd, cr->addrs, n, &io, cr->out);
	close(pidfd);
	if (ok) { /* coverage.h: the last scan's THP numbers are stale now */
		thp_usage_refresh(e->proc_root, s->pid, s->start_ticks, &e->smaps_buf, &e->smaps_cap, &e->vmas,
				  &s->usage);
		/* As after a scan: a process with tens of thousands of VMAs
		 * must not leave its smaps buffers to every later pass. */
		smaps_trim(&e->smaps_buf, &e->smaps_cap, &e->vmas, SMAPS_KEEP_BYTES);
	}
	/* Submitted blocks spend the budget, whatever the outcome; an EAGAIN
	 * retry later in the pass was paid for already. */
	if (collect_retry)
		budget_charge(&e->budget, e->cfg, s->policy, (double)n * HPAGE_SIZE);
	/* One lookup per call, not per collapsed block. */
	if (ok)
		add_cgroup_bytes(e, proc_state_cgroup(s), (uint64_t)ok * HPAGE_SIZE);
	if (ok && e->log_collapses)
		log_proc(LOG_INFO, s->pid, proc_state_cgroup(s), "collapsed", "pid %d (%s): collapsed %zu MiB",
			 (int)s->pid, s->prev.comm, ok * 2);
	for (size_t i = 0; i < n; i++) {
		enum collapse_outcome oc = cr->out[i];
		struct block_memo *m;

		ps->outcomes[oc]++;
		switch (oc) {
		case COLLAPSE_OK:
			ps->collapsed_bytes += HPAGE_SIZE;
			drop_memo(s->blocks, s->nblocks, cr->addrs[i]);
			break;
		case COLLAPSE_EINVAL:
			/* Refused while its VMA stays the same (rescan.c). */
			m = memo_find(s->blocks, s->nblocks, cr->addrs[i]);
			addr_set_add(&s->refused, cr->addrs[i], m ? m->vma_tag : 0, now);
			drop_memo(s->blocks, s->nblocks, cr->addrs[i]);
			break;
		case COLLAPSE_UNMAPPED:
			/* Unmapped since the scan: a stale candidate of this
			 * process only; nobody else waits for it. */
			drop_memo(s->blocks, s->nblocks, cr->addrs[i]);
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
				log_proc(LOG_WARNING, s->pid, proc_state_cgroup(s), "enomem",
					 "no huge page available: backing off for %u ms", e->cfg->alloc_backoff_ms);
			e->backoff_until = now + e->cfg->alloc_backoff_ms / 1000.0;
			cr->stop = true;
			break;
		case COLLAPSE_ESRCH:
			s->nblocks = 0;
			return;
		case COLLAPSE_EPERM:
			if (!ps->missing_privilege)
				log_proc(LOG_ERR, s->pid, proc_state_cgroup(s), "eperm",
					 "process_madvise refused: needs CAP_SYS_NICE (and ptrace access)");
			ps->missing_privilege = true;
			cr->stop = true;
			break;
		default:
			break;
		}
	}
}

void collapse_selected(struct engine *e, struct candidate *sel, size_t nsel, struct collapse_run *cr,
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
		if ((cr->deadline > 0 && e->now() >= cr->deadline) || (cr->interrupted && cr->interrupted()))
			cr->stop = true;
	}
}

size_t recheck_selected(struct engine *e, const struct pass_options *o, size_t nsel, struct pass_stats *ps, double now)
{
	size_t dropped = 0;

	for (size_t i = 0; i < nsel; i++) {
		struct proc_state *s = &e->st[e->cands[i].proc];

		if (s->last_scan < now)
			rescan_visit(e, s, o, ps, now, true);
		if (!memo_find(s->blocks, s->nblocks, e->cands[i].addr))
			dropped++;
	}
	return dropped;
}
