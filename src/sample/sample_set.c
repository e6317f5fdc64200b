/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which processes a pass samples; see the header. */
#include "sample_set.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "config.h"
#include "grow.h"
#include "lower_bound.h"
#include "procs.h"

bool proc_state_small(const struct proc_state *s)
{
	return s->prev.rss_pages < SMALL_RSS_PAGES;
}

bool proc_state_closed(const struct proc_state *s, unsigned policy_gen)
{
	return s->scanned && !s->open_blocks && s->scan_policy_gen == policy_gen;
}

bool proc_state_disabled(const struct proc_state *s, unsigned policy_gen)
{
	return s->scanned && s->policy && !s->policy->enable && s->scan_policy_gen == policy_gen;
}

bool sample_faulted_now(const struct proc_state *s, uint32_t samples, unsigned policy_gen)
{
	if (!s)
		return samples >= SAMPLES_PER_BLOCK;
	if (proc_state_disabled(s, policy_gen))
		return false; /* until the config changes, or its full rescan */
	if (proc_state_small(s) || proc_state_closed(s, policy_gen))
		return s->unread_samples >= SAMPLES_PER_BLOCK;
	return true;
}

static const struct proc_state *find_state(const struct proc_state *st, size_t n, pid_t pid)
{
	size_t lo = lower_bound_pid(st, n, sizeof(*st), offsetof(struct proc_state, pid), pid);

	return lo < n && st[lo].pid == pid ? &st[lo] : NULL;
}

static size_t sort_unique(pid_t *p, size_t n)
{
	size_t w = 0;

	qsort(p, n, sizeof(*p), pid_cmp);
	for (size_t i = 0; i < n; i++)
		if (w == 0 || p[w - 1] != p[i])
			p[w++] = p[i];
	return w;
}

static int push(pid_t **out, size_t *n, size_t *cap, pid_t pid)
{
	if (GROW(*out, *cap, *n + 1) < 0)
		return -ENOMEM;
	(*out)[(*n)++] = pid;
	return 0;
}

int sample_set_build(const struct proc_state *st, size_t n, const struct sample_request *rq, pid_t *roll_pid,
		     pid_t **out, size_t *nout, size_t *capout)
{
	size_t k = 0, first = 0, roll = rq->roll < n ? rq->roll : n;
	int r = 0;

	for (size_t i = 0; i < rq->faulted->n && r == 0; i++) {
		const struct fault_pids *f = rq->faulted;

		/* No counts (an injected drain): every sample counts as many. */
		if (!f->count || sample_faulted_now(find_state(st, n, f->pid[i]), f->count[i], rq->policy_gen))
			r = push(out, &k, capout, f->pid[i]);
	}
	for (size_t i = 0; i < rq->nfresh && r == 0; i++)
		r = push(out, &k, capout, rq->fresh[i]);
	/* Holding candidates, or due for a first look: the score wants
	 * activity measured up to now. */
	for (size_t i = 0; i < n && r == 0; i++)
		if (st[i].nblocks || (!st[i].scanned && !proc_state_small(&st[i])))
			r = push(out, &k, capout, st[i].pid);
	while (first < n && st[first].pid < *roll_pid)
		first++;
	if (first == n)
		first = 0; /* past the last PID: wrap around */
	/* first < n and roll <= n: one wrap at most. */
	for (size_t j = 0; j < roll && r == 0; j++) {
		size_t at = first + j < n ? first + j : first + j - n;

		r = push(out, &k, capout, st[at].pid);
	}
	if (n)
		*roll_pid = st[first + roll < n ? first + roll : first + roll - n].pid;
	if (r < 0)
		return r;
	k = sort_unique(*out, k);
	/* The daemon's own faults (its buffers) say nothing about others. */
	for (size_t i = 0; i < k; i++)
		if ((*out)[i] == rq->self) {
			for (size_t j = i + 1; j < k; j++)
				(*out)[j - 1] = (*out)[j];
			k--;
			break;
		}
	*nout = k;
	return 0;
}

size_t pids_diff(const pid_t *a, size_t na, const pid_t *b, size_t nb, pid_t *out)
{
	size_t i = 0, j = 0, w = 0;

	while (i < na) {
		if (j == nb || a[i] < b[j])
			out[w++] = a[i++];
		else if (b[j] < a[i])
			j++;
		else
			i++, j++;
	}
	return w;
}

size_t pids_intersect(const pid_t *a, size_t na, const pid_t *b, size_t nb, pid_t *out)
{
	size_t i = 0, j = 0, w = 0;

	while (i < na && j < nb) {
		if (a[i] < b[j])
			i++;
		else if (b[j] < a[i])
			j++;
		else
			out[w++] = a[i++], j++;
	}
	return w;
}

int pids_add(pid_t **set, size_t *n, size_t *cap, const pid_t *add, size_t nadd)
{
	if (!nadd)
		return 0;
	if (GROW(*set, *cap, *n + nadd) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < nadd; i++)
		(*set)[(*n)++] = add[i];
	*n = sort_unique(*set, *n);
	return 0;
}
