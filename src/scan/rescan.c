/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Rescans: deciding that a process changed, and reading it again. */
#include "rescan.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "block_memo.h"
#include "cold_ranges.h"
#include "cold_watch.h"
#include "config.h"
#include "grow.h"
#include "log.h"
#include "pass.h"
#include "pid_filter.h"
#include "prctl_iter.h"
#include "proc_state.h"
#include "procfs.h"
#include "rescan_reason.h"
#include "sample_set.h"
#include "smaps_usage.h"
#include "vma_eligibility.h"

/* The identity of a VMA, as far as the kernel's EINVAL is concerned: its
 * range, offset, file, permissions and flags (MADV_HUGEPAGE, for one, can
 * make a refused block eligible). FNV-1a over those fields. */
static uint32_t vma_tag(const struct vma *v)
{
	const uint64_t f[] = {v->start,
			      v->end,
			      v->offset,
			      v->inode,
			      v->vmflags,
			      (uint64_t)v->dev_major << 32 | v->dev_minor,
			      (uint64_t)(uint8_t)v->perms[0] | (uint64_t)(uint8_t)v->perms[1] << 8 |
				  (uint64_t)(uint8_t)v->perms[2] << 16 | (uint64_t)(uint8_t)v->perms[3] << 24};
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		for (int b = 0; b < 64; b += 8) {
			h ^= (uint8_t)(f[i] >> b);
			h *= 16777619u;
		}
	return h;
}

struct scan_ctx {
	struct scanner *sc;
	struct cold_ranges *cold;
	struct proc_state *s;
	uint64_t *results;
	unsigned referenced_pct;
	uint32_t vma_tag;
	bool anon;             /* the VMA's kind, for the re-check before collapse */
	uint64_t unreferenced; /* the VMA's Rss - Referenced, in pages (cold_ranges.h) */
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
	const struct addr_entry *refused;

	refused = addr_set_find(&s->refused, addr);
	if (refused && refused->tag == x->vma_tag) {
		x->results[SCAN_CANDIDATE]--;
		x->results[SCAN_INELIGIBLE]++;
		return;
	}
	if (refused) /* its VMA changed: the kernel's answer was about the old one */
		addr_set_remove(&s->refused, addr);
	if (addr_set_has(&s->given_up, addr))
		return;
	/* Inside a MADV_COLD/MADV_PAGEOUT range: khugepaged wants a referenced
	 * page, which only the VMA's count can prove. */
	{
		uint64_t cold = cold_ranges_overlap(x->cold, s->pid, addr, HPAGE_SIZE, 0);

		if (cold && !cold_block_warm(x->unreferenced, c->present, cold)) {
			x->results[SCAN_CANDIDATE]--;
			x->results[SCAN_LACK_REFERENCED_PAGE]++;
			return;
		}
	}
	if (GROW(s->blocks, s->capblocks, s->nblocks + 1) < 0) {
		x->err = -ENOMEM;
		return;
	}
	old = block_memo_find(x->sc->old_blocks, x->sc->nold_blocks, addr);
	m = &s->blocks[s->nblocks++];
	m->addr = addr;
	m->present = c->present;
	m->referenced_pct = (uint8_t)(x->referenced_pct > 100 ? 100 : x->referenced_pct);
	m->first_seen = old ? old->first_seen : x->now;
	m->eagain = old ? old->eagain : 0;
	m->vma_tag = x->vma_tag;
	m->lazy_sampled = c->lazy_sampled;
	m->anon = x->anon;
	m->cold_gen = x->cold->gen;
}

/* After a whole scan: a range over no VMA holding unreferenced pages lies
 * in memory whose every resident page was referenced since, or in none
 * (unmapped): it is forgotten. Past COLD_SETTLE_VMAS such VMAs every range
 * is kept (toward not collapsing). */
#define COLD_SETTLE_VMAS 256

static void settle_cold(const struct scanner *sc, struct cold_ranges *cold, const struct proc_state *s)
{
	uint64_t vs[COLD_SETTLE_VMAS], ve[COLD_SETTLE_VMAS];
	bool warm[COLD_SETTLE_VMAS];
	size_t n = 0;

	if (!cold_ranges_has(cold, s->pid))
		return;
	for (size_t i = 0; i < sc->vmas.n; i++) {
		const struct vma *v = &sc->vmas.v[i];

		if (v->referenced_kb >= v->rss_kb)
			continue;
		if (n == COLD_SETTLE_VMAS)
			return;
		vs[n] = v->start, ve[n] = v->end, warm[n] = false, n++;
	}
	cold_ranges_settle(cold, s->pid, vs, ve, warm, n);
}

/* The pass's time is up (max_seconds after it began), or it is
 * interrupted. */
static bool out_of_time(const struct scan_input *in, const struct pass_options *o)
{
	return (o->interrupted && o->interrupted()) ||
	       (o->max_seconds > 0 && in->now() - in->pass_start > o->max_seconds);
}

/* Blocks of the previous scan at or above addr go back after the new ones
 * (all below addr): a scan that stopped there keeps them until the next
 * pass gets that far. */
static void keep_old_from(const struct scanner *sc, struct proc_state *s, uint64_t addr)
{
	for (size_t i = 0; i < sc->nold_blocks; i++)
		if (sc->old_blocks[i].addr >= addr && GROW(s->blocks, s->capblocks, s->nblocks + 1) == 0)
			s->blocks[s->nblocks++] = sc->old_blocks[i];
}

/* Candidates of the last scan that this one no longer found: gone cold,
 * lazy-freed, emptied, unmapped or made huge by someone else while they
 * waited for budget. Both lists are sorted by address. */
static uint64_t count_forgotten(struct block_memo *old, size_t nold, struct block_memo *now, size_t nnow)
{
	uint64_t n = 0;

	for (size_t i = 0; i < nold; i++)
		if (!block_memo_find(now, nnow, old[i].addr))
			n++;
	return n;
}

/* A process that opts in with MADV_HUGEPAGE right after faulting its memory
 * in is looked at again this long after the scan that saw the faults. */
#define POLICY_RECHECK_S 0.5 /* the next pass at the default 1 s interval, whatever its jitter */

/* The THP policy, read again at most once a second: an administrator may
 * change a knob the daemon does not own. On failure the last one stands. */
static void thp_refresh(struct scanner *sc, const struct scan_input *in, double now)
{
	struct thp_state before = sc->thp;
	int r;

	if (now - sc->thp_read_at < 1.0)
		return;
	sc->thp_read_at = now;
	/* The admin's khugepaged/max_ptes_none bounds ours: an admin's 0 (no
	 * memory added by a collapse) holds. Unreadable: ours alone. */
	{
		char buf[32];
		uint64_t v;
		ssize_t n = thp_files_read(&sc->thp_files, in->sysfs_thp, THP_F_MAX_PTES_NONE, buf, sizeof(buf));

		sc->admin_max_ptes_none = UINT_MAX;
		if (n > 0 && parse_dec_u64(buf, strcspn(buf, "\n"), &v) == 0 && v < UINT_MAX)
			sc->admin_max_ptes_none = (unsigned)v;
	}
	r = thp_state_read_kept(&sc->thp_files, in->sysfs_thp, in->khp, &sc->thp);
	if (r < 0)
		log_debug("cannot read the THP policy from %s: %s", in->sysfs_thp, strerror(-r));
	else if (memcmp(&before, &sc->thp, sizeof(before))) /* bytes only: no padding */
		sc->policy_gen++;
}

struct time_check {
	const struct scan_input *in;
	const struct pass_options *o;
};

static bool time_is_up(void *opaque)
{
	const struct time_check *t = opaque;

	return out_of_time(t->in, t->o);
}

struct collapse_limits rescan_limits(const struct scanner *sc, const struct policy *pol)
{
	struct collapse_limits lim = pol->limits;

	if (sc->admin_max_ptes_none < lim.max_ptes_none)
		lim.max_ptes_none = sc->admin_max_ptes_none;
	return lim;
}

/* The prctl mode of s, whose VMAs are in sc->vmas: inferred (status
 * THP_enabled, THPeligible; thp_policy.h), and read from the kernel
 * (sc->prctl_exact) where that leaves it unknown and some VMA's verdict
 * depends on it, so that a process that cannot matter costs nothing. */
static enum thp_prctl prctl_mode(struct scanner *sc, const struct proc_state *s)
{
	enum thp_prctl m = sc->prctl_infer(&sc->thp.live, s->thp_enabled, sc->vmas.v, sc->vmas.n), exact;

	if (m != THP_PRCTL_UNKNOWN || !sc->prctl_exact ||
	    !thp_prctl_matters(&sc->thp, s->policy->scope, sc->vmas.v, sc->vmas.n))
		return m;
	if (sc->prctl_exact(sc->prctl_exact_ctx, s->pid, &exact) < 0)
		return m; /* gone, or the iterator failed: the safe rule */
	sc->prctl_reads++;
	return exact;
}

/* Reads smaps and page tables of one process; replaces its block list.
 * Checks the pass's time between VMAs (after the first one, so that every
 * pass makes progress) and, on the read path, inside a VMA: when it is up,
 * or the read path's bound for one process is reached (range_scan.h),
 * keeps what it found and the rest of the previous list, sets
 * s->scan_cursor to go on from there at its next visit, and returns
 * -ETIMEDOUT (time) or -EINPROGRESS (bound: the pass goes on with others).
 * A resumed scan (s->scan_cursor set) keeps the blocks below the cursor
 * and scans from there. Returns 0, or -errno (-ESRCH: gone or recycled). */
static int scan_process(struct scanner *sc, const struct scan_input *in, struct proc_state *s, int dirfd,
			const struct pass_options *o, struct pass_stats *ps, double now)
{
	const struct policy *pol = s->policy;
	struct collapse_limits lim;
	uint64_t from = s->scan_cursor;
	struct scan_ctx ctx = {.sc = sc, .cold = in->cold, .s = s, .results = s->results, .now = now};
	struct time_check tc = {.in = in, .o = o};
	uint64_t before[SCAN_NR_RESULTS];
	bool scanned_one = false;
	int r;

	s->scan_cursor = 0; /* set again below if this one stops too */
	r = read_smaps(dirfd, &sc->smaps_buf, &sc->smaps_cap, (vma_list_clear(&sc->vmas), &sc->vmas));
	ps->smaps_reads++;
	if (r < 0 && r != -EINVAL)
		return r;
	if (r == -EINVAL)
		log_proc(LOG_WARNING, s->pid, s->cgroup, NULL, "pid %d: malformed smaps, using the %zu VMAs before it",
			 (int)s->pid, sc->vmas.n);
	tmpfs_mounts_classify(&sc->tmpfs, dirfd, &sc->vmas); /* before anything reads a VMA's kind */
	thp_usage_from_vmas(&sc->vmas, &s->usage);           /* coverage.h: for metrics and reports */
	r = range_scanner_attach(&sc->range, dirfd, s->pid);
	if (r < 0)
		return r;
	sc->range.stop = time_is_up;
	sc->range.stop_ctx = &tc;

	/* Keep the previous candidates aside so ages carry over. */
	if (GROW(sc->old_blocks, sc->capold_blocks, s->nblocks) < 0) {
		range_scanner_detach(&sc->range);
		return -ENOMEM;
	}
	if (s->nblocks) /* both may still be NULL: memcpy(NULL, NULL, 0) is undefined */
		memcpy(sc->old_blocks, s->blocks, s->nblocks * sizeof(*s->blocks));
	sc->nold_blocks = s->nblocks;
	s->nblocks = 0;
	if (from) { /* the blocks below were found by the last pass */
		for (size_t i = 0; i < sc->nold_blocks && sc->old_blocks[i].addr < from; i++)
			s->blocks[s->nblocks++] = sc->old_blocks[i];
	} else {
		memset(s->results, 0, sizeof(s->results));
		s->policy_refused = false;
		s->open_blocks = 0;
		s->refused_kb = 0;
	}
	thp_refresh(sc, in, now);
	lim = rescan_limits(sc, pol);
	s->thp_prctl = (uint8_t)(in->no_except_advised ? thp_prctl_from_status(s->thp_enabled) : prctl_mode(sc, s));
	memcpy(before, s->results, sizeof(before)); /* the pass counts only its own part */

	for (size_t i = 0; i < sc->vmas.n && r >= 0; i++) {
		const struct vma *v = &sc->vmas.v[i];
		uint64_t start = v->start > from ? v->start : from;
		struct vma_blocks b;
		enum scan_result verdict;

		if (v->end <= from)
			continue;
		if (scanned_one && out_of_time(in, o)) {
			s->scan_cursor = start;
			s->cursor_set = now;
			r = -ETIMEDOUT;
			break;
		}
		scanned_one = true;
		vma_blocks(v, &b);
		/* A resumed VMA's partial blocks and verdict were counted by the
		 * scan that stopped in it. */
		bool resumed = start > v->start;
		if (!resumed)
			s->results[SCAN_INELIGIBLE] += b.partial;
		verdict = vma_verdict(v, &lim, thp_vma_check(&sc->thp, pol->scope, v, (enum thp_prctl)s->thp_prctl),
				      pol->file_backed);
		if (!resumed && (verdict == SCAN_CANDIDATE || verdict == SCAN_COLD))
			s->open_blocks += b.whole;
		if (verdict != SCAN_CANDIDATE) {
			bool refused = verdict == SCAN_THP_POLICY || verdict == SCAN_PRCTL_UNKNOWN;

			if (resumed)
				continue;
			s->results[verdict] += b.whole;
			/* Populated enough to be a candidate once advised. */
			if (refused && b.whole && v->rss_kb * 1024 >= HPAGE_SIZE / 2)
				s->policy_refused = true;
			if (refused && b.whole)
				s->refused_kb += v->rss_kb;
			continue;
		}
		if (!b.whole)
			continue;
		ctx.referenced_pct = vma_referenced_pct(v);
		ctx.vma_tag = vma_tag(v);
		ctx.anon = v->kind == VMA_ANON;
		ctx.unreferenced = v->rss_kb > v->referenced_kb ? (v->rss_kb - v->referenced_kb) / 4 : 0;
		r = range_scan_vma_from(&sc->range, v, start, v->lazyfree_kb > 0, &lim, s->results, on_candidate, &ctx);
		if (ctx.err)
			r = ctx.err;
		else if (r == -ETIMEDOUT || r == -EINPROGRESS)
			s->scan_cursor = sc->range.stopped_at, s->cursor_set = now;
	}
	range_scanner_detach(&sc->range);
	sc->range.stop = NULL;
	if (s->scan_cursor) /* stopped: the rest of the old list waits for the next visit */
		keep_old_from(sc, s, s->scan_cursor);
	else if (r >= 0)
		settle_cold(sc, in->cold, s);
	for (int i = 0; i < SCAN_NR_RESULTS; i++)
		ps->results[i] += s->results[i] - before[i];
	if (r >= 0 || r == -ETIMEDOUT || r == -EINPROGRESS)
		ps->stale_dropped += count_forgotten(sc->old_blocks, sc->nold_blocks, s->blocks, s->nblocks);
	return r;
}

/* access_sampling: clear the referenced bits, so that the next scan's
 * Referenced counts only what was touched since. Costs one walk of the
 * process's page tables, and makes reclaim see those pages as not recently
 * used (they are aged as if idle until touched again). */
static void clear_referenced(int dirfd, const struct proc_state *s)
{
	int fd = openat(dirfd, "clear_refs", O_WRONLY | O_CLOEXEC);

	if (fd < 0 || write(fd, "1", 1) != 1)
		log_proc(LOG_DEBUG, s->pid, proc_state_cgroup(s), NULL, "pid %d: cannot write clear_refs: %s",
			 (int)s->pid, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* A process scanned with no prctl mode still has none, where that can be
 * read exactly (not before 6.18: status THP_enabled covers it there). A
 * failed read keeps the scan's word, as at the scan. */
static bool rescan_prctl_holds(struct scanner *sc, bool no_except_advised, const struct proc_state *s)
{
	enum thp_prctl now;

	if (s->thp_prctl != THP_PRCTL_NONE || no_except_advised || !sc->prctl_exact)
		return true;
	if (sc->prctl_exact(sc->prctl_exact_ctx, s->pid, &now) < 0)
		return true;
	sc->prctl_reads++;
	return now == THP_PRCTL_NONE;
}

bool rescan_policy_holds(struct scanner *sc, const struct scan_input *in, const struct proc_state *s, int dirfd)
{
	thp_refresh(sc, in, in->now());
	/* The THP knobs or the config changed since: its verdicts are stale. */
	if (s->scan_policy_gen != sc->policy_gen)
		return false;
	/* THP switched off by prctl since: the kernel would refuse the blocks
	 * (EINVAL) and the refusal would be remembered for full_rescan_s;
	 * better left to the next scan. Unknown counts as enabled, as at the
	 * scan. */
	if (s->thp_enabled && read_proc_thp_enabled(dirfd) == 0)
		return false;
	/* The except-advised prctl shows only in smaps (THPeligible), which
	 * this does not read again; where the kernel's own record can be
	 * read (prctl_exact, 20-25 us), a process scanned without it must
	 * still be without it. */
	return rescan_prctl_holds(sc, in->no_except_advised, s);
}

int rescan_refresh_policy(const struct config *cfg, struct proc_state *s, int dirfd)
{
	char cg[PATH_MAX];
	int r = read_proc_cgroup(dirfd, cg, sizeof(cg));

	if (r == 0 && (!s->cgroup || strcmp(cg, s->cgroup))) {
		free(s->cgroup);
		s->cgroup = strdup(cg);
		if (!s->cgroup)
			r = -ENOMEM;
	}
	if (r < 0) {
		if (!s->cgroup_unknown)
			log_proc(LOG_WARNING, s->pid, "?", "cgroup_unknown",
				 "pid %d (%s): cannot read its cgroup (%s): not collapsing it", (int)s->pid,
				 s->prev.comm, strerror(-r));
		s->cgroup_unknown = true;
		free(s->cgroup);
		s->cgroup = NULL;
		s->policy = NULL;
		return r;
	}
	if (s->cgroup_unknown)
		log_proc(LOG_INFO, s->pid, s->cgroup, NULL, "pid %d (%s): its cgroup reads %s again", (int)s->pid,
			 s->prev.comm, s->cgroup);
	s->cgroup_unknown = false;
	s->policy = config_policy_for(cfg, s->cgroup);
	return 0;
}

/* Faults fill the VMAs a process has. Where its last scan found no whole
 * block that the VMA's flags and the THP policy allow (a shell under
 * enabled=madvise: nothing advised), faults cannot make a candidate while
 * the address space keeps its size (a new or grown mapping changes vsize),
 * its RSS grew by less than half a block, and the THP policy and the config
 * stay the same: such a process is not read
 * again for its faults, nor is one whose policy is disabled. A MADV_HUGEPAGE
 * given after the faults is the policy recheck's (policy_refused), a prctl
 * the full rescan's. */
static bool rescan_closed(struct scanner *sc, const struct scan_input *in, const struct proc_state *s,
			  bool maps_changed, double now)
{
	if (proc_state_disabled(s, sc->policy_gen))
		return true; /* whatever it maps: its policy collapses nothing */
	if (!s->scanned || s->open_blocks || maps_changed || !s->policy)
		return false;
	/* Grown by half a block or more: refused memory may now be populated
	 * enough for the policy recheck (a first look in the middle of a fill
	 * saw too little to ask for one). */
	if (s->prev.rss_pages >= s->scan_rss + HPAGE_PAGES / 2)
		return false;
	thp_refresh(sc, in, now);
	return proc_state_closed(s, sc->policy_gen);
}

int rescan_visit(struct scanner *sc, const struct scan_input *in, struct proc_state *s, const struct pass_options *o,
		 struct pass_stats *ps, double now, bool force)
{
	const struct config *cfg = in->cfg;
	struct rescan_facts f = {
	    .force = force,
	    .unlimited = o->unlimited,
	    .resuming = s->scan_cursor != 0,
	    .scanned = s->scanned,
	    .maps_changed = s->scan_vsize != s->prev.vsize,
	    .faults_changed = s->scan_minflt != s->prev.minflt || s->scan_majflt != s->prev.majflt,
	    .rss_changed = s->scan_rss != s->prev.rss_pages,
	    /* Too small for a 2 MiB block (like the short-lived processes of
	     * a shell, cron or a health check): not even a first look until
	     * it grows (its faults name it to the sample); after one, not
	     * again until it grows or its maps change. */
	    .small = proc_state_small(s),
	    .full_due = now - s->last_scan >= cfg->full_rescan_s,
	    .policy_recheck_due = s->policy_recheck && now - s->last_scan >= POLICY_RECHECK_S,
	    .access_sample_due =
		s->policy && s->policy->access_sampling && now - s->last_clear >= s->policy->access_sample_s,
	    /* Re-touching a MADV_COLD range changes no counter (the pages are
	     * present): a process whose last scan held blocks back for it is
	     * read again every COLD_RECHECK_S to see whether they are warm. */
	    .cold_recheck_due = s->results[SCAN_LACK_REFERENCED_PAGE] && now - s->last_scan >= COLD_RECHECK_S,
	    .advised = in->advised && cold_watch_advised(in->advised, s->pid),
	    .policy_known = s->policy || s->cgroup_unknown,
	};
	bool changed = rescan_facts_changed(&f);
	bool due = f.full_due;
	bool closed = changed && rescan_closed(sc, in, s, f.maps_changed, now);
	uint64_t refused_kb = s->refused_kb;
	char path[PATH_MAX];
	struct proc_sample now_stat;
	int dirfd, r, ret = 0;

	f.closed = closed;
	if (!rescan_reason_reads(rescan_reason(&f))) { /* rescan_reason.h says why not */
		ps->procs_unchanged++;
		return 0;
	}
	snprintf(path, sizeof(path), "%s/%d", in->proc_root, (int)s->pid);
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return 0;
	/* Through this dirfd every read is of the process we sampled, or fails:
	 * check that it is still the one with our start time. */
	if (read_proc_stat(dirfd, &now_stat) < 0 || now_stat.start_ticks != s->start_ticks)
		goto out;
	if ((!s->cgroup || !s->policy || due) && rescan_refresh_policy(cfg, s, dirfd) < 0) {
		s->nblocks = 0;
		s->scan_cursor = 0;
		goto remember; /* unknown: like a disabled one, until it changes */
	}
	if (!s->policy->enable) {
		s->nblocks = 0;
		s->scan_cursor = 0;
		s->open_blocks = 0; /* nothing to collapse until the config changes */
		goto remember;      /* not scanned, but not looked at again until it changes */
	}
	/* A refusal holds while its VMA is the same (on_candidate), for at most
	 * full_rescan_s: what the kernel refuses can change without a trace in
	 * smaps (sysfs THP settings, a policy reload). */
	addr_set_expire(&s->refused, now - cfg->full_rescan_s);
	if (due)
		addr_set_clear(&s->given_up);
	r = read_proc_thp_enabled(dirfd);
	s->thp_enabled = r != 0; /* unknown (error) counts as enabled */
	/* Read before smaps: an exec after this point shows as a mismatch. */
	{
		uint64_t id = now_stat.exec_id ^ read_exec_random(dirfd);

		if (s->scanned && id != s->exec_id) /* a new image: the old one's advice is gone with it */
			cold_ranges_forget(in->cold, s->pid);
		s->exec_id = id;
	}
	r = scan_process(sc, in, s, dirfd, o, ps, now);
	/* One process with tens of thousands of VMAs must not leave its
	 * buffers to every later pass (an error midway included). */
	smaps_trim(&sc->smaps_buf, &sc->smaps_cap, &sc->vmas, SMAPS_KEEP_BYTES);
	if (r == -ETIMEDOUT || r == -EINPROGRESS) { /* resumed at its next visit: not scanned yet */
		ret = r == -ETIMEDOUT ? r : 0;
		goto out;
	}
	if (r == -EACCES || r == -EPERM) {
		/* Capabilities were checked at start, so this process is
		 * protected on its own (another user namespace, a sandbox):
		 * leave it alone until its next full rescan. */
		if (!s->denied)
			log_proc(LOG_INFO, s->pid, proc_state_cgroup(s), "eperm",
				 "pid %d (%s): no ptrace read access to its memory maps; skipping it", (int)s->pid,
				 s->prev.comm);
		s->denied = true;
		s->nblocks = 0;
		r = 0;
	} else if (r < 0 && r != -ESRCH && r != -ENOENT) {
		log_proc(LOG_DEBUG, s->pid, proc_state_cgroup(s), NULL, "pid %d: scan failed: %s", (int)s->pid,
			 strerror(-r));
	}
	if (r < 0) {
		s->nblocks = 0;
		s->scan_cursor = 0;
		goto out;
	}
	ps->procs_scanned++;
	/* A closed process looked at for the recheck is looked at again only
	 * while its refused memory grows (a fill that may end in a
	 * MADV_HUGEPAGE), not for every fork of a shell. */
	s->policy_recheck =
	    changed && s->policy_refused && (!closed || s->refused_kb * 1024 >= refused_kb * 1024 + HPAGE_SIZE / 2);
	/* A dry run changes nothing, not even the referenced bits. */
	if (s->policy->access_sampling && !o->dry_run && !o->unlimited &&
	    now - s->last_clear >= s->policy->access_sample_s) {
		clear_referenced(dirfd, s);
		s->last_clear = now;
	}
remember:
	s->scanned = true;
	s->scan_policy_gen = sc->policy_gen;
	s->last_scan = now;
	s->scan_minflt = now_stat.minflt;
	s->scan_majflt = now_stat.majflt;
	s->scan_rss = now_stat.rss_pages;
	s->scan_vsize = now_stat.vsize;
out:
	close(dirfd);
	return ret;
}

int scanner_init(struct scanner *sc, const struct hc_paths *paths)
{
	int r;

	memset(sc, 0, sizeof(*sc));
	/* Without it, files on tmpfs mounts other than /dev/shm count as files. */
	r = tmpfs_mounts_open(&sc->tmpfs, paths->proc);
	if (r < 0)
		log_info("cannot read %s/self/mountinfo: %s; files on tmpfs outside /dev/shm are judged as files",
			 paths->proc, strerror(-r));
	vma_list_init(&sc->vmas);
	sc->thp_read_at = -1e9;
	thp_files_init(&sc->thp_files);
	sc->admin_max_ptes_none = UINT_MAX;
	sc->policy_gen = 1; /* 0: a process never scanned */
	sc->prctl_infer = thp_prctl_infer;
	r = range_scanner_init(&sc->range, paths->pagemap_read ? PAGEMAP_READ : PAGEMAP_AUTO, paths);
	if (r < 0) {
		tmpfs_mounts_close(&sc->tmpfs);
		return r;
	}
	return 0;
}

void scanner_free(struct scanner *sc)
{
	free(sc->smaps_buf);
	free(sc->old_blocks);
	vma_list_free(&sc->vmas);
	range_scanner_free(&sc->range);
	tmpfs_mounts_close(&sc->tmpfs);
	prctl_iter_close(sc->prctl_iter);
	thp_files_close(&sc->thp_files);
}

/* The iterator is loaded at its first question: loading parses the
 * kernel's BTF (about 7 MB of peak RSS), and under the Debian default
 * (enabled=madvise, scope = kernel) no question is ever asked. If the load
 * fails after all, the safe rule takes over for good. */
static int prctl_exact_lazy(void *ctx, pid_t pid, enum thp_prctl *m)
{
	struct scanner *sc = ctx;
	int r;

	if (!sc->prctl_iter) {
		r = prctl_iter_open(&sc->prctl_iter);
		if (r < 0) {
			log_warn("cannot load the BPF prctl iterator (%s): where THPeligible cannot tell, a process "
				 "counts as PR_THP_DISABLE_EXCEPT_ADVISED (prctl_unknown)",
				 strerror(-r));
			sc->prctl_exact = NULL;
			return r;
		}
	}
	return prctl_iter_read_pid(sc->prctl_iter, pid, m);
}

int scanner_prctl_open(struct scanner *sc)
{
	int r = sc->prctl_iter ? 0 : prctl_iter_usable();

	if (r < 0)
		return r;
	sc->prctl_exact = prctl_exact_lazy;
	sc->prctl_exact_ctx = sc;
	return 0;
}

void scanner_policy_changed(struct scanner *sc)
{
	sc->policy_gen++;
}

uint64_t scanner_pagemap_ops(const struct scanner *sc)
{
	return sc->range.stats.scan_ioctls + sc->range.stats.pagemap_preads;
}

void scanner_pass(struct scanner *sc, const struct scan_input *in, struct proc_state *st, size_t nst,
		  const struct pid_filter *f, const struct pass_options *o, struct pass_stats *ps, double now,
		  process_madvise_fn probe)
{
	size_t first = 0;
	unsigned scanned = 0;

	sc->range.stats = (struct range_scan_stats){0};
	range_scanner_set_probe(&sc->range, probe);
	while (first < nst && st[first].pid < sc->resume_pid)
		first++;
	sc->resume_pid = 0;
	for (size_t k = 0; k < nst; k++) {
		struct proc_state *s = &st[(first + k) % nst];

		if (!pid_filter_match(f, s->pid))
			continue;
		/* Asked after a rescan, and every 64 processes: most are
		 * unchanged and cost less than the question (a system call). */
		if ((scanned != ps->procs_scanned || k % 64 == 0) && out_of_time(in, o)) {
			sc->resume_pid = s->pid;
			break;
		}
		scanned = ps->procs_scanned;
		ps->procs_total++;
		if (rescan_visit(sc, in, s, o, ps, now, false) == -ETIMEDOUT) {
			sc->resume_pid = s->pid; /* out of time inside it: its scan_cursor says where */
			break;
		}
		if (s->policy && !s->policy->enable)
			ps->procs_disabled++;
		if (s->cgroup_unknown)
			ps->procs_cgroup_unknown++;
	}
	ps->pagemap_ops = scanner_pagemap_ops(sc);
}
