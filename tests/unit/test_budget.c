/* SPDX-License-Identifier: GPL-2.0-or-later */
/* budget: the candidates and the token buckets that select them, pure.
 * Passes are simulated as the engine runs them: refill at the pass's time,
 * select, then charge what was selected. budget_candidates() is tested on
 * hand-made process tables: which processes take part, tiers and scores
 * under each one's policy, ties, and its order fed to budget_select(). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "budget.h"
#include "config.h"
#include "selector.h"
#include "units.h"

struct sim {
	struct config cfg;
	struct budget b;
	struct proc_state *st;
	size_t nst;
	struct candidate *c, *work;
	size_t nc;
	size_t *per_proc; /* selected in the last pass, per process */
};

/* nrules rules with budgets rule_mb[i]; process i of nst runs under rule
 * i (or the defaults when i >= nrules) and has per_proc candidates, each
 * process's ranked above the next one's. */
static void sim_init(struct sim *s, unsigned interval_ms, unsigned global_mb, size_t nrules, const unsigned *rule_mb,
		     size_t nst, size_t per_proc)
{
	memset(s, 0, sizeof(*s));
	config_defaults(&s->cfg);
	s->cfg.scan_interval_ms = interval_ms;
	s->cfg.defaults.budget_mb_per_s = global_mb;
	if (nrules) {
		s->cfg.rules = calloc(nrules, sizeof(*s->cfg.rules));
		assert_non_null(s->cfg.rules);
		s->cfg.nrules = nrules;
		for (size_t i = 0; i < nrules; i++) {
			char path[32];

			snprintf(path, sizeof(path), "/r%zu", i);
			s->cfg.rules[i].path = strdup(path);
			s->cfg.rules[i].policy = s->cfg.defaults;
			s->cfg.rules[i].policy.budget_mb_per_s = rule_mb[i];
		}
	}
	budget_init(&s->b);
	assert_int_equal(budget_configure(&s->b, NULL, &s->cfg), 0);
	s->st = calloc(nst, sizeof(*s->st));
	s->nst = nst;
	s->nc = nst * per_proc;
	s->c = calloc(s->nc + 1, sizeof(*s->c));
	s->work = calloc(s->nc + 1, sizeof(*s->work));
	s->per_proc = calloc(nst, sizeof(*s->per_proc));
	assert_true(s->st && s->c && s->work && s->per_proc);
	for (size_t i = 0; i < nst; i++) {
		s->st[i].pid = (pid_t)(100 + i);
		s->st[i].policy = i < nrules ? &s->cfg.rules[i].policy : &s->cfg.defaults;
		for (size_t j = 0; j < per_proc; j++)
			s->c[i * per_proc + j] = (struct candidate){
			    .addr = (j + 1) * HPAGE_SIZE, .proc = (uint32_t)i, .score = (double)(nst - i)};
	}
}

static void sim_free(struct sim *s)
{
	budget_free(&s->b);
	config_free(&s->cfg);
	free(s->st);
	free(s->c);
	free(s->work);
	free(s->per_proc);
}

/* One pass at time t: returns the blocks selected (and charged). */
static size_t sim_pass(struct sim *s, double t)
{
	size_t n;

	memcpy(s->work, s->c, s->nc * sizeof(*s->c));
	memset(s->per_proc, 0, s->nst * sizeof(*s->per_proc));
	budget_refill(&s->b, &s->cfg, t);
	n = budget_select(&s->b, &s->cfg, s->work, s->nc, s->st, false);
	for (size_t i = 0; i < n; i++) {
		s->per_proc[s->work[i].proc]++;
		budget_charge(&s->b, &s->cfg, s->st[s->work[i].proc].policy, HPAGE_SIZE);
	}
	return n;
}

/* 1 MiB/s at the default interval: half a block per pass. Unspent budget
 * carries over, so one block every 2 s (before: none, ever). */
static void test_carry_over_below_one_block(void **state)
{
	struct sim s;
	size_t total = 0, last = 0;

	(void)state;
	sim_init(&s, 1000, 1, 0, NULL, 1, 100);
	for (int t = 0; t <= 20; t++) {
		size_t n = sim_pass(&s, t);

		assert_true(n <= 1);
		if (n) {
			if (total)
				assert_int_equal(t - last, 2);
			last = (size_t)t;
		}
		total += n;
	}
	assert_int_equal(total, 10);
	sim_free(&s);
}

/* Passes a little early (timer jitter) lose nothing: 1 MiB/s at 0.999 s
 * passes still averages a block every 2 s (with a burst of exactly one
 * block it got one every third pass: 13 blocks here). */
static void test_carry_over_jitter(void **state)
{
	struct sim s;
	size_t total = 0;

	(void)state;
	sim_init(&s, 1000, 1, 0, NULL, 1, 100);
	for (int i = 0; i <= 40; i++)
		total += sim_pass(&s, i * 0.999);
	assert_in_range(total, 19, 20);
	sim_free(&s);
}

/* A per-cgroup budget of 4 MiB/s at 100 ms: 0.4 MiB per pass, a block
 * every 5 passes. */
static void test_carry_over_small_policy(void **state)
{
	const unsigned rule_mb[] = {4};
	struct sim s;
	size_t total = 0;

	(void)state;
	sim_init(&s, 100, 128, 1, rule_mb, 1, 100);
	for (int i = 0; i <= 100; i++)
		total += sim_pass(&s, i * 0.1);
	/* 10 s at 4 MiB/s = 20 blocks (plus the first pass's share, 0.2). */
	assert_in_range(total, 19, 21);
	sim_free(&s);
}

/* scan_interval_ms = 0 with 5 ms passes: 1 MiB/s still gives one block
 * every 2 s. */
static void test_carry_over_back_to_back(void **state)
{
	struct sim s;
	size_t total = 0;

	(void)state;
	sim_init(&s, 0, 1, 0, NULL, 1, 100);
	for (int i = 0; i <= 2000; i++)
		total += sim_pass(&s, i * 0.005);
	assert_in_range(total, 4, 5);
	sim_free(&s);
}

/* A rule's budget caps its subtree; the global budget caps the sum, and
 * what the capped rule cannot spend goes to the next in line. */
static void test_per_policy_caps(void **state)
{
	const unsigned rule_mb[] = {4, 100};
	struct sim s;

	(void)state;
	sim_init(&s, 1000, 100, 2, rule_mb, 2, 200);
	for (int t = 0; t < 5; t++) {
		assert_int_equal(sim_pass(&s, t), 50); /* 100 MiB/s: 50 blocks */
		assert_int_equal(s.per_proc[0], 2);    /* 4 MiB/s: 2 blocks */
		assert_int_equal(s.per_proc[1], 48);
	}
	sim_free(&s);
}

/* However long since the last pass (idle passes, back-off), one pass
 * spends at most the burst: one interval's share, not 10x it. */
static void test_burst_after_idle(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, 1000, 20, 0, NULL, 1, 1000);
	assert_int_equal(sim_pass(&s, 0), 10);  /* 20 MiB: one interval's share */
	assert_int_equal(sim_pass(&s, 10), 11); /* the burst: 20 MiB + one block */
	assert_int_equal(sim_pass(&s, 1000), 11);
	assert_int_equal(sim_pass(&s, 1000.5), 5);
	/* A long interval: the burst is that interval's share, up to 10 s. */
	assert_true(budget_burst(&s.cfg, 20 * MIB) == 20 * MIB + HPAGE_SIZE);
	s.cfg.scan_interval_ms = 5000;
	assert_true(budget_burst(&s.cfg, 20 * MIB) == 100 * MIB + HPAGE_SIZE);
	s.cfg.scan_interval_ms = 60000;
	assert_true(budget_burst(&s.cfg, 20 * MIB) == 200 * MIB + HPAGE_SIZE);
	s.cfg.scan_interval_ms = 0;
	assert_true(budget_burst(&s.cfg, 20 * MIB) == 20 * MIB + HPAGE_SIZE);
	/* At least one block, so any budget collapses something. */
	assert_true(budget_burst(&s.cfg, 1 * MIB) == 1 * MIB + HPAGE_SIZE);
	sim_free(&s);
}

/* No fixed bound on policies: 100 of them, each gets its budget. */
static void test_many_policies(void **state)
{
	unsigned rule_mb[100];
	struct sim s;

	(void)state;
	for (size_t i = 0; i < 100; i++)
		rule_mb[i] = 2;
	sim_init(&s, 1000, 100000, 100, rule_mb, 100, 3);
	for (int t = 0; t < 3; t++) {
		assert_int_equal(sim_pass(&s, t), 100);
		for (size_t i = 0; i < 100; i++)
			assert_int_equal(s.per_proc[i], 1);
	}
	sim_free(&s);
}

/* The global budget stops the selection; unlimited selects everything. */
static void test_global_and_unlimited(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, 1000, 8, 0, NULL, 3, 10);
	assert_int_equal(sim_pass(&s, 0), 4);
	assert_int_equal(s.per_proc[0], 4);
	memcpy(s.work, s.c, s.nc * sizeof(*s.c));
	assert_int_equal(budget_select(&s.b, &s.cfg, s.work, s.nc, s.st, true), s.nc);
	sim_free(&s);
}

/* Policies map to their buckets; one that is not the config's gets none. */
static void test_policy_index(void **state)
{
	const unsigned rule_mb[] = {10, 10, 10};
	struct policy foreign;
	struct sim s;

	(void)state;
	sim_init(&s, 1000, 100, 3, rule_mb, 4, 5);
	assert_int_equal(budget_policy_index(&s.cfg, &s.cfg.defaults), 0);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(budget_policy_index(&s.cfg, &s.cfg.rules[i].policy), i + 1);
	foreign = s.cfg.defaults;
	assert_int_equal(budget_policy_index(&s.cfg, &foreign), SIZE_MAX);
	assert_int_equal(budget_policy_index(&s.cfg, (const struct policy *)&s.cfg.rules[1]), SIZE_MAX);
	s.st[3].policy = &foreign;
	sim_pass(&s, 0);
	assert_int_equal(s.per_proc[3], 0);
	assert_int_equal(s.per_proc[0], 5);
	sim_free(&s);
}

/* A reload cannot mint budget: a rule that stays (same path) keeps its
 * tokens, the defaults too; a new rule starts from one interval's share. */
static void test_reconfigure(void **state)
{
	const unsigned rule_mb[] = {4};
	struct config next;
	struct sim s;

	(void)state;
	sim_init(&s, 1000, 100, 1, rule_mb, 2, 100); /* proc 0: /r0, proc 1: the defaults */
	assert_int_equal(sim_pass(&s, 0), 50);       /* 100 MiB: 2 blocks of /r0, 48 others */
	assert_int_equal(s.per_proc[0], 2);
	assert_int_equal(budget_configure(&s.b, &s.cfg, &s.cfg), 0);
	assert_int_equal(sim_pass(&s, 0.5), 25); /* 50 MiB earned globally */
	assert_int_equal(s.per_proc[0], 1);      /* 2 MiB earned, not a fresh 4 */

	/* The next config: a new rule /new first, then /r0 (another index). */
	next = s.cfg;
	next.path = NULL;
	next.metrics_file = NULL;
	next.cgroup_dir = NULL;
	next.state_file = NULL;
	next.nrules = 2;
	next.rules = calloc(2, sizeof(*next.rules));
	assert_non_null(next.rules);
	next.rules[0].path = strdup("/new");
	next.rules[0].policy = s.cfg.defaults;
	next.rules[0].policy.budget_mb_per_s = 4;
	next.rules[1].path = strdup("/r0");
	next.rules[1].policy = s.cfg.rules[0].policy;
	assert_int_equal(budget_configure(&s.b, &s.cfg, &next), 0);
	config_free(&s.cfg);
	s.cfg = next;
	s.st[0].policy = &s.cfg.rules[1].policy; /* /r0: what it earned */
	s.st[1].policy = &s.cfg.rules[0].policy; /* /new: one interval's share */
	assert_int_equal(sim_pass(&s, 1.0), 3);
	assert_int_equal(s.per_proc[0], 1);
	assert_int_equal(s.per_proc[1], 2);
	sim_free(&s);
}

/* --- budget_candidates(): which blocks take part, scored and ordered. --- */

#define NOW 1000.0

/* Processes for budget_candidates(): pid 100 + i, under pols[i], active
 * (last_active = NOW), each with its own blocks. */
struct cands {
	struct config cfg;
	struct proc_state st[6];
	struct block_memo memo[6][4];
	struct candidate *c;
	size_t n, cap;
	unsigned active;
};

static void cands_init(struct cands *k, size_t nrules)
{
	memset(k, 0, sizeof(*k));
	config_defaults(&k->cfg);
	if (nrules) {
		k->cfg.rules = calloc(nrules, sizeof(*k->cfg.rules));
		assert_non_null(k->cfg.rules);
		k->cfg.nrules = nrules;
		for (size_t i = 0; i < nrules; i++) {
			char path[32];

			snprintf(path, sizeof(path), "/r%zu", i);
			k->cfg.rules[i].path = strdup(path);
			k->cfg.rules[i].policy = k->cfg.defaults;
		}
	}
	for (size_t i = 0; i < 6; i++) {
		k->st[i].pid = (pid_t)(100 + i);
		k->st[i].policy = &k->cfg.defaults;
		k->st[i].last_active = NOW;
		k->st[i].blocks = k->memo[i];
	}
}

/* Gives process p a block at addr, seen at first_seen. */
static void cands_block(struct cands *k, size_t p, uint64_t addr, double first_seen, unsigned ref_pct, unsigned present)
{
	struct proc_state *s = &k->st[p];

	assert_true(s->nblocks < 4);
	s->blocks[s->nblocks++] = (struct block_memo){
	    .addr = addr, .first_seen = first_seen, .referenced_pct = (uint8_t)ref_pct, .present = (uint16_t)present};
}

static void cands_run(struct cands *k, size_t nst, const struct pid_filter *f)
{
	static const struct pid_filter all = {.self = 1};

	assert_int_equal(budget_candidates(&k->c, &k->n, &k->cap, k->st, nst, f ? f : &all, NOW, &k->active), 0);
}

static void cands_free(struct cands *k)
{
	free(k->c);
	config_free(&k->cfg);
}

static void assert_cand(const struct candidate *c, uint32_t proc, uint64_t addr, enum plan_tier tier)
{
	if (c->proc != proc || c->addr != addr || c->tier != tier)
		fail_msg("candidate proc %u addr %#llx tier %u, want proc %u addr %#llx tier %u", c->proc,
			 (unsigned long long)c->addr, c->tier, proc, (unsigned long long)addr, tier);
}

/* Aged blocks first, the oldest first, scored by the seconds they waited;
 * then the active processes' by score; then the idle ones', whatever their
 * score. A candidate's fields come from its memo and its process. */
static void test_candidates_order(void **state)
{
	struct cands k;

	(void)state;
	cands_init(&k, 0);
	/* 0: idle (last active past idle_after_s), hot and full. */
	k.st[0].last_active = NOW - k.cfg.defaults.idle_after_s - 1;
	k.st[0].activity = (struct activity){.cpu = 4};
	cands_block(&k, 0, 0x200000, NOW, 100, 512);
	/* 1: active, quiet: one fresh block, one that waited max_wait_s
	 * exactly, one that waited longer. */
	cands_block(&k, 1, 0x200000, NOW - 1, 40, 300);
	cands_block(&k, 1, 0x400000, NOW - k.cfg.defaults.max_wait_s, 10, 257);
	cands_block(&k, 1, 0x600000, NOW - 2.0 * k.cfg.defaults.max_wait_s, 10, 257);
	/* 2: active and busier than 1: its block goes before 1's fresh one. */
	k.st[2].activity = (struct activity){.cpu = 0.5, .faults = 0.25};
	cands_block(&k, 2, 0x800000, NOW, 50, 300);
	cands_run(&k, 3, NULL);

	assert_int_equal(k.n, 5);
	assert_cand(&k.c[0], 1, 0x600000, TIER_AGED);
	assert_true(k.c[0].score == 2.0 * k.cfg.defaults.max_wait_s);
	assert_cand(&k.c[1], 1, 0x400000, TIER_AGED);
	assert_true(k.c[1].score == k.cfg.defaults.max_wait_s);
	assert_cand(&k.c[2], 2, 0x800000, TIER_ACTIVE);
	assert_true(k.c[2].score == candidate_score(100, &k.st[2].activity, 50, 300));
	assert_cand(&k.c[3], 1, 0x200000, TIER_ACTIVE);
	assert_true(k.c[3].score == candidate_score(100, &k.st[1].activity, 40, 300));
	assert_int_equal(k.c[3].present, 300);
	assert_cand(&k.c[4], 0, 0x200000, TIER_IDLE);
	assert_true(k.c[4].score > k.c[2].score); /* a higher score, ranked below */
	assert_int_equal(k.active, 2);
	cands_free(&k);
}

/* Left out: no policy (its cgroup unknown), a disabled policy, the daemon
 * itself, a process --pid does not name, a scan stopped midway, a process
 * backing off (until the very second its back-off ends). */
static void test_candidates_left_out(void **state)
{
	const pid_t only[] = {101, 102, 103, 104, 105};
	const struct pid_filter f = {.pids = only, .npids = 5, .self = 105};
	struct cands k;

	(void)state;
	cands_init(&k, 1);
	k.cfg.rules[0].policy.enable = false;
	for (size_t i = 0; i < 6; i++)
		cands_block(&k, i, 0x200000 * (i + 1), NOW, 50, 300);
	k.st[0].policy = &k.cfg.defaults; /* 100: not in --pid */
	k.st[1].policy = NULL;            /* 101: cgroup unknown */
	k.st[2].policy = &k.cfg.rules[0].policy;
	k.st[3].scan_cursor = 0x400000;
	k.st[4].backoff_until = NOW + 0.001;
	/* 105: self */
	cands_run(&k, 6, &f);
	assert_int_equal(k.n, 0);
	assert_int_equal(k.active, 0); /* none of them counts as active either */

	k.st[3].scan_cursor = 0;
	k.st[4].backoff_until = NOW;
	cands_run(&k, 6, &f);
	assert_int_equal(k.n, 2);
	assert_cand(&k.c[0], 3, 0x800000, TIER_ACTIVE);
	assert_cand(&k.c[1], 4, 0xa00000, TIER_ACTIVE);
	assert_int_equal(k.active, 2);

	/* Without --pid, all but self. */
	{
		const struct pid_filter any = {.self = 105};

		k.active = 0;
		k.st[1].policy = &k.cfg.defaults;
		k.st[2].policy = &k.cfg.defaults;
		cands_run(&k, 6, &any);
		assert_int_equal(k.n, 5);
		assert_int_equal(k.active, 5);
		for (size_t i = 0; i < k.n; i++)
			assert_int_not_equal(k.c[i].proc, 5);
	}
	cands_free(&k);
}

/* Each process is judged by its own policy: weight scales the score,
 * max_wait_s ages its blocks, idle_after_s makes it idle. */
static void test_candidates_per_policy(void **state)
{
	struct cands k;

	(void)state;
	cands_init(&k, 2);
	k.cfg.rules[0].policy.weight = 300;
	k.cfg.rules[0].policy.max_wait_s = 5;
	k.cfg.rules[1].policy.idle_after_s = 10;
	k.st[0].policy = &k.cfg.rules[0].policy;
	k.st[1].policy = &k.cfg.rules[1].policy;
	k.st[2].policy = &k.cfg.defaults;
	k.st[1].last_active = NOW - 11; /* idle under its rule, not the defaults' 60 s */
	k.st[2].last_active = NOW - 11;
	cands_block(&k, 0, 0x200000, NOW - 1, 50, 300); /* weight 300 */
	cands_block(&k, 0, 0x400000, NOW - 6, 50, 300); /* aged after 5 s */
	cands_block(&k, 1, 0x200000, NOW - 6, 50, 300);
	cands_block(&k, 2, 0x200000, NOW - 6, 50, 300);
	cands_run(&k, 3, NULL);
	assert_int_equal(k.n, 4);
	assert_cand(&k.c[0], 0, 0x400000, TIER_AGED);
	assert_true(k.c[0].score == 6);
	assert_cand(&k.c[1], 0, 0x200000, TIER_ACTIVE);
	assert_true(k.c[1].score == candidate_score(300, &k.st[0].activity, 50, 300));
	assert_true(k.c[1].score > 2.9 * candidate_score(100, &k.st[0].activity, 50, 300));
	assert_cand(&k.c[2], 2, 0x200000, TIER_ACTIVE);
	assert_cand(&k.c[3], 1, 0x200000, TIER_IDLE);
	assert_int_equal(k.active, 2);
	cands_free(&k);
}

/* Equal tier and score: by process (its index), then address, whatever
 * the order of the table; the idle_after_s and max_wait_s bounds are
 * inclusive. */
static void test_candidates_ties(void **state)
{
	struct cands k;

	(void)state;
	cands_init(&k, 0);
	k.st[0].last_active = NOW - k.cfg.defaults.idle_after_s; /* still active */
	cands_block(&k, 0, 0x600000, NOW, 50, 300);
	cands_block(&k, 0, 0x200000, NOW, 50, 300);
	cands_block(&k, 1, 0x400000, NOW, 50, 300);
	cands_block(&k, 1, 0x200000, NOW, 50, 300);
	cands_block(&k, 2, 0x800000, NOW - 5, 50, 300);
	cands_block(&k, 3, 0x200000, NOW - 5, 50, 300);
	cands_run(&k, 4, NULL);
	assert_int_equal(k.n, 6);
	assert_cand(&k.c[0], 0, 0x200000, TIER_ACTIVE);
	assert_cand(&k.c[1], 0, 0x600000, TIER_ACTIVE);
	assert_cand(&k.c[2], 1, 0x200000, TIER_ACTIVE);
	assert_cand(&k.c[3], 1, 0x400000, TIER_ACTIVE);
	assert_cand(&k.c[4], 2, 0x800000, TIER_ACTIVE);
	assert_cand(&k.c[5], 3, 0x200000, TIER_ACTIVE);
	for (size_t i = 1; i < k.n; i++)
		assert_true(k.c[i].score == k.c[0].score);
	assert_int_equal(k.active, 4);
	cands_free(&k);
}

/* The array is reused: each call starts from none, and procs_active adds
 * up (the caller zeroes it) or is not asked for. */
static void test_candidates_reuse(void **state)
{
	struct cands k;
	struct candidate *first;

	(void)state;
	cands_init(&k, 0);
	cands_block(&k, 0, 0x200000, NOW, 50, 300);
	cands_block(&k, 1, 0x200000, NOW, 50, 300);
	cands_run(&k, 2, NULL);
	assert_int_equal(k.n, 2);
	assert_int_equal(k.active, 2);
	first = k.c;
	cands_run(&k, 1, NULL);
	assert_int_equal(k.n, 1);
	assert_int_equal(k.active, 3);
	assert_ptr_equal(k.c, first); /* no growth needed */
	assert_int_equal(budget_candidates(&k.c, &k.n, &k.cap, k.st, 0, &(struct pid_filter){.self = 1}, NOW, NULL), 0);
	assert_int_equal(k.n, 0);
	assert_int_equal(budget_candidates(&k.c, &k.n, &k.cap, k.st, 2, &(struct pid_filter){.self = 1}, NOW, NULL), 0);
	assert_int_equal(k.n, 2);
	cands_free(&k);
}

/* From the candidates to the selection: a rule's budget takes its best
 * blocks, the rest goes to the next in line, and the global budget ends
 * it (budget_select on budget_candidates' order). */
static void test_candidates_within_budget(void **state)
{
	struct cands k;
	struct budget b;
	size_t nsel;

	(void)state;
	cands_init(&k, 1);
	k.cfg.scan_interval_ms = 1000;
	k.cfg.defaults.budget_mb_per_s = 8;        /* 4 blocks in all */
	k.cfg.rules[0].policy.budget_mb_per_s = 2; /* 1 block */
	k.cfg.rules[0].policy.weight = 1000;       /* its blocks rank first */
	k.st[0].policy = &k.cfg.rules[0].policy;
	for (unsigned j = 0; j < 3; j++) {
		cands_block(&k, 0, 0x200000 * (j + 1), NOW, 50, 300);
		cands_block(&k, 1, 0x200000 * (j + 1), NOW, 50, 300 - j);
		cands_block(&k, 2, 0x200000 * (j + 1), NOW, 50, 200);
	}
	cands_run(&k, 3, NULL);
	assert_int_equal(k.n, 9);
	budget_init(&b);
	assert_int_equal(budget_configure(&b, NULL, &k.cfg), 0);
	budget_refill(&b, &k.cfg, NOW);
	nsel = budget_select(&b, &k.cfg, k.c, k.n, k.st, false);
	assert_int_equal(nsel, 4);
	assert_cand(&k.c[0], 0, 0x200000, TIER_ACTIVE);
	assert_cand(&k.c[1], 1, 0x200000, TIER_ACTIVE); /* fullest first */
	assert_cand(&k.c[2], 1, 0x400000, TIER_ACTIVE);
	assert_cand(&k.c[3], 1, 0x600000, TIER_ACTIVE);
	budget_free(&b);
	cands_free(&k);
}

/* The selector's pass on the same order: selector_order() is
 * budget_candidates() into its own array, selector_select() refills once
 * for the pass and copies what it allows into the selection, and
 * selector_reselect() picks again within what is left of that refill (no
 * second refill in one pass). */
static void test_selector_pass(void **state)
{
	struct cands k;
	struct selector sel;
	struct selector_input in;
	const struct candidate *c, *order, *chosen;
	size_t n, norder;

	(void)state;
	cands_init(&k, 1);
	k.cfg.scan_interval_ms = 1000;
	k.cfg.defaults.budget_mb_per_s = 8;        /* 4 blocks in all */
	k.cfg.rules[0].policy.budget_mb_per_s = 2; /* 1 block */
	k.cfg.rules[0].policy.weight = 1000;       /* its blocks rank first */
	k.st[0].policy = &k.cfg.rules[0].policy;
	for (unsigned j = 0; j < 3; j++) {
		cands_block(&k, 0, 0x200000 * (j + 1), NOW, 50, 300);
		cands_block(&k, 1, 0x200000 * (j + 1), NOW, 50, 300 - j);
		cands_block(&k, 2, 0x200000 * (j + 1), NOW, 50, 200);
	}
	in = (struct selector_input){.cfg = &k.cfg, .st = k.st, .nst = 3, .filter = {.self = 1}, .now = NOW};
	assert_int_equal(selector_init(&sel, &k.cfg), 0);
	assert_int_equal(selector_order(&sel, &in, &k.active, &order, &norder), 0);
	assert_int_equal(norder, 9);
	assert_int_equal(k.active, 3);
	c = selector_candidates(&sel, &n);
	assert_ptr_equal(c, order);
	assert_int_equal(n, 9);
	assert_int_equal(selector_select(&sel, &in, order, norder, false, &chosen), 4);
	assert_cand(&chosen[0], 0, 0x200000, TIER_ACTIVE);
	assert_cand(&chosen[1], 1, 0x200000, TIER_ACTIVE); /* fullest first */
	assert_cand(&chosen[2], 1, 0x400000, TIER_ACTIVE);
	assert_cand(&chosen[3], 1, 0x600000, TIER_ACTIVE);
	/* The dispatcher spent two blocks of the global budget: a second
	 * selection in the same pass gets what is left, not a new refill. */
	selector_charge(&sel, &k.cfg, &k.cfg.defaults, 2.0 * HPAGE_SIZE);
	assert_int_equal(selector_order(&sel, &in, NULL, &order, &norder), 0);
	assert_int_equal(selector_reselect(&sel, &in, order, norder, false, &chosen), 2);
	assert_int_equal(selector_reselect(&sel, &in, order, norder, true, &chosen), 9); /* unlimited */
	selector_free(&sel);
	cands_free(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_carry_over_below_one_block),
	    cmocka_unit_test(test_carry_over_jitter),
	    cmocka_unit_test(test_carry_over_small_policy),
	    cmocka_unit_test(test_carry_over_back_to_back),
	    cmocka_unit_test(test_per_policy_caps),
	    cmocka_unit_test(test_burst_after_idle),
	    cmocka_unit_test(test_many_policies),
	    cmocka_unit_test(test_global_and_unlimited),
	    cmocka_unit_test(test_policy_index),
	    cmocka_unit_test(test_reconfigure),
	    cmocka_unit_test(test_candidates_order),
	    cmocka_unit_test(test_candidates_left_out),
	    cmocka_unit_test(test_candidates_per_policy),
	    cmocka_unit_test(test_candidates_ties),
	    cmocka_unit_test(test_candidates_reuse),
	    cmocka_unit_test(test_candidates_within_budget),
	    cmocka_unit_test(test_selector_pass),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
