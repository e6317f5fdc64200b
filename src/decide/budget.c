/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Candidates, the budget, and the selection within it. Pure. */
#include "budget.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "grow.h"
#include "units.h"

int budget_candidates(struct candidate **cands, size_t *ncands, size_t *capcands, const struct proc_state *st,
		      size_t nst, const struct pid_filter *f, double now, unsigned *procs_active)
{
	*ncands = 0;
	for (size_t i = 0; i < nst; i++) {
		const struct proc_state *s = &st[i];
		const struct policy *pol = s->policy;
		bool active;

		if (!pol || !pol->enable || !pid_filter_match(f, s->pid))
			continue;
		/* Its scan stopped midway (range_scan.h): the blocks wait until
		 * it is complete, and spend no budget meanwhile. After its
		 * ENOMEM: its blocks neither lead nor spend budget. */
		if (s->scan_cursor || now < s->backoff_until)
			continue;
		active = now - s->last_active <= pol->idle_after_s;
		if (procs_active)
			*procs_active += active;
		if (GROW(*cands, *capcands, *ncands + s->nblocks) < 0)
			return -ENOMEM;
		for (size_t j = 0; j < s->nblocks; j++) {
			const struct block_memo *m = &s->blocks[j];
			struct candidate *c = &(*cands)[(*ncands)++];

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
	plan_order(*cands, *ncands);
	return 0;
}

/* The burst window: a bucket holds at most this many seconds of its rate.
 * One interval, so that a pass may spend what one interval earned; at least
 * 1 s (back-to-back passes), at most 10 s (long intervals). */
static double burst_window(const struct config *cfg)
{
	double w = cfg->scan_interval_ms / 1000.0;

	return w < 1 ? 1 : w > 10 ? 10 : w;
}

/* One block on top: a bucket capped at exactly one block loses what accrues
 * while it waits for a pass that comes a little early (timer jitter), and a
 * 1 MiB/s budget at 1 s passes would then get a block every third pass, not
 * every second. */
double budget_burst(const struct config *cfg, double rate)
{
	return rate * burst_window(cfg) + (double)HPAGE_SIZE;
}

static void bucket_refill(struct token_bucket *b, const struct config *cfg, double rate, double now)
{
	double burst = budget_burst(cfg, rate);

	if (b->last < 0) {
		/* A new bucket holds what one interval earns, as if the pass
		 * before had just spent everything. */
		b->tokens = rate * (cfg->scan_interval_ms / 1000.0);
	} else if (now > b->last) {
		b->tokens += rate * (now - b->last);
	}
	if (b->tokens > burst)
		b->tokens = burst;
	if (b->last < 0 || now > b->last)
		b->last = now;
}

static void buckets_reset(struct token_bucket *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (struct token_bucket){.tokens = 0, .last = -1};
}

void budget_init(struct budget *b)
{
	memset(b, 0, sizeof(*b));
	b->global.last = -1;
}

/* The old bucket of the rule of cfg with this path, if old had one. */
static const struct token_bucket *old_bucket(const struct budget *b, const struct config *old, const char *path)
{
	for (size_t i = 0; old && i < old->nrules && i + 1 < b->npol; i++)
		if (old->rules[i].path && path && !strcmp(old->rules[i].path, path))
			return &b->pol[i + 1];
	return NULL;
}

int budget_configure(struct budget *b, const struct config *old, const struct config *cfg)
{
	size_t n = cfg->nrules + 1;
	struct token_bucket *np = malloc(n * sizeof(*np));
	double *ns = malloc(n * sizeof(*ns));

	if (!np || !ns) {
		free(np);
		free(ns);
		return -ENOMEM;
	}
	/* A rule that was there before (same path) keeps its tokens, so that
	 * reloads cannot mint budget; a new one starts from one interval's
	 * share. Linear in the rules per rule: a reload is rare. */
	buckets_reset(np, n);
	if (old && b->npol)
		np[0] = b->pol[0];
	for (size_t i = 0; i < cfg->nrules; i++) {
		const struct token_bucket *ob = old_bucket(b, old, cfg->rules[i].path);

		if (ob)
			np[i + 1] = *ob;
	}
	free(b->pol);
	free(b->spend);
	b->pol = np;
	b->spend = ns;
	b->npol = n;
	return 0;
}

void budget_free(struct budget *b)
{
	free(b->pol);
	free(b->spend);
	memset(b, 0, sizeof(*b));
}

/* Policies are the config's defaults or one of its rules': O(1), since a
 * pass asks once per candidate. */
size_t budget_policy_index(const struct config *cfg, const struct policy *pol)
{
	uintptr_t a = (uintptr_t)pol, base = (uintptr_t)cfg->rules, off;

	if (pol == &cfg->defaults)
		return 0;
	if (!cfg->nrules || a < base)
		return SIZE_MAX;
	off = a - base;
	if (off / sizeof(struct cgroup_rule) >= cfg->nrules ||
	    off % sizeof(struct cgroup_rule) != offsetof(struct cgroup_rule, policy))
		return SIZE_MAX;
	return off / sizeof(struct cgroup_rule) + 1;
}

static double policy_rate(const struct policy *pol)
{
	return pol->budget_mb_per_s * MIB;
}

void budget_refill(struct budget *b, const struct config *cfg, double now)
{
	bucket_refill(&b->global, cfg, policy_rate(&cfg->defaults), now);
	for (size_t i = 0; i < b->npol && i <= cfg->nrules; i++)
		bucket_refill(&b->pol[i], cfg, policy_rate(i ? &cfg->rules[i - 1].policy : &cfg->defaults), now);
}

size_t budget_select(struct budget *b, const struct config *cfg, struct candidate *cands, size_t ncands,
		     const struct proc_state *st, bool unlimited)
{
	double global = 0;
	size_t nsel = 0;

	if (unlimited)
		return ncands;
	for (size_t i = 0; i < b->npol; i++)
		b->spend[i] = 0;
	for (size_t i = 0; i < ncands; i++) {
		struct candidate c = cands[i];
		size_t p = budget_policy_index(cfg, st[c.proc].policy);

		if (global + HPAGE_SIZE > b->global.tokens)
			break;
		if (p >= b->npol || b->spend[p] + HPAGE_SIZE > b->pol[p].tokens)
			continue; /* this policy's budget is spent: the next in line */
		b->spend[p] += HPAGE_SIZE;
		global += HPAGE_SIZE;
		cands[nsel++] = c;
	}
	return nsel;
}

void budget_charge(struct budget *b, const struct config *cfg, const struct policy *pol, double bytes)
{
	size_t p = budget_policy_index(cfg, pol);

	b->global.tokens -= bytes;
	if (b->global.tokens < 0)
		b->global.tokens = 0;
	if (p < b->npol) {
		b->pol[p].tokens -= bytes;
		if (b->pol[p].tokens < 0)
			b->pol[p].tokens = 0;
	}
}
